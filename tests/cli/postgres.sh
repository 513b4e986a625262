#!/usr/bin/env bash
# The PostgreSQL store (--store postgresql://...), against the throwaway
# server of tests/pg/server.sh (the `postgresql` CTest fixture):
#   tests/cli/postgres.sh RUNNER URL_FILE
# URL_FILE holds the server's URL (postgresql://postgres@127.0.0.1:PORT/postgres);
# each scenario gets a database of its own, dropped at the end.
#   a. a directory store migrated into a database answers every query
#      (show, consumers, why, builds, build show, export, verify, graph,
#      check, fsck, gc, history) byte for byte as the directory does; a second
#      migrate copies nothing; both still agree after the same gc;
#   b. recording straight into a database ($FINGERPRINT_DIR, --store,
#      postgres://) answers like the same records in a directory; a record
#      that fails adds nothing; a password in the URL shows nowhere;
#   c. 16 writer processes at once on a fresh database: every event and
#      input manifest once;
#   d. a server that is down or never answers: a quick error naming the URL
#      (never its password) or the timeout; launch --required fails the step,
#      without it the step goes on;
#   e. bad input changes nothing: a directory with a corrupt log is not
#      migrated, a damaged row is reported and fsck --repair sets it aside,
#      a database of a newer schema is refused by every command;
#   f. reading a database never written to answers "not recorded", like a
#      missing directory, and creates nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

use_pg_server "${2:?usage: $0 /path/to/fingerprint URL_FILE}"

# new_db NAME: creates database fp_cli_<pid>_NAME and prints its URL; every
# fp_cli_<pid>_* database is dropped when the test ends.
new_db() {
  local name=fp_cli_$$_$1
  sql "$SERVER" "CREATE DATABASE $name" >/dev/null
  local base=${SERVER%%\?*}
  echo "${base%/*}/$name"
}

BACKGROUND=()
# Then lib.sh's on_exit, which keeps $T and says so on failure.
cleanup() {
  local rc=$?
  local pid name
  set +e # (exit "$rc") below must hand the status on, not end the trap
  for pid in "${BACKGROUND[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  for name in $(sql "$SERVER" "SELECT datname FROM pg_database WHERE datname LIKE 'fp\_cli\_$$\_%'" 2>/dev/null); do
    sql "$SERVER" "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || echo "note: could not drop database $name" >&2
  done
  (exit "$rc")
  on_exit
}
trap cleanup EXIT

