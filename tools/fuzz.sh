#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz for longer than their fuzz.<name>
# tests do: tools/fuzz.sh [target|all] [seconds per target] (default: all,
# 600). Builds the fuzz build (clang, ASan + UBSan) if needed. The corpus
# grows in the build tree from run to run, seeded by tests/fuzz/corpus;
# FINGERPRINT_FUZZ_JOBS=N (default 1) runs N jobs per target in parallel.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$top/tools/deps.sh"

targets=(event format depfile cmdline launch)
which=${1:-all}
seconds=${2:-600}
jobs=${FINGERPRINT_FUZZ_JOBS:-1}
if [ "$which" != all ]; then
  if [[ " ${targets[*]} " != *" $which "* ]]; then
    echo "usage: tools/fuzz.sh [all|$(IFS='|' && echo "${targets[*]}")] [seconds]" >&2
    exit 2
  fi
  targets=("$which")
fi
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ && "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: seconds and FINGERPRINT_FUZZ_JOBS must be positive whole numbers" >&2
  exit 2
fi

fingerprint_install_packages "${FINGERPRINT_BUILD_PACKAGES[@]}" "${FINGERPRINT_FUZZ_PACKAGES[@]}"
build=${FINGERPRINT_FUZZ_BUILD_DIR:-$top/build/fuzz}
if [ ! -f "$build/CMakeCache.txt" ]; then
  fingerprint_say "configuring the fuzz build in $build"
  CC=clang CXX=clang++ cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFINGERPRINT_BUILD_FUZZERS=ON -DFINGERPRINT_BUILD_TESTS=OFF >/dev/null
fi
fingerprint_say "building the fuzzers in $build"
cmake --build "$build" --target fingerprint_fuzzers

found=0
for name in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$name
  artifacts=$build/fuzz-artifacts/$name
  logs=$build/fuzz-logs/$name
  mkdir -p "$corpus" "$artifacts" "$logs"
  options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -close_fd_mask=3
    -dict="$top/tests/fuzz/$name.dict" -artifact_prefix="$artifacts/")
  if [ "$jobs" -gt 1 ]; then
    # Each job writes fuzz-<n>.log into the working directory.
    options+=(-jobs="$jobs" -workers="$jobs")
  fi
  fingerprint_say "fuzzing $name for ${seconds}s ($jobs job(s)); corpus $corpus, logs $logs"
  status=0
  (cd "$logs" && "$build/tests/fuzz/${name}_fuzz" "${options[@]}" "$corpus" "$top/tests/fuzz/corpus/$name") || status=$?
  if [ -n "$(ls -A "$artifacts")" ]; then
    found=1
    fingerprint_say "$name: failing inputs in $artifacts (reproduce: $build/tests/fuzz/${name}_fuzz <file>):"
    ls -1 "$artifacts"
  elif [ "$status" -ne 0 ]; then
    found=1
    fingerprint_say "$name: the fuzzer failed ($status) without an input; see above and $logs"
  fi
done
exit "$found"
