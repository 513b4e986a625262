"""What the tests of export --format in-toto-link ask of in-toto's own
Python API (Debian's in-toto and securesystemslib), so that nothing of ours
decides what a valid link is. A functionary's key comes from the public key
openssl wrote (DER SubjectPublicKeyInfo, its last 32 bytes are the raw key);
its key id is securesystemslib's to compute. (Not named in_toto.py, which
would hide the package it imports.)

    intoto_check.py check-link LINK FUNCTIONARY_PUB_DER STEP MATERIAL PRODUCT

Loads LINK as in-toto-verify does and verifies its signature with the key;
checks its file name, step name, one material and one product; then edits
the material's digest and verifies again. Prints "verified" and whether the
edited link was refused.

    intoto_check.py layout LAYOUT OWNER_KEY FUNCTIONARY_PUB_DER PREFIX APP_PREFIX SRC

Writes a new Ed25519 owner key pair (OWNER_KEY and OWNER_KEY.pub, in
securesystemslib's format, for in-toto-verify --layout-keys) and LAYOUT,
signed by it. The functionary's key comes from the raw public key that
openssl wrote (DER SubjectPublicKeyInfo, its last 32 bytes), its key id
computed by securesystemslib. The supply chain, three projects:
  word.word      builds libword.a
  word.install   installs word.hpp (and the CMake package) in PREFIX
  phrase.phrase  builds libphrase.a from word's installed header and archive
  phrase.install installs phrase.hpp in PREFIX
  app.app        builds and installs app (APP_PREFIX/bin/app) from phrase's
                 and word's installed headers and archives
and an inspection that the installed program is the one app.app made.
Every material in PREFIX must match a product of the step that made it.
"""

import json
import os
import sys

from in_toto.exceptions import SignatureVerificationError
from in_toto.models.layout import Inspection, Layout, Step
from in_toto.models.metadata import Metablock
from securesystemslib import interface, keys


def functionary_key(der_path):
    with open(der_path, "rb") as der:
        raw = der.read()[-32:]
    key, _ = keys.format_metadata_to_key(
        {
            "keytype": "ed25519",
            "scheme": "ed25519",
            "keyid_hash_algorithms": ["sha256", "sha512"],
            "keyval": {"public": raw.hex()},
        }
    )
    return key


def check_link(link_path, der_path, step, material, product):
    key = functionary_key(der_path)
    expected_name = "%s.%s.link" % (step, key["keyid"][:8])
    assert os.path.basename(link_path) == expected_name, (link_path, expected_name)
    block = Metablock.load(link_path)
    block.verify_signature(key)
    assert block.signed.name == step, block.signed.name
    assert list(block.signed.materials) == [material], block.signed.materials
    assert list(block.signed.products) == [product], block.signed.products
    print("verified")
    data = json.load(open(link_path))
    data["signed"]["materials"][material]["sha256"] = "0" * 64
    edited = link_path + ".edited"
    with open(edited, "w") as out:
        json.dump(data, out)
    try:
        Metablock.load(edited).verify_signature(key)
        print("edited link accepted")
    except SignatureVerificationError:
        print("edited link refused")


def layout(layout_path, owner_path, functionary_der, prefix, app_prefix, src):
    interface.generate_and_write_unencrypted_ed25519_keypair(filepath=owner_path)
    owner = interface.import_ed25519_privatekey_from_file(owner_path)
    functionary = functionary_key(functionary_der)
    keyid = functionary["keyid"]

    def match(name, step, folder):
        """name, a material in PREFIX/folder, matches a product of step."""
        where = prefix + "/" + folder
        return ["MATCH", name, "IN", where, "WITH", "PRODUCTS", "IN", where, "FROM", step]

    def step(name, materials):
        made = Step(name=name, pubkeys=[keyid], threshold=1)
        # Nothing of the prefix may be used unless matched above.
        made.expected_materials = materials + [["ALLOW", src + "/*"], ["ALLOW", "/usr/*"], ["DISALLOW", prefix + "/*"]]
        made.expected_products = [["ALLOW", "*"]]
        return made

    layout = Layout()
    layout.set_relative_expiration(days=1)
    layout.add_functionary_key(functionary)
    layout.steps = [
        step("word.word", []),
        step("word.install", []),
        step(
            "phrase.phrase",
            [match("libword.a", "word.word", "lib"), match("word.hpp", "word.install", "include")],
        ),
        step("phrase.install", []),
        step(
            "app.app",
            [
                match("libphrase.a", "phrase.phrase", "lib"),
                match("libword.a", "word.word", "lib"),
                match("phrase.hpp", "phrase.install", "include"),
                match("word.hpp", "word.install", "include"),
            ],
        ),
    ]
    # Run where the program is installed: what it finds there is what app.app made.
    inspection = Inspection(name="installed-app", run=["true"])
    inspection.expected_materials = [
        ["MATCH", "bin/app", "WITH", "PRODUCTS", "IN", app_prefix, "FROM", "app.app"],
        ["DISALLOW", "*"],
    ]
    layout.inspect = [inspection]

    metablock = Metablock(signed=layout)
    metablock.sign(owner)
    metablock.dump(layout_path)


if __name__ == "__main__":
    commands = {"check-link": check_link, "layout": layout}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit("usage: %s {check-link|layout} ARG..." % sys.argv[0])
    commands[sys.argv[1]](*sys.argv[2:])
