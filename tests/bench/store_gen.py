#!/usr/bin/env python3
"""Writes a generated directory store in the current format (4), as the
runner writes it: the format file, change.lock, per product its produced
event in its own log, in its input manifest's log and in its build's
index, the manifest (the binary form of store/manifest.cpp, deflated by
zlib at its default level) and, per input, a reverse-index line naming the
manifest. Files are written whole, directly: a million artifacts take a
few minutes. A benchmark and test helper, not a tool.

    tests/bench/store_gen.py STORE [--artifacts N] [--builds B] [--projects P]
                             [--products K] [--chain L] [--tree-builds T]
                             [--host H] [--keys FILE]

The shape (defaults: 10,000 artifacts, artifacts / 100 builds, 10
projects, 10 products a build, chains of 5, a new build tree every 4
builds of a project):

- build g (0 .. B-1) is build number g // P + 1 of project g % P, in build
  tree g // P // T of that project (id "<n>-<tag of the tree>"), one
  minute after build g - 1;
- it produces K products (targets t0 .. t(K-1), one record call each),
  each made from its own sources (compile), three system libraries every
  product links (link), and, unless g is the first build of a chain of L
  builds, two products of build g - 1 (link);
- the sources fill each build up to artifacts / B artifacts (products and
  sources; a manifest is not counted), so every product's fan-in and
  fan-out, a chain's depth and a path's number of versions are the same
  whatever the size: per-artifact queries compare across sizes.

--keys FILE gets "name=value" lines naming what the benchmarks ask about:
a product in the middle of the store and of its chain (show, consumers,
history), the first product of that chain (consumers --transitive), the
last product of the chain and a source of the first (why).
"""

import argparse
import hashlib
import json
import os
import socket
import sys
import zlib


def leb128(value, out):
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def encode_manifest(entries):
    """entries: (role code, hex, size, path bytes), sorted by path then role."""
    packed = bytearray()
    for role, _, _, _ in entries:
        packed.append(ord(role))
    for _, _, size, _ in entries:
        leb128(size, packed)
    previous = b""
    for _, _, _, path in entries:
        shared = 0
        limit = min(len(previous), len(path))
        while shared < limit and previous[shared] == path[shared]:
            shared += 1
        leb128(shared, packed)
        leb128(len(path) - shared, packed)
        packed += path[shared:]
        previous = path
    header = b"fingerprint-manifest 2 sha256 %d %d\n" % (len(entries), len(packed))
    return header + zlib.compress(bytes(packed)) + b"".join(bytes.fromhex(e[1]) for e in entries)


def reverse_line(raw):
    return raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n") + b"\n"


def rfc3339(seconds):
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".%03dZ" % (seconds * 7 % 1000)


