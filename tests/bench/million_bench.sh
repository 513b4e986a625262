#!/usr/bin/env bash
# The queries as the store grows: generated stores of 10,000, 100,000 and
# 1,000,000 artifacts (tests/bench/store_gen.py: 100 artifacts a build, so
# 100, 1,000 and 10,000 builds; every product's fan-in and fan-out, every
# chain's depth and every path's versions the same at each size), each
# query timed on each (medians), and on the largest also on PostgreSQL (the
# same store by `fingerprint migrate`, then ANALYZE; runs alternate with the
# directory's, and both must print the same bytes). A benchmark, not a test:
# it prints the figures and fails only when a query fails or the stores
# disagree. After generating a store it runs a gc that drops nothing,
# which writes the builds summary `builds` reads and the index pack graph,
# stale and history read (as a nightly gc would).
#
#   tests/bench/million_bench.sh [BUILD-DIR]     (default build/million, Release)
#
# BUILD-DIR holds runner/fingerprint (and fingerprint-postgresql beside it).
# FINGERPRINT_MILLION_SIZES ("10000 100000 1000000") sets the sizes, the
# last the one PostgreSQL gets and the peak RSS is given for;
# FINGERPRINT_MILLION_RUNS (5) the runs per query and size;
# FINGERPRINT_BENCH_NO_PG=1 (or no psql) skips PostgreSQL. A quick run:
#   FINGERPRINT_MILLION_SIZES="1000 10000 100000" FINGERPRINT_MILLION_RUNS=3 tests/bench/million_bench.sh
#
# Its last lines are the table, in markdown, one row per query after the
# header and the separator (times in ms, medians; RSS in MiB):
#   | query | 10k | 100k | 1M | 1M/10k | PG 1M | PG/dir | peak RSS 1M |
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$top/tests/bench
build=$(realpath -m "${1:-$top/build/million}")
FP=$build/runner/fingerprint
[[ -x $FP ]] || {
  echo "error: no runner at $FP (build it: cmake -S $top -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release" \
    "-DFINGERPRINT_BUILD_TESTS=OFF && ninja -C $build)" >&2
  exit 1
}
read -r -a sizes <<<"${FINGERPRINT_MILLION_SIZES:-10000 100000 1000000}"
runs=${FINGERPRINT_MILLION_RUNS:-5}
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
with_pg=1
if [[ ${FINGERPRINT_BENCH_NO_PG:-} == 1 ]] || ! command -v psql >/dev/null || [[ ! -x $build/runner/fingerprint-postgresql ]]; then
  with_pg=0
