#!/usr/bin/env bash
# `fingerprint consumers HEADER` on a store of a million input relations,
# on a directory store and on PostgreSQL, side by side (alternating, medians),
# and whether both answer the same. A benchmark, not a test: it prints the
# times; it fails only when the stores disagree.
#
#   tests/bench/consumers_bench.sh BUILD-DIR [PRODUCTS=10000] [INPUTS=100] [CONSUMERS=100]
#
# BUILD-DIR is a build with -DFINGERPRINT_BUILD_BENCHMARKS=ON (Release for
# figures): its runner/fingerprint and tests/bench/fingerprint_manifest_gen,
# which writes PRODUCTS products of INPUTS inputs each through the store API
# (an input manifest and a produced event per product, as a hook does; see
# manifest_gen.cpp for the mix), so that a pool header has about CONSUMERS
# consumers and each of 20 common headers about PRODUCTS / 2. The database
# gets the same relations by `fingerprint migrate` from the directory
# (timed once), then an ANALYZE. Without psql (or with
# FINGERPRINT_BENCH_NO_PG=1) only the directory store is measured.
# FINGERPRINT_BENCH_QUERY_RUNS (default 15) sets the runs.
#
# Prints "key=value" lines, the last of them a summary:
#   consumers relations=... header_consumers=... dir_ms=... pg_ms=... same=yes
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD-DIR [PRODUCTS] [INPUTS] [CONSUMERS]}" && pwd)
products=${2:-10000}
inputs=${3:-100}
consumers=${4:-100}
runs=${FINGERPRINT_BENCH_QUERY_RUNS:-15}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FP=$build/runner/fingerprint
GEN=$build/tests/bench/fingerprint_manifest_gen
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
[[ -x $FP && -x $GEN ]] || {
  echo "error: $build has no runner/fingerprint or tests/bench/fingerprint_manifest_gen" >&2
  exit 1
}
with_pg=1
if [[ ${FINGERPRINT_BENCH_NO_PG:-} == 1 ]] || ! command -v psql >/dev/null; then
  with_pg=0
fi
source "$(dirname "${BASH_SOURCE[0]}")/pg_scratch.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-consumers.XXXXXX")
cleanup() {
  if ((with_pg)); then
    pg_scratch_stop "$work"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export FINGERPRINT_CACHE_DIR=$work/cache
unset FINGERPRINT_DIR FINGERPRINT_BUILD_ID
say() { echo "==> $*" >&2; }
elapsed_ms() { "$PY" -c 'import sys; print("%.3f" % ((float(sys.argv[2]) - float(sys.argv[1])) * 1000))' "$1" "$2"; }
median() { sort -n "$1" | awk '{a[NR] = $1} END {m = int((NR + 1) / 2); if (NR % 2) print a[m]; else printf "%.3f\n", (a[m] + a[m + 1]) / 2}'; }

dir=$work/store
say "generating $products products x $inputs inputs into $dir"
t0=$EPOCHREALTIME
"$GEN" "$dir" "$products" "$inputs" "$consumers" >"$work/gen.out" 2>"$work/gen.err" || {
  cat "$work/gen.err" >&2
  exit 1
}
t1=$EPOCHREALTIME
gen=$(cat "$work/gen.out")
echo "generated $gen generate_ms=$(elapsed_ms "$t0" "$t1")"
value() { sed -E "s/.*(^| )$1=([^ ]+).*/\\2/" <<<"$gen"; }
HEADER=$(value header)
COMMON=$(value common)
"$PY" - "$dir" <<'EOF'
import os, sys
root = sys.argv[1]
out = []
for part in ("objects", "builds", "manifests", "inputs"):
    files = size = 0
    for d, _, names in os.walk(os.path.join(root, part)):
        for n in names:
            files += 1
            size += os.lstat(os.path.join(d, n)).st_size
    out.append(f"{part}_files={files} {part}_bytes={size}")
print("directory_store " + " ".join(out))
EOF

if ((with_pg)); then
  pg_scratch_start "$work" fp_consumers
  say "migrating it into $DB"
  t0=$EPOCHREALTIME
  "$FP" migrate --from "$dir" --to "$DB" >"$work/migrate.out" 2>&1 || {
    cat "$work/migrate.out" >&2
    exit 1
  }
  t1=$EPOCHREALTIME
  echo "migrate_ms=$(elapsed_ms "$t0" "$t1") $(tail -1 "$work/migrate.out")"
  psql "$DB" -X -qc "ANALYZE" >/dev/null
fi

# query LABEL ARGS...: alternately on both stores; prints the medians.
query() {
  local label=$1 i d p
  shift
  : >"$work/dir.ms"
  : >"$work/pg.ms"
  for i in $(seq 1 "$runs"); do
    t0=$EPOCHREALTIME
    "$FP" --store "$dir" "$@" >"$work/dir.out"
    t1=$EPOCHREALTIME
    elapsed_ms "$t0" "$t1" >>"$work/dir.ms"
    if ((with_pg)); then
      t0=$EPOCHREALTIME
      "$FP" --store "$DB" "$@" >"$work/pg.out"
      t1=$EPOCHREALTIME
      elapsed_ms "$t0" "$t1" >>"$work/pg.ms"
    fi
  done
  d=$(median "$work/dir.ms")
  p=n/a
  ((with_pg)) && p=$(median "$work/pg.ms")
  echo "query=\"$label\" runs=$runs dir_ms=$d pg_ms=$p"
}

say "queries: $runs runs on each store, alternating"
query "consumers HEADER" consumers "$HEADER"
dir_text_ms=$(median "$work/dir.ms")
pg_text_ms=n/a
((with_pg)) && pg_text_ms=$(median "$work/pg.ms")
query "consumers --json HEADER" consumers --json "$HEADER"
cp "$work/dir.out" "$work/dir-header.json"
((with_pg)) && cp "$work/pg.out" "$work/pg-header.json"
query "consumers --json COMMON (a header of every other product)" consumers --json "$COMMON"
cp "$work/dir.out" "$work/dir-common.json"
((with_pg)) && cp "$work/pg.out" "$work/pg-common.json"

# The same answer: the same set of (project, target, build, product), and
# as many as the generator made.
same=n/a
if ((with_pg)); then
  same=yes
fi
for q in header common; do
  expected=$(value ${q}_consumers)
  files=("$work/dir-$q.json")
  ((with_pg)) && files+=("$work/pg-$q.json")
  verdict=$("$PY" - "$expected" "${files[@]}" <<'EOF'
import json, sys
expected = int(sys.argv[1])
sets = []
for f in sys.argv[2:]:
    d = json.load(open(f))
    sets.append({(e["project"], e["target"], e["build"], e["product"]) for e in d})
    if len(d) != expected or len(sets[-1]) != expected:
        print(f"NO: {f} has {len(d)} consumers ({len(sets[-1])} distinct), the generator made {expected}")
        sys.exit()
if len(sets) == 2 and sets[0] != sets[1]:
    print(f"NO: the stores differ in {len(sets[0] ^ sets[1])} consumers")
    sys.exit()
print(f"yes ({expected} consumers)")
EOF
  )
  echo "answer $q: $verdict"
  [[ $verdict == yes* ]] || same=NO
done
echo "consumers relations=$(value relations) header_consumers=$(value header_consumers) dir_ms=$dir_text_ms" \
  "pg_ms=$pg_text_ms same=$same"
[[ $same != NO ]]
