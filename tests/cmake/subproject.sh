# This repository added with add_subdirectory(): the runner built in the
# same tree is used (built before the first hooked link), and the runner's
# own targets are not fingerprinted. The parent's cache stays the parent's:
# its CMAKE_BUILD_TYPE (given or empty) and the OpenSSL it found itself.
source "$(dirname "$0")/lib.sh" "$@"

# cache_value BUILD NAME: NAME's value in BUILD's CMakeCache.txt.
cache_value() {
  sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt"
}

configure "$HERE/projects/with_checkout" "$T/b" -DFINGERPRINT_CHECKOUT="$SRC" -DCMAKE_BUILD_TYPE=Release
expect_in out "Fingerprinting 2 targets into $FINGERPRINT_DIR with $T/b/fingerprint/runner/fingerprint" \
  "the in-tree runner is used for the project's two targets, into the environment's store"
expect_eq "$(cache_value "$T/b" CMAKE_BUILD_TYPE)" Release "the parent's CMAKE_BUILD_TYPE=Release is kept"
build "$T/b" -j 2
expect_not_in both "warning:" "the static runner (and everything else) builds without a warning"
run "$FP" show --json "$T/b/checkout_app"
expect_rc 0 "the project's program is recorded"
run "$FP" consumers --json "$T/b/libcheckout_lib.a"
expect_in out '"target": "checkout_app"' "its consumption of the project's archive is recorded"
run "$FP" show "$T/b/fingerprint/runner/fingerprint"
expect_rc 1 "the runner itself is not fingerprinted"

# A parent with no build type that found the shared OpenSSL itself: both
# stay as they are, and the in-tree runner is linked dynamically instead.
configure "$HERE/projects/with_checkout" "$T/c" -DFINGERPRINT_CHECKOUT="$SRC" -DWITH_CHECKOUT_OPENSSL=ON \
  -DFINGERPRINT_WITH_POSTGRESQL=OFF
parent_openssl=$(sed -n 's/^-- with_checkout: OpenSSL //p' "$T/out")
expect_in out "the runner is linked dynamically" "the subproject says why its runner is not static"
for pass in first second; do
  if [[ $pass == second ]]; then
    configure "$HERE/projects/with_checkout" "$T/c"
  fi
  expect_eq "$(cache_value "$T/c" CMAKE_BUILD_TYPE)" "" "$pass configure: the parent's empty CMAKE_BUILD_TYPE is kept"
  expect_eq "$(cache_value "$T/c" OPENSSL_CRYPTO_LIBRARY);$(cache_value "$T/c" OPENSSL_SSL_LIBRARY)" "$parent_openssl" \
    "$pass configure: the parent's OpenSSL cache entries are kept"
done
case $parent_openssl in
  *.so*) ok "the parent found the shared OpenSSL: $parent_openssl" ;;
  *) fail "the parent should have found the shared OpenSSL, found '$parent_openssl'" ;;
esac
build "$T/c" -j 2
run "$FP" show --json "$T/c/checkout_app"
expect_rc 0 "the project's program is recorded by the dynamically linked in-tree runner"

finish
