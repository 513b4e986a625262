#!/usr/bin/env bash
# Wall time of building a generated project of N targets from clean, with and
# without fingerprinting, alternating A B A B, medians and their ratio. A
# benchmark, not a test: it asserts nothing about time.
#
#   tests/bench/build_overhead.sh <prefix with bin/fingerprint> [targets=50] [runs=7]
set -euo pipefail
prefix=$(cd "${1:?usage: $0 PREFIX [TARGETS] [RUNS]}" && pwd)
targets=${2:-50}
runs=${3:-7}
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A realistic mix: a third static libraries, a third shared libraries that
# link one of them, a third programs that link a shared and a static one.
# Each source includes <string> and <vector>, so compiling costs what small
# real translation units cost.
src=$work/src
mkdir -p "$src"
third=$((targets / 3))
{
  echo "cmake_minimum_required(VERSION 3.25)"
  echo "project(overhead LANGUAGES CXX)"
  echo "if(WITH_FINGERPRINT)"
  echo "  find_package(Fingerprint REQUIRED)"
  echo "  include(Fingerprint)"
  echo "endif()"
} >"$src/CMakeLists.txt"
for ((i = 0; i < targets; i++)); do
  cat >"$src/t$i.cpp" <<CPP
#include <string>
#include <vector>
std::string f$i(int n) { std::vector<std::string> v(n, "x$i"); std::string s; for (auto& e : v) s += e; return s; }
CPP
  if ((i < third)); then
    echo "add_library(t$i STATIC t$i.cpp)" >>"$src/CMakeLists.txt"
    echo "set_property(TARGET t$i PROPERTY POSITION_INDEPENDENT_CODE ON)" >>"$src/CMakeLists.txt"
  elif ((i < 2 * third)); then
    echo "add_library(t$i SHARED t$i.cpp)" >>"$src/CMakeLists.txt"
    echo "target_link_libraries(t$i PRIVATE t$((i - third)))" >>"$src/CMakeLists.txt"
  else
    echo "int main() { return f$i(1).empty() ? 1 : 0; }" >>"$src/t$i.cpp"
    echo "add_executable(t$i t$i.cpp)" >>"$src/CMakeLists.txt"
    echo "target_link_libraries(t$i PRIVATE t$(((i - 2 * third) % third + third)) t$(((i - 2 * third) % third)))" >>"$src/CMakeLists.txt"
  fi
done

export FINGERPRINT_DIR=$work/store FINGERPRINT_CACHE_DIR=$work/cache
for variant in with without; do
  flag=OFF
  [[ $variant == with ]] && flag=ON
  cmake -S "$src" -B "$work/$variant" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWITH_FINGERPRINT=$flag \
    -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
done

now() { date +%s%N; }
declare -a with_ms without_ms
for ((r = 0; r < runs; r++)); do
  for variant in with without; do
    ninja -C "$work/$variant" -t clean >/dev/null
    start=$(now)
    ninja -C "$work/$variant" >/dev/null
    elapsed=$((($(now) - start) / 1000000))
    if [[ $variant == with ]]; then with_ms+=("$elapsed"); else without_ms+=("$elapsed"); fi
  done
  echo "run $((r + 1))/$runs: with ${with_ms[-1]} ms, without ${without_ms[-1]} ms" >&2
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
m_with=$(median "${with_ms[@]}")
m_without=$(median "${without_ms[@]}")
recorded=$(find "$FINGERPRINT_DIR/builds" -name '*.jsonl' -exec cat {} + | grep -c '"event":"produced"')
echo "targets=$targets runs=$runs median_with_ms=$m_with median_without_ms=$m_without" \
  "ratio=$(awk -v a="$m_with" -v b="$m_without" 'BEGIN {printf "%.3f", a / b}')" \
  "produced_events_recorded=$recorded"
