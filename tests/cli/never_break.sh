#!/usr/bin/env bash
# Without --required (FINGERPRINT_REQUIRED OFF) no input makes `launch` or
# `installed` fail the build step: what the linker left, what the store is,
# every failure is a warning, and the real command's own exit status is
# passed through unchanged. The warning that a target was not recorded is
# given once per build invocation, not once per target.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

S=$T/store
B=$T/build
mkdir -p "$B"
echo a >liba.a
echo li >li
echo "not a directory" >blocker
bad_store=$T/blocker/store

# A "linker": writes the -o file, and in the -Wl,--dependency-file= place
# what $LEFT says, then exits with $STATUS.
fake_linker fake-cc <<'EOF'
case $LEFT in
  directory) mkdir "$dep" ;;
  fifo) mkfifo "$dep" ;;
  nul) printf 'app: \\\n  %s \\\n  %s\0b.a\n' "$PWD/liba.a" "$PWD/li" >"$dep" ;;
esac
exit "${STATUS:-0}"
EOF

# launch_app [OPTION...]: links $B/app through fake-cc, a depfile driver.
launch_app() {
  run env "LEFT=${LEFT:-}" "STATUS=${STATUS:-0}" "$FP" --store "$S" launch --project p --target app \
    --output "$B/app" --build-dir "$B" --depfile-driver "$T/fake-cc" "$@" -- "$T/fake-cc" -o "$B/app" "$T/liba.a"
}
deps=$B/CMakeFiles/fingerprint/deps

# What the linker leaves at the dependency file's place: a directory (it
# was "internal error: basic_filebuf::underflow", exit 1), a FIFO (the open
# blocked until the timeout), each refused by name; the link line is read.
for left in directory fifo; do
  for required in "" --required; do
    what="a $left as the dependency file${required:+ (--required)}"
    rm -rf "$S"
    LEFT=$left launch_app $required
    expect_rc 0 "$what"
    expect_not_in err "internal error" "$what"
    expect_in err "warning: app: $deps/app." "$what: the warning names the file"
    expect_in err "not a regular file" "$what: and says what is wrong"
    run "$FP" --store "$S" show "$B/app"
    expect_rc 0 "$what: the program is recorded still"
    run "$FP" --store "$S" show --json liba.a
    expect_in out '"target": "app"' "$what: liba.a, on the link line, is recorded as an input"
    expect_eq "$(ls -A "$deps")" "" "$what: nothing is left in $deps"
  done
done

# A NUL byte in an input's name: that input is skipped, named with the NUL
# escaped, in a warning that ends its line; the rest is recorded (the whole
# target was dropped, and the warning cut at the NUL).
rm -rf "$S"
LEFT=nul launch_app
expect_rc 0 "a NUL byte in a dependency file's input"
expect_in err "$deps/app." "NUL: the warning names the dependency file"
expect_in err "NUL byte" "NUL: and the reason"
expect_in err "$T/li\\0b.a" "NUL: and the input, the NUL shown as \\0"
expect_eq "$(tr -cd '\0' <"$T/err" | wc -c)" 0 "NUL: no NUL byte on stderr"
expect_eq "$(tail -c1 "$T/err" | od -An -c | tr -d ' ')" '\n' "NUL: stderr ends with a newline"
expect_not_in err "not fingerprinted" "NUL: the target is fingerprinted"
run "$FP" --store "$S" show --json liba.a
expect_rc 0 "NUL: liba.a is recorded"
expect_in out "\"product\"" "NUL: as an input of the program"
run "$FP" --store "$S" show "$B/app"
expect_rc 0 "NUL: the program is recorded"

# The command's own status is passed through, whatever it left.
for left in "" directory; do
  LEFT=$left STATUS=3 launch_app
  expect_rc 3 "a link that fails with 3${left:+ leaving a $left} still fails with 3"
done
rm -rf "$deps"

# One build invocation, many hooks in parallel, a store that cannot be
# written: one full warning, not one per target; the next invocation's first
# hook says how many were not recorded.
if ! command -v ninja >/dev/null; then
  fail "ninja is needed for the one-warning-per-invocation case"
  finish
