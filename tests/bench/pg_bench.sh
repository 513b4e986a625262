#!/usr/bin/env bash
# The directory store against the PostgreSQL store, side by side in one run
# (each pair alternates directory, database, directory, ...; medians). A
# benchmark, not a test: prints the times.
#
#   tests/bench/pg_bench.sh build/test/runner/fingerprint [artifacts] [builds]
#
# It starts its own throwaway server (tests/pg/server.sh, stopped at the
# end), then measures:
#  1. `record` latency: one `fingerprint record` of a target that produced 1
#     file and consumed 20 (files made up front, digest cache warm), 50 runs
#     on each store;
#  2. the floor of every command: `show` of a digest never recorded (starts
#     the runner and opens the store; for a database, that is starting
#     fingerprint-postgresql and connecting);
#  3. queries on a dependency graph of ARTIFACTS artifacts (default 2,000)
#     made by BUILDS builds (default 200) in 5 levels: one root library,
#     consumed by every level-1 build, whose products the next level
#     consumes, and so on, plus a few system libraries every build links.
#     Generated straight into a directory store in format 1 (README,
#     "The store"; checked with fsck), migrated into the database, then
#     `consumers --transitive --json ROOT`, `why --json LEAF ROOT`,
#     `consumers --json SYSLIB` and `builds --json`, 15 runs on each store;
#     both stores must print the same bytes.
# FINGERPRINT_BENCH_RECORD_RUNS and FINGERPRINT_BENCH_QUERY_RUNS change the
# run counts. Use a Release build on a quiet machine.
# Needs the postgresql package (server and psql) and python3.
set -euo pipefail
FP=$(realpath "${1:?usage: $0 /path/to/fingerprint [artifacts] [builds]}")
ARTIFACTS=${2:-2000}
BUILDS=${3:-200}
RECORD_RUNS=${FINGERPRINT_BENCH_RECORD_RUNS:-50}
QUERY_RUNS=${FINGERPRINT_BENCH_QUERY_RUNS:-15}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
command -v psql >/dev/null || {
  echo "error: psql is missing: apt-get install postgresql" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-pg-bench.XXXXXX")
cleanup() {
  bash "$here/../pg/server.sh" stop "$work/server" >/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
bash "$here/../pg/server.sh" start "$work/server"
server=$(cat "$work/server/url")
psql "$server" -X -v ON_ERROR_STOP=1 -qAtc "CREATE DATABASE fp_bench_record" -c "CREATE DATABASE fp_bench_graph"
DB_RECORD=${server%/*}/fp_bench_record
DB_GRAPH=${server%/*}/fp_bench_graph
export FINGERPRINT_CACHE_DIR=$work/cache
unset FINGERPRINT_DIR FINGERPRINT_BUILD_ID

# elapsed_ms START END: from two $EPOCHREALTIME readings (no process forked
# around the command, so neither side pays for one).
elapsed_ms() { "$PY" -c 'import sys; print("%.3f" % ((float(sys.argv[2]) - float(sys.argv[1])) * 1000))' "$1" "$2"; }
# median FILE: of the numbers in FILE, one a line.
median() { sort -n "$1" | awk '{a[NR] = $1} END {m = int((NR + 1) / 2); if (NR % 2) print a[m]; else printf "%.3f\n", (a[m] + a[m + 1]) / 2}'; }

ROWS=()
# row LABEL DIR-FILE PG-FILE: one line of the final table.
row() {
  local d p
  d=$(median "$2")
  p=$(median "$3")
  ROWS+=("$(printf '%-58s %10s %10s %8s' "$1" "$d" "$p" "$(awk -v a="$p" -v b="$d" 'BEGIN {printf "%.2f", a / b}')")")
}

# 1. record latency.
echo "==> preparing 21 files of 64 KiB for record (1 produced, 20 consumed)"
mkdir -p "$work/rec/build"
for i in $(seq 1 20); do head -c 65536 /dev/urandom >"$work/rec/in$i.o"; done
head -c 65536 /dev/urandom >"$work/rec/out.so"
inputs=("$work"/rec/in*.o)
record_on() { # STORE BUILD
  "$FP" --store "$1" record --project bench --target lib --build-id "$2" --build-dir "$work/rec/build" \
    --produced "$work/rec/out.so" --consumed "${inputs[@]}" >/dev/null
}
# Warm-up: the digest cache, the page cache, the database's schema.
for i in 1 2 3; do
  record_on "$work/rec/store" "warm$i"
  record_on "$DB_RECORD" "warm$i"
done
echo "==> record: $RECORD_RUNS runs on each store, alternating"
: >"$work/rec-dir.ms"
: >"$work/rec-pg.ms"
for i in $(seq 1 "$RECORD_RUNS"); do
  t0=$EPOCHREALTIME
  record_on "$work/rec/store" "$i"
  t1=$EPOCHREALTIME
  record_on "$DB_RECORD" "$i"
  t2=$EPOCHREALTIME
  elapsed_ms "$t0" "$t1" >>"$work/rec-dir.ms"
  elapsed_ms "$t1" "$t2" >>"$work/rec-pg.ms"
done
row "record: 1 produced + 20 consumed (21 events)" "$work/rec-dir.ms" "$work/rec-pg.ms"
# Each store got the same events.
"$FP" --store "$work/rec/store" fsck --json >"$work/rec-dir.fsck"
"$FP" --store "$DB_RECORD" fsck --json >"$work/rec-pg.fsck"
"$PY" - "$work/rec-dir.fsck" "$work/rec-pg.fsck" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
if a["events"] != b["events"] or a["problems"] or b["problems"]:
    sys.exit("error: the stores disagree after the record runs: %s events vs %s" % (a["events"], b["events"]))
print("    both stores hold %d events, no problems" % a["events"])
EOF

# 3. a generated dependency graph.
echo "==> generating a store of $ARTIFACTS artifacts from $BUILDS builds in $work/graph"
"$PY" - "$work/graph" "$ARTIFACTS" "$BUILDS" >"$work/graph.keys" <<'EOF'
import hashlib, json, os, random, sys
root, artifacts, builds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
levels, per_build, systems = 5, max(1, artifacts // builds), 5
rng = random.Random(42)
os.makedirs(root, exist_ok=True)
with open(os.path.join(root, "fingerprint-store.json"), "w") as f:
    json.dump({"format": 1, "created": "2026-11-30T00:00:00.000Z"}, f)
def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()
logs, indexes = {}, {}
def event(kind, hexd, path, project, target, build, product=None):
    e = {"v": 1, "event": kind, "digest": "sha256:" + hexd, "size": 4096, "path": path, "project": project,
         "version": "", "target": target, "build": str(build), "build_dir": "/b/" + project, "host": "bench",
         "time": "2026-11-%02dT%02d:%02d:00.000Z" % (1 + build % 28, build % 24, build % 60)}
    if product:
        e["product"] = "sha256:" + product
    line = json.dumps(e, separators=(",", ":")) + "\n"
    logs.setdefault(hexd, []).append(line)
    indexes.setdefault((project, str(build)), []).append(line)
root_digest = digest("root library")
event("produced", root_digest, "/b/base/libroot.so", "base", "root", 0)
system = [digest("system library %d" % i) for i in range(systems)]
by_level = {0: [root_digest]}
leaf = None
for b in range(1, builds + 1):
    level = 1 + (b - 1) * levels // builds
    project = "level%d-%d" % (level, b % 8)
    products = [digest("build %d product %d" % (b, i)) for i in range(per_build)]
    previous = by_level[level - 1]
    inputs = [root_digest] if level == 1 else rng.sample(previous, min(3, len(previous)))
    inputs = inputs + [system[b % systems]]
    for i, p in enumerate(products):
        event("produced", p, "/b/%s/out%d-%d" % (project, b, i), project, "t%d" % i, b)
    for d in inputs:
        path = "/usr/lib/libsys%d.so" % system.index(d) if d in system else "/b/in/%s" % d[:12]
        for i, p in enumerate(products):
            event("consumed", d, path, project, "t%d" % i, b, p)
    by_level.setdefault(level, []).extend(products)
    leaf = products[-1]
for hexd, lines in logs.items():
    directory = os.path.join(root, "objects", "sha256", hexd[:2])
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, hexd + ".jsonl"), "w") as f:
        f.writelines(lines)
for (project, build), lines in indexes.items():
    os.makedirs(os.path.join(root, "builds", project), exist_ok=True)
    with open(os.path.join(root, "builds", project, build + ".jsonl"), "w") as f:
        f.writelines(lines)
print("sha256:" + root_digest)
print("sha256:" + leaf)
print("sha256:" + system[0])
sys.stderr.write("    %d artifact logs, %d build indexes, %d events\n"
                 % (len(logs), len(indexes), sum(len(l) for l in logs.values())))
EOF
{ read -r ROOT; read -r LEAF; read -r SYSLIB; } <"$work/graph.keys"
"$FP" --store "$work/graph" fsck >"$work/graph.fsck" || {
  cat "$work/graph.fsck" >&2
  echo "error: the generated store does not pass fsck" >&2
  exit 1
}
echo "    $(tail -1 "$work/graph.fsck")"
echo "==> migrating it into the database"
t0=$EPOCHREALTIME
"$FP" migrate --from "$work/graph" --to "$DB_GRAPH"
t1=$EPOCHREALTIME
migrate_ms=$(elapsed_ms "$t0" "$t1")
# What the first users of a migrated database get: the server has no
# statistics on the new rows until autovacuum's ANALYZE (within a minute or
# so); the medians below are taken after an explicit ANALYZE.
t0=$EPOCHREALTIME
"$FP" --store "$DB_GRAPH" consumers --transitive --json "$ROOT" >/dev/null
t1=$EPOCHREALTIME
first_ms=$(elapsed_ms "$t0" "$t1")
analyzed=$(psql "$DB_GRAPH" -X -qAtc "SELECT coalesce(greatest(last_analyze, last_autoanalyze)::text, 'never') FROM pg_stat_user_tables WHERE relname = 'fingerprint_events'")
psql "$DB_GRAPH" -X -qc "ANALYZE"

# query LABEL ARGS...: alternately on both stores; the outputs and exit
# codes must match.
query() {
  local label=$1 i dir_rc pg_rc
  shift
  : >"$work/q-dir.ms"
  : >"$work/q-pg.ms"
  for i in $(seq 1 "$QUERY_RUNS"); do
    dir_rc=0
    pg_rc=0
    t0=$EPOCHREALTIME
    "$FP" --store "$work/graph" "$@" >"$work/q-dir.out" 2>/dev/null || dir_rc=$?
    t1=$EPOCHREALTIME
    "$FP" --store "$DB_GRAPH" "$@" >"$work/q-pg.out" 2>/dev/null || pg_rc=$?
    t2=$EPOCHREALTIME
    elapsed_ms "$t0" "$t1" >>"$work/q-dir.ms"
    elapsed_ms "$t1" "$t2" >>"$work/q-pg.ms"
  done
  if ((dir_rc != pg_rc)) || ! cmp -s "$work/q-dir.out" "$work/q-pg.out"; then
    diff "$work/q-dir.out" "$work/q-pg.out" | head -20 >&2
    echo "error: $label: the stores answer differently" >&2
    exit 1
  fi
  row "$label ($(wc -c <"$work/q-dir.out") bytes)" "$work/q-dir.ms" "$work/q-pg.ms"
}
echo "==> queries: $QUERY_RUNS runs on each store, alternating"
# The floor: starting the runner and opening the store (for the database:
# starting fingerprint-postgresql and connecting).
query "show of a digest never recorded (start + open)" show --json "sha256:$(printf '%064d' 0)"
query "consumers --transitive --json ROOT" consumers --transitive --json "$ROOT"
query "why --json LEAF ROOT" why --json "$LEAF" "$ROOT"
query "consumers --json SYSLIB" consumers --json "$SYSLIB"
query "builds --json" builds --json

echo
echo "$(nproc) cores, $(uname -r), $(psql "$server" -X -qAtc 'SHOW server_version'); runner $FP"
echo "migrate of the $ARTIFACTS-artifact store: $migrate_ms ms (once)"
echo "consumers --transitive --json ROOT on the database right after migrate: $first_ms ms (once; events table last analyzed: $analyzed)"
printf '%-58s %10s %10s %8s\n' "median wall time, ms" "directory" "postgres" "pg/dir"
printf '%s\n' "${ROWS[@]}"
