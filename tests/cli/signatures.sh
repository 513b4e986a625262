#!/usr/bin/env bash
# Signed records: a producer signed by a trusted key is valid, one signed by
# a key nobody trusts untrusted, one not signed unsigned, and an event
# edited in the store invalid; verify --signatures and fsck say so.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export XDG_CONFIG_HOME=$T/config HOME=$T/home
mkdir -p "$HOME"

run "$FP" key generate
expect_rc 0 "key generate"
key=$XDG_CONFIG_HOME/fingerprint/signing-key.pem
expect_file "$key" "the key is in the config directory"
expect_eq "$(stat -c %a "$key")" 600 "readable by its owner only"
expect_in out "BEGIN PUBLIC KEY" "the public key is printed"
sed -n '/BEGIN PUBLIC KEY/,/END PUBLIC KEY/p' "$T/out" >printed.pub
run openssl pkey -in "$key" -pubout -out derived.pub
expect_same_file printed.pub derived.pub "the printed public key is the key's (as openssl derives it)"
cp "$key" key-before.pem
run "$FP" key generate
expect_rc 1 "key generate again"
expect_in err "a key is there already" "refuses to replace a key"
expect_same_file "$key" key-before.pem "and the key is unchanged"
run "$FP" key generate --output other.pem
expect_rc 0 "a second key elsewhere"

mkdir -p "$XDG_CONFIG_HOME/fingerprint/trusted-keys"
cp printed.pub "$XDG_CONFIG_HOME/fingerprint/trusted-keys/ci.pem"
key_id=$(openssl pkey -pubin -in printed.pub -outform DER | tail -c 32 | sha256sum | cut -c1-64)

printf 'app\n' >app
printf 'lib\n' >lib
FINGERPRINT_SIGNING_KEY=$key run "$FP" --store S record --project real --target app --build-id 1 --produced app --consumed lib
expect_rc 0 "a signed record"
FINGERPRINT_SIGNING_KEY=other.pem run "$FP" --store S record --project forged --target app --build-id 1 --produced app
expect_rc 0 "a record signed by a key nobody trusts"
run "$FP" --store S record --project plain --target app --build-id 1 --produced app
expect_rc 0 "an unsigned record"

run "$FP" --store S show --json app
expect_json_each "$T/out" <<EOF
the signed producer is valid, by its key :: [p['signature'] for p in d['producers'] if p['project'] == 'real'] == [{'status': 'valid', 'key': '$key_id'}]
the other key's is untrusted :: [p['signature']['status'] for p in d['producers'] if p['project'] == 'forged'] == ['untrusted']
the unsigned one unsigned, with no key :: [p['signature'] for p in d['producers'] if p['project'] == 'plain'] == [{'status': 'unsigned'}]
EOF
run "$FP" --store S show app
expect_in out "app [untrusted]" "the table marks the untrusted producer"
expect_in out "app [unsigned]" "and the unsigned one"
run "$FP" --store S consumers --json lib
expect_json "$T/out" "[e['signature']['status'] for e in d] == ['valid']" \
  "a consumed edge from a signed product's input manifest is valid (its signature covers the manifest)"
run "$FP" --store S build show real 1 --json
expect_json "$T/out" "[e['signature']['status'] for e in d['produced_events']] == ['valid']" "build show --json says it too"
run "$FP" --store S show --json --trusted-keys "$T/nowhere" app
expect_json "$T/out" "[p['signature']['status'] for p in d['producers'] if p['project'] == 'real'] == ['untrusted']" \
  "--trusted-keys replaces the default directory"

printf 'other\n' >other
FINGERPRINT_SIGNING_KEY=$key run "$FP" --store S record --project real --target other --build-id 2 --produced other
run "$FP" --store S verify --signatures other
expect_rc 0 "verify --signatures of a validly signed product"
expect_in out "other: valid" "says valid"
run "$FP" --store S verify --signatures lib
expect_rc 1 "verify --signatures of a file no signed build produced"

