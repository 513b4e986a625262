#!/usr/bin/env bash
# Builds everything (runner, tests, benchmarks) and runs the whole test
# suite. What CI runs (.ci/run).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$top/tools/deps.sh"

fingerprint_install_packages "${FINGERPRINT_BUILD_PACKAGES[@]}" "${FINGERPRINT_TEST_PACKAGES[@]}"

fingerprint_say "checking the C++ formatting (clang-format, .clang-format)"
cd "$top"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  sources=$(git ls-files '*.cpp' '*.hpp')
else
  sources=$(find src runner tests examples -name '*.cpp' -o -name '*.hpp')
fi
unformatted=$(echo "$sources" | xargs clang-format --dry-run 2>&1 | { grep 'warning:' || true; } | cut -d: -f1 | sort -u)
if [ -n "$unformatted" ]; then
  echo "$unformatted" >&2
  echo "error: the files above are not clang-formatted (run: clang-format -i <file>...)" >&2
  exit 1
fi

# The reference validators the tests run on what `export` writes (CycloneDX's
# own library and its ajv schema validator), from npm's registry at the
# versions tests/validate/package-lock.json pins, into build/validate:
# installed again only when the lockfile changed.
validators=$top/build/validate
if ! command -v npm >/dev/null; then
  fingerprint_install_packages nodejs npm
fi
if ! cmp -s "$top/tests/validate/package-lock.json" "$validators/package-lock.json" \
  || [ ! -d "$validators/node_modules/@cyclonedx/cyclonedx-library" ]; then
  fingerprint_say "installing the reference validators (npm ci, tests/validate/package-lock.json) in $validators"
  mkdir -p "$validators"
  cp "$top/tests/validate/package.json" "$top/tests/validate/package-lock.json" "$validators/"
  (cd "$validators" && npm ci --no-audit --no-fund --loglevel=error)
else
  fingerprint_say "reference validators already installed in $validators"
fi
export FINGERPRINT_NODE_MODULES=$validators/node_modules

build=${FINGERPRINT_BUILD_DIR:-$top/build/test}
fingerprint_say "building runner, tests and benchmarks in $build"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFINGERPRINT_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build"

fingerprint_say "running the test suite"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer, and
# the concurrent tests under ThreadSanitizer. FINGERPRINT_SANITIZERS=0 skips
# them for a quick local run; CI always runs them.
# They are built at -O1 with line tables only (-g1), as the sanitizers'
# manuals advise: a translation unit compiles in 19 s instead of 42 s at
# -O2 -g (graph.cpp under ASan + UBSan, measured), and the reports still
# name file and line.
if [ "${FINGERPRINT_SANITIZERS:-1}" != 0 ]; then
  sanitized_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
  asan=$build-asan
  fingerprint_say "building with AddressSanitizer + UndefinedBehaviorSanitizer in $asan"
  cmake -S "$top" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitized_flags[@]}" \
    -DFINGERPRINT_SANITIZE=address,undefined >/dev/null
  cmake --build "$asan"
  fingerprint_say "running the test suite under ASan + UBSan (all but cmake.subproject, which builds its own unsanitized runner)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$(nproc)" -E '^cmake\.subproject$'

  tsan=$build-tsan
  fingerprint_say "building with ThreadSanitizer in $tsan"
  cmake -S "$top" -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitized_flags[@]}" \
    -DFINGERPRINT_SANITIZE=thread >/dev/null
  cmake --build "$tsan" --target fingerprint_tests fingerprint
  fingerprint_say "running the concurrent tests under TSan"
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir "$tsan" --output-on-failure -j "$(nproc)" \
    -R 'unit\.(DirectoryStore\.AppendsDuringCompaction|InputJournal\.AppendsDuringFolds|DigestFiles|DigestCache|Parallel|Hasher)|cli\.(record_show|digest)'
fi

# The libFuzzer targets (tests/fuzz), built with clang, ASan and UBSan: each
# over its seed corpus, then a short run from it. FINGERPRINT_FUZZ=0 skips
# them; tools/fuzz.sh runs them for longer.
if [ "${FINGERPRINT_FUZZ:-1}" != 0 ]; then
  fingerprint_install_packages "${FINGERPRINT_FUZZ_PACKAGES[@]}"
  fuzz=$build-fuzz
  fingerprint_say "building the fuzzers with clang, ASan + UBSan in $fuzz"
  CC=clang CXX=clang++ cmake -S "$top" -B "$fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFINGERPRINT_BUILD_FUZZERS=ON -DFINGERPRINT_BUILD_TESTS=OFF >/dev/null
  cmake --build "$fuzz" --target fingerprint_fuzzers
  fingerprint_say "running each fuzzer over its seed corpus, then a short run from it"
  ctest --test-dir "$fuzz" --output-on-failure -j "$(nproc)" -L fuzz
fi
