#!/usr/bin/env bash
# fingerprint fsck: counts, crash debris (torn lines, leftover temporary
# files) told from damage, a progress line on a terminal only, --repair
# that never deletes and is idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

run "$FP" --store "$T/none" fsck
expect_rc 1 "fsck of a store that does not exist is an error, not a pass"
expect_in err "$T/none: no fingerprint store there" "naming the path"
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
counts the 60 artifact logs (40 artifacts, 20 input manifests) :: d['logs'] == 60
counts the 4 build indexes (p b0, p b2, q b1, q b3) :: d['build_indexes'] == 4
counts the 20 input manifests :: d['manifests'] == 20
counts the 20 manifests in the reverse index's journal, not yet folded :: d['journaled_manifests'] == 20 and d['reverse_indexes'] == 0
counts every produced event twice (artifact log + build index), a manifest's product thrice: 40 * 2 + 20 :: d['events'] == 100
no problems (a manifest's log holds its products' events) :: d['problems'] == []
EOF

digest_of() { sha256sum "$1" | cut -c1-64; }
d7=$(digest_of files/7)
log7="objects/sha256/${d7:0:2}/$d7.jsonl"
printf '{"v":1,"event":"consu' >>"S/$log7"
printf 'half a compaction\n' >"S/objects/sha256/${d7:0:2}/$d7.jsonl.compact.4242"
run "$FP" --store S fsck
expect_rc 1 "fsck with crash debris exits 1"
expect_in out "$log7:2: torn last line" "names the torn line by file and line"
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

# Input manifests and reverse indexes (format 2): each damage named, of its
# kind, and --repair mending it without deleting anything.
printf 'lib\n' >m.lib
printf 'source\n' >m.cpp
printf 'header\n' >m.hpp
printf 'out\n' >m.out
printf 'other\n' >m.other
run "$FP" --store M record --project P --target T --build-id 1 --produced m.out --consumed m.lib --compiled m.cpp m.hpp
expect_rc 0 "record a product of a manifest"
# Its inputs' reverse index lines wait in the journal, one line for all
# three, until a fold (fsck --repair folds first).
expect_eq "$(cd M/inputs && find . -type f)" "./sha256/journal" "the record wrote the journal, no file per input"
run "$FP" --store M fsck --json
expect_rc 0 "fsck of a store with a journal"
expect_json "$T/out" "d['journaled_manifests'] == 1 and d['reverse_indexes'] == 0 and d['problems'] == []" \
  "fsck reads the journal's manifest as indexed"
run "$FP" --store M show --json m.hpp
expect_json "$T/out" "[(e['target'], e['role']) for e in d['consumers']] == [('T', 'compile')]" "m.hpp is found from the journal"
run "$FP" --store M fsck --repair --json
expect_json "$T/out" "d['journaled_manifests'] == 0 and d['reverse_indexes'] == 3 and d['problems'] == []" \
  "fsck --repair folds the journal into a reverse index per input"
