# FINGERPRINT_REQUIRED against a store that cannot be written (its parent is
# a regular file, which stops root too): OFF, the build succeeds with one
# warning per build; ON, the build fails with the runner's message.
source "$(dirname "$0")/lib.sh" "$@"

echo "not a directory" >"$T/blocker"
bad_store=$T/blocker/store

configure "$HERE/projects/small" "$T/off" -DFINGERPRINT_DIR="$bad_store"
build "$T/off"
expect_eq "$(grep -c 'warning: .*not fingerprinted' "$T/out")" 1 "one warning per build, not one per target (small_lib, small_app)"
expect_in out "FINGERPRINT_REQUIRED is OFF" "the warning says why the build goes on"
expect_in out "Not a directory" "and gives the runner's reason"
expect_file "$T/off/small_app" "the program was still built"

configure "$HERE/projects/small" "$T/on" -DFINGERPRINT_DIR="$bad_store" -DFINGERPRINT_REQUIRED=ON
run cmake --build "$T/on"
if ((RC == 0)); then
  fail "FINGERPRINT_REQUIRED=ON: the build succeeded against an unwritable store"
else
  ok "FINGERPRINT_REQUIRED=ON: the build failed"
fi
expect_in out "Not a directory" "the failure carries the runner's message"
expect_in out "FINGERPRINT_REQUIRED is ON" "and says the failure is on purpose"

# The same trees against a good store record normally.
configure "$HERE/projects/small" "$T/on" -DFINGERPRINT_DIR="$T/good"
build "$T/on"
FINGERPRINT_DIR=$T/good run "$FP" show "$T/on/small_app"
expect_rc 0 "with a writable store the program is recorded"

finish
