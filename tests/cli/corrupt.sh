#!/usr/bin/env bash
# Corrupt data in the store: truncated logs, random bytes, valid JSON of the
# wrong shape, a 100 MB line, nesting 10,000 deep, a newer store format, a
# full disk and a file-size limit. Each gets a clear error naming the file
# (and line), never a crash or a hang; a healthy artifact's answers do not
# change; a hook that meets a corrupt log still appends and warns; fsck
# lists the damage and fsck --repair quarantines and rebuilds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
RUN_TIMEOUT=60

printf 'healthy\n' >h
printf 'victim\n' >a
printf 'consumer\n' >c
printf 'late consumer\n' >d
digest_of() { sha256sum "$1" | cut -c1-64; }
H=$(digest_of h)
A=$(digest_of a)
log_of() { echo "objects/sha256/${1:0:2}/$1.jsonl"; }

run "$FP" --store base record --project healthy --target t --build-id 1 --produced h
expect_rc 0 "record the healthy artifact"
run "$FP" --store base record --project p --target t --build-id 1 --produced a
expect_rc 0 "record the victim's producer"
run "$FP" --store base record --project q --target u --build-id 2 --produced c --consumed a
expect_rc 0 "record a consumer of the victim"
run "$FP" --store base show --json h
expect_rc 0 "show the healthy artifact"
cp "$T/out" healthy.json
run "$FP" --store base fsck
expect_rc 0 "fsck of the healthy store passes"
expect_in out "no problems" "fsck says there are no problems"

# A deterministic stream of "random" bytes (no /dev/urandom: reruns agree).
random_bytes() {
  checks_py random-bytes "$1" "$2"
}

# corrupt NAME: a fresh copy of the base store in $S with the victim's log
# replaced by what `make_NAME` writes to stdout.
make_truncated() { head -c 150 "base/$(log_of "$A")"; }
make_random() { random_bytes victim 4096; }
make_array() { echo '[1,2,3]'; }
make_string() { echo '"just a string"'; }
make_missing_fields() { echo '{"v":1,"event":"produced"}'; }
make_wrong_type() {
  echo "{\"v\":1,\"event\":\"produced\",\"digest\":\"sha256:$A\",\"size\":\"big\",\"path\":\"/a\",\"project\":\"p\",\"target\":\"t\",\"build\":\"1\",\"build_dir\":\"/b\",\"host\":\"h\",\"time\":\"2026-11-30T00:00:00.000Z\"}"
}
make_wrong_digest() { sed "s/$A/$H/" "base/$(log_of "$A")"; }
make_huge_line() {
  cat "base/$(log_of "$A")"
  head -c $((100 * 1024 * 1024)) /dev/zero | tr '\0' 'x'
  echo
}
make_deep_array() {
  checks_py deep-array
}
make_deep_object() {
  cat "base/$(log_of "$A")"
  checks_py deep-object
}
make_nul_bytes() {
  cat "base/$(log_of "$A")"
  printf '{"v":1,\0\0\0"event"}\n'
}