fi
source "$(dirname "${BASH_SOURCE[0]}")/pg_scratch.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-million.XXXXXX")
cleanup() {
  if ((with_pg)); then
    pg_scratch_stop "$work"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export FINGERPRINT_CACHE_DIR=$work/cache TZ=UTC
unset FINGERPRINT_DIR FINGERPRINT_BUILD_ID
say() { echo "==> $*" >&2; }
elapsed_ms() { "$PY" -c 'import sys; print("%.1f" % ((float(sys.argv[2]) - float(sys.argv[1])) * 1000))' "$1" "$2"; }
median() { sort -n "$1" | awk '{a[NR] = $1} END {m = int((NR + 1) / 2); if (NR % 2) print a[m]; else printf "%.1f\n", (a[m] + a[m + 1]) / 2}'; }
label() { awk -v n="$1" 'BEGIN { if (n >= 1000000 && n % 1000000 == 0) print n / 1000000 "M"; else if (n >= 1000 && n % 1000 == 0) print n / 1000 "k"; else print n }'; }

# The queries: a name for the table, then the arguments (@KEY@ is the
# generator's key of that name).
queries=(
  "show|show --json @show@"
  "consumers|consumers --json @show@"
  "consumers --transitive|consumers --transitive --json @root@"
  "why|why --json @leaf@ @root_source@"
  "history|history --json @show_path@"
  "builds|builds --json"
  "graph|graph"
  "stale|stale --json"
  "gc --dry-run|gc --dry-run --keep-builds 2"
  "fsck|fsck"
)
args_of() { # QUERY KEYS-FILE: the arguments, one a line
  local spec=${1#*|} word
  for word in $spec; do
    if [[ $word == @*@ ]]; then
      word=${word//@/}
      sed -n "s/^$word=//p" "$2"
    else
      echo "$word"
    fi
  done
}

# time_query STORE OUT-PREFIX ARGS...: one timed run; appends its ms to
# OUT-PREFIX.ms, leaves the output in OUT-PREFIX.out.
time_query() {
  local store=$1 out=$2 rc=0 t0 t1
  shift 2
  t0=$EPOCHREALTIME
  "$FP" --store "$store" "$@" >"$out.out" 2>"$out.err" || rc=$?
  t1=$EPOCHREALTIME
  if ((rc > 1)); then
    cat "$out.err" >&2
    echo "error: fingerprint $* on $store exited $rc" >&2
    exit 1
  fi
  echo "$rc" >"$out.rc"
  elapsed_ms "$t0" "$t1" >>"$out.ms"
}
# rss_kib STORE ARGS...: the peak resident set of one run, KiB.
rss_kib() {
  local store=$1
  shift
  /usr/bin/time -f %M -o "$work/rss" "$FP" --store "$store" "$@" >/dev/null 2>&1 || true
  tail -1 "$work/rss"
}

if ((with_pg)); then
  pg_scratch_start "$work" fp_million
fi

declare -A ms pg_ms rss pg_rss
last=${sizes[-1]}
for size in "${sizes[@]}"; do
  store=$work/store-$size
  say "generating a store of $size artifacts"
  t0=$EPOCHREALTIME
  "$PY" "$here/store_gen.py" "$store" --artifacts "$size" --keys "$work/keys-$size"
  t1=$EPOCHREALTIME
  echo "generated $(label "$size"): $(elapsed_ms "$t0" "$t1") ms, $(du -sh "$store" | cut -f1)," \
    "$(sed -n 's/^files=//p' "$work/keys-$size") files" >&2
  "$FP" --store "$store" fsck >"$work/fsck.out" || {
    tail -20 "$work/fsck.out" >&2
    echo "error: the generated store does not pass fsck" >&2
    exit 1
  }
  echo "    $(tail -1 "$work/fsck.out")" >&2
  # What a store's nightly gc does besides dropping builds: it brings the
  # builds summary (builds.summary) up to date, which `builds` reads, and
  # writes the index pack (index.pack) the whole-store queries read.
  t0=$EPOCHREALTIME
  "$FP" --store "$store" gc --older-than 36500d >/dev/null
  t1=$EPOCHREALTIME
  echo "    gc with nothing to drop, writing the builds summary and the index pack: $(elapsed_ms "$t0" "$t1") ms," \
    "index.pack $(du -h "$store/index.pack" | cut -f1)" >&2
  pg=0
  if ((with_pg)) && [[ $size == "$last" ]]; then
    pg=1
    say "migrating it into $DB"
    t0=$EPOCHREALTIME
    /usr/bin/time -f %M -o "$work/migrate.rss" "$FP" migrate --from "$store" --to "$DB" >"$work/migrate.out" 2>&1 || {
      tail "$work/migrate.out" >&2
      exit 1
    }
    t1=$EPOCHREALTIME
    echo "migrated: $(elapsed_ms "$t0" "$t1") ms, peak RSS $(tail -1 "$work/migrate.rss") KiB; $(tail -1 "$work/migrate.out")" >&2
    psql "$DB" -X -qc "ANALYZE" >/dev/null
    # The same nightly gc there: it writes the database's builds summary.
    "$FP" --store "$DB" gc --older-than 36500d >/dev/null
  fi
  for q in "${queries[@]}"; do
    name=${q%%|*}
    mapfile -t argv < <(args_of "$q" "$work/keys-$size")
    : >"$work/d.ms"
    : >"$work/p.ms"
    # One warm-up run each (the page cache), then the timed ones.
    "$FP" --store "$store" "${argv[@]}" >/dev/null 2>&1 || true
    ((pg)) && { "$FP" --store "$DB" "${argv[@]}" >/dev/null 2>&1 || true; }
    for ((i = 0; i < runs; i++)); do
      time_query "$store" "$work/d" "${argv[@]}"
      ((pg)) && time_query "$DB" "$work/p" "${argv[@]}"
    done
    ms[$name,$size]=$(median "$work/d.ms")
    rss[$name,$size]=$(rss_kib "$store" "${argv[@]}")
    line="$(label "$size") $name: ${ms[$name,$size]} ms, $((rss[$name,$size] / 1024)) MiB, exit $(cat "$work/d.rc"), $(wc -c <"$work/d.out") bytes"
    if ((pg)); then
      pg_ms[$name]=$(median "$work/p.ms")
      pg_rss[$name]=$(rss_kib "$DB" "${argv[@]}")
      line+="; PostgreSQL ${pg_ms[$name]} ms, $((pg_rss[$name] / 1024)) MiB"
      # The same answer, but for what names the store (fsck's counts,
      # gc's lines) or differs by design.
      case $name in
        fsck | "gc --dry-run") ;;
        *)
          if [[ $(cat "$work/d.rc") != "$(cat "$work/p.rc")" ]] || ! cmp -s "$work/d.out" "$work/p.out"; then
            diff <(head -c 2000 "$work/d.out") <(head -c 2000 "$work/p.out") | head -10 >&2
            echo "error: $name: the stores answer differently" >&2
            exit 1
          fi
          line+=" (same answer)"
          ;;
      esac
    fi
    echo "$line" >&2
  done
  if [[ $size != "$last" ]]; then
    rm -rf "$store"
  fi
done

first=${sizes[0]}
echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r);" \
  "run $(date -u +%Y-%m-%dT%H:%MZ); runner $FP"
header="| query |"
rule="| --- |"
for size in "${sizes[@]}"; do
  header+=" $(label "$size") |"
  rule+=" ---: |"
done
header+=" $(label "$last")/$(label "$first") | PG $(label "$last") | PG/dir | peak RSS $(label "$last") |"
rule+=" ---: | ---: | ---: | ---: |"
echo "$header"
echo "$rule"
for q in "${queries[@]}"; do
  name=${q%%|*}
  row="| \`$name\` |"
  for size in "${sizes[@]}"; do
    row+=" ${ms[$name,$size]} |"
  done
  row+=" $(awk -v a="${ms[$name,$last]}" -v b="${ms[$name,$first]}" 'BEGIN { printf "%.2f", a / b }') |"
  if [[ -n ${pg_ms[$name]:-} ]]; then
    row+=" ${pg_ms[$name]} | $(awk -v a="${pg_ms[$name]}" -v b="${ms[$name,$last]}" 'BEGIN { printf "%.2f", a / b }') |"
    row+=" $((rss[$name,$last] / 1024)) MiB (PG $((pg_rss[$name] / 1024)) MiB) |"
  else
    row+=" n/a | n/a | $((rss[$name,$last] / 1024)) MiB |"
  fi
  echo "$row"
done
