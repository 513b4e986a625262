# This repository added with add_subdirectory(): the runner built in the
# same tree is used (built before the first hooked link), and the runner's
# own targets are not fingerprinted.
source "$(dirname "$0")/lib.sh" "$@"

configure "$HERE/projects/with_checkout" "$T/b" -DFINGERPRINT_CHECKOUT="$SRC" -DCMAKE_BUILD_TYPE=Release
expect_in out "Fingerprinting 2 targets into the default store with $T/b/fingerprint/runner/fingerprint" \
  "the in-tree runner is used for the project's two targets"
build "$T/b" -j 2
run "$FP" show --json "$T/b/checkout_app"
expect_rc 0 "the project's program is recorded"
run "$FP" consumers --json "$T/b/libcheckout_lib.a"
expect_in out '"target": "checkout_app"' "its consumption of the project's archive is recorded"
run "$FP" show "$T/b/fingerprint/runner/fingerprint"
expect_rc 1 "the runner itself is not fingerprinted"

finish