cases=(truncated random array string missing_fields wrong_type wrong_digest huge_line deep_array deep_object nul_bytes)
tried=0
for name in "${cases[@]}"; do
  rm -rf S
  cp -a base S
  victim="S/$(log_of "$A")"
  "make_$name" >"$victim.new"
  mv "$victim.new" "$victim"
  cp "$victim" corrupted
  tried=$((tried + 1))

  # The healthy artifact: the same answer, byte for byte.
  run "$FP" --store S show --json h
  expect_rc 0 "$name: show of the healthy artifact still works"
  expect_same_file "$T/out" healthy.json "$name: show of the healthy artifact is unchanged"

  # The victim: an answer or a clear error, in bounded time, never a crash.
  run "$FP" --store S show "sha256:$A"
  if ((RC != 0 && RC != 1)); then fail "$name: show of the corrupt log exited $RC (a crash or a hang)"; fi
  if [[ $name != truncated ]]; then
    expect_in err "$(log_of "$A")" "$name: the warning names the corrupt log"
  fi
  case $name in
    huge_line) expect_in err "longer than" "$name: says the line is too long" ;;
    deep_array | array | string) expect_in err "must be a JSON object" "$name: says an event must be an object" ;;
    missing_fields) expect_in err "missing field" "$name: names what is missing" ;;
    wrong_type) expect_in err "size" "$name: names the field of the wrong type" ;;
  esac
  run "$FP" --store S consumers --json "sha256:$A"
  if ((RC != 0 && RC != 1)); then fail "$name: consumers exited $RC"; fi

  # fsck lists it and fails; it changes nothing.
  snapshot S >before
  run "$FP" --store S fsck --json
  expect_rc 1 "$name: fsck finds the damage and exits 1"
  expect_json "$T/out" "any(p['file'] == '$(log_of "$A")' for p in d['problems'])" "$name: fsck names the victim's log"
  if [[ $name == wrong_digest ]]; then
    expect_in out "another artifact" "$name: fsck says the events belong to another artifact"
  fi
  expect_unchanged S before "$name: fsck without --repair changes nothing"

  # A hook that meets the corrupt log appends and warns. A consumer's call
  # writes to its input manifest, not to the inputs' logs (format 2): the
  # victim's own log is met by a call that produces it again.
  run "$FP" --store S record --project r --target v --build-id 3 --produced d --consumed a
  expect_rc 0 "$name: a hook consuming the damaged artifact still records"
  run "$FP" --store S record --project p --target t --build-id 3 --produced a
  expect_rc 0 "$name: a hook producing the damaged artifact again still records"
  if [[ $name != wrong_digest ]]; then # (its last line reads well: nothing to see)
    expect_in err "fsck --repair" "$name: the hook warns and says how to repair"
  fi
  expect_eq "$(tail -c 1 "$victim" | od -An -c | tr -d ' ')" '\n' "$name: the hook's event ends the log as a whole line"

  # fsck --repair: the corrupt original goes to quarantine, byte for byte,
  # and the log is rebuilt from its readable lines and the build indexes.
  run "$FP" --store S fsck --repair --json
  expect_rc 0 "$name: fsck --repair repairs everything"
  quarantined=$(checks_py json-get "$T/out" quarantine)
  expect_file "S/$quarantined/$(log_of "$A")" "$name: the original log is in the quarantine"
  if cmp -s <(head -c "$(stat -c %s corrupted)" "S/$quarantined/$(log_of "$A")") corrupted; then
    ok "$name: the quarantined copy starts with the corrupt bytes as they were"
  else
    fail "$name: the quarantined copy differs from the corrupt log"
  fi
  run "$FP" --store S fsck
  expect_rc 0 "$name: fsck after the repair finds nothing"
  run "$FP" --store S show --json "sha256:$A"
  expect_rc 0 "$name: the victim answers after the repair"
  expect_json "$T/out" "sorted((e['project'], e['build']) for e in d['producers']) == [('p', '1'), ('p', '3')] and sorted(e['project'] for e in d['consumers']) == ['q', 'r']" \
    "$name: producers p 1 (restored from the build index) and p 3, and consumers q, r (from their manifests) answer"
done
expect_eq "$tried" 11 "corrupt logs tried"

# A build index that is corrupt: the artifact logs rebuild it.
rm -rf S && cp -a base S
random_bytes index 2048 >S/builds/q/2.jsonl
run "$FP" --store S fsck --repair --json
expect_rc 0 "a corrupt build index is repaired"
expect_json "$T/out" "d['events_restored'] == 1" "its event (q's produced, with its inputs) comes back from the artifact logs"
expect_eq "$(sort S/builds/q/2.jsonl)" "$(sort base/builds/q/2.jsonl)" "the rebuilt index is the index as it was"