fi
mkdir -p many
targets=20
{
  echo "rule link"
  echo "  command = $FP --store $bad_store launch --project p --target \$target --output \$out --build-dir $T/nb -- cp \$in \$out"
  for ((i = 0; i < targets; i++)); do
    echo "build many/t$i: link liba.a"
    echo "  target = t$i"
  done
} >build.ninja
run ninja -j4
expect_rc 0 "$targets hooks of one ninja run against an unwritable store"
expect_eq "$(grep -c 'not fingerprinted' "$T/out" || true)" 1 "one warning says a target was not fingerprinted"
expect_in out "Not a directory" "it gives the reason"
expect_in out "counted, not reported" "and says the others are not reported one by one"
expect_eq "$(ls many | wc -l)" "$targets" "every target was built"
build=$(sed -n 's/^\([0-9]*\) \([0-9a-f]*\) .*/\1-\2/p' nb/CMakeFiles/fingerprint/build-sequence)
run ninja -t clean
run ninja -j4
expect_rc 0 "the next ninja run"
expect_eq "$(grep -c "$targets targets of build $build were not fingerprinted" "$T/out" || true)" 1 \
  "its first hook says how many targets of the last build were not recorded, once"
expect_eq "$(grep -c ': not fingerprinted' "$T/out" || true)" 1 "and it warns once for its own build"

# A format-1 store, as the runner before input manifests (commit 7a58005)
# wrote it: consumed events in the inputs' logs, no manifests/ nor inputs/.
# It reads as it is, with nothing converted and nothing changed by reading;
# its first write raises its format file to the current format, 4, in place
# (its creation time kept), and old and new edges answer side by side. A
# runner of format 1 then refuses the store ("store format 4 is newer than
# this fingerprint supports (1..1)") rather than misreading it.
F=$T/format1
lib_hex=3042df804ec919387b6c33f7111f6dd50b9d9c14fb8b513828077c6ef72ffeae
app_hex=4be899fcc231fd127a47cb11e09cd477866200e166056a147882be4aa4fda744
mkdir -p "$F/objects/sha256/30" "$F/objects/sha256/4b" "$F/builds/app" "$F/builds/lib" old
printf 'lib a\n' >old/liba.a
printf 'app v1\n' >old/app
cat >"$F/fingerprint-store.json" <<'FORMAT'
{
  "format": 1,
  "created": "2026-12-01T15:15:26.898Z",
  "layout": "objects/<algorithm>/<2 hex>/<hex>.jsonl; builds/<project>/<build id>.jsonl"
}
FORMAT
lib_produced='{"v":1,"event":"produced","digest":"sha256:3042df804ec919387b6c33f7111f6dd50b9d9c14fb8b513828077c6ef72ffeae","size":6,"path":"/tmp/fp-format1/liba.a","project":"lib","version":"","target":"a","build":"1","build_dir":"/tmp/fp-format1","host":"vm","time":"2026-12-01T15:15:26.898Z"}'
app_consumed='{"v":1,"event":"consumed","digest":"sha256:3042df804ec919387b6c33f7111f6dd50b9d9c14fb8b513828077c6ef72ffeae","size":6,"path":"/tmp/fp-format1/liba.a","project":"app","version":"","target":"app","build":"1","build_dir":"/tmp/fp-format1","host":"vm","time":"2026-12-01T15:15:26.913Z","product":"sha256:4be899fcc231fd127a47cb11e09cd477866200e166056a147882be4aa4fda744"}'
app_produced='{"v":1,"event":"produced","digest":"sha256:4be899fcc231fd127a47cb11e09cd477866200e166056a147882be4aa4fda744","size":7,"path":"/tmp/fp-format1/app","project":"app","version":"","target":"app","build":"1","build_dir":"/tmp/fp-format1","host":"vm","time":"2026-12-01T15:15:26.913Z"}'
printf '%s\n' "$lib_produced" "$app_consumed" >"$F/objects/sha256/30/$lib_hex.jsonl"
printf '%s\n' "$app_produced" >"$F/objects/sha256/4b/$app_hex.jsonl"
printf '%s\n' "$app_produced" "$app_consumed" >"$F/builds/app/1.jsonl"
printf '%s\n' "$lib_produced" >"$F/builds/lib/1.jsonl"
cp -a "$F" format1.orig