expect_no_file "M/inputs/sha256/journal" "and removes it"
# An orphaned manifest (a call that died before its events), made in
# another store and carried over, a minute old.
run "$FP" --store O record --project P --target U --build-id 1 --produced m.other --compiled m.cpp
run "$FP" --store O fsck --repair
(cd O && find manifests inputs -type f) >orphan.files
(cd O && tar cf - manifests) | (cd M && tar xf -)
orphan=$(grep '^manifests/' orphan.files)
touch -d '-2 minutes' "M/$orphan"
cpp_reverse="inputs/sha256/$(digest_of m.cpp | cut -c1-2)/$(digest_of m.cpp)"
cat "O/$cpp_reverse" >>"M/$cpp_reverse"
cp -a M M.healthy
manifest=$(cd M && find manifests -type f ! -path "$orphan")
mhex=$(basename "$manifest")
manifest_log="objects/sha256/${mhex:0:2}/$mhex.jsonl"
lib_reverse="inputs/sha256/$(digest_of m.lib | cut -c1-2)/$(digest_of m.lib)"
hpp_reverse="inputs/sha256/$(digest_of m.hpp | cut -c1-2)/$(digest_of m.hpp)"
# A line of a call that died before storing its manifest, and one that is
# not a reverse index line at all; a manifest missing from one of its
# inputs' reverse index; the manifest log's copy of the produced event lost.
printf 'l%064d\nnot a line\n' 7 >>"M/$lib_reverse"
rm "M/$hpp_reverse"
mv "M/$manifest_log" manifest.log
printf 'half a manifest' >"M/$manifest.tmp.4242.1"
run "$FP" --store M fsck --json
expect_rc 1 "fsck of damaged manifests and reverse indexes exits 1"
expect_json_each "$T/out" <<EOF
counts the manifests (the orphan too) :: d['manifests'] == 2
counts the reverse indexes left (m.lib's, m.cpp's) :: d['reverse_indexes'] == 2
a line naming a manifest not in the store is a leftover :: [p['kind'] for p in d['problems'] if p['file'] == '$lib_reverse' and p['line'] == 2] == ['leftover']
a line that is not a reverse index line is damage :: [p['kind'] for p in d['problems'] if p['file'] == '$lib_reverse' and p['line'] == 3] == ['damage']
the manifest missing from m.hpp's reverse index is one-sided :: any(p['kind'] == 'one-sided' and p['file'] == '$hpp_reverse' and '$mhex' in p['problem'] for p in d['problems'])
the product event missing from the manifest's log is one-sided :: any(p['kind'] == 'one-sided' and '$manifest_log' in p['problem'] for p in d['problems'])
the orphaned manifest is a leftover :: [p['kind'] for p in d['problems'] if p['file'] == '$orphan'] == ['leftover']
the manifest write's temporary file is a leftover :: [p['kind'] for p in d['problems'] if p['file'].endswith('.tmp.4242.1')] == ['leftover']
a manifest's own log is not misplaced :: not any('another artifact' in p['problem'] for p in d['problems'])
six problems in all :: len(d['problems']) == 6
EOF
run "$FP" --store M fsck --repair --json
expect_rc 0 "fsck --repair mends manifests and reverse indexes"
expect_json "$T/out" "d['repaired'] == 6" "all six repaired"
quarantined=$(checks_py json-get "$T/out" quarantine)
expect_same_file "M/$lib_reverse" "M.healthy/$lib_reverse" "m.lib's reverse index is as it was"
expect_file "M/$quarantined/$lib_reverse" "its damaged original is in the quarantine"
expect_eq "$(checks_py reverse-index "M/$hpp_reverse")" "$mhex" "m.hpp's reverse index names the manifest again"
expect_same_file "M/$manifest_log" manifest.log "the manifest's log has its copy back"
expect_file "M/$quarantined/$orphan" "the orphaned manifest is in the quarantine"
expect_no_file "M/$orphan" "and out of the store"
expect_eq "$(checks_py reverse-index "M/$cpp_reverse" | grep -c "$(basename "$orphan")" || true)" 0 \
  "its line left m.cpp's reverse index"
run "$FP" --store M show --json m.hpp
expect_json "$T/out" "[(e['target'], e['role']) for e in d['consumers']] == [('T', 'compile')]" "m.hpp is found as T's compile input again"
run "$FP" --store M fsck --repair
expect_rc 0 "a second fsck --repair of the manifests"
expect_in out "no problems" "finds nothing left"

# A manifest damaged since it was written: quarantined, never deleted; its
# product keeps its events, and fsck says their inputs are lost.
rm -rf M && cp -a M.healthy M && rm -f "M/$orphan"
# A byte of its last raw digest: it still decodes, its digest differs.
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[-5] ^= 0x55; open(sys.argv[1], "wb").write(b)' \
  "M/$manifest"
cp "M/$manifest" damaged.manifest
run "$FP" --store M fsck --json
expect_rc 1 "fsck of a damaged manifest"
expect_json "$T/out" "any(p['file'] == '$manifest' and p['kind'] == 'damage' and 'digest' in p['problem'] for p in d['problems'])" \
  "names the manifest whose bytes no longer match its name"
run "$FP" --store M fsck --repair --json
quarantined=$(checks_py json-get "$T/out" quarantine)
expect_same_file "M/$quarantined/$manifest" damaged.manifest "the damaged manifest is in the quarantine, byte for byte"
run "$FP" --store M fsck
expect_rc 1 "fsck after quarantining a manifest its product names"
expect_in out "inputs of what was made from it are lost" "says what is lost"
run "$FP" --store M show m.out
expect_rc 0 "the product is still recorded"

run "$FP" --store S fsck extra
expect_rc 2 "fsck with an argument is a usage error"

finish
