#!/usr/bin/env bash
# Fingerprint against its reference tools, side by side in one run: each
# pair alternates A B A B and is reported as medians and their ratio. A
# benchmark, not a test: it prints a table and asserts nothing about time.
# Not part of CI. Takes about an hour on 2 cores (most of it the clean
# builds of the generated projects).
#
#   tests/bench/compare.sh [BUILD-DIR]     (default: build/bench, Release)
#
# FINGERPRINT_BENCH_TARGETS (200), FINGERPRINT_BENCH_BUILD_RUNS (5) and
# FINGERPRINT_BENCH_PRODUCTS (10000) set the sizes; FINGERPRINT_BENCH_SECTIONS
# picks sections (default "digest base inputs million"): "digest" is one large file
# and many files beside openssl (issue 18); "base" the runner's own figures
# and the 200-target build of trivial targets, hooked by injection and plain
# (hooks_overhead.sh: wall ratio, CPU the hooks add per link, and the hooks'
# own CPU as the runners report it); "inputs"
# the input-manifest figures (issue 14): build overhead of both hooks on a
# generated project whose sources include 30 headers each and on
# GoogleTest's sources (hooks_overhead.sh), the compile hook beside
# /bin/true, store bytes per full build and per unchanged rebuild, and
# `consumers` of a header on a million input relations (consumers_bench.sh,
# on PostgreSQL too when psql is installed); "million" the queries on
# generated stores of 10,000, 100,000 and 1,000,000 artifacts
# (million_bench.sh, about 45 minutes with PostgreSQL; its
# FINGERPRINT_MILLION_* settings apply): its table is printed after this
# one, and its targets are rows of this one (per-artifact queries within 2x
# of 10k, builds, graph and stale within 2 s, PostgreSQL within 2x).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath -m "${1:-$top/build/bench}")
targets=${FINGERPRINT_BENCH_TARGETS:-200}
build_runs=${FINGERPRINT_BENCH_BUILD_RUNS:-5}     # rounds of the issue-14 clean builds
products=${FINGERPRINT_BENCH_PRODUCTS:-10000}    # of 100 inputs each, for consumers

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
sections=${FINGERPRINT_BENCH_SECTIONS:-digest base inputs million}
want() { [[ " $sections " == *" $1 "* ]]; }
rows=()
# row FIGURE MEASURED TARGET-OP TARGET: one line of the table; TARGET-OP "-"
# for a figure without a target.
row() {
  local met
  met=$(awk -v m="$2" -v op="$3" -v t="$4" 'BEGIN { print op == "-" ? "-" : ((op == "<=" && m <= t) || (op == ">=" && m >= t)) ? "yes" : "NO" }')
  rows+=("$(printf '| %-76s | %8s | %2s %-5s | %-3s |' "$1" "$2" "$3" "$4" "$met")")
}
say() { echo "==> $*" >&2; }
load_at_start=$(cut -d' ' -f1 /proc/loadavg)
# With autogroup scheduling on, every session gets its share of the CPU
# whatever its nice value: other work niced beside this run still takes
# a whole core from it.
autogroup=$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo 0)
if [[ $autogroup == 1 ]] && awk -v l="$load_at_start" 'BEGIN { exit !(l > 0.5) }'; then
  say "warning: load average $load_at_start and autogroup scheduling on: niced work of other sessions still takes" \
    "its full share (echo 0 > /proc/sys/kernel/sched_autogroup_enabled as root lets nice count)"
fi

