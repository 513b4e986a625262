# Injection into projects that never mention Fingerprint
# (CMAKE_PROJECT_TOP_LEVEL_INCLUDES): our own plain project linking the
# installed greet library, and GoogleTest's sources as Debian ships them, a
# project we did not write.
source "$(dirname "$0")/lib.sh" "$@"

configure "$SRC/examples/greet" "$T/b-greet"
build "$T/b-greet"
install_tree "$T/b-greet"

configure "$HERE/projects/plain" "$T/b-plain" -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$MODULE"
expect_in out "Fingerprinting 1 targets" "the injected module hooked the plain project"
build "$T/b-plain"
query "$T/greet.json" consumers --json "$T/prefix/lib/libgreet.so"
expect_rc 0 "consumers of the installed libgreet.so"
expect_json "$T/greet.json" 'any(e["project"] == "plain" and e["target"] == "plain" for e in d)' \
  "the injected project's consumption of the installed library is recorded"

# The CTest round trips, which the project never asked for: -DFINGERPRINT_TESTS=ON.
run ctest --test-dir "$T/b-plain" -N
expect_in out "Total Tests: 0" "without FINGERPRINT_TESTS the unmodified project has no tests"
configure "$HERE/projects/plain" "$T/b-plain" -DFINGERPRINT_TESTS=ON
build "$T/b-plain"
run ctest --test-dir "$T/b-plain" --output-on-failure
expect_rc 0 "the round trip of the injected project's target passes"
expect_in out "fingerprint.plain" "FINGERPRINT_TESTS=ON adds fingerprint.plain"
printf 'x' >>"$T/b-plain/plain"
run ctest --test-dir "$T/b-plain" --output-on-failure
expect_rc 8 "and fails once the program is not the bytes its build recorded"

# GoogleTest from /usr/src/googletest (Debian's googletest package).
gtest_src=/usr/src/googletest
if [[ ! -f $gtest_src/CMakeLists.txt ]]; then
  fail "$gtest_src is missing: install Debian's googletest package (tools/test.sh does)"
  finish
fi
configure "$gtest_src" "$T/b-gtest" -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$MODULE" -DBUILD_GMOCK=OFF \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=Release
build "$T/b-gtest"
gtest_lib=$(find "$T/b-gtest" -name 'libgtest.so*' -type f | head -1)
query "$T/gtest.json" show --json "$gtest_lib"
expect_rc 0 "GoogleTest's libgtest.so is recorded"
expect_json "$T/gtest.json" 'd["producers"][0]["target"] == "gtest"' "produced by target gtest"
query "$T/gtest-consumers.json" consumers --json "$gtest_lib"
expect_json "$T/gtest-consumers.json" 'any(e["target"] == "gtest_main" for e in d)' "gtest_main consumed libgtest.so"
libstdcxx=$(realpath "$(g++ -print-file-name=libstdc++.so)")
query "$T/libstdcxx.json" consumers --json "$libstdcxx"
expect_rc 0 "the system's libstdc++ (origin unknown) is recorded"
expect_json "$T/libstdcxx.json" 'any(e["target"] == "gtest" and e["project"] == "googletest-distribution" for e in d)' \
  "GoogleTest's consumption of the installed libstdc++ is recorded"

finish
