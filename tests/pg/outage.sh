#!/usr/bin/env bash
# Nothing lost while PostgreSQL is down (README, "A PostgreSQL store, for
# build fleets"): a generated project of 20 targets, hooked through the
# installed package into a database on a server of this test's own
# (tests/pg/server.sh; pausing the shared `postgresql` fixture would fail the
# tests using it meanwhile), with FINGERPRINT_REQUIRED OFF:
#   a. before: a build records every link straight into the database;
#   b. during: the server is paused, every target relinked: the build goes
#      on, warns once, and every hook's events wait in the spool; `sync`
#      fails, saying what waits;
#   c. after: the server is back; `builds` and `fsck` say what waits; `sync`
#      delivers every call once, oldest first: the outage build has exactly
#      the events of the first one; a second `sync` delivers nothing;
#   d. the next hook that reaches the server delivers what waits, before its
#      own events; --required spools nothing;
#   e. exactly once: a journal restored after its calls were committed (what
#      a deliverer killed between commit and unlink leaves) delivers nothing
#      twice; a `sync` killed -9 right after a commit; `sync` killed -9 at
#      random moments, then run again; two deliverers at once;
#   f. a hook delivers at most 50 calls, and journals its own behind calls
#      it leaves waiting (or finds locked by another deliverer);
#   g. read-only (25006) and too many connections (53300) are out of reach,
#      not refusals; `sync --retry-refused` delivers a refused call;
#   h. the query server's kept connection to a server that stopped
#      answering: the query gives up in seconds, saying why.
#   tests/pg/outage.sh INSTALLED_RUNNER   (FINGERPRINT_SOURCE_DIR: the checkout)
source "$(dirname "$0")/../cmake/lib.sh" "$@"
unset PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD PGSERVICE PGOPTIONS

if ! command -v psql >/dev/null; then
  echo "FAIL: $TEST_NAME: psql is missing (apt-get install postgresql-client)" >&2
  exit 1
fi
SERVER_SH=$SRC/tests/pg/server.sh
PG=$T/pg
trap 'rc=$?; bash "$SERVER_SH" stop "$PG" >/dev/null 2>&1; (exit $rc); on_exit' EXIT
if ! bash "$SERVER_SH" start "$PG" >"$T/server.out" 2>&1; then
  cat "$T/server.out" >&2
  fail "cannot start a PostgreSQL server of this test's own (the output of tests/pg/server.sh is above)"
  finish
fi
pause() { bash "$SERVER_SH" pause "$PG" >/dev/null || fail "tests/pg/server.sh pause"; }
resume() { bash "$SERVER_SH" resume "$PG" >/dev/null || fail "tests/pg/server.sh resume"; }

URL=$(cat "$PG/url")
export FINGERPRINT_DIR=$URL FINGERPRINT_SPOOL_DIR=$T/spool
sql() { psql "$URL" -X -v ON_ERROR_STOP=1 -qAtc "$1"; }
# Events (rows in their build's index) of builds whose id starts with $1.
stored() { sql "SELECT count(*) FROM fingerprint_events WHERE indexed AND build LIKE '$1%'"; }
duplicates() { sql "SELECT count(*) - count(DISTINCT (log, line)) FROM fingerprint_events"; }
# The journal: calls waiting, and their events (header lines and input
# manifests' lines excluded).
waiting_calls() { find "$T/spool" -path '*/calls/*.jsonl' 2>/dev/null | wc -l; }
waiting_events() {
  local n=0 f
  for f in $(find "$T/spool" -path '*/calls/*.jsonl' 2>/dev/null); do
    n=$((n + $(tail -n +2 "$f" | grep -vc '^{"bytes":' || true)))
  done
  echo "$n"
}
# Calls waiting with their input manifests (a format 2 header).
waiting_with_manifests() { find "$T/spool" -path '*/calls/*.jsonl' -exec head -1 {} \; 2>/dev/null | grep -c '"manifests":1' || true; }
# Produced events naming an input manifest the database lacks.
orphans() { sql "SELECT count(*) FROM fingerprint_events e WHERE e.inputs <> '' AND NOT EXISTS (SELECT FROM fingerprint_manifests m WHERE m.digest = e.inputs)"; }
figure() { echo "figure: $*"; }
expect_lt() { if (($1 < $2)); then _result 1 "$3 ($1 < $2)"; else _result 0 "$3: $1 is not < $2"; fi; }

