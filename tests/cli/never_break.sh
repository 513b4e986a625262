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

# installed: an unwritable store, or files that are not regular, warn only.
mkdir -p good
run "$FP" --store "$S" record --project p --target t --build-id 1 --build-dir "$T" --produced liba.a
mkfifo fifo
for store in "$bad_store" "$S"; do
  run "$FP" --store "$store" installed --project p --build-dir "$T" -- "$T/liba.a" "$T/fifo" "$T/good" "$T/missing"
  expect_rc 0 "installed, store $store"
done

finish
