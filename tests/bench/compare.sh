#!/usr/bin/env bash
# Fingerprint against its reference tools, side by side in one run: each
# pair alternates A B A B and is reported as medians and their ratio. A
# benchmark, not a test: it prints a table and asserts nothing about time.
# Not part of CI. Takes 15-20 minutes on 2 cores (most of it the 200-target
# builds).
#
#   tests/bench/compare.sh [BUILD-DIR]     (default: build/bench, Release)
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$top/build/bench}
targets=${FINGERPRINT_BENCH_TARGETS:-200}

echo "==> building Release with benchmarks in $build" >&2
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFINGERPRINT_BUILD_BENCHMARKS=ON \
  -DFINGERPRINT_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
fp=$build/runner/fingerprint
ab=$build/tests/bench/fingerprint_abtime
bench=$build/tests/bench/fingerprint_bench
export FINGERPRINT_DIR=$work/store FINGERPRINT_CACHE_DIR=$work/cache
rows=()
# row FIGURE MEASURED TARGET-OP TARGET: one line of the table.
row() {
  local met
  met=$(awk -v m="$2" -v op="$3" -v t="$4" 'BEGIN { print ((op == "<=" && m <= t) || (op == ">=" && m >= t)) ? "yes" : "NO" }')
  rows+=("$(printf '| %-66s | %8s | %2s %-5s | %-3s |' "$1" "$2" "$3" "$4" "$met")")
}
say() { echo "==> $*" >&2; }

say "digest: 1 GiB, page-cache hot, against openssl dgst -sha256"
head -c 1073741824 /dev/urandom >"$work/big"
cat "$work/big" >/dev/null
read -r a b ratio < <("$ab" 7 1 "$fp" digest "$work/big" --vs-- openssl dgst -sha256 "$work/big")
row "digest 1 GiB cached / openssl dgst -sha256 (${a} / ${b} ms)" "$ratio" "<=" 0.87

say "digest: 512 x 1 MiB, against openssl dgst -sha256 over the same files"
mkdir "$work/many"
for i in $(seq 1 512); do head -c 1048576 /dev/urandom >"$work/many/f$i"; done
cat "$work"/many/* >/dev/null
read -r a b ratio < <("$ab" 7 1 "$fp" digest "$work"/many/* --vs-- openssl dgst -sha256 "$work"/many/*)
row "digest 512 x 1 MiB / openssl dgst -sha256 (${a} / ${b} ms)" "$ratio" "<=" 0.55

say "record of a tiny file against /bin/true"
echo tiny >"$work/tiny"
read -r a b ratio < <("$ab" 200 20 "$fp" record --project p --target t --build-id b --produced "$work/tiny" \
  --vs-- /bin/true)
row "record tiny file / /bin/true (${a} / ${b} ms)" "$ratio" "<=" 1.6

say "a second record of an unchanged 1 GiB file against /bin/true"
sleep 1 # older than any file system's timestamp tick, so the digest cache may keep it
"$fp" record --project p --target t --build-id b --produced "$work/big"
read -r a b ratio < <("$ab" 50 5 "$fp" record --project p --target t --build-id b --produced "$work/big" \
  --vs-- /bin/true)
row "record unchanged 1 GiB (digest cache) / /bin/true (${a} / ${b} ms)" "$ratio" "<=" 2.0

say "8 concurrent writer processes against 1, on one artifact"
writer=$build/tests/bench/fingerprint_writer
wstore=$work/writers
log=$wstore/objects/sha256/cc/$(printf 'c%.0s' $(seq 64)).jsonl
# writers N EACH: N processes appending EACH events each; prints events/s.
writers() {
  local n=$1 each=$2 start end pids=()
  start=$(date +%s%N)
  for ((w = 0; w < n; w++)); do
    "$writer" "$wstore" "w$n-$w-$RANDOM" "$each" &
    pids+=($!)
  done
  wait "${pids[@]}"
  end=$(date +%s%N)
  awk -v e=$((n * each)) -v ns=$((end - start)) 'BEGIN { printf "%.0f", e / (ns / 1e9) }'
}
one=()
eight=()
for round in 1 2 3 4 5; do
  one+=("$(writers 1 4000)")
  eight+=("$(writers 8 500)")
done
written=$((5 * (4000 + 8 * 500)))
counted=$(grep -c "^{" "$log")
median5() { printf '%s\n' "$@" | sort -g | sed -n 3p; }
m1=$(median5 "${one[@]}")
m8=$(median5 "${eight[@]}")
ratio=$(awk -v a="$m8" -v b="$m1" 'BEGIN { printf "%.3f", a / b }')
row "8 writers / 1, events/s (${m8} / ${m1}; ${counted} of ${written} lines)" "$ratio" ">=" 1.0

say "fingerprint_bench: BM_AppendEvent, BM_LoadRecord, BM_DomParseReference"
"$bench" --benchmark_filter='BM_AppendEvent|BM_LoadRecord|BM_DomParseReference' --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$work/bench.json" 2>/dev/null
median_of() {
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print("%.2f" % next(b["real_time"] for b in d["benchmarks"] if b["name"] == sys.argv[2] + "_median"))' "$work/bench.json" "$1"
}
a=$(median_of BM_AppendEvent/50000)
b=$(median_of BM_AppendEvent/500)
row "BM_AppendEvent/50000 / BM_AppendEvent/500 (${a} / ${b} us)" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" "<=" 1.2
a=$(median_of BM_LoadRecord/5000)
b=$(median_of BM_DomParseReference/5000)
row "BM_LoadRecord/5000 / BM_DomParseReference/5000 (${a} / ${b} ms)" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" "<=" 0.5

say "a ${targets}-target generated project built from clean, with and without fingerprinting"
line=$("$top/tests/bench/build_overhead.sh" "$work/prefix" "$targets" 5)
ratio=$(sed -E 's/.*ratio=([0-9.]+).*/\1/' <<<"$line")
with=$(sed -E 's/.*median_with_ms=([0-9.]+).*/\1/' <<<"$line")
without=$(sed -E 's/.*median_without_ms=([0-9.]+).*/\1/' <<<"$line")
row "${targets}-target build with / without (${with} / ${without} ms)" "$ratio" "<=" 1.01

echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
echo "Run: $(date -u +%Y-%m-%dT%H:%MZ), fingerprint $("$fp" --version | cut -d' ' -f2)"
echo
printf '| %-66s | %8s | %-8s | %-3s |\n' "figure" "measured" "target" "met"
printf '| %-66s | %8s | %-8s | %-3s |\n' "---" "---" "---" "---"
printf '%s\n' "${rows[@]}"