# A symbolic link and a stray file where logs belong: moved, not followed.
rm -rf S && cp -a base S
ln -s /etc/passwd "S/objects/sha256/${H:0:2}/$(printf '%064d' 0).jsonl"
printf 'stray\n' >S/builds/q/notes.txt
run "$FP" --store S fsck
expect_rc 1 "fsck reports a symbolic link and a stray file"
expect_in out "symbolic link" "the symbolic link is named as such"
expect_in out "notes.txt" "the stray file is named"
# A symbolic link named like a build index is not skipped by the queries:
# they say what it is (fsck reports it as a stray).
ln -s /etc/passwd S/builds/q/9.jsonl
run "$FP" --store S builds
expect_rc 1 "builds over a build index that is a symbolic link"
expect_in err "symbolic link" "builds names the symbolic link"
run "$FP" --store S fsck --repair
expect_rc 0 "fsck --repair moves them aside"
expect_file /etc/passwd "the link's target is untouched"
if compgen -G "S/quarantine/*/builds/q/notes.txt" >/dev/null; then ok "the stray file is in the quarantine"; else fail "the stray file is not in the quarantine"; fi

# A newer store format: every command refuses with the file's name and
# changes nothing.
rm -rf S && cp -a base S
checks_py json-set S/fingerprint-store.json format 99
snapshot S >before
for command in "show h" "consumers h" "fsck" "fsck --repair" "record --project p --target t --build-id 9 --produced h" "graph"; do
  read -ra words <<<"$command"
  run "$FP" --store S "${words[@]}"
  expect_rc 1 "newer format: $command exits 1"
  expect_in err "fingerprint-store.json" "newer format: $command names the format file"
  expect_in err "99" "newer format: $command says which format it found"
done
# A usage error is a usage error (exit 2) whatever the store's state:
# each command's own checks run before the store is opened.
for command in "gc --keep-builds x" "gc" "export --format spdx h" "export --format in-toto" "graph --format png" \
  "verify" "build list p b" "check h" "show" "why h"; do
  read -ra words <<<"$command"
  run "$FP" --store S "${words[@]}"
  expect_rc 2 "newer format, usage error: $command"
  expect_not_in err "fingerprint-store.json" "newer format, usage error: $command says nothing of the store"
done
expect_unchanged S before "newer format: the store is unchanged"

# A file-size limit (ulimit -f) during an append: a clear error, nothing
# appended, no partial line.
rm -rf S && cp -a base S
victim="S/$(log_of "$A")"
cp "$victim" before_limit
run prlimit --fsize=$(($(stat -c %s "$victim") + 20)) "$FP" --store S record --project r --target v --build-id 4 --produced a
expect_rc 1 "a file-size limit makes record fail"
expect_in err "file size limit" "the error says it is the file size limit"
expect_same_file "$victim" before_limit "the victim's log is unchanged (no partial line)"

# A full disk: the store on a tiny tmpfs, filled up. Needs mount (root with
# CAP_SYS_ADMIN); elsewhere the case says SKIP loudly.
if [[ $(id -u) == 0 ]] && mkdir -p full && mount -t tmpfs -o size=256k tmpfs full 2>/dev/null; then
  cleanup_mount() { umount "$T/full" 2>/dev/null || true; }
  trap 'cleanup_mount; on_exit' EXIT
  cp -a base full/S
  victim="full/S/$(log_of "$A")"
  # Empty lines (which readers skip) bring the log to 100 bytes short of a
  # page, so the next event's line starts in the page's room and runs out
  # of disk in the middle: a short write, which must be taken back.
  while (($(stat -c %s "$victim") % 4096 != 3996)); do echo >>"$victim"; done
  dd if=/dev/zero of=full/filler bs=4k count=1000 2>/dev/null || true
  cp "$victim" before_full
  run "$FP" --store full/S record --project r --target v --build-id 5 --produced a
  expect_rc 1 "a full disk makes record fail"
  expect_in err "space left" "the error says the disk is full"
  run cmp "$victim" before_full
  expect_rc 0 "a full disk leaves the victim's log unchanged (a partial line was taken back or never written)"
  run "$FP" --store full/S fsck
  expect_rc 0 "fsck finds the store on the full disk healthy"
  cleanup_mount
  trap on_exit EXIT
else
  echo "SKIP: full-disk case: cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN); the file-size-limit case above covers the short write"
fi

finish