snapshot "$F" >format1.before
run "$FP" --store "$F" show --json old/liba.a
expect_rc 0 "format 1: show of the library"
expect_json_each "$T/out" <<'CHECKS'
format 1: its producer :: [e['project'] for e in d['producers']] == ['lib']
format 1: its consumed event reads as a link edge of app :: [(e['project'], e['build'], e.get('role', 'link')) for e in d['consumers']] == [('app', '1', 'link')]
CHECKS
run "$FP" --store "$F" fsck --json
expect_rc 0 "format 1: fsck"
expect_json "$T/out" "d['problems'] == [] and d['logs'] == 2 and d['manifests'] == 0 and d['events'] == 6" \
  "format 1: no problems, 2 logs, no manifests, 6 events"
run "$FP" --store "$F" gc --dry-run --keep-builds 1
expect_rc 0 "format 1: gc --dry-run"
expect_unchanged "$F" format1.before "format 1: reading it (show, fsck, gc --dry-run) changes nothing"

printf 'b source\n' >old/b.cpp
printf 'app v2\n' >old/app
# In build 1's tree (the old store's), so that --keep-builds 1 below, which
# counts per build tree, keeps build 2 alone.
run "$FP" --store "$F" record --project app --target app --build-id 2 --build-dir /tmp/fp-format1 \
  --produced old/app --consumed old/liba.a --compiled old/b.cpp
expect_rc 0 "format 1: the first write to it"
expect_json_each "$F/fingerprint-store.json" <<'CHECKS'
format 1 -> 4: its format file says format 4 :: d['format'] == 4
format 1 -> 4: it keeps its creation time :: d['created'] == '2026-12-01T15:15:26.898Z'
format 1 -> 4: it says when it was upgraded :: 'upgraded' in d
format 1 -> 4: its layout names the new trees :: 'manifests/' in d['layout'] and 'inputs/<algorithm>/journal' in d['layout'] and 'builds.recent' in d['layout']
CHECKS
expect_eq "$(find "$F" -maxdepth 1 -name 'fingerprint-store.json.*' | wc -l)" 0 "format 1 -> 4: no temporary file is left"
kept=1
for file in "objects/sha256/30/$lib_hex.jsonl" "objects/sha256/4b/$app_hex.jsonl" builds/app/1.jsonl builds/lib/1.jsonl; do
  size=$(stat -c %s "format1.orig/$file")
  if ! cmp -s <(head -c "$size" "$F/$file") "format1.orig/$file"; then
    kept=0
  fi
done
expect_eq "$kept" 1 "format 1 -> 4: every old log keeps its lines byte for byte (nothing converted)"
run "$FP" --store "$F" show --json old/liba.a
expect_json "$T/out" "sorted((e['build'], e.get('role', 'link')) for e in d['consumers']) == [('1', 'link'), ('2', 'link')]" \
  "format 1 -> 4: the library's old consumed edge and its new manifest edge answer together"
run "$FP" --store "$F" show --json old/b.cpp
expect_json "$T/out" "[(e['build'], e['role']) for e in d['consumers']] == [('2', 'compile')]" \
  "format 1 -> 4: the new compile edge answers"
run "$FP" --store "$F" fsck --json
expect_rc 0 "format 1 -> 4: fsck of the mixed store"
expect_json "$T/out" "d['problems'] == [] and d['manifests'] == 1 and d['journaled_manifests'] == 1" \
  "format 1 -> 4: no problems, one manifest, in the reverse index's journal"
run "$FP" --store "$F" gc --keep-builds 1 --json
expect_rc 0 "format 1 -> 4: gc of the old build"
expect_json "$T/out" "d['builds_dropped'] == 1 and d['manifests_removed'] == 0" \
  "format 1 -> 4: app build 1 goes, build 2's manifest stays"
run "$FP" --store "$F" fsck
expect_rc 0 "format 1 -> 4: fsck after gc"
run "$FP" --store "$F" show --json old/liba.a
expect_json "$T/out" "[e['build'] for e in d['consumers']] == ['2']" "format 1 -> 4: only the new edge is left"

# installed: an unwritable store, or files that are not regular, warn only.
mkdir -p good
run "$FP" --store "$S" record --project p --target t --build-id 1 --build-dir "$T" --produced liba.a
mkfifo fifo
for store in "$bad_store" "$S"; do
  run "$FP" --store "$store" installed --project p --build-dir "$T" -- "$T/liba.a" "$T/fifo" "$T/good" "$T/missing"
  expect_rc 0 "installed, store $store"
done

finish