# An event edited in place: the signer's bytes and signature stay, the
# event does not.
log=$(ls S/objects/sha256/*/"$(sha256sum other | cut -c1-64)".jsonl)
sed -i 's/"target":"other"/"target":"mine"/' "$log"
run "$FP" --store S show --json other
expect_json "$T/out" "[(p['target'], p['signature']['status']) for p in d['producers']] == [('mine', 'invalid')]" \
  "the edited event is invalid"
run "$FP" --store S verify --signatures --json other
expect_rc 1 "verify --signatures of the edited record"
expect_json "$T/out" "d[0]['status'] == 'invalid'" "says invalid"
run "$FP" --store S fsck
expect_in both "its signature does not hold" "fsck reports the invalid signature"

# A signed export: a DSSE envelope that plain OpenSSL verifies over DSSE's
# pre-authentication encoding, and refuses once the payload is changed.
FINGERPRINT_SIGNING_KEY=$key run "$FP" --store S export --format in-toto --sign app
expect_rc 0 "export --format in-toto --sign"
cp "$T/out" envelope.json
expect_json_each envelope.json <<EOF
a DSSE envelope of an in-toto Statement :: d['payloadType'] == 'application/vnd.in-toto+json' and len(d['signatures']) == 1
signed by the key's id :: d['signatures'][0]['keyid'] == '$key_id'
its payload is the Statement :: json.loads(__import__('base64').b64decode(d['payload']))['_type'] == 'https://in-toto.io/Statement/v1'
EOF
python3 - envelope.json <<'PY'
import base64, json, sys
d = json.load(open(sys.argv[1]))
payload = base64.b64decode(d["payload"])
kind = d["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
open("pae.bin", "wb").write(pae)
open("sig.bin", "wb").write(base64.b64decode(d["signatures"][0]["sig"]))
open("pae-tampered.bin", "wb").write(pae.replace(b"Statement", b"Statemeny", 1))
PY
run openssl pkeyutl -verify -pubin -inkey printed.pub -rawin -in pae.bin -sigfile sig.bin
expect_rc 0 "openssl pkeyutl verifies the envelope's signature over the PAE"
run openssl pkeyutl -verify -pubin -inkey printed.pub -rawin -in pae-tampered.bin -sigfile sig.bin
expect_rc 1 "and refuses it over a changed payload"
run "$FP" --store S export --format in-toto --sign app
expect_rc 2 "--sign without FINGERPRINT_SIGNING_KEY is a usage error"

# in-toto links (the metablock form in-toto 1.x reads) of a file whose name
# canonical JSON must escape: securesystemslib, given the key as openssl
# prints it, names the key as the file does, accepts the signature over its
# own canonical encoding, and refuses the link once edited.
odd=$'q"uote\\back\u00e9\ttab'
printf 'odd\n' >"$odd"
printf 'made\n' >made.bin
FINGERPRINT_SIGNING_KEY=$key run "$FP" --store S record --project real --target odd --build-id 4 --consumed "$odd" \
  --produced made.bin
expect_rc 0 "record a file with a quote, a backslash, an accent and a tab in its name"
run "$FP" --store S export --format in-toto-link --project real --build 4 --output-dir links
expect_rc 2 "in-toto-link without FINGERPRINT_SIGNING_KEY is a usage error"
FINGERPRINT_SIGNING_KEY=$key run "$FP" --store S export --format in-toto-link --project real --build 4 --output-dir links
expect_rc 0 "export --format in-toto-link"
expect_eq "$(wc -l <"$T/out")" 1 "one link for the build's one target"
link=$(head -1 "$T/out")
run openssl pkey -in "$key" -pubout -outform DER -out functionary.der
run /usr/bin/python3 "$(dirname "$CHECKS")/intoto_check.py" check-link "$link" functionary.der real.odd "$T/$odd" "$T/made.bin"
expect_eq "$OUT" $'verified\nedited link refused' "securesystemslib accepts the link under its key id, and refuses it edited"

# A key that cannot be read: nothing recorded, rather than unsigned.
printf 'x\n' >x
FINGERPRINT_SIGNING_KEY=$T/missing.pem run "$FP" --store S record --project real --target x --build-id 3 --produced x
expect_rc 1 "record with an unreadable signing key"
expect_in err "FINGERPRINT_SIGNING_KEY" "names the variable"
expect_eq "$(grep -o 'missing.pem' "$T/err" | wc -l)" 1 "and the key's file, once"
run "$FP" --store S show x
expect_rc 1 "nothing was recorded"
finish
