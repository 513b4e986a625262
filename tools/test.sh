#!/usr/bin/env bash
# Builds everything (runner, tests, benchmarks) and runs the whole test
# suite. What CI runs (.ci/run).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$top/tools/deps.sh"

fingerprint_install_packages "${FINGERPRINT_BUILD_PACKAGES[@]}" "${FINGERPRINT_TEST_PACKAGES[@]}"

fingerprint_say "checking the C++ formatting (clang-format, .clang-format)"
cd "$top"
unformatted=$(git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run 2>&1 | grep -c 'warning:' || true)
if [ "$unformatted" -ne 0 ]; then
  git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run 2>&1 | grep 'warning:' | cut -d: -f1 | sort -u >&2
  echo "error: the files above are not clang-formatted (run: git ls-files '*.cpp' '*.hpp' | xargs clang-format -i)" >&2
  exit 1
fi

build=${FINGERPRINT_BUILD_DIR:-$top/build/test}
fingerprint_say "building runner, tests and benchmarks in $build"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFINGERPRINT_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build"

fingerprint_say "running the test suite"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