p=$T/outage
mkdir -p "$p/libs" "$p/apps"
cat >"$p/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(outage VERSION 1.0 LANGUAGES CXX)
find_package(Fingerprint REQUIRED)
include(Fingerprint)
add_subdirectory(libs)
add_subdirectory(apps)
CMAKE
for i in $(seq 1 10); do
  echo "int s$i() { return $i; }" >"$p/libs/s$i.cpp"
  echo "add_library(s$i STATIC s$i.cpp)" >>"$p/libs/CMakeLists.txt"
  echo "int s$i(); int main() { return s$i() > 0 ? 0 : 1; }" >"$p/apps/app$i.cpp"
  echo "add_executable(app$i app$i.cpp)
target_link_libraries(app$i PRIVATE s$i)" >>"$p/apps/CMakeLists.txt"
done
outputs() { echo "$T"/b/libs/libs*.a "$T"/b/apps/app{1,2,3,4,5,6,7,8,9,10}; }

# ---------------------------------------------------------------------------
# a. Before: straight into the database.
# ---------------------------------------------------------------------------
configure "$p" "$T/b" -DFINGERPRINT_DIR="$URL"
expect_in out "Fingerprinting 20 targets into $URL" "20 targets hooked into the database"
build "$T/b" -j 2
expect_not_in both "warning" "server up: no hook warns"
before=$(stored 1-)
figure "before the outage: $(sql "SELECT count(*) FROM fingerprint_events WHERE kind = 'produced' AND build LIKE '1-%'") of 20 links stored, $before events stored"
expect_lt 19 "$before" "build 1 stored at least one produced event per target (its inputs in a manifest)"
expect_eq "$(waiting_calls)" 0 "server up: nothing spooled"

# ---------------------------------------------------------------------------
# b. During: the server is gone, every target relinks.
# ---------------------------------------------------------------------------
pause
sleep 1 # a new mtime on every filesystem
touch "$p"/libs/*.cpp "$p"/apps/*.cpp
build "$T/b" -j 2
expect_eq "$(grep -c 'warning: ' "$T/out")" 1 "server down: one warning for the whole build"
expect_in out "spooled to $T/spool/" "it says where the events went"
expect_in out "fingerprint sync" "and how they get delivered"
expect_not_in out "not fingerprinted" "no target went unrecorded"
journal=$(ls -d "$T"/spool/*/ | head -1)
journal=${journal%/}
expect_eq "$(waiting_calls)" 20 "one journaled call per relinked target"
during=$(waiting_events)
expect_eq "$during" "$before" "the journal holds as many events as the same build stored before the outage"
expect_eq "$(grep -l "$URL" "$journal/url" | wc -l)" 1 "the journal names its database"
run "$FP" sync
expect_rc 1 "sync while the server is down"
expect_in err "cannot connect" "it says why"
expect_in err "20 record calls still wait in $journal" "and what waits"
expect_eq "$(waiting_calls)" 20 "a failed sync removes nothing"

# ---------------------------------------------------------------------------
# c. After: the server is back.
# ---------------------------------------------------------------------------
resume
expect_eq "$(stored 2-)" 0 "nothing of the outage build is in the database before delivery"
figure "during the outage: $(waiting_calls) of 20 links acknowledged (spooled), $during events in the journal, $(stored 2-) stored"
run "$FP" builds
expect_rc 0 "builds, with calls waiting"
expect_in err "$during events of 20 record calls wait in $journal" "builds says what waits"
expect_in err "(run: fingerprint sync)" "and what delivers it"
run "$FP" fsck
expect_rc 0 "fsck, with calls waiting: the store is sound"
expect_in out "$during events of 20 record calls wait in $journal" "fsck says what waits"
run "$FP" fsck --json
cp "$T/out" fsck.json
expect_json fsck.json "d['spool']['calls'] == 20 and d['spool']['events'] == $during and d['spool']['problems'] == []" \
  "fsck --json counts the journal"
