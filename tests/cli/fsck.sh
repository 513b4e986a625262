#!/usr/bin/env bash
# fingerprint fsck: counts, crash debris (torn lines, leftover temporary
# files) told from damage, a progress line on a terminal only, --repair
# that never deletes and is idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

run "$FP" --store "$T/none" fsck
expect_rc 0 "fsck of a store that does not exist yet passes"
expect_no_file "$T/none" "fsck does not create the store"

mkdir files
for i in $(seq 1 40); do printf 'artifact %d\n' "$i" >"files/$i"; done
for i in $(seq 1 40); do
  if ((i % 2 == 0)); then
    run "$FP" --store S record --project p --target "t$i" --build-id "b$((i % 4))" --produced "files/$i" --consumed "files/$((i - 1))"
  else
    run "$FP" --store S record --project q --target "t$i" --build-id "b$((i % 4))" --produced "files/$i"
  fi
  if ((RC != 0)); then fail "record $i failed: $ERR"; fi
done
run "$FP" --store S fsck --json
expect_rc 0 "fsck of a healthy store exits 0"
expect_json_each "$T/out" <<'EOF'
counts the 40 artifact logs :: d['logs'] == 40
counts the 4 build indexes (p b0, p b2, q b1, q b3) :: d['build_indexes'] == 4
counts every event twice (artifact log + build index): (40 + 20) * 2 :: d['events'] == 120
no problems :: d['problems'] == []
EOF

digest_of() { sha256sum "$1" | cut -c1-64; }
d7=$(digest_of files/7)
log7="objects/sha256/${d7:0:2}/$d7.jsonl"
printf '{"v":1,"event":"consu' >>"S/$log7"
printf 'half a compaction\n' >"S/objects/sha256/${d7:0:2}/$d7.jsonl.compact.4242"
run "$FP" --store S fsck
expect_rc 1 "fsck with crash debris exits 1"
expect_in out "$log7:3: torn last line" "names the torn line by file and line"
expect_in out "temporary file" "names the leftover temporary file"
expect_in out "fsck --repair" "says how to repair"
run "$FP" --store S fsck --json
expect_json_each "$T/out" <<EOF
the torn line is of kind torn :: [p['kind'] for p in d['problems'] if p['file'] == '$log7'] == ['torn']
the temporary file is of kind leftover :: [p['kind'] for p in d['problems'] if p['file'].endswith('.compact.4242')] == ['leftover']
nothing repaired without --repair :: d['repaired'] == 0 and 'quarantine' not in d
EOF

# Progress: on a terminal (script(1) gives the runner one), not in a pipe.
if command -v script >/dev/null; then
  script -qec "$FP --store S fsck" /dev/null >tty.out 2>&1 || true
  if grep -q "files checked" tty.out; then ok "a progress line on a terminal"; else fail "no progress line on a terminal: $(cat tty.out)"; fi
else
  fail "script(1) is missing (bsdutils): cannot test the progress line"
fi
run "$FP" --store S fsck
expect_not_in both "files checked" "no progress line when the output is not a terminal"

bytes_before=$(find S -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
run "$FP" --store S fsck --repair --json
expect_rc 0 "fsck --repair repairs crash debris"
expect_json "$T/out" "d['repaired'] == 2" "both problems repaired"
bytes_after=$(find S -type f -not -path 'S/quarantine/*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
bytes_quarantined=$(find S/quarantine -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
if ((bytes_after + bytes_quarantined >= bytes_before)); then
  ok "nothing deleted: $bytes_before bytes before, $bytes_after in the store + $bytes_quarantined in quarantine after"
else
  fail "bytes went missing: $bytes_before before, $bytes_after + $bytes_quarantined after"
fi
run "$FP" --store S show --json "files/7"
expect_json "$T/out" "len(d['producers']) == 1 and len(d['consumers']) == 1" "the repaired log still answers (producer and consumer)"
run "$FP" --store S fsck --repair
expect_rc 0 "a second fsck --repair finds nothing"
expect_in out "no problems" "and says so"
expect_eq "$(find S/quarantine -mindepth 1 -maxdepth 1 | wc -l)" 1 "one quarantine directory: the second run moved nothing"

run "$FP" --store S fsck extra
expect_rc 2 "fsck with an argument is a usage error"

finish