if want digest; then

  say "digest: 1 GiB, page-cache hot, against openssl dgst -sha256"
  head -c 1073741824 /dev/urandom >"$work/big"
  cat "$work/big" >/dev/null
  read -r a b ratio < <("$ab" 7 1 "$fp" digest "$work/big" --vs-- openssl dgst -sha256 "$work/big")
  row "digest 1 GiB cached / openssl dgst -sha256 (${a} / ${b} ms)" "$ratio" "<=" 0.85

  say "digest: 1 GiB, page-cache hot, against the time openssl speed's sha256 rate implies, pair by pair"
  # The hash's own limit: `openssl speed` hashes a 16 KiB buffer that stays
  # in the first-level cache, so its rate is SHA-256 without any reading.
  digest_ms=()
  implied_ms=()
  for pair in 1 2 3 4 5 6 7; do
    start=$(date +%s%N)
    "$fp" digest "$work/big" >/dev/null
    digest_ms+=("$((($(date +%s%N) - start) / 1000000))")
    rate=$(openssl speed -evp sha256 -bytes 16384 -seconds 1 2>/dev/null | awk '$1 == "sha256" { sub(/k$/, "", $NF); print $NF }')
    implied_ms+=("$(awk -v r="$rate" 'BEGIN { printf "%.0f", 1073741824 / (r * 1000) * 1000 }')")
  done
  median7() { printf '%s\n' "$@" | sort -g | sed -n 4p; }
  a=$(median7 "${digest_ms[@]}")
  b=$(median7 "${implied_ms[@]}")
  row "digest 1 GiB cached / openssl speed's implied time (${a} / ${b} ms)" \
    "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" "<=" 1.05

  if { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
    say "digest: 1 GiB, page cache dropped before each run, against openssl dgst -sha256"
    cold_a=()
    cold_b=()
    for pair in 1 2 3; do
      sync && echo 3 >/proc/sys/vm/drop_caches
      start=$(date +%s%N)
      "$fp" digest "$work/big" >/dev/null
      cold_a+=("$((($(date +%s%N) - start) / 1000000))")
      sync && echo 3 >/proc/sys/vm/drop_caches
      start=$(date +%s%N)
      openssl dgst -sha256 "$work/big" >/dev/null
      cold_b+=("$((($(date +%s%N) - start) / 1000000))")
    done
    a=$(printf '%s\n' "${cold_a[@]}" | sort -g | sed -n 2p)
    b=$(printf '%s\n' "${cold_b[@]}" | sort -g | sed -n 2p)
    row "digest 1 GiB cold / openssl dgst -sha256 cold (${a} / ${b} ms, median of 3)" \
      "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" "-" ""
  else
    row "digest 1 GiB cold: not measured (/proc/sys/vm/drop_caches is not writable)" "-" "-" ""
  fi

  say "digest: 512 x 1 MiB, against openssl dgst -sha256 over the same files"
  mkdir "$work/many"
  for i in $(seq 1 512); do head -c 1048576 /dev/urandom >"$work/many/f$i"; done
  cat "$work"/many/* >/dev/null
  read -r a b ratio < <("$ab" 7 1 "$fp" digest "$work"/many/* --vs-- openssl dgst -sha256 "$work"/many/*)
  row "digest 512 x 1 MiB / openssl dgst -sha256 (${a} / ${b} ms)" "$ratio" "<=" 0.55
fi

if want base; then

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

  say "a ${targets}-target generated project of trivial targets built from clean, hooked by injection and plain"
  # field LINE KEY: the value of KEY=... in LINE.
  field() { sed -E "s/.*(^| )$2=([^ ]+).*/\\2/" <<<"$1"; }
  # All of its output first: `| head -1` would stop it with SIGPIPE at its
  # next line, and pipefail end this script.
  lines=$(FINGERPRINT_BENCH_HEADERS=0 FINGERPRINT_BENCH_RUNNER_TREE=1 \
    "$top/tests/bench/hooks_overhead.sh" "$work/prefix" generated "$targets" "$build_runs")
  line=$(head -1 <<<"$lines")
  echo "trivial targets: $line" >&2
  row "${targets} trivial targets: hooked / plain wall ($(field "$line" wall_hooked_ms) / $(field "$line" wall_plain_ms) ms)" \
    "$(field "$line" wall_ratio)" "<=" 1.01
  row "  CPU the hooks add per link, (hooked - plain) / links, ms ($(field "$line" links) links)" \
    "$(field "$line" cpu_added_per_link_ms)" "<=" 1.0
  row "  the same, links only: every link relinked, objects built ($(field "$line" links_rounds) alternated pairs), ms" \
    "$(field "$line" links_cpu_added_per_link_ms)" "<=" 1.0
  row "  the hooks' own CPU per link, as they report it (launcher and recorder), ms" "$(field "$line" self_all_per_link_ms)" "<=" 1.0
  row "    of which compile hooks', per compile, ms ($(field "$line" compiles) compiles; none run by default)" \
    "$(field "$line" self_per_compile_ms)" "-" ""
  row "    and the link hook's (rm, ar, ranlib, link), per link, ms" "$(field "$line" self_per_link_ms)" "-" ""
  row "  the same hooks without the recorder (FINGERPRINT_RECORDER=OFF), their own CPU per link, ms" \
    "$(field "$line" self_runner_per_link_ms)" "-" ""
  row "    and that build's CPU added per link, (hooked - plain) / links, ms" \
    "$(field "$line" cpu_runner_added_per_link_ms)" "-" ""

fi

if want inputs; then
  field() { sed -E "s/.*(^| )$2=([^ ]+).*/\\2/" <<<"$1"; }

  say "compile hook: fingerprint compile -- /bin/true -o x.o -MF x.d (140 paths) against /bin/true"
  hook=$work/compile-hook
  mkdir -p "$hook"
  # What g++ writes for a source of a real project: the source, libstdc++'s
  # headers, the project's own.
  {
    printf 'x.o: /home/ci/work/app/src/module/source.cpp'
    for i in $(seq 1 40); do printf ' \\\n /usr/include/c++/12/bits/header_%02d.h' "$i"; done
    for i in $(seq 1 40); do printf ' \\\n /usr/include/x86_64-linux-gnu/c++/12/bits/config_%02d.h' "$i"; done
    for i in $(seq 1 59); do printf ' \\\n /home/ci/work/app/include/app/module%d/header_%02d.hpp' $((i % 7)) "$i"; done
    printf '\n'
  } >"$hook/x.d"
  read -r a b _ < <(cd "$hook" && "$ab" 300 30 "$fp" compile -- /bin/true -o x.o -MF x.d --vs-- /bin/true -o x.o -MF x.d)
  paths=$(tr '\0' '\n' <"$hook/x.o.fpdeps" | grep -c .)
  row "compile hook, ms added to /bin/true (${a} / ${b} ms, x.d of ${paths} paths)" \
    "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a - b }')" "-" ""

  say "both hooks, by injection: a ${targets}-target project, 30 headers a source, from clean"
  lines=$("$top/tests/bench/hooks_overhead.sh" "$work/prefix" generated "$targets" "$build_runs")
  echo "$lines" >&2
  line=$(head -1 <<<"$lines")
  sizes=$(tail -1 <<<"$lines")
  row "${targets}-target, 30 headers a source: hooked / plain wall ($(field "$line" wall_hooked_ms) / $(field "$line" wall_plain_ms) ms)" \
    "$(field "$line" wall_ratio)" "<=" 1.02
  row "  its CPU, hooked / plain ($(field "$line" cpu_hooked_ms) / $(field "$line" cpu_plain_ms) ms)" \
    "$(field "$line" cpu_ratio)" "-" ""
  row "  CPU FINGERPRINT_COMPILE_LAUNCHER=ON adds per compile, ms ($(field "$line" compiles) compiles)" \
    "$(field "$line" cpu_per_compile_ms)" "-" ""
  row "  CPU the hooks add per link, (hooked - plain) / links, ms ($(field "$line" links) links)" \
    "$(field "$line" cpu_per_link_ms)" "-" ""
  # Store growth: a full build into an empty store, then an unchanged rebuild.
  read -r pair_bytes pairs full_bytes full_lines relink_bytes relink_lines manifests < <(python3 - "$sizes" <<'EOF'
import re, sys
clean, relinked = sys.argv[1].split(" relinked:")
parse = lambda part: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", part)}
a, b = parse(clean), parse(relinked)
parts = ("objects", "builds", "manifests", "inputs", "recent")
total = lambda d, what: sum(d[f"{p}_{what}"] for p in parts)
print("%.1f" % ((a["manifests_bytes"] + a["inputs_bytes"]) / a["pairs"]), a["pairs"], total(a, "bytes"),
      total(a, "lines"), total(b, "bytes") - total(a, "bytes"), total(b, "lines") - total(a, "lines"),
      a["manifests_files"])
EOF
  )
  row "store: manifests + inputs bytes per (product, input) pair (${pairs} pairs)" "$pair_bytes" "<=" 80
  row "store after the full build: bytes (${full_lines} lines, ${manifests} manifests)" "$full_bytes" "-" ""
  row "store growth of an unchanged rebuild: bytes (${relink_lines} lines)" "$relink_bytes" "-" ""
  echo "store sizes: $sizes" >&2

  say "both hooks, by injection: GoogleTest's sources (/usr/src/googletest), from clean"
  line=$("$top/tests/bench/hooks_overhead.sh" "$work/prefix" gtest "$build_runs")
  echo "googletest: $line" >&2
  row "googletest: hooked / plain wall ($(field "$line" wall_hooked_ms) / $(field "$line" wall_plain_ms) ms)" \
    "$(field "$line" wall_ratio)" "<=" 1.02
  row "  its CPU, hooked / plain ($(field "$line" cpu_hooked_ms) / $(field "$line" cpu_plain_ms) ms)" \
    "$(field "$line" cpu_ratio)" "-" ""

  say "consumers of a header on a store of $((products * 100)) input relations"
  # Its lines go to stderr too (not by tee /dev/stderr, which truncates a
  # stderr redirected to a file).
  lines=$("$top/tests/bench/consumers_bench.sh" "$build" "$products" 100 100)
  echo "$lines" >&2
  line=$(tail -1 <<<"$lines")
  row "consumers HEADER, $((products * 100)) relations, directory ($(field "$line" header_consumers) consumers)" \
    "$(field "$line" dir_ms)" "<=" 50
  if [[ $(field "$line" pg_ms) != n/a ]]; then
    row "consumers HEADER, $((products * 100)) relations, PostgreSQL (same answer: $(field "$line" same))" \
      "$(field "$line" pg_ms)" "<=" 50
  fi
fi

million_table=()
if want million; then
  say "the queries at 10k / 100k / 1M artifacts (million_bench.sh)"
  "$top/tests/bench/million_bench.sh" "$build" >"$work/million.out"
  mapfile -t million_table < <(grep '^| ' "$work/million.out")
  # million_row QUERY COLUMN: that cell of its table (columns from 1, the
  # query's name being 1).
  million_cell() { printf '%s\n' "${million_table[@]}" | awk -F' *[|] *' -v q="\`$1\`" -v c="$2" '$2 == q { print $(c + 1) }'; }
  ncol=$(printf '%s\n' "${million_table[0]}" | awk -F'|' '{ print NF - 2 }')
  for q in show consumers "consumers --transitive" why history; do
    row "million: \`$q\` largest / smallest store" "$(million_cell "$q" $((ncol - 3)))" "<=" 2
  done
  for q in builds graph stale; do
    row "million: \`$q\` on the largest store (ms)" "$(million_cell "$q" $((ncol - 4)))" "<=" 2000
  done
  for q in show consumers "consumers --transitive" why history builds graph stale; do
    pgr=$(million_cell "$q" $((ncol - 1)))
    [[ $pgr == n/a || -z $pgr ]] || row "million: \`$q\` PostgreSQL / directory" "$pgr" "<=" 2
  done
fi

echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
echo "Run: $(date -u +%Y-%m-%dT%H:%MZ), fingerprint $("$fp" --version | cut -d' ' -f2), load average $load_at_start at the start, $(cut -d' ' -f1 /proc/loadavg) at the end, autogroup scheduling $([[ $autogroup == 1 ]] && echo on || echo off)"
echo
printf '| %-66s | %8s | %-8s | %-3s |\n' "figure" "measured" "target" "met"
printf '| %-66s | %8s | %-8s | %-3s |\n' "---" "---" "---" "---"
printf '%s\n' "${rows[@]}"
if ((${#million_table[@]})); then
  echo
  echo "The queries as the store grows (million_bench.sh; ms, medians):"
  echo
  printf '%s\n' "${million_table[@]}"
fi