# The tables of a database (every schema but the system's), one per line.
tables() { sql "$1" "SELECT schemaname || '.' || tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"; }
# Rows in the event table; 0 when there is no such table.
rows() {
  if [[ -z $(sql "$1" "SELECT to_regclass('fingerprint_events')") ]]; then
    echo 0
  else
    sql "$1" "SELECT count(*) FROM fingerprint_events"
  fi
}
# Rows of events in their artifact's log (gc may leave a row in its build's
# index only, as it may leave a line there in a directory).
logged_rows() {
  if [[ -n $(sql "$1" "SELECT 1 FROM information_schema.columns WHERE table_name = 'fingerprint_events' AND column_name = 'logged'") ]]; then
    sql "$1" "SELECT count(*) FROM fingerprint_events WHERE logged"
  else
    rows "$1"
  fi
}
digest_of() { sha256sum "$1" | cut -c1-64; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# expect_match out|err|both REGEX WHAT: extended regex, case-insensitive.
expect_match() {
  local file=$1 regex=$2
  shift 2
  local files=("$T/$file")
  [[ $file == both ]] && files=("$T/out" "$T/err")
  if grep -qiE -- "$regex" "${files[@]}"; then
    _result 1 "$*: matches /$regex/"
  else
    _result 0 "$*: nothing matches /$regex/"; show_output >&2
  fi
}
# expect_lt A B WHAT: A < B (integers).
expect_lt() {
  if (($1 < $2)); then _result 1 "$3 ($1 < $2)"; else _result 0 "$3: $1 is not < $2"; fi
}

# ---------------------------------------------------------------------------
# a. Same answers on both backends.
# ---------------------------------------------------------------------------
DIR=$T/S
A=$(new_db a)
mkdir -p b1 b2 b3 b4 b5 sys prefix/lib
printf 'lib v1\n' >lib.so
printf 'app of build 7\n' >app
printf 'app of build 8\n' >app2
printf 'bundle\n' >bundle.tar
printf 'plugin\n' >plugin.so
printf 'system library\n' >sys/libc.so.6
printf 'other\n' >other
rec() { run "$FP" --store "$DIR" record "$@"; expect_rc 0 "directory store: record ${*:3:6}"; }
rec --build-dir "$T/b1" --project core --version 1.0 --target lib --build-id 1 --produced lib.so --consumed sys/libc.so.6
rec --build-dir "$T/b2" --project apps --target app --build-id 7 --produced app --consumed lib.so sys/libc.so.6
rec --build-dir "$T/b3" --project dist --target bundle --build-id 3 --produced bundle.tar --consumed app
# A second build of core (the same bytes again) and of apps.
rec --build-dir "$T/b1" --project core --version 1.0 --target lib --build-id 2 --produced lib.so --consumed sys/libc.so.6
rec --build-dir "$T/b2" --project apps --target app --build-id 8 --produced app2 --consumed lib.so sys/libc.so.6
rec --build-dir "$T/b5" --project misc --target other --build-id 1 --produced other
# lib.so installed (its RPATH rewritten: other bytes), and a plugin linked
# against the installed copy.
printf 'lib v1, installed with another rpath\n' >prefix/lib/lib.so
run "$FP" --store "$DIR" installed --project core --build-dir "$T/b1" --required -- "$T/prefix/lib/lib.so"
expect_rc 0 "directory store: installed prefix/lib/lib.so"
expect_in out "1 installed file" "installed records one file"
rec --build-dir "$T/b4" --project plugins --target plugin --build-id 1 --produced plugin.so --consumed prefix/lib/lib.so
run "$FP" --store "$DIR" fsck
expect_rc 0 "the directory store is healthy"
lines_in_dir=$(cat "$DIR"/objects/*/*/*.jsonl | wc -l)
logs_in_dir=$(find "$DIR/objects" -name '*.jsonl' | wc -l)
manifests_in_dir=$(find "$DIR/manifests" -type f | wc -l)
# The copies of produced events in their input manifests' logs (a database
# finds those by their `inputs` column: no rows of their own).
copies_in_dir=$(for m in "$DIR"/manifests/sha256/*/*; do cat "$DIR/objects/sha256/$(basename "$(dirname "$m")")/$(basename "$m").jsonl"; done | wc -l)
events_in_dir=$((lines_in_dir - copies_in_dir))
# 7 produced (6 of them from inputs: each also in its manifest's log), and
# the install's event, which is in two logs: its own and lib.so's. No
# consumed events: the inputs are in 4 manifests (lib's libc, the apps'
# lib.so and libc, the bundle's app, the plugin's installed lib.so).
expect_eq "$lines_in_dir" 15 "15 event lines in the directory's logs"
expect_eq "$events_in_dir" 9 "9 of them events of their own"
expect_eq "$manifests_in_dir" 4 "4 input manifests in the directory"

snapshot "$DIR" >dir-before
run "$FP" migrate --from "$DIR" --to "$A" --json
expect_rc 0 "migrate --from DIR --to URL"
cp "$T/out" migrate1.json
expect_json_each migrate1.json <<EOF
migrate --json has from, to, logs, events_read, events_copied, events_present, manifests_copied, manifests_present, provenance_copied, provenance_present :: sorted(d) == sorted(['from', 'to', 'logs', 'events_read', 'events_copied', 'events_present', 'manifests_copied', 'manifests_present', 'provenance_copied', 'provenance_present'])
it copied every input manifest :: d['manifests_copied'] == $manifests_in_dir and d['manifests_present'] == 0
it read every log :: d['logs'] == $logs_in_dir
it read every event :: d['events_read'] == $events_in_dir
it copied every event :: d['events_copied'] == $events_in_dir and d['events_present'] == 0
it names the directory :: d['from'] == '$DIR'
it names the database :: d['to'] == '$A'
EOF
expect_eq "$(rows "$A")" "$events_in_dir" "the database holds one row per event"
expect_eq "$(sql "$A" "SELECT count(*) FROM fingerprint_manifests")" "$manifests_in_dir" "and one per input manifest"

# same RC WHAT ARGS...: the command gives the same exit code (RC), standard
# output and error on the directory $CMP_DIR and the database $CMP_DB, once
# each one's location is replaced by <STORE> (and relative times and table
# padding are set aside: a second may pass between the two runs). With
# CMP_TIMES=any, the events' times too (the same records made twice).
CMP_TIMES=exact
normalise() {
  local text
  text=$(cat "$1")
  text=${text//"$CMP_DB"/<STORE>}
  text=${text//"$CMP_DIR"/<STORE>}
  printf '%s\n' "$text" | sed -E 's/(just now|[0-9]+ (s|min|h|days) ago)/<WHEN>/g; s/  +/  /g' |
    if [[ $CMP_TIMES == any ]]; then
      sed -E 's/"(time|last_time|startedOn|finishedOn)": "[^"]*"/"\1": "<TIME>"/g; s/\([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}\)/(<DATE>)/g'
    else
      cat
    fi
}
same() {
  local want=$1 what=$2
  shift 2
  run "$FP" --store "$CMP_DIR" "$@"
  local dir_rc=$RC
  normalise "$T/out" >dir.out
  normalise "$T/err" >dir.err
  run "$FP" --store "$CMP_DB" "$@"
  normalise "$T/out" >pg.out
  normalise "$T/err" >pg.err
  if ((dir_rc != want || RC != want)); then
    _result 0 "$what: exit codes: directory $dir_rc, PostgreSQL $RC, expected $want"
    show_output >&2
    return
  fi
  if [[ ! -s dir.out && ! -s dir.err ]]; then
    _result 0 "$what: no output at all"
    return
  fi
  if cmp -s dir.out pg.out && cmp -s dir.err pg.err; then
    _result 1 "$what: the same on both stores (exit $want)"
  else
    _result 0 "$what: the stores answer differently:"$'\n'"$(diff dir.out pg.out | head -20 | sed 's/^/  out| /')"$'\n'"$(diff dir.err pg.err | head -10 | sed 's/^/  err| /')"
  fi
}

lib=$(digest_of lib.so)
absent=$(printf 'never recorded\n' | sha256sum | cut -c1-64)
compare_all() {
  local round=$1 x
  for x in lib.so app app2 bundle.tar plugin.so sys/libc.so.6 prefix/lib/lib.so; do
    same 0 "$round: show --json $x" show --json "$x"
    same 0 "$round: consumers --json $x" consumers --json "$x"
    same 0 "$round: consumers --transitive --json $x" consumers --transitive --json "$x"
  done
  for x in lib.so app bundle.tar plugin.so; do
    same 0 "$round: export --format in-toto $x" export --format in-toto "$x"
  done
  # An installed copy exports the build of the file it was installed from, on either.
  same 0 "$round: export --format in-toto prefix/lib/lib.so" export --format in-toto prefix/lib/lib.so
  same 0 "$round: show lib.so (table)" show lib.so
  same 0 "$round: consumers --transitive lib.so (table)" consumers --transitive lib.so
  same 0 "$round: show sha256:<lib.so>" show --json "sha256:$lib"
  same 1 "$round: show of an unrecorded digest" show "sha256:$absent"
  same 1 "$round: consumers of an unrecorded digest" consumers --json "sha256:$absent"
  same 0 "$round: consumers of an artifact nobody consumed" consumers --json other
  same 0 "$round: why --json bundle.tar lib.so" why --json bundle.tar lib.so
  same 0 "$round: why bundle.tar lib.so" why bundle.tar lib.so
  same 0 "$round: why --json plugin.so lib.so (through the install)" why --json plugin.so lib.so
  same 0 "$round: why --json app2 sys/libc.so.6" why --json app2 sys/libc.so.6
  same 1 "$round: why --json lib.so bundle.tar (no)" why --json lib.so bundle.tar
  same 1 "$round: why other lib.so (no)" why other lib.so
  same 0 "$round: builds --json" builds --json
  same 0 "$round: builds --project apps --json" builds --project apps --json
  same 0 "$round: builds (table)" builds
  same 1 "$round: builds --project nosuch" builds --project nosuch
  for x in "core 1" "core 2" "apps 7" "apps 8" "dist 3" "plugins 1" "misc 1"; do
    # shellcheck disable=SC2086 # project and build
    same 0 "$round: build show --json $x" build show $x --json
  done
  same 1 "$round: build show of an unknown build" build show apps 99 --json
  same 0 "$round: export --project dist --build 3" export --format in-toto --project dist --build 3
  same 0 "$round: verify --json FILE..." verify --json lib.so app app2 bundle.tar plugin.so prefix/lib/lib.so other
  same 0 "$round: verify --build-dir b1 --json" verify --build-dir "$T/b1" --json
  same 0 "$round: graph --format json" graph --format json
  same 0 "$round: graph --format dot" graph --format dot
  same 0 "$round: graph --format mermaid" graph --format mermaid
  same 0 "$round: graph (text)" graph
  same 0 "$round: graph --artifacts --format json" graph --artifacts --format json
  same 0 "$round: graph --project apps --format dot" graph --project apps --format dot
  same 0 "$round: check --build-dir b1 lib.so" check --build-dir "$T/b1" lib.so
  same 0 "$round: check --build-dir b2 --target app app" check --build-dir "$T/b2" --target app app
  same 1 "$round: check of a file from another tree" check --build-dir "$T/b1" app
  same 0 "$round: gc --dry-run --keep-builds 1 --json" gc --dry-run --keep-builds 1 --json

  run "$FP" --store "$DIR" fsck --json
  cp "$T/out" fsck-dir.json
  run "$FP" --store "$A" fsck --json
  expect_rc 0 "$round: fsck --json on the database"
  cp "$T/out" fsck-pg.json
  expect_json_each fsck-pg.json <<EOF
$round: fsck counts the same logs, build indexes and events on both :: [d[k] for k in ('logs', 'build_indexes', 'events')] == [json.load(open('fsck-dir.json'))[k] for k in ('logs', 'build_indexes', 'events')]
$round: fsck of the database counts every event :: d['events'] > 0 and d['logs'] == $logs_in_dir
$round: fsck of the database finds nothing wrong :: d['problems'] == []
$round: fsck names the database :: d['store'] == '$A'
EOF
}
CMP_DIR=$DIR
CMP_DB=$A
compare_all "after the first migrate"

run "$FP" migrate --from "$DIR" --to "$A" --json
expect_rc 0 "migrate again"
expect_json_each "$T/out" <<EOF
a second migrate reads everything again :: d['events_read'] == $events_in_dir
and copies nothing :: d['events_copied'] == 0
every event is already there :: d['events_present'] == d['events_read']
EOF
expect_eq "$(rows "$A")" "$events_in_dir" "a second migrate adds no row"
compare_all "after the second migrate"
expect_unchanged "$DIR" dir-before "migrating and querying leave the directory alone"

# A new event in the directory after the migrate: a third migrate copies
# exactly that one.
printf 'late\n' >late
rec --build-dir "$T/b5" --project misc --target late --build-id 2 --produced late
run "$FP" migrate --from "$DIR" --to "$A" --json
expect_json "$T/out" "d['events_copied'] == 1 and d['events_present'] == $events_in_dir" "a third migrate copies only the new event"
same 0 "after a third migrate: show --json late" show --json late
run "$FP" migrate --from "$DIR" --to "$A"
expect_rc 0 "migrate (human output)"
expect_in out "$A" "migrate names the database"

# Usage errors.
run "$FP" migrate --from "$DIR"
expect_rc 2 "migrate without --to is a usage error"
run "$FP" migrate --from "$T/nosuch" --to "$A"
expect_rc 1 "migrate from a directory that does not exist fails"
expect_in err "$T/nosuch" "and names it"
run "$FP" migrate --from "$DIR" --to "$T/other-dir"
expect_rc 2 "migrate to a directory is a usage error"

# gc for real, on both: the same events go, and both still answer alike.
same 0 "gc --keep-builds 1 --json" gc --keep-builds 1 --json
expect_eq "$(sql "$A" "SELECT count(*) FILTER (WHERE logged) + count(*) FILTER (WHERE listed) FROM fingerprint_events")" \
  "$(cat "$DIR"/objects/*/*/*.jsonl | wc -l)" "after gc: as many rows in logs (their own, their manifests') as event lines in the directory's logs"
for x in lib.so app app2 sys/libc.so.6 prefix/lib/lib.so; do
  same 0 "after gc: show --json $x" show --json "$x"
  same 0 "after gc: consumers --transitive --json $x" consumers --transitive --json "$x"
done
same 0 "after gc: builds --json" builds --json
# The builds summary in the database (fingerprint_build_summaries), as
# build_summary.sh checks builds.summary: gc wrote it, and builds reads it.
expect_eq "$(sql "$A" "SELECT count(*) FROM fingerprint_build_summaries")" 1 "gc writes the builds summary into the database"
# Used: a line changed under an unchanged stamp shows in the answer, and
# fsck calls it damage until --repair writes it anew.
sql "$A" "SELECT summary FROM fingerprint_build_summaries" | head -c -1 >pg.summary
summary_rewrite pg.summary 'l[:6] + ["7"] + l[7:] if l[0] == "core" else l'
sql "$A" "UPDATE fingerprint_build_summaries SET summary = convert_from(decode('$(od -An -tx1 -v pg.summary | tr -d ' \n')', 'hex'), 'UTF8')" >/dev/null
run "$FP" --store "$A" builds --json
expect_json_each "$T/out" <<<"the database's summary is what builds reads :: [b['produced'] for b in d if b['project'] == 'core'] == [7]"
run "$FP" --store "$A" fsck --json
expect_rc 1 "fsck of the database: a summary line that does not match its build index is a problem"
expect_json_each "$T/out" <<<"named with the table :: [f['file'] for f in d['problems']] == ['fingerprint_build_summaries']"
run "$FP" --store "$A" fsck --repair
expect_rc 0 "fsck --repair of the database mends the summary"
expect_in out "written anew" "by writing it anew"
same 0 "after fsck --repair: builds --json" builds --json
# Out of date: an append to a summarized build changes its stamp, and new
# builds have no line yet (read in one statement, with the input manifests
# their products name, whose inputs the summary counts).
rec --build-dir "$T/b5" --project misc --target more --build-id 2 --produced other
for i in 1 2 3; do
  printf 'build %s of many\n' "$i" >"many$i"
  rec --build-dir "$T/b5" --project many --target m --build-id "$i" --produced "many$i" --consumed lib.so \
    $(((i > 1)) && echo "many$((i - 1))")
done
run "$FP" migrate --from "$DIR" --to "$A"
expect_rc 0 "migrate the appends"
same 0 "a summary out of date: builds --json" builds --json
same 0 "a summary out of date: builds --project misc --json" builds --project misc --json
run "$FP" --store "$A" builds --project many --json
expect_json_each "$T/out" <<<"the new builds' inputs are counted :: [b['consumed'] for b in d] == [1, 2, 2]"
same 0 "after gc: graph --artifacts --format json" graph --artifacts --format json
same 0 "after gc: why --json plugin.so lib.so" why --json plugin.so lib.so
# The index by path in the database (fingerprint_path_index), as
# path_index.sh checks paths.index: gc wrote it, and history reads the
# builds it names and every build changed since (many's, misc's second),
# and answers as the directory does.
expect_eq "$(sql "$A" "SELECT count(*) > 0 FROM fingerprint_path_index")" t "gc writes the index by path into the database"
# And vacuums it: the rows it replaced are otherwise still found through the
# GIN indexes by every history until autovacuum comes (4x its time at 1M).
# (n_dead_tup is no witness: gc's connection reports its deletes when it
# ends, after its VACUUM.)
expect_eq "$(sql "$A" "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'fingerprint_path_index'")" t \
  "gc vacuums the index by path it rewrote"
for x in lib.so app sys/libc.so.6 many3 other; do
  same 0 "history --json $x" history --json "$x"
done
# Used: core's rows emptied under their unchanged stamps hide its builds.
run "$FP" --store "$A" history --json lib.so
expect_json "$T/out" "any(p['project'] == 'core' for v in d['versions'] for p in v['producers'])" "core produced lib.so"
sql "$A" "UPDATE fingerprint_path_index SET paths = '{}', inputs = '{}' WHERE project = 'core'" >/dev/null
run "$FP" --store "$A" history --json lib.so
expect_json "$T/out" "not any(p['project'] == 'core' for v in d['versions'] for p in v['producers'])" \
  "the index is what history reads: with core's rows emptied, core's builds are not read"
# gc's mark: every event up to it is in the index; the builds with events
# above it (many's, misc's second, migrated after the gc) were read above
# whatever their rows say. A row of stamp -1 (a build gc could not index)
# is read whatever the path; an index without a mark (an older runner's
# gc) is read by the builds' stamps.
expect_eq "$(sql "$A" "SELECT count(*) FROM fingerprint_path_index_mark")" 1 "gc marks the index by path"
expect_eq "$(sql "$A" "SELECT (SELECT last_id FROM fingerprint_path_index_mark) < (SELECT max(id) FROM fingerprint_events WHERE project = 'many')")" t \
  "the appends migrated after the gc are above its mark"
sql "$A" "UPDATE fingerprint_path_index SET rows = -1, last_id = -1 WHERE project = 'core'" >/dev/null
run "$FP" --store "$A" history --json lib.so
expect_json "$T/out" "any(p['project'] == 'core' for v in d['versions'] for p in v['producers'])" \
  "a row of stamp -1 is read whatever its paths say"
sql "$A" "DELETE FROM fingerprint_path_index_mark" >/dev/null
same 0 "an index without a mark: history --json lib.so" history --json lib.so
same 0 "an index without a mark: history --json many3" history --json many3
run "$FP" --store "$A" fsck --repair
expect_rc 0 "fsck --repair of the database writes the index anew"
expect_eq "$(sql "$A" "SELECT count(*) FROM fingerprint_path_index_mark")" 1 "and marks it"
same 0 "after the index is written anew: history --json lib.so" history --json lib.so
run "$FP" --store "$DIR" fsck --json
cp "$T/out" fsck-dir.json
run "$FP" --store "$A" fsck --json
expect_json "$T/out" "[d[k] for k in ('logs', 'build_indexes', 'events', 'problems')] == [json.load(open('fsck-dir.json'))[k] for k in ('logs', 'build_indexes', 'events', 'problems')] and d['problems'] == []" \
  "after gc: fsck counts the same on both, and no problem"

# ---------------------------------------------------------------------------
# b. Recording straight into PostgreSQL ($FINGERPRINT_DIR, --store, the
#    postgres:// spelling), the same records into a directory beside it:
#    both answer alike, but for the times.
# ---------------------------------------------------------------------------
B=$(new_db b)
DIRB=$T/SB
printf 'direct lib\n' >direct-lib.so
printf 'direct app\n' >direct-app
printf 'direct tool\n' >direct-tool
printf 'direct doc\n' >direct-doc
printf 'odd names\n' >odd.bin
mkdir -p db1 db2
printf 'direct lib, installed\n' >prefix/lib/direct-lib.so
# rec_both HOW WHAT ARGS...: the command on the directory (--store) and on
# the database (HOW: env for $FINGERPRINT_DIR, store for --store, short for
# a postgres:// URL).
rec_both() {
  local how=$1 what=$2
  shift 2
  run "$FP" --store "$DIRB" "$@"
  expect_rc 0 "directory: $what"
  case $how in
    env) run env FINGERPRINT_DIR="$B" "$FP" "$@" ;;
    store) run "$FP" --store "$B" "$@" ;;
    short) run "$FP" --store "postgres://${B#postgresql://}" "$@" ;;
  esac
  expect_rc 0 "database ($how): $what"
}
rec_both env "FINGERPRINT_DIR=URL record" record --build-dir "$T/db1" --project direct --version 2.1 --target lib --build-id 1 --produced direct-lib.so
rec_both store "--store URL record" record --build-dir "$T/db1" --project direct --version 2.1 --target app --build-id 1 --produced direct-app --consumed direct-lib.so sys/libc.so.6
rec_both short "--store postgres://... record" record --build-dir "$T/db2" --project tools --target tool --build-id 5 --produced direct-tool direct-doc --consumed direct-app direct-lib.so
rec_both store "record names with spaces, slashes, % and UTF-8" record --build-dir "$T/db2" --project 'my project/ü%2F' --target 't:x y' --build-id '1/2 3%' --produced odd.bin --consumed direct-tool
rec_both store "installed into the database" installed --project direct --build-dir "$T/db1" --required -- "$T/prefix/lib/direct-lib.so"
# The same record twice is two events, as in a directory.
rec_both env "the same record again" record --build-dir "$T/db1" --project direct --version 2.1 --target lib --build-id 1 --produced direct-lib.so
expect_no_file "postgresql:" "the URL is not taken for a relative directory"
expect_no_file "postgres:" "nor the short one"
# 1 + 1 (app) + 2 (tool) + 1 (odd) + 2 (installed, in two logs) + 1; the
# inputs of app, tool and odd are in 3 manifests.
expect_eq "$(rows "$B")" 8 "8 rows"
expect_eq "$(sql "$B" "SELECT count(*) FROM fingerprint_manifests")" 3 "3 input manifests"
run "$FP" --store "$B" show --json direct-lib.so
expect_rc 0 "show --json finds what was recorded"
expect_json_each "$T/out" <<EOF
its producers, recorded through FINGERPRINT_DIR :: [(e['project'], e['version'], e['target'], e['build'], e['build_dir']) for e in d['producers']] == [('direct', '2.1', 'lib', '1', '$T/db1')] * 2
its consumers, recorded through --store and postgres:// :: sorted((e['target'], e['product']) for e in d['consumers']) == sorted([('app', 'sha256:$(digest_of direct-app)'), ('tool', 'sha256:$(digest_of direct-tool)'), ('tool', 'sha256:$(digest_of direct-doc)')])
EOF
run env FINGERPRINT_DIR="$B" "$FP" consumers --json direct-lib.so
expect_rc 0 "FINGERPRINT_DIR=URL consumers --json"
expect_json "$T/out" "sorted(e['target'] for e in d) == ['app', 'tool', 'tool']" "consumers finds the app and the tool"
run "$FP" --store "$B" fsck --json
# fsck counts each event in its log and in its build's index (an installed
# copy's link only in the log it links), and a product made from inputs in
# its manifest's log too, as a directory store does.
expect_json "$T/out" "d['problems'] == [] and d['events'] == 19 and d['build_indexes'] == 3 and d['manifests'] == 3" \
  "fsck: 8 rows, 7 of them in the 3 build indexes (the install goes to direct 1), 4 in manifests' logs; nothing wrong"

# A record that cannot digest every file records nothing.
before=$(rows "$B")
run "$FP" --store "$B" record --build-dir "$T/db1" --project direct --target broken --build-id 2 --produced direct-app --consumed "$T/no-such-file"
expect_rc 1 "a record with a missing input fails"
expect_in err "no-such-file" "and names the file"
expect_eq "$(rows "$B")" "$before" "and adds no row"

CMP_DIR=$DIRB
CMP_DB=$B
CMP_TIMES=any
for x in direct-lib.so direct-app direct-tool direct-doc odd.bin prefix/lib/direct-lib.so; do
  same 0 "recorded alike: show --json $x" show --json "$x"
  same 0 "recorded alike: consumers --transitive --json $x" consumers --transitive --json "$x"
done
same 0 "recorded alike: why --json odd.bin direct-lib.so" why --json odd.bin direct-lib.so
same 0 "recorded alike: builds --json" builds --json
same 0 "recorded alike: build show (odd names) --json" build show 'my project/ü%2F' '1/2 3%' --json
same 0 "recorded alike: build show tools 5 --json" build show tools 5 --json
same 0 "recorded alike: build show direct 1 --json" build show direct 1 --json
same 0 "recorded alike: export --project tools --build 5" export --format in-toto --project tools --build 5
same 0 "recorded alike: graph --format dot" graph --format dot
same 0 "recorded alike: graph --artifacts --format json" graph --artifacts --format json
same 0 "recorded alike: verify --build-dir db1 --json" verify --build-dir "$T/db1" --json
same 0 "recorded alike: gc --dry-run --keep-builds 1 --json" gc --dry-run --keep-builds 1 --json
CMP_TIMES=exact

# --store beats $FINGERPRINT_DIR, whichever of them names a database.
run env FINGERPRINT_DIR="$B" "$FP" --store "$DIRB" fsck --json
expect_json "$T/out" "d['store'] == '$DIRB'" "FINGERPRINT_DIR=URL --store DIR: the directory"
run env FINGERPRINT_DIR="$DIRB" "$FP" --store "$B" fsck --json
expect_json "$T/out" "d['store'] == '$B'" "FINGERPRINT_DIR=DIR --store URL: the database"

# A password in the URL (the test server trusts everyone, so any will do)
# shows in no output, wherever the store is named.
SECRET=postgresql://postgres:secret@${B#postgresql://postgres@}
nothing=sha256:$(printf '%064d' 0)
for cmd in "show $nothing" "consumers $nothing" "why odd.bin direct-app" "builds --project nosuch" "build show x 9" \
  "export --format in-toto $nothing" "fsck --json" "graph --format html" "gc --dry-run --keep-builds 1 --json"; do
  # shellcheck disable=SC2086 # the command's words
  run "$FP" --store "$SECRET" $cmd
  expect_not_in both "secret" "a password in the URL: ${cmd%% *} does not show it"
done
run "$FP" --store "$SECRET" fsck --json
expect_json "$T/out" "d['store'] == 'postgresql://postgres:***@${B#postgresql://postgres@}'" "fsck names the store with its password masked"
run "$FP" migrate --from "$DIRB" --to "$SECRET" --json
expect_rc 0 "migrate into a URL with a password"
expect_not_in both "secret" "migrate does not show the password"

# ---------------------------------------------------------------------------
# c. 16 concurrent writers on a fresh database (the schema is created by
#    whichever comes first); all of them consume one shared library.
# ---------------------------------------------------------------------------
C=$(new_db c)
WRITERS=16
PER_WRITER=5
mkdir -p conc
printf 'shared library\n' >conc/shared.so
for w in $(seq 1 $WRITERS); do
  mkdir -p "conc/b$w"
  for i in $(seq 1 $PER_WRITER); do
    printf 'writer %d, product %d\n' "$w" "$i" >"conc/out-$w-$i"
  done
done
writer() {
  local w=$1 i status=0 inputs
  for i in $(seq 1 $PER_WRITER); do
    inputs=("$T/conc/shared.so")
    ((i > 1)) && inputs+=("$T/conc/out-$w-$((i - 1))")
    timeout 120 "$FP" --store "$C" record --build-dir "$T/conc/b$w" --project "writer$w" --target "t$i" \
      --build-id "w$w" --produced "$T/conc/out-$w-$i" --consumed "${inputs[@]}" || status=$?
    ((status == 0)) || break
  done
  echo "$status" >"$T/conc/rc-$w"
}
start=$(now_ms)
pids=()
for w in $(seq 1 $WRITERS); do
  writer "$w" >"conc/out-log-$w" 2>"conc/err-log-$w" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
elapsed=$(($(now_ms) - start))
echo "  ($WRITERS writers x $PER_WRITER records: $elapsed ms)"
failed=0
for w in $(seq 1 $WRITERS); do
  if [[ $(cat "conc/rc-$w" 2>/dev/null) != 0 ]]; then
    failed=$((failed + 1))
    echo "  writer $w: exit $(cat "conc/rc-$w" 2>/dev/null || echo '?'): $(head -5 "conc/err-log-$w")" >&2
  fi
done
expect_eq "$failed" 0 "no writer failed"
expect_eq "$(cat conc/err-log-* | wc -c)" 0 "no writer printed an error or warning"
# Each record: 1 produced, 1 input (shared.so), 1 more from the second on:
# one manifest of shared.so alone (every writer's first record shares it)
# and one per later record.
produced=$((WRITERS * PER_WRITER))
consumed=$((WRITERS * PER_WRITER + WRITERS * (PER_WRITER - 1)))
expect_eq "$(rows "$C")" $produced "every event is there once: $produced produced rows"
expect_eq "$(sql "$C" "SELECT count(*) FROM fingerprint_manifests")" $((1 + WRITERS * (PER_WRITER - 1))) \
  "every input manifest is there once, the shared one too"
expect_eq "$(sql "$C" "SELECT count(*) FROM fingerprint_manifest_entries")" $((1 + 2 * WRITERS * (PER_WRITER - 1))) \
  "with its entries"
run "$FP" --store "$C" show --json conc/shared.so
expect_rc 0 "show --json shared.so"
expect_json_each "$T/out" <<EOF
shared.so has one consumer event per record :: len(d['consumers']) == $produced
each (writer, target) consumed it once :: len({(e['project'], e['target']) for e in d['consumers']}) == $produced
no producer :: d['producers'] == []
EOF
run "$FP" --store "$C" builds --json
expect_json_each "$T/out" <<EOF
one build per writer :: sorted(b['project'] for b in d) == sorted('writer%d' % w for w in range(1, $WRITERS + 1))
each build produced $PER_WRITER and consumed $PER_WRITER artifacts :: all((b['produced'], b['consumed']) == ($PER_WRITER, $PER_WRITER) for b in d)
EOF
run "$FP" --store "$C" consumers --transitive --json conc/shared.so
# Every product also consumed shared.so itself: depth 1 or 2.
expect_json "$T/out" "len(d) == $consumed and sorted({e['depth'] for e in d}) == [1, 2]" \
  "consumers --transitive: every consumer event once, at depth 1 or 2"
run "$FP" --store "$C" fsck --json
expect_json "$T/out" "d['problems'] == [] and d['events'] == 3 * $produced and d['build_indexes'] == $WRITERS" \
  "fsck after the writers: every event (in its log, its index and its manifest's log), nothing wrong"
run "$FP" --store "$C" why --json "conc/out-7-$PER_WRITER" conc/shared.so
expect_json "$T/out" "len(d['chain']) == 1" "why: the last product of a writer consumed shared.so directly"

# ---------------------------------------------------------------------------
# d. A server that is down, or that never answers.
# ---------------------------------------------------------------------------
# A port nobody listens on: the kernel's choice, closed again.
closed=$(checks_py free-port)
DOWN="postgresql://u:secret@127.0.0.1:$closed/db"
printf 'down\n' >down.bin
for cmd in "show --json sha256:$lib" "record --required --project p --target t --build-id 1 --produced down.bin" \
  "builds --json" "fsck" "consumers --transitive sha256:$lib" "graph --format dot"; do
  start=$(now_ms)
  # shellcheck disable=SC2086 # the command's words
  run "$FP" --store "$DOWN" $cmd
  elapsed=$(($(now_ms) - start))
  expect_rc 1 "server down: ${cmd%% *}"
  expect_in err "127.0.0.1:$closed" "server down: ${cmd%% *}: the error names the server"
  expect_not_in both "secret" "server down: ${cmd%% *}: the password is not shown"
  expect_lt "$elapsed" 5000 "server down: ${cmd%% *}: fails at once"
done
run "$FP" --store "$DOWN" show --json "sha256:$lib"
expect_in err "u:***@127.0.0.1:$closed/db" "the error names the URL, its password masked"
expect_match err '^fingerprint: ' "the error has the house prefix"
run env FINGERPRINT_DIR="$DOWN" "$FP" show "sha256:$lib"
expect_not_in both "secret" "server down through FINGERPRINT_DIR: the password is not shown"
run "$FP" migrate --from "$DIR" --to "$DOWN"
expect_rc 1 "migrate to a server that is down"
expect_not_in both "secret" "migrate: the password is not shown"
# Without --required the events wait in the spool (tests/pg/outage.sh delivers them).
run "$FP" --store "$DOWN" record --project p --target t --build-id 2 --produced down.bin
expect_rc 0 "server down: record without --required spools the events"
expect_in err "spooled to $T/spool/" "and says where"
expect_not_in both "secret" "record, spooling: the password is not shown"
expect_eq "$(grep -rlF secret "$T/spool" | wc -l)" 0 "the spool holds no password"

# A listener that accepts and never answers.
# Run directly (not through a shell function, so that $! is python's own
# pid), off the test's output (CTest waits for every holder of its pipe),
# and ending by itself in any case.
/usr/bin/python3 "$CHECKS" silent-listener </dev/null >silent.port 2>/dev/null &
BACKGROUND+=($!)
for _ in $(seq 1 50); do [[ -s silent.port ]] && break; sleep 0.1; done
silent=$(cat silent.port)
start=$(now_ms)
RUN_TIMEOUT=30 run "$FP" --store "postgresql://u:secret@127.0.0.1:$silent/db?connect_timeout=2" show --json "sha256:$lib"
elapsed=$(($(now_ms) - start))
expect_rc 1 "a server that never answers, connect_timeout=2"
expect_match err 'time.?out|timed out' "the error names the timeout"
expect_in err "127.0.0.1:$silent" "and the server"
expect_not_in both "secret" "and not the password"
expect_lt 1500 "$elapsed" "it waited for the timeout"
expect_lt "$elapsed" 15000 "and not much longer"
start=$(now_ms)
RUN_TIMEOUT=60 run "$FP" --store "postgresql://u:secret@127.0.0.1:$silent/db" record --required --project p --target t --build-id 1 --produced down.bin
elapsed=$(($(now_ms) - start))
expect_rc 1 "a server that never answers, no connect_timeout in the URL"
expect_match err 'time.?out|timed out' "the error names the timeout"
expect_lt 4000 "$elapsed" "the default connect timeout (5 s) is waited for"
expect_lt "$elapsed" 20000 "and ends the wait"

# A table locked by someone else (a VACUUM FULL, an ALTER): the hook gives
# up after the lock timeout (10 s) instead of hanging the build.
/usr/bin/timeout 60 psql "$C" -X -qAt -v ON_ERROR_STOP=1 \
  -c "BEGIN" -c "LOCK TABLE fingerprint_events IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(40)" \
  </dev/null >/dev/null 2>&1 &
locker=$!
for _ in $(seq 1 100); do
  [[ $(sql "$SERVER" "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation IS NOT NULL AND granted AND database = (SELECT oid FROM pg_database WHERE datname = '${C##*/}')") -gt 0 ]] && break
  sleep 0.1
done
start=$(now_ms)
RUN_TIMEOUT=40 run "$FP" --store "$C" record --required --project p --target locked --build-id 1 --produced down.bin
elapsed=$(($(now_ms) - start))
expect_rc 1 "record against a locked table fails"
expect_in err "lock timeout" "and says it waited for a lock"
expect_lt 9000 "$elapsed" "after the lock timeout (10 s)"
expect_lt "$elapsed" 25000 "not after the statement timeout or later"
sql "$SERVER" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${C##*/}' AND query LIKE '%pg_sleep%'" >/dev/null
wait "$locker" 2>/dev/null || true # psql exits non-zero: its backend was terminated

# launch: the build step's command runs either way; without --required the
# events are spooled, with it recording fails.
mkdir -p lb
printf 'object\n' >lb/in.o
run env FINGERPRINT_BUILD_ID=1 "$FP" --store "$DOWN" launch --project p --target exe --output "$T/lb/exe" \
  --build-dir "$T/lb" --type EXECUTABLE -- cp "$T/lb/in.o" "$T/lb/exe"
expect_rc 0 "launch without --required: the step goes on"
expect_file lb/exe "the step's command ran"
expect_in err "spooled to $T/spool/" "and warns that it spooled"
expect_not_in both "secret" "launch: the password is not shown"
rm -f lb/exe
run env FINGERPRINT_BUILD_ID=1 "$FP" --store "$DOWN" launch --project p --target exe --output "$T/lb/exe" \
  --build-dir "$T/lb" --type EXECUTABLE --required -- cp "$T/lb/in.o" "$T/lb/exe"
expect_rc 1 "launch --required: the step fails"
expect_in err "127.0.0.1:$closed" "and says which server"
expect_not_in both "secret" "launch --required: the password is not shown"
run "$FP" --store "$DOWN" installed --project core --build-dir "$T/b1" -- "$T/prefix/lib/lib.so"
expect_rc 0 "installed without --required: the install goes on"
run "$FP" --store "$DOWN" installed --project core --build-dir "$T/b1" --required -- "$T/prefix/lib/lib.so"
expect_rc 1 "installed --required: fails"

# ---------------------------------------------------------------------------
# e. Bad input changes nothing.
# ---------------------------------------------------------------------------
E=$(new_db e)
BAD=$T/bad
printf 'bad 1\n' >bad1
printf 'bad 2\n' >bad2
printf 'bad 3\n' >bad3
run "$FP" --store "$BAD" record --project bad --target one --build-id 1 --produced bad1
expect_rc 0 "record into a directory to migrate"
run "$FP" migrate --from "$BAD" --to "$E" --json
expect_rc 0 "migrate it"
before=$(rows "$E")
expect_eq "$before" 1 "one row"
# Two more logs after that migrate; one of them gets garbage. Whichever order
# migrate reads them in, a copy of the good one would show.
run "$FP" --store "$BAD" record --project bad --target two --build-id 2 --produced bad2 bad3
expect_rc 0 "record two more artifacts into the directory"
bad_log=objects/sha256/$(digest_of bad3 | cut -c1-2)/$(digest_of bad3).jsonl
printf 'this is no event {\n' >>"$BAD/$bad_log"
run "$FP" migrate --from "$BAD" --to "$E" --json
expect_rc 1 "migrate from a directory with a corrupt log fails"
expect_in err "$bad_log" "the error names the corrupt log"
expect_in err "fsck" "and says what to do"
expect_eq "$(rows "$E")" "$before" "no row was added"
run "$FP" --store "$E" show bad2
expect_rc 1 "the healthy new artifact was not copied either"

# A damaged row: reported with its row, set aside by fsck --repair.
sql "$E" "UPDATE fingerprint_events SET line = 'damaged {' WHERE id = (SELECT min(id) FROM fingerprint_events)"
run "$FP" --store "$E" show --json bad1
expect_in err "fingerprint_events" "a damaged row: show names the table"
run "$FP" --store "$E" fsck --json
expect_rc 1 "a damaged row: fsck finds it"
expect_json "$T/out" "len(d['problems']) == 1 and d['problems'][0]['kind'] == 'damage'" "a damaged row: one problem, damage"
run "$FP" --store "$E" fsck --repair
expect_rc 0 "a damaged row: fsck --repair"
expect_eq "$(sql "$E" "SELECT line FROM fingerprint_quarantine")" "damaged {" "the row is kept in fingerprint_quarantine"
expect_eq "$(rows "$E")" "$((before - 1))" "and no longer among the events"
run "$FP" --store "$E" fsck
expect_rc 0 "fsck after the repair finds nothing"

# A database of a newer schema: every command refuses, and adds nothing.
F=$(new_db newer)
run "$FP" --store "$F" record --project p --target t --build-id 1 --produced bad1
expect_rc 0 "a first record creates the schema"
expect_eq "$(sql "$F" "SELECT count(*) FROM fingerprint_schema")" 1 "fingerprint_schema has one row"
sql "$F" "UPDATE fingerprint_schema SET version = 999"
before=$(rows "$F")
for cmd in "record --project p --target t --build-id 2 --produced bad2" "show bad1" "show --json sha256:$absent" \
  "consumers --json bad1" "consumers --transitive bad1" "why bad1 bad2" "builds --json" "build show p 1 --json" \
  "export --format in-toto bad1" "verify --json bad1" "graph --format json" "fsck --json" "gc --dry-run --keep-builds 1" \
  "check --build-dir $T bad1" "installed --project p --build-dir $T --required -- $T/bad1" \
  "launch --project p --target exe --output $T/lb/exe --build-dir $T/lb --required -- cp $T/lb/in.o $T/lb/exe"; do
  # shellcheck disable=SC2086 # the command's words
  run "$FP" --store "$F" $cmd
  label=$(cut -d' ' -f1-2 <<<"$cmd")
  expect_rc 1 "schema 999: $label refuses"
  expect_in err "999" "schema 999: $label names the version"
done
run "$FP" migrate --from "$BAD" --to "$F"
expect_rc 1 "schema 999: migrate refuses"
expect_in err "999" "schema 999: migrate names the version"
expect_eq "$(rows "$F")" "$before" "schema 999: no row was added"
expect_eq "$(sql "$F" "SELECT version FROM fingerprint_schema")" 999 "schema 999: the version was left alone"

# The record calls' ids (fingerprint_calls) raise no schema version, which
# would lock out every older runner during a rolling upgrade: the table is
# made by the first call that misses it; ids older than 30 days are
# forgotten by the calls after.
H=$(new_db calls)
run "$FP" --store "$H" record --project p --target t --build-id 1 --produced bad1
expect_rc 0 "calls: a first record"
expect_eq "$(sql "$H" "SELECT max(version) FROM fingerprint_schema")" 2 "calls: the schema stays at version 2 (manifests)"
expect_eq "$(sql "$H" "SELECT count(*) FROM fingerprint_calls")" 1 "calls: the call's id is stored"
sql "$H" "DROP TABLE fingerprint_calls"
run "$FP" --store "$H" record --project p --target t --build-id 2 --produced bad1
expect_rc 0 "calls: a record into a database without fingerprint_calls (made by an older runner)"
expect_eq "$(sql "$H" "SELECT count(*) FROM fingerprint_calls")" 1 "calls: the table is made again, holding the call's id"
expect_eq "$(sql "$H" "SELECT count(*) FROM fingerprint_events WHERE build = '2'")" 1 "calls: and the call's event is stored"
P=$(new_db prune)
run "$FP" --store "$P" record --project p --target t --build-id 1 --produced bad1
expect_rc 0 "calls: a first record into another database"
sql "$P" "INSERT INTO fingerprint_calls VALUES ('old', now() - interval '31 days'), ('recent', now() - interval '29 days')"
run "$FP" --store "$P" record --project p --target t --build-id 2 --produced bad1
expect_rc 0 "calls: a record with an id 31 days old in the table"
expect_eq "$(sql "$P" "SELECT string_agg(id, ',') FROM fingerprint_calls WHERE id IN ('old', 'recent')")" recent \
  "calls: the id older than 30 days is forgotten, the younger one kept"

# ---------------------------------------------------------------------------
# f. A database never written to is no store, like a directory that does
#    not exist: every reader says so (only writers create a store), and it
#    stays untouched.
# ---------------------------------------------------------------------------
G=$(new_db empty)
expect_eq "$(tables "$G")" "" "a fresh database has no tables"
empty_answers() {
  local want=$1 what=$2
  shift 2
  run "$FP" --store "$T/no-store" "$@"
  local dir_rc=$RC
  sed "s|$T/no-store|<STORE>|g" "$T/out" >dir.out
  sed "s|$T/no-store|<STORE>|g" "$T/err" >dir.err
  run "$FP" --store "$G" "$@"
  local pg_rc=$RC
  sed "s|$G|<STORE>|g" "$T/out" >pg.out
  sed "s|$G|<STORE>|g" "$T/err" >pg.err
  if ((dir_rc == want && pg_rc == want)) && cmp -s dir.out pg.out && cmp -s dir.err pg.err; then
    _result 1 "empty database: $what answers like a missing directory (exit $want)"
  else
    _result 0 "empty database: $what: directory exit $dir_rc, database exit $pg_rc (expected $want):"$'\n'"$(diff dir.out pg.out | head -10 | sed 's/^/  out| /')"$'\n'"$(diff dir.err pg.err | head -10 | sed 's/^/  err| /')"
  fi
}
run "$FP" --store "$G" show "sha256:$absent"
expect_rc 1 "show on a database never written to"
expect_in err "$G: no fingerprint store there (given by --store)" "says there is no store there"
empty_answers 1 "show" show "sha256:$absent"
empty_answers 1 "consumers --transitive" consumers --transitive --json "sha256:$absent"
empty_answers 1 "why" why --json "sha256:$absent" "sha256:$lib"
empty_answers 1 "builds" builds --json
empty_answers 1 "build show" build show p 1
empty_answers 1 "export" export --format in-toto "sha256:$absent"
empty_answers 1 "graph --format json" graph --format json
empty_answers 1 "verify" verify --json bad1
empty_answers 1 "fsck --json" fsck --json
empty_answers 1 "check" check --build-dir "$T" bad1
expect_eq "$(tables "$G")" "" "reading created no table"
expect_no_file "$T/no-store" "reading created no directory either"

finish
