#!/usr/bin/env bash
# A record call's events land in their artifact logs and their build's
# index together, or in neither (README, "The store"): a refused build index
# takes back what the call had appended; fsck reports an event found on one
# side only and the empty logs failed calls leave, and --repair mends both
# without losing an event. The full-disk case is full_disk.sh (root).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

digest_of() { sha256sum "$1" | cut -c1-64; }
log_of() { local d; d=$(digest_of "$1"); echo "objects/sha256/${d:0:2}/$d.jsonl"; }
for f in one two three four lib; do echo "$f" >"$f"; done

run "$FP" --store S record --project p --target t --build-id first --produced one --consumed lib
expect_rc 0 "the first record"

# A build index path the store refuses (a planted symbolic link): the call
# fails and its artifact logs keep nothing of it.
ln -s "$T/elsewhere" S/builds/p/second.jsonl
files_of() { (cd "$1" && find . -type f -printf '%P %s %m\n' | sort && find . -type f -print0 | sort -z | xargs -0r sha256sum); }
before=$(files_of S)
run "$FP" --store S record --project p --target t --build-id second --produced two --consumed lib
expect_rc 1 "record whose build index is a symbolic link fails"
expect_in err "second.jsonl: is a symbolic link" "names the refused build index"
expect_in err "nothing was recorded" "says nothing was recorded"
expect_in err "taken back" "says the events already appended were taken back"
expect_eq "$(files_of S)" "$before" "every file of the store is byte for byte as it was, and no log was left behind"
expect_no_file "$T/elsewhere" "nothing was written through the link"
run "$FP" --store S show two
expect_rc 1 "show of the refused call's product: not recorded"
run "$FP" --store S consumers lib
expect_not_in out second "the consumed library has no consumer of the refused call"
rm S/builds/p/second.jsonl

# A retry once the path is fixed records it once.
run "$FP" --store S record --project p --target t --build-id second --produced two --consumed lib
expect_rc 0 "the retry records"
run "$FP" --store S fsck
expect_rc 0 "fsck after the refused call and its retry: no problems"
expect_in out "no problems" "fsck says so"

# One-sided events: a line lost from a build index (what a call killed
# between its artifact logs and its index leaves), and one lost from an
# artifact log (an interrupted gc): here the log of the input manifest the
# three calls share, which lists the products made from it.
run "$FP" --store S record --project p --target t --build-id third --produced three four --consumed lib
cp S/builds/p/third.jsonl third.index
grep -v "$(digest_of three)" third.index >S/builds/p/third.jsonl
run "$FP" --store S show --json one
manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["producers"][0]["inputs"][7:])' "$T/out")
lib_log=objects/sha256/${manifest:0:2}/$manifest.jsonl
cp "S/$lib_log" lib.log
grep -v '"first"' lib.log >"S/$lib_log"
# Empty logs, as a call that failed or died between open() and write() leaves.
empty_log=objects/sha256/ab/abababababababababababababababababababababababababababababababab.jsonl
mkdir -p S/objects/sha256/ab
: >"S/$empty_log"
: >S/builds/p/dead.jsonl
run "$FP" --store S fsck --json
expect_rc 1 "fsck of a store with one-sided events and empty logs exits 1"
expect_json_each "$T/out" <<EOF
reports the produced event missing from its build index :: any(p['kind'] == 'one-sided' and 'missing from builds/p/third.jsonl' in p['problem'] and 'did not finish' in p['problem'] for p in d['problems'])
reports the produced event missing from the manifest's log :: any(p['kind'] == 'one-sided' and ' first is missing from $lib_log' in p['problem'] for p in d['problems'])
reports the empty artifact log :: any(p['kind'] == 'empty' and p['file'] == '$empty_log' for p in d['problems'])
reports the empty build index :: any(p['kind'] == 'empty' and p['file'] == 'builds/p/dead.jsonl' for p in d['problems'])
four problems in all :: len(d['problems']) == 4
EOF
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair mends them"
expect_no_file "S/$empty_log" "the empty artifact log is gone"
expect_no_file S/builds/p/dead.jsonl "the empty build index is gone"
expect_eq "$(sort S/builds/p/third.jsonl)" "$(sort third.index)" "the build index has its produced event back"
expect_eq "$(sort "S/$lib_log")" "$(sort lib.log)" "the manifest's log has its event back"
run "$FP" --store S fsck
expect_rc 0 "fsck after --repair: no problems"
run "$FP" --store S fsck --repair
expect_in out "no problems" "a second repair has nothing to do"
finish