class Writer:
    def __init__(self, root):
        self.root = root
        self.made = set()
        self.files = 0
        self.bytes = 0

    def write(self, relative, data, mode="wb"):
        directory = os.path.dirname(relative)
        if directory not in self.made:
            os.makedirs(os.path.join(self.root, directory), exist_ok=True)
            self.made.add(directory)
        with open(os.path.join(self.root, relative), mode) as f:
            f.write(data)
        self.files += mode == "wb"
        self.bytes += len(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("--artifacts", type=int, default=10000)
    parser.add_argument("--builds", type=int, default=0, help="default: artifacts / 100")
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--products", type=int, default=10)
    parser.add_argument("--chain", type=int, default=5)
    parser.add_argument("--tree-builds", type=int, default=4)
    parser.add_argument("--host", default=socket.gethostname())
    parser.add_argument("--start", type=int, default=1764547200, help="the first build's time, Unix seconds")
    parser.add_argument("--keys")
    a = parser.parse_args()
    builds = a.builds or max(1, a.artifacts // 100)
    per_build = max(a.products + a.products, a.artifacts // builds)
    sources = max(1, (per_build - a.products) // a.products)  # per product
    root = a.store
    if os.path.exists(os.path.join(root, "fingerprint-store.json")):
        sys.exit("store_gen: %s already holds a store" % root)
    w = Writer(root)
    os.makedirs(root, exist_ok=True)
    w.write("fingerprint-store.json", (json.dumps(
        {"format": 4, "created": rfc3339(a.start - 60),
         "layout": "objects/<algorithm>/<2 hex>/<hex>.jsonl; builds/<project>/<build id>.jsonl; "
                   "manifests/<algorithm>/<2 hex>/<hex>; inputs/<algorithm>/<2 hex>/<hex>; "
                   "inputs/<algorithm>/journal"}, indent=2) + "\n").encode())
    w.write("change.lock", b"")

    def digest(text):
        return hashlib.sha256(text.encode()).hexdigest()

    system = [(digest("system %d" % i), 1000000 + i, b"/opt/sysroot/usr/lib/" + name)
              for i, name in enumerate((b"libc.so.6", b"libm.so.6", b"libstdc++.so.6"))]
    reverse = {}  # input hex -> reverse lines, for inputs of more than one manifest
    previous = []  # (hex, size, path) of build g - 1's products
    artifacts = 0
    events = 0
    keys = {}
    middle = builds // 2
    middle_chain = middle - middle % a.chain
    for g in range(builds):
        p = g % a.projects
        project = "project%d" % p
        n = g // a.projects + 1
        tree = (n - 1) // a.tree_builds
        tag = digest("%s tree %d" % (project, tree))[:8]
        build = "%d-%s" % (n, tag)
        build_dir = "/b/%s/tree%d" % (project, tree)
        when = rfc3339(a.start + 60 * g)
        version = "1.%d" % tree
        first_of_chain = g % a.chain == 0
        index = []
        products = []
        for i in range(a.products):
            target = "t%d" % i
            entries = [("l", h, s, path) for h, s, path in system]
            if not first_of_chain and previous:
                for j in (i, (i + 1) % len(previous)):
                    h, s, path = previous[j]
                    entries.append(("l", h, s, path))
            own = []
            for j in range(sources):
                h = digest("%s %d %s source %d" % (project, g, target, j))
                path = ("/src/%s/tree%d/%s/s%d.cpp" % (project, tree, target, j)).encode()
                own.append(h)
                entries.append(("c", h, 100 + int(h[:3], 16), path))
            entries.sort(key=lambda e: (e[3], e[0]))
            manifest = encode_manifest(entries)
            raw = hashlib.sha256(manifest).digest()
            mhex = raw.hex()
            w.write("manifests/sha256/%s/%s" % (mhex[:2], mhex), manifest)
            line = reverse_line(raw)
            for role, h, _, _ in entries:
                if role == "c":
                    w.write("inputs/sha256/%s/%s" % (h[:2], h), line)
                else:
                    reverse.setdefault(h, []).append(line)
            hexd = digest("%s %d %s product" % (project, g, target))
            size = 4096 + int(hexd[:4], 16)
            path = "%s/lib%s.so" % (build_dir, target)
            event = ('{"v":1,"event":"produced","digest":"sha256:%s","size":%d,"path":%s,"project":%s,'
                     '"version":%s,"target":%s,"build":%s,"build_dir":%s,"host":%s,"time":"%s",'
                     '"inputs":"sha256:%s"}\n') % (
                hexd, size, json.dumps(path), json.dumps(project), json.dumps(version), json.dumps(target),
                json.dumps(build), json.dumps(build_dir), json.dumps(a.host), when, mhex)
            data = event.encode()
            w.write("objects/sha256/%s/%s.jsonl" % (hexd[:2], hexd), data)
            w.write("objects/sha256/%s/%s.jsonl" % (mhex[:2], mhex), data)
            index.append(data)
            events += 3
            products.append((hexd, size, path.encode()))
            artifacts += 1 + sources
            if g == middle and i == 0:
                keys.update(show="sha256:" + hexd, show_path=path)
            if g == middle_chain and i == 0:
                keys.update(root="sha256:" + hexd, root_source="sha256:" + own[0])
            if g == middle_chain + a.chain - 1 and i == 0:
                keys["leaf"] = "sha256:" + hexd
        w.write("builds/%s/%s.jsonl" % (project, build), b"".join(index))
        previous = products
    for h, lines in reverse.items():
        w.write("inputs/sha256/%s/%s" % (h[:2], h), b"".join(lines))
    artifacts += len(system)
    keys.update(artifacts=artifacts, builds=builds, products=builds * a.products, events=events,
                files=w.files, bytes=w.bytes, sources_per_product=sources)
    keys.setdefault("leaf", keys.get("root"))
    text = "".join("%s=%s\n" % kv for kv in keys.items())
    if a.keys:
        with open(a.keys, "w") as f:
            f.write(text)
    sys.stderr.write("store_gen: %d artifacts, %d builds, %d products, %d files, %d bytes in %s\n"
                     % (artifacts, builds, builds * a.products, w.files, w.bytes, root))


if __name__ == "__main__":
    main()
