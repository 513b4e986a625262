#!/usr/bin/env bash
# The builds summary (builds.summary, store/build_summary.hpp): gc writes
# it, queries and records never do; `builds` answers the same with it,
# without it, after appends and after gc; a line that disagrees with its
# up-to-date index is used (so the check below would see a summary that is
# not used) and fsck calls it damage; a file cut short or changed is not
# used, fsck reports it and --repair writes it anew; a leftover temporary
# file is crash debris; gc killed at random moments leaves a summary that
# is whole or absent.
set -euo pipefail
GEN=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../bench/store_gen.py")
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

# fresh_builds STORE: `builds --json` of a copy of STORE without its summary.
fresh_builds() {
  rm -rf "$T/fresh"
  cp -a "$1" "$T/fresh"
  rm -f "$T/fresh/builds.summary"
  "$FP" --store "$T/fresh" builds --json
}

mkdir -p b1 b2
printf 'lib\n' >b1/lib.so
printf 'header\n' >b1/lib.h
printf 'app\n' >b2/app
run "$FP" --store S record --build-dir "$T/b1" --project core --target lib --build-id 1 --produced b1/lib.so \
  --compiled b1/lib.h
expect_rc 0 "record core's library"
run "$FP" --store S record --build-dir "$T/b2" --project apps --target app --build-id 1 --produced b2/app \
  --consumed b1/lib.so --compiled b1/lib.h
expect_rc 0 "record the app"
expect_no_file S/builds.summary "a record writes no summary (appends stay O(1))"

fresh_builds S >expected.json
run "$FP" --store S builds --json
expect_rc 0 "builds"
expect_same_file out expected.json "builds answers as from the indexes"
expect_no_file S/builds.summary "a query writes no summary (reading a store changes nothing in it)"
run "$FP" --store S gc --older-than 36500d
expect_rc 0 "gc with nothing to drop"
expect_file S/builds.summary "gc writes the summary"
expect_eq "$(head -1 S/builds.summary)" "fingerprint-builds-summary 1" "it opens with its header"
expect_eq "$(grep -c . S/builds.summary)" 4 "one line per build, between the header and the end line"
run "$FP" --store S builds --json
expect_same_file out expected.json "builds from the summary answers the same"
run "$FP" --store S fsck
expect_rc 0 "fsck of a store with its summary: no problem"

# Used: a line changed under an unchanged stamp shows in the answer.
summary_rewrite S/builds.summary 'l[:6] + ["7"] + l[7:] if l[0] == "core" else l'
run "$FP" --store S builds --json
expect_json_each "$T/out" <<<"the summary is what builds reads :: [b['produced'] for b in d if b['project'] == 'core'] == [7]"
run "$FP" --store S fsck --json
expect_rc 1 "fsck: a summary line that does not match its build index is a problem"
expect_json_each "$T/out" <<<"named with its file and line :: [(f['file'], f['line']) for f in d['problems']] == [('builds.summary', 3)]"
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair mends it"
expect_in out "written anew" "by writing the summary anew"
run "$FP" --store S fsck
expect_rc 0 "fsck after the repair: no problem"
run "$FP" --store S builds --json
expect_same_file out expected.json "builds answers right again"

# Out of date: an append to a build's index changes its stamp.
printf 'tool\n' >b2/tool
run "$FP" --store S record --build-dir "$T/b2" --project apps --target tool --build-id 1 --produced b2/tool \
  --consumed b1/lib.so
expect_rc 0 "record another product into apps' build 1"
run "$FP" --store S fsck
expect_rc 0 "a summary line older than its index is no problem"
fresh_builds S >expected.json
run "$FP" --store S builds --json
expect_same_file out expected.json "builds after an append answers as from the indexes"
expect_json_each "$T/out" <<CHECKS
with the new product counted :: [b['produced'] for b in d if b['project'] == 'apps'] == [2]
lib.so, read by both products, counted once beside lib.h :: [b['consumed'] for b in d if b['project'] == 'apps'] == [2]
CHECKS
run "$FP" --store S gc --older-than 36500d
expect_rc 0 "gc brings the summary up to date"
expect_in_file() { grep -q -- "$2" "$1"; }
if expect_in_file S/builds.summary "^apps 1 $(stat -c %s S/builds/apps/1.jsonl) "; then
  _result 1 "the refreshed line has the index's new size"
