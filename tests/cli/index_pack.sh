#!/usr/bin/env bash
# The index pack (index.pack, store/index_pack.hpp): gc writes it, queries
# never do; graph, history and stale answer the same with it, without it,
# with it damaged and after appends made since; a build's copy changed
# under its index's unchanged stamp is what graph reads (so the checks of
# "the same answer" would see a pack that is not used) and fsck calls it
# damage; a pack cut short or changed is not used, fsck reports it and
# --repair writes it anew; a leftover temporary file is crash debris.
set -euo pipefail
GEN=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../bench/store_gen.py")
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

# pack_rewrite FILE PYTHON-EXPR: every build record's bytes `b` (bytes)
# replaced by the expression, with its length and the end line made right.
pack_rewrite() {
  python3 - "$1" "$2" <<'PY'
import struct, sys
path, expr = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
head_end = data.index(b"\n") + 1
body_end = data.rindex(b"\n", 0, len(data) - 1) + 1
at, out, records = head_end, bytearray(data[:head_end]), 0
while at < body_end:
    nl = data.index(b"\n", at)
    words = data[at:nl].split(b" ")
    length = int(words[-1])
    b = data[nl + 1 : nl + 1 + length]
    if words[0] == b"b":
        b = eval(expr)
        words[-1] = b"%d" % len(b)
    out += b" ".join(words) + b"\n" + b + b"\n"
    at = nl + 1 + length + 1
    records += 1
h = 0xcbf29ce484222325
n = len(out) // 8 * 8
for (w,) in struct.iter_unpack("<Q", bytes(out[:n])):
    h = ((h ^ w) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
for c in out[n:]:
    h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
open(path, "wb").write(bytes(out) + b"end %d %016x\n" % (records, h))
PY
}
queries() { # STORE OUT-PREFIX: the three answers
  "$FP" --store "$1" graph --artifacts >"$2.graph"
  "$FP" --store "$1" history --json "$path" >"$2.history"
  "$FP" --store "$1" stale --json >"$2.stale" || true
}
same_answers() { # STORE WHAT
  queries "$1" now
  expect_same_file now.graph expected.graph "graph $2"
  expect_same_file now.history expected.history "history $2"
  expect_same_file now.stale expected.stale "stale $2"
}

python3 "$GEN" S --artifacts 2000 --keys keys >/dev/null
path=$(sed -n 's/^show_path=//p' keys)
queries S expected
expect_in expected.graph "project0/t0 -> project1" "the generated store has edges between targets"
expect_no_file S/index.pack "queries write no pack (reading a store changes nothing in it)"
run "$FP" --store S gc --older-than 36500d
expect_rc 0 "gc with nothing to drop"
expect_file S/index.pack "gc writes the pack"
expect_eq "$(head -1 S/index.pack)" "fingerprint-index-pack 1" "it opens with its header"
expect_eq "$(grep -ac '^b ' S/index.pack)" 20 "a record per build"
same_answers S "from the pack answers the same"
run "$FP" --store S fsck
expect_rc 0 "fsck of a store with its pack: no problem"

# Used: a copy changed under its index's unchanged stamp shows in graph.
cp S/index.pack good.pack
pack_rewrite S/index.pack 'b.replace(b"\"target\":\"t0\"", b"\"target\":\"tX\"")'
run "$FP" --store S graph --artifacts
expect_in out "project1/tX" "the pack's copy is what graph reads"
run "$FP" --store S fsck --json
expect_rc 1 "fsck: a copy that does not match its build index is a problem"
expect_json_each "$T/out" <<<"named with its file :: sorted(set(f['file'] for f in d['problems'])) == ['index.pack']"
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair mends it"
expect_in out "written anew" "by writing the pack anew"
run "$FP" --store S fsck
expect_rc 0 "fsck after the repair: no problem"
expect_same_file S/index.pack good.pack "the repaired pack is the one gc wrote"
same_answers S "after the repair answers the same"

# Damaged: a byte changed, or cut short: not used, reported, rewritten.
python3 -c 'import sys; p=sys.argv[1]; d=bytearray(open(p,"rb").read()); d[len(d)//2]^=1; open(p,"wb").write(d)' S/index.pack
same_answers S "with a damaged pack answers as from the files"
run "$FP" --store S fsck
expect_rc 1 "fsck: a damaged pack is a problem"
expect_in out "index.pack: damaged" "named as damaged"
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair replaces it"
expect_same_file S/index.pack good.pack "with the pack the files make"
head -c 5000 good.pack >S/index.pack
same_answers S "with a pack cut short answers as from the files"
run "$FP" --store S fsck
expect_rc 1 "fsck: a pack cut short is a problem"
expect_in out "cut short" "named as cut short"
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair rebuilds it"
expect_same_file S/index.pack good.pack "from the files"

# Missing: the files answer.
rm S/index.pack
same_answers S "without a pack answers the same"
run "$FP" --store S fsck
expect_rc 0 "a store without a pack has no problem"
run "$FP" --store S fsck --repair
expect_file S/index.pack "fsck --repair writes a missing pack"

# Out of date: a build appended to since the pack is read from its file.
index=$(ls S/builds/project1/*.jsonl | head -1)
tail -1 "$index" | sed 's/"target":"t[0-9]*"/"target":"tappended"/; s/"time":"[^"]*"/"time":"2025-12-01T00:00:00.999Z"/' >>"$index"
rm -rf fresh && cp -a S fresh && rm fresh/index.pack
queries fresh expected
expect_in expected.graph "project1/tappended" "the appended event is in the answer from the files"
same_answers S "with a build appended to since the pack answers as from the files"

# A leftover temporary file of a writer killed before its rename.
cp good.pack S/index.pack.tmp.12345.678
run "$FP" --store S fsck
expect_rc 1 "fsck reports a leftover temporary pack"
expect_in out "index.pack.tmp.12345.678" "by its name"
finish
