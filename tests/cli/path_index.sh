#!/usr/bin/env bash
# The index by path (paths.index and builds.recent, store/path_index.hpp):
# gc writes the index and trims builds.recent; every write of events names
# its build in builds.recent; history answers the same with the index,
# without it, damaged, and after builds recorded since (as a product and as
# a compile input); the index is what history reads (a build it does not
# name is not opened); fsck reports a build the index lacks that
# builds.recent does not name, a damaged index, an unreadable line and a
# leftover, and --repair mends each.
set -euo pipefail
GEN=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../bench/store_gen.py")
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

python3 "$GEN" S --artifacts 2000 --keys keys >/dev/null
product=$(sed -n 's/^show_path=//p' keys)
source_path=/src/project1/tree0/t0/s0.cpp
system_path=/opt/sysroot/usr/lib/libc.so.6
ask() { # STORE OUT-PREFIX: history of each path
  local i=0
  for p in "$product" "$source_path" "$system_path" /nowhere/recorded "$W/app" "$W/h.hpp"; do
    "$FP" --store "$1" history --json "$p" >"$2.$i" 2>/dev/null || echo "rc=$?" >>"$2.$i"
    i=$((i + 1))
  done
}
same_answers() { # STORE WHAT: the answers of a copy without the index
  rm -rf plain && cp -a "$1" plain && rm -f plain/paths.index
  ask plain expected
  ask "$1" now
  for i in 0 1 2 3 4 5; do
    expect_same_file "now.$i" "expected.$i" "history of path $i $2"
  done
}
W=$T/w
mkdir -p "$W"
printf 'app 1\n' >"$W/app"
printf 'header 1\n' >"$W/h.hpp"

ask S expected
expect_json expected.0 "len(d['versions']) == 2" "the generated store has 2 versions of the product's path (its project's two builds)"
expect_json expected.1 "len(d['versions']) >= 2 and all(v['producers'] == [] for v in d['versions'])" \
  "and versions of a source that only manifests list"
expect_no_file S/paths.index "no index before gc"
run "$FP" --store S gc --older-than 36500d
expect_rc 0 "gc with nothing to drop"
expect_file S/paths.index "gc writes the index"
expect_eq "$(head -c 24 S/paths.index)" "fingerprint-path-index 1" "it opens with its header"
same_answers S "from the index"

# The index is what history reads: a build it does not name for the path
# is not opened (a symbolic link in its place fails whoever opens it).
run "$FP" --store S history --json "$product"
victim=$(python3 - "$T/out" S <<'PY'
import json, os, sys
named = {(p["project"], p["build"]) for v in json.load(open(sys.argv[1]))["versions"] for p in v["producers"]}
for project in sorted(os.listdir(sys.argv[2] + "/builds")):
    for name in sorted(os.listdir(sys.argv[2] + "/builds/" + project)):
        if name.endswith(".jsonl") and (project, name[:-6]) not in named and project != "project1":
            print(sys.argv[2] + "/builds/" + project + "/" + name)
            sys.exit(0)
PY
)
mv "$victim" victim.jsonl
ln -s "$T/victim.jsonl" "$victim"
run "$FP" --store S history --json "$product"
expect_rc 0 "history with the index does not open a build it does not name"
expect_same_file "$T/out" expected.0 "and answers the same"
mv S/paths.index paths.index.saved
run "$FP" --store S history --json "$product"
expect_rc 1 "without the index, history reads every build (and fails on the link)"
mv paths.index.saved S/paths.index
rm "$victim" && mv victim.jsonl "$victim"

# Builds recorded since: named in builds.recent, read whatever the path.
run "$FP" --store S record --project app --target app --build-id 1 --build-dir "$W" --produced "$W/app" --compiled "$W/h.hpp"
expect_rc 0 "a build recorded after gc"
expect_eq "$(cat S/builds.recent)" "app 1" "builds.recent names its build"
printf 'app 2\n' >"$W/app"
printf 'header 2\n' >"$W/h.hpp"
run "$FP" --store S record --project app --target app --build-id 2 --build-dir "$W" --produced "$W/app" --compiled "$W/h.hpp"
expect_rc 0 "a second build recorded after gc"
same_answers S "with two builds recorded since"
expect_json now.4 "len(d['versions']) == 2" "both versions of the new product's path"
expect_json now.5 "len(d['versions']) == 2" "both versions of the header they compiled"
run "$FP" --store S fsck
expect_rc 0 "fsck: builds recorded since the index are no problem"

run "$FP" --store S gc --older-than 36500d
expect_rc 0 "gc again"
expect_eq "$(stat -c %s S/builds.recent)" 0 "gc trims builds.recent to what came after its scan"
same_answers S "with those builds in the index"

# A writer that stopped between its events and its line in builds.recent.
printf 'app 3\n' >"$W/app"
run "$FP" --store S record --project app --target app --build-id 3 --build-dir "$W" --produced "$W/app"
expect_rc 0 "a third build"
: >S/builds.recent
run "$FP" --store S fsck --json
expect_rc 1 "fsck: a build the index lacks, not in builds.recent"
expect_json_each "$T/out" <<'CHECKS'
named as the index's problem :: [f['file'] for f in d['problems']] == ['paths.index']
naming the build :: 'build 3 of app' in d['problems'][0]['problem']
CHECKS
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair writes the index anew"
expect_in out "written anew" "and says so"
run "$FP" --store S fsck
expect_rc 0 "fsck after the repair: no problem"
same_answers S "after the repair"
expect_json now.4 "len(d['versions']) == 3" "the third version is answered"

# A damaged index: not used, reported, written anew.
cp S/paths.index good.index
python3 -c 'import sys; p=sys.argv[1]; d=bytearray(open(p,"rb").read()); d[-3]^=1; open(p,"wb").write(d)' S/paths.index
same_answers S "with a damaged bucket"
run "$FP" --store S fsck
expect_rc 1 "fsck: a damaged index is a problem"
expect_in out "paths.index: damaged" "named as damaged"
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair replaces it"
run "$FP" --store S fsck
expect_rc 0 "fsck after the repair: no problem"
head -c 300 good.index >S/paths.index
same_answers S "with an index cut short"
run "$FP" --store S fsck
expect_rc 1 "fsck: an index cut short is a problem"
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair rebuilds it"

# An unreadable line of builds.recent: every build is read, fsck says so.
printf 'not a build line\n' >>S/builds.recent
same_answers S "with an unreadable line in builds.recent"
run "$FP" --store S fsck
expect_rc 1 "fsck: an unreadable line is a problem"
expect_in out "builds.recent" "named with its file"
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair: the index covers it, the line goes"
run "$FP" --store S fsck
expect_rc 0 "fsck after the repair: no problem"

# A store of format 3 (no builds.recent) is raised to 4 by the gc that
# writes its index: a runner of format 3 would write builds it does not name.
python3 "$GEN" F3 --artifacts 300 >/dev/null
sed -i 's/"format": 4/"format": 3/' F3/fingerprint-store.json
expect_json F3/fingerprint-store.json "d['format'] == 3" "a store of format 3"
run "$FP" --store F3 gc --older-than 36500d
expect_rc 0 "its gc"
expect_file F3/paths.index "writes its index"
expect_json F3/fingerprint-store.json "d['format'] == 4 and 'builds.recent' in d['layout']" "and raises it to format 4"

# A leftover temporary index of a writer killed before its rename.
cp good.index S/paths.index.tmp.12345.678
run "$FP" --store S fsck
expect_rc 1 "fsck reports a leftover temporary index"
expect_in out "paths.index.tmp.12345.678" "by its name"
finish