else
  _result 0 "the refreshed line has the index's new size"
fi

# Damaged: cut short, or a changed byte: not used, reported, rewritten.
for damage in cut byte; do
  if [[ $damage == cut ]]; then
    head -c 40 S/builds.summary >S/x && mv S/x S/builds.summary
  else
    sed -i '2s/^a/b/' S/builds.summary
  fi
  run "$FP" --store S builds --json
  expect_same_file out expected.json "builds beside a damaged summary ($damage) answers as from the indexes"
  run "$FP" --store S fsck --json
  expect_rc 1 "fsck: a damaged summary ($damage) is a problem"
  expect_json_each "$T/out" <<<"named :: [f['file'] for f in d['problems']] == ['builds.summary']"
  run "$FP" --store S fsck --repair
  run "$FP" --store S fsck
  expect_rc 0 "fsck after --repair of the $damage summary: no problem"
  run "$FP" --store S builds --json
  expect_same_file out expected.json "and builds answers right"
done

# Crash debris: the temporary file of a writer killed before its rename.
printf 'fingerprint-builds-summary 1\nhalf' >"S/builds.summary.tmp.12345.678"
run "$FP" --store S fsck --json
expect_rc 1 "fsck reports a summary's leftover temporary file"
expect_json_each "$T/out" <<<"as crash debris :: [(f['file'], f['kind']) for f in d['problems']] == [('builds.summary.tmp.12345.678', 'leftover')]"
run "$FP" --store S fsck --repair
expect_no_file S/builds.summary.tmp.12345.678 "--repair moves it to the quarantine"
run "$FP" --store S fsck
expect_rc 0 "and the store is clean"

# gc rewrites indexes: their lines go out of date, never wrong.
rm -rf b2
run "$FP" --store S gc --missing-build-dirs
expect_rc 0 "gc drops the build whose tree is gone"
fresh_builds S >expected.json
run "$FP" --store S builds --json
expect_same_file out expected.json "builds after gc answers as from the indexes"
expect_json_each "$T/out" <<<"apps' build is gone :: [b['project'] for b in d] == ['core']"
run "$FP" --store S fsck
expect_rc 0 "fsck after gc: no problem"

# gc killed at random moments while writing it: whole or absent.
python3 "$GEN" G --artifacts 3000 >/dev/null 2>&1
fresh_builds G >expected.json
torn=0
for i in $(seq 1 20); do
  rm -f G/builds.summary
  "$FP" --store G gc --older-than 36500d >/dev/null 2>&1 &
  pid=$!
  sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # A temporary file left by the kill is debris (fsck's leftover, above),
  # the summary's, or the index pack's and the index by path's, which gc
  # writes after it (and builds.recent's, which it trims last).
  rm -f G/builds.summary.tmp.* G/index.pack.tmp.* G/paths.index.tmp.* G/builds.recent.compact.*
  if [[ -e G/builds.summary ]] && ! "$FP" --store G fsck >/dev/null 2>&1; then
    torn=$((torn + 1))
  fi
  if ! "$FP" --store G builds --json | cmp -s - expected.json; then
    torn=$((torn + 100))
  fi
done
expect_eq "$torn" 0 "gc killed at 20 random moments: every summary left whole or absent, every answer right"
"$FP" --store G gc --older-than 36500d >/dev/null 2>&1
expect_file G/builds.summary "a gc not killed leaves the summary"
run "$FP" --store G builds --json
expect_same_file out expected.json "and builds from it answers as from the indexes"

finish
