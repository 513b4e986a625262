#!/usr/bin/env bash
# Bad files, bad digest arguments and usage errors: a clear error, the right
# exit code, and a store left byte-for-byte unchanged.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

S=$T/store
B=$T/bad
printf 'good\n' >good
good=$(sha256sum good | cut -c1-64)
run "$FP" --store "$S" record --project p --target t --build-id 1 --produced good
expect_rc 0 "record one good file (so the store is not empty)"
expect_file "$S/objects/sha256/${good:0:2}/$good.jsonl" "the good file's event"
if [[ ! -d $S ]]; then
  fail "no store was created: the rest of the test cannot run"
  exit 1
fi

mkdir -p "$B/dir" cache
printf 'secret\n' >"$B/unreadable"
chmod 000 "$B/unreadable"
mkfifo "$B/fifo"
ln -s "$B/nowhere" "$B/dangling"
ln -s "$B/loop-b" "$B/loop-a"
ln -s "$B/loop-a" "$B/loop-b"

# The unreadable case: root reads mode-000 files, so run it as nobody, in a
# temp dir and store that nobody can traverse and write.
as_unreadable=()
if [[ $(id -u) == 0 ]]; then
  as_unreadable=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  chmod 777 "$T"
  chmod -R a+rwX "$S" cache
  run "${as_unreadable[@]}" "$FP" --version
  expect_rc 0 "the runner can be run as user nobody (needed for the unreadable-file case)"
  run "${as_unreadable[@]}" cat "$B/unreadable"
  expect_rc 1 "user nobody cannot read the mode-000 file (the case is meaningful)"
else
  run cat "$B/unreadable"
  expect_rc 1 "this user cannot read the mode-000 file (the case is meaningful)"
fi
snapshot "$S" >before

cases=(
  "missing|$B/missing|No such file"
  "directory|$B/dir|is a directory"
  "unreadable|$B/unreadable|Permission denied"
  "FIFO|$B/fifo|FIFO"
  "dangling symlink|$B/dangling|dangling"
  "symlink loop|$B/loop-a|loop"
  "device|/dev/null|character device"
)
for entry in "${cases[@]}"; do
  IFS='|' read -r kind path reason <<<"$entry"
  as=()
  if [[ $kind == unreadable ]]; then as=("${as_unreadable[@]}"); fi
  for how in produced consumed digest show verify; do
    case $how in
      produced) run "${as[@]}" "$FP" --store "$S" record --project p --target t --build-id 2 --produced good "$path" ;;
      consumed) run "${as[@]}" "$FP" --store "$S" record --project p --target t --build-id 2 --produced good --consumed "$path" ;;
      digest) run "${as[@]}" "$FP" --store "$S" digest "$path" ;;
      show) run "${as[@]}" "$FP" --store "$S" show "$path" ;;
      verify) run "${as[@]}" "$FP" --store "$S" verify "$path" ;;
    esac
    what="$how: $kind ($path)"
    expect_rc 1 "$what"
    if [[ $how == verify ]]; then
      # verify reports each file on stdout ("FILE: STATUS (why)"); the reason
      # may be there or on stderr.
      expect_in out "$path: " "$what: the report names the file"
      expect_in both "$reason" "$what: the reason is given"
    else
      expect_in err "fingerprint: " "$what: an error message"
      expect_in err "$path" "$what: the error names the file"
      expect_in err "$reason" "$what: the error gives the reason"
    fi
    expect_unchanged "$S" before "$what"
  done
done

# Digest arguments that are not sha256: + 64 lowercase hex (or 8 or more of
# its first ones): refused as usage errors (exit 2), never looked up on disk. Decoys that hold the recorded bytes of `good` are put
# where a lenient runner would look: a file with the argument's name in the
# cwd, and the store-relative path the traversal would reach.
upper=$(tr a-f A-F <<<"$good")
bad_digests=("sha256:abc" "sha256:../../etc/passwd" "sha256:$upper" "md9:$good")
for arg in "sha256:abc" "sha256:$upper" "md9:$good"; do
  cp good "$arg"
done
mkdir -p 'sha256:..' etc "$S/etc" "$S/objects/etc"
cp good etc/passwd
sed 's/"project":"p"/"project":"decoy"/' "$S/objects/sha256/${good:0:2}/$good.jsonl" >etc/passwd.jsonl
for planted in "$S/etc/passwd.jsonl" "$S/objects/etc/passwd.jsonl"; do cp etc/passwd.jsonl "$planted"; done
snapshot "$S" >before
for arg in "${bad_digests[@]}"; do
  for how in show consumers; do
    run "$FP" --store "$S" "$how" --json "$arg"
    expect_rc 2 "$how $arg is refused"
    expect_in err "fingerprint: " "$how $arg: an error message"
    expect_in err "$arg" "$how $arg: the message names the argument"
    expect_not_in out "$good" "$how $arg: the decoy holding the recorded bytes is not used"
    expect_not_in out "decoy" "$how $arg: no log outside objects/sha256/<2 hex>/ is read"
    expect_unchanged "$S" before "$how $arg"
  done
done
rm -rf 'sha256:..' etc "$S/etc" "$S/objects/etc"
for arg in "sha256:abc" "sha256:$upper" "md9:$good"; do rm -f "$arg"; done

# Usage errors: exit 2, a message, the store unchanged.
snapshot "$S" >before
run "$FP" --store "$S" shwo good
expect_rc 2 "unknown subcommand shwo"
expect_in err "did you mean 'show'" "shwo gets a suggestion"
expect_unchanged "$S" before "shwo"
run "$FP" --store "$S" record --project p --target t --build-id 3 --produce good
expect_rc 2 "record --produce (unknown option)"
expect_in err "did you mean '--produced'" "--produce gets a suggestion"
expect_unchanged "$S" before "record --produce"
run "$FP" --store "$S" record --target t --build-id 3 --produced good
expect_rc 2 "record without --project"
expect_in err "--project" "the message names --project"
expect_unchanged "$S" before "record without --project"
run "$FP" --store "$S" record --project p --build-id 3 --produced good
expect_rc 2 "record without --target"
expect_unchanged "$S" before "record without --target"
run "$FP" --store "$S" record --project p --target t --build-id 3
expect_rc 2 "record without --produced"
expect_unchanged "$S" before "record without --produced"
run "$FP" --store "$S" digest --jobs 0 good
expect_rc 2 "digest --jobs 0"
expect_in err "--jobs" "the message names --jobs"
expect_not_in out "$good" "digest --jobs 0 prints no digest"
run "$FP" --store "$S" show
expect_rc 2 "show without an argument"
run "$FP" --store "$S" verify
expect_rc 2 "verify without files or --build-dir"
expect_unchanged "$S" before "usage errors"

finish