expect_eq "$(waiting_with_manifests)" 20 "every journaled link carries its input manifest"
# The order the journal holds them in: each call's first event.
for f in "$journal"/calls/*.jsonl; do tail -n +2 "$f" | grep -v '^{"bytes":' | head -1; done >journal-order.txt
run "$FP" sync
expect_rc 0 "sync with the server back"
expect_in out "delivered $during events of 20 record calls" "sync says what it delivered"
after=$(stored 2-)
figure "after sync: $after events of the outage build stored ($during acknowledged), duplicates $(duplicates)"
expect_eq "$after" "$before" "the outage build stored exactly the events of the build before it"
expect_eq "$(duplicates)" 0 "no event stored twice"
expect_eq "$(orphans)" 0 "every delivered event's input manifest is in the database"
expect_eq "$(sql "SELECT count(*) FROM fingerprint_manifests")" \
  "$(sql "SELECT count(DISTINCT inputs) FROM fingerprint_events WHERE inputs <> ''")" "each input manifest stored once"
expect_eq "$(waiting_calls)" 0 "the journal is empty"
expect_no_file "$journal/calls" "and its calls/ is gone (the next hook's stat finds nothing)"
# Delivered oldest first: the rows of each call's first line come in journal order.
sql "SELECT line FROM fingerprint_events WHERE indexed AND build LIKE '2-%' ORDER BY id" >rows.txt
order_ok=$(python3 - journal-order.txt rows.txt <<'PY'
import sys
journal = open(sys.argv[1]).read().splitlines()
rows = open(sys.argv[2]).read().splitlines()
position = {line: i for i, line in enumerate(rows)}
at = [position.get(line, -1) for line in journal]
print("yes" if -1 not in at and at == sorted(at) else "no: %s" % at)
PY
)
expect_eq "$order_ok" yes "each call's rows come in the order the journal held the calls"
for f in $(outputs); do
  run "$FP" show --json "$f"
  cp "$T/out" show.json
  expect_json show.json "any(p['build'].startswith('2-') for p in d['producers'])" "$(basename "$f"): its outage build is recorded"
done
run "$FP" sync
expect_rc 0 "a second sync"
expect_in out "nothing waits" "delivers nothing"
expect_eq "$(stored 2-)" "$before" "and adds nothing"

# ---------------------------------------------------------------------------
# d. The next hook that reaches the server delivers first.
# ---------------------------------------------------------------------------
pause
echo 'int s1() { return 11; }' >"$p/libs/s1.cpp"
build "$T/b"
expect_eq "$(waiting_calls)" 2 "an outage build relinking libs1.a and app1: two calls journaled"
spooled3=$(waiting_events)
printf 'by hand\n' >by-hand.bin
run "$FP" record --required --project outage --target by-hand --build-id r-required --produced by-hand.bin
expect_rc 1 "record --required with the server down fails"
expect_eq "$(waiting_calls)" 2 "and spools nothing: the caller runs it again"
resume
echo 'int s2() { return 12; }' >"$p/libs/s2.cpp"
build "$T/b"
expect_in out "delivered $spooled3 events of 2 record calls" "the first hook to reach the server delivers the journal"
expect_eq "$(waiting_calls)" 0 "nothing waits after it"
expect_eq "$(stored 3-)" "$spooled3" "the outage build's events are stored"
if (($(sql "SELECT max(id) FROM fingerprint_events WHERE build LIKE '3-%'") < $(sql "SELECT min(id) FROM fingerprint_events WHERE build LIKE '4-%'"))); then
  ok "the journaled calls landed before the delivering hook's own"
else
  fail "the delivering hook's own events landed before the journaled ones"
fi
expect_eq "$(duplicates)" 0 "still no event twice"

# ---------------------------------------------------------------------------
# e. Exactly once.
# ---------------------------------------------------------------------------
# spool_calls N BUILD: N record calls while the server is down.
spool_calls() {
  local i
  pause
  for i in $(seq 1 "$1"); do
    printf '%s %s\n' "$2" "$i" >"call-$2-$i.bin"
    "$FP" record --project exact --target "t$i" --build-id "$2" --produced "call-$2-$i.bin" --consumed by-hand.bin \
      2>>spool-calls.err || fail "record $i of build $2 while the server is down"
  done
  resume
}
# The ids of the calls journaled in directory $1 that the database holds.
ids_in_db() { sql "SELECT id FROM fingerprint_calls WHERE id IN ($(ls "$1" | sed -E "s/^[0-9]+-([0-9a-f]+)\.jsonl$/'\1'/" | paste -sd, -))"; }
calls_in_db() { ids_in_db "$1" | wc -l; }

# What a deliverer killed after each commit and before each unlink leaves:
# the calls in the database and still in the journal.
spool_calls 3 k1
cp -a "$journal/calls" saved-calls
run "$FP" sync
expect_in out "delivered 3 events of 3 record calls" "3 calls of 1 event (and a manifest) delivered"
mkdir -p "$journal/calls" && cp -a saved-calls/. "$journal/calls/"
run "$FP" sync
expect_rc 0 "sync over a journal whose calls were committed already"
expect_in out "delivered 0 events of 0 record calls" "delivers none of them again"
expect_in out "3 calls were there already" "and says they were there"
expect_eq "$(stored k1)" 3 "each once in the database"
expect_eq "$(waiting_calls)" 0 "and out of the journal"

# A deliverer killed (SIGKILL, by itself: FINGERPRINT_TEST_DIE_AFTER_DELIVERING)
# right after its second commit, before removing that call from the journal.
spool_calls 3 k4
run env FINGERPRINT_TEST_DIE_AFTER_DELIVERING=2 "$FP" sync
expect_rc 137 "sync killed -9 right after its second commit"
expect_eq "$(waiting_calls)" 2 "the killed sync removed only the first call it delivered"
expect_eq "$(calls_in_db "$journal/calls")" 1 "one call waits that the database holds already"
run "$FP" sync
expect_rc 0 "sync after the kill"
expect_in out "delivered 1 event of 1 record call" "delivers the call never committed"
expect_in out "1 call was there already" "and only removes the one committed before the kill"
expect_eq "$(stored k4)" 3 "each of the 3 calls' events is stored once"

# A real kill -9 of sync at random moments (0-40 ms after it starts: it
# delivers a call in about a millisecond), again and again until the journal
# is empty; then one more sync. Which kills fall between a commit and its
# unlink is chance: the count is printed, the guarantee checked either way.
spool_calls 150 k2
cp -a "$journal/calls" k2-calls
kills=0
for round in $(seq 1 40); do
  (($(waiting_calls) > 0)) || break
  left=$(waiting_calls)
  "$FP" sync >/dev/null 2>&1 &
  sync_pid=$!
  sleep "$(printf '0.%03d' $((RANDOM % 40)))"
  kill -9 "$sync_pid" 2>/dev/null || true
  wait "$sync_pid" 2>/dev/null && continue # it finished first
  kills=$((kills + 1))
  # A call both in the database and in the journal: killed between its commit and its unlink.
  if (($(waiting_calls) > 0)); then
    ids_in_db "$journal/calls" >>landed.txt
  fi
done
landed=$(sort -u landed.txt 2>/dev/null | grep -c . || true)
run "$FP" sync
expect_rc 0 "sync after $kills kill -9s"
figure "exactly once: $kills syncs killed -9 mid-delivery, $landed times between a commit and its unlink; each call stored once"
expect_eq "$(stored k2)" 150 "after the kills, each of the 150 calls' events is stored once"
expect_eq "$(orphans)" 0 "after the kills, every stored event's input manifest is there"
expect_eq "$(calls_in_db k2-calls)" 150 "every call's id is recorded"
expect_eq "$(waiting_calls)" 0 "nothing waits"

# Two deliverers and a hook at once.
spool_calls 30 k3
"$FP" sync >two-1.out 2>&1 &
first=$!
"$FP" sync >two-2.out 2>&1 &
second=$!
printf 'live\n' >live.bin
run "$FP" record --project exact --target live --build-id k3-live --produced live.bin
expect_rc 0 "a hook while two syncs deliver"
wait "$first" && wait "$second" && ok "both syncs succeed" || fail "a sync failed: $(cat two-1.out two-2.out)"
expect_eq "$(stored k3)" 31 "two deliverers and a hook: the 30 calls' events and the hook's one, each once"
expect_eq "$(duplicates)" 0 "no event anywhere twice"

# ---------------------------------------------------------------------------
# f. Delivery inside a hook: in order, and a few calls per hook.
# ---------------------------------------------------------------------------
# A hook that finds calls waiting and the journal locked by another
# deliverer (here flock(1) holds it) journals its own call behind them.
spool_calls 3 o1
printf 'behind\n' >behind.bin
run flock "$journal/lock" "$FP" record --project exact --target behind --build-id hook-o1 --produced behind.bin
expect_rc 0 "a hook while another process holds the journal's lock"
expect_eq "$(stored hook-o1)" 0 "its call did not jump ahead of the 3 waiting"
expect_eq "$(waiting_calls)" 4 "it waits behind them in the journal"
run "$FP" sync
expect_in out "delivered 4 events of 4 record calls" "sync delivers the 4"
if (($(sql "SELECT max(id) FROM fingerprint_events WHERE build = 'o1'") < $(sql "SELECT min(id) FROM fingerprint_events WHERE build = 'hook-o1'"))); then
  ok "the hook's call landed after the calls journaled before it"
else
  fail "the hook's call landed before calls journaled before it"
fi

# After a long outage, the first hook delivers at most 50 calls, journals
# its own behind the rest, and says more wait.
spool_calls 60 o2
printf 'bounded\n' >bounded.bin
run "$FP" record --project exact --target bounded --build-id hook-o2 --produced bounded.bin
expect_rc 0 "the first hook after 60 calls were journaled"
delivered_by_hook=$(sql "SELECT count(*) FROM fingerprint_events WHERE build = 'o2' AND kind = 'produced'")
figure "a hook after 60 journaled calls delivered $delivered_by_hook of them"
expect_lt "$delivered_by_hook" 51 "it delivered at most 50 calls"
expect_lt 0 "$delivered_by_hook" "and at least one"
expect_in err "more wait in $journal" "it says more wait"
expect_eq "$(waiting_calls)" $((60 - delivered_by_hook + 1)) "the rest and the hook's own call wait"
run "$FP" sync
expect_rc 0 "sync delivers the rest"
expect_eq "$(stored o2)" 60 "every call of the 60 stored once"
expect_eq "$(stored hook-o2)" 1 "and the hook's own"

# ---------------------------------------------------------------------------
# g. A server that is there but cannot take the call now is out of reach too,
#    not a refusal: read-only (a failover's demoted primary: 25006), and too
#    many connections (53300, which a ping does not see).
# ---------------------------------------------------------------------------
spool_calls 2 r1
sql "ALTER DATABASE postgres SET default_transaction_read_only = on"
run "$FP" sync
expect_rc 1 "sync into a read-only database"
expect_eq "$(waiting_calls)" 2 "the calls still wait"
expect_no_file "$journal/refused" "none was set aside as refused"
printf 'read-only\n' >read-only.bin
run "$FP" record --project exact --target ro --build-id r1-live --produced read-only.bin
expect_rc 0 "a hook into a read-only database"
expect_eq "$(waiting_calls)" 3 "journals its call"
PGOPTIONS='-c default_transaction_read_only=off' sql "ALTER DATABASE postgres RESET default_transaction_read_only"
run "$FP" sync
expect_rc 0 "sync once the database takes writes again"
expect_eq "$(stored r1)" 3 "the 2 journaled calls and the hook's, each once"

# A role allowed one connection, holding it: the next gets "too many connections".
sql "CREATE ROLE limited LOGIN CONNECTION LIMIT 1"
sql "CREATE DATABASE limited OWNER limited"
LIMITED="postgresql://limited@${URL#*@}"
LIMITED=${LIMITED%/*}/limited
connections() { sql "SELECT count(*) FROM pg_stat_activity WHERE usename = 'limited'"; }
psql "$LIMITED" -X -qAtc "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 1 300); do
  (($(connections) == 1)) && break
  sleep 0.1
done
expect_eq "$(connections)" 1 "the role's one connection is taken"
printf 'full\n' >full.bin
run env FINGERPRINT_DIR="$LIMITED" "$FP" record --project exact --target full --build-id full-1 --produced full.bin
expect_rc 0 "a hook when the server takes no more connections"
expect_in err "too many connections" "it says why"
expect_in err "spooled to" "and spools the call"
# Its backend sleeps on without noticing a client gone: ended server-side.
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'limited'" >/dev/null
wait "$holder" 2>/dev/null || true
for _ in $(seq 1 300); do
  (($(connections) == 0)) && break
  sleep 0.1
done
expect_eq "$(connections)" 0 "the role's connection is free again"
run env FINGERPRINT_DIR="$LIMITED" "$FP" sync
expect_rc 0 "sync once a connection is free"
expect_in out "delivered 1 event of 1 record call" "delivers the call"

# A call the database refuses (a privilege revoked: 42501) is set aside, and
# `sync --retry-refused` delivers it once the cause is fixed.
sql_limited() { psql "$LIMITED" -X -v ON_ERROR_STOP=1 -qAtc "$1"; }
pause
printf 'refused\n' >refused.bin
FINGERPRINT_DIR=$LIMITED "$FP" record --project exact --target refused --build-id refused-1 --produced refused.bin 2>/dev/null ||
  fail "record while the server is down"
resume
sql_limited "REVOKE INSERT ON fingerprint_events FROM limited"
run env FINGERPRINT_DIR="$LIMITED" "$FP" sync
expect_rc 1 "sync of a call the database refuses"
expect_in err "refused" "says it was refused"
expect_in err "sync --retry-refused" "and how to deliver it later"
run env FINGERPRINT_DIR="$LIMITED" "$FP" fsck --json
expect_rc 1 "fsck: a refused spooled call is a problem (its events are not in the store)"
expect_json "$T/out" "d['spool']['refused'] == 1" "fsck counts the refused call"
sql_limited "GRANT INSERT ON fingerprint_events TO limited"
run env FINGERPRINT_DIR="$LIMITED" "$FP" sync --retry-refused
expect_rc 0 "sync --retry-refused once the privilege is back"
expect_in out "delivered 1 event of 1 record call" "delivers the refused call"
expect_eq "$(sql_limited "SELECT count(*) FROM fingerprint_events WHERE build = 'refused-1'")" 1 "stored once"

# h. The query server's kept connection to a server that stopped answering
# (its processes frozen: the kernel still takes the bytes, nobody replies):
# the query gives up within the check's 2 s and connect_timeout's 5 s, with
# the reason, where a statement on the kept connection would wait as long
# as TCP does. Then the server answers again.
export FINGERPRINT_RECORDER_IDLE=30
product=$T/b/apps/app1
for i in 1 2 3; do
  run "$FP" show --json "$product"
done
expect_rc 0 "show through the query server"
cp "$T/out" show-before-freeze.json
expect_eq "$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '${URL##*/}' AND application_name = 'fingerprint'")" 1 \
  "the query server keeps one connection to the database once the queries are done"
postmaster=$(head -1 "$(cat "$PG/datadir")/postmaster.pid")
frozen=("$postmaster" $(pgrep -P "$postmaster"))
kill -STOP "${frozen[@]}"
started=$(date +%s)
RUN_TIMEOUT=60 run "$FP" show --json "$product"
took=$(($(date +%s) - started))
kill -CONT "${frozen[@]}"
expect_rc 1 "show while the server's processes are frozen"
expect_in err "timeout expired" "it says why"
expect_eq "$((took <= 15))" 1 "it gives up within 15 s (took $took s), not waiting on the kept connection"
run "$FP" show --json "$product"
expect_rc 0 "show once the server answers again"
expect_json "$T/out" "len(d['producers']) > 0" "it answers"
expect_same_file "$T/out" show-before-freeze.json "the same answer as before the freeze"

finish
