#!/usr/bin/env bash
# The query server (runner/query_client.hpp): the resident
# fingerprint-postgresql that answers show, consumers, why and history of a
# PostgreSQL store on connections it keeps. Against the `postgresql`
# fixture's server:
#   tests/cli/query_server.sh RUNNER URL_FILE
#   a. every served query, failing ones included, gives the same exit code,
#      output and errors through the server as without it
#      (FINGERPRINT_RECORDER=off), from any working directory;
#   b. the calls are served there (each logs "recorder-<command>"), and
#      with FINGERPRINT_RECORDER=off none is;
#   c. the server keeps one connection to the database between calls; one
#      the database ended is not used again: the next query answers;
#   d. a connection is kept for its URL and PG environment: the same URL
#      with another PGDATABASE answers from that database;
#   e. concurrent queries all answer as one alone does;
#   f. each call's options and environment are its own: the keys one call
#      trusts are not trusted by the next;
#   g. a statement that fails inside a walk fails the query as it does
#      without the server, and leaves the kept connection in no transaction.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

use_pg_server "${2:?usage: $0 /path/to/fingerprint URL_FILE}"
unset FINGERPRINT_RECORDER
export FINGERPRINT_RECORDER_IDLE=30
new_db() {
  local name=fp_qs_$$_$1
  sql "$SERVER" "CREATE DATABASE $name" >/dev/null
  local base=${SERVER%%\?*}
  echo "${base%/*}/$name"
}
cleanup() {
  local rc=$? name
  set +e
  for name in $(sql "$SERVER" "SELECT datname FROM pg_database WHERE datname LIKE 'fp\_qs\_$$\_%'" 2>/dev/null); do
    sql "$SERVER" "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || echo "note: could not drop database $name" >&2
  done
  sql "$SERVER" "DROP ROLE IF EXISTS fp_qs_$$" >/dev/null 2>&1 || echo "note: could not drop role fp_qs_$$" >&2
  (exit "$rc")
  on_exit
}
trap cleanup EXIT

# A directory store of a few builds, migrated into a database.
A=$(new_db a)
B=$(new_db b)
mkdir -p sub sys
printf 'lib v1\n' >lib.so
printf 'app\n' >app
printf 'bundle\n' >bundle.tar
printf 'system library\n' >sys/libc.so.6
rec() { run "$FP" --store S record "$@"; expect_rc 0 "record ${*:3:4}"; }
rec --build-dir "$T" --project core --version 1.0 --target lib --build-id 1 --produced lib.so --consumed sys/libc.so.6
rec --build-dir "$T" --project apps --target app --build-id 7 --produced app --consumed lib.so sys/libc.so.6
rec --build-dir "$T" --project dist --target bundle --build-id 3 --produced bundle.tar --consumed app
# And one signed: whether its signer is trusted is each call's to say.
run "$FP" key generate --output signing.pem
expect_rc 0 "key generate"
mkdir -p trusted
sed -n '/BEGIN PUBLIC KEY/,/END PUBLIC KEY/p' "$T/out" >trusted/ci.pem
printf 'signed\n' >signed.bin
FINGERPRINT_SIGNING_KEY=$T/signing.pem rec --build-dir "$T" --project signed --target s --build-id 1 --produced signed.bin
run "$FP" migrate --from S --to "$A"
expect_rc 0 "migrate into a database"

# a. The same answers through the server as without it. The first call may
# start the server; the loop runs each query until it was served.
export FINGERPRINT_CPU_LOG=$T/cpu.log
served() { # the calls of command $1 the server has logged (0 before its first)
  if [[ -e $T/cpu.log ]]; then grep -c "^recorder-$1 " "$T/cpu.log" || true; else echo 0; fi
}
# An age may tick between the two runs of a command ("just now" against
# "5 s ago", "59 s ago" against "1 min ago"): it is left out of the
# comparison, as is the padding of a table's columns that its width moves;
# every other word is kept.
ages() { sed -E 's/(just now|[0-9]+ (s|min|h|days) ago)/AGE/g; s/ +/ /g' "$1"; }
alike() { # WHAT DIR ARGS...: the same rc, stdout and stderr both ways
  local what=$1 dir=$2 command=
  shift 2
  local before tries=0 i
  for ((i = 1; i <= $#; i++)); do # the command: after --store URL and --utc
    case ${!i} in
      --store) i=$((i + 1)) ;;
      --utc) ;;
      *) command=${!i} && break ;;
    esac
  done
  before=$(served "$command")
  while :; do
    (cd "$dir" && RC=0 && timeout 10 "$FP" "$@" >"$T/on.out" 2>"$T/on.err" || RC=$?; echo "$RC" >"$T/on.rc")
    (($(served "$command") > before)) && break
    ((++tries < 50)) || break
    sleep 0.1
  done
  (cd "$dir" && RC=0 && FINGERPRINT_RECORDER=off timeout 10 "$FP" "$@" >"$T/off.out" 2>"$T/off.err" || RC=$?; echo "$RC" >"$T/off.rc")
  expect_eq "$(served "$command")" "$((before + 1))" "$what: served by the query server"
  if cmp -s <(ages "$T/on.out") <(ages "$T/off.out") && cmp -s "$T/on.err" "$T/off.err" && cmp -s "$T/on.rc" "$T/off.rc"; then
    _result 1 "$what: exit $(cat "$T/on.rc"), the same output and errors with and without the server"
  else
    _result 0 "$what: with the server exit $(cat "$T/on.rc") / without $(cat "$T/off.rc"); output or errors differ"
    diff "$T/on.out" "$T/off.out" | head -10 >&2 || true
    diff "$T/on.err" "$T/off.err" | head -10 >&2 || true
  fi
}
lib=sha256:$(sha256sum lib.so | cut -c1-64)
libc=sha256:$(sha256sum sys/libc.so.6 | cut -c1-64)
bundle=sha256:$(sha256sum bundle.tar | cut -c1-64)
alike "show FILE" "$T" --store "$A" show lib.so
expect_eq "$(cat "$T/on.rc") $(grep -c "$lib" "$T/on.out")" "0 1" "show FILE through the server: exit 0, and the answer names its digest"
alike "show ../FILE from a directory below" "$T/sub" --store "$A" show ../lib.so
alike "show --json" "$T" --store "$A" show --json "$lib"
alike "consumers" "$T" --store "$A" consumers "$libc"
alike "consumers --transitive --json" "$T" --store "$A" consumers --transitive --json "$libc"
alike "why" "$T" --store "$A" why "$bundle" "$libc"
alike "history --json" "$T" --store "$A" history --json "$T/lib.so"
alike "show of a file nothing recorded (exit 1)" "$T" --store "$A" show sys
alike "why with no chain" "$T" --store "$A" why "$libc" "$bundle"
alike "a usage error (exit 2)" "$T" --store "$A" consumers --no-such-option "$lib"
alike "--utc before the command" "$T" --utc --store "$A" show "$lib"
export XDG_CONFIG_HOME=$T/config HOME=$T/home
alike "show --trusted-keys DIR of a signed product" "$T" --store "$A" show --json --trusted-keys "$T/trusted" signed.bin
expect_json "$T/on.out" "d['producers'][0]['signature']['status'] == 'valid'" "its signer is trusted"
alike "the same without --trusted-keys" "$T" --store "$A" show --json signed.bin
expect_json "$T/on.out" "d['producers'][0]['signature']['status'] == 'untrusted'" \
  "its signer is not trusted: the call before's keys are not kept"
alike "a database never written to" "$T" --store "$B" show "$lib"
expect_eq "$(cat "$T/on.rc")" 1 "a database never written to: exit 1"

# b. Without the server: nothing served.
before=$(grep -c '^recorder-' "$T/cpu.log")
FINGERPRINT_RECORDER=off "$FP" --store "$A" show "$lib" >/dev/null
expect_eq "$(grep -c '^recorder-' "$T/cpu.log")" "$before" "FINGERPRINT_RECORDER=off: the query is not served"
run "$FP" --store "$A" builds
expect_eq "$(grep -c '^recorder-' "$T/cpu.log")" "$before" "builds is not one the server answers"

# c. One connection kept; one ended by the database is not used again.
kept() { sql "$SERVER" "SELECT count(*) FROM pg_stat_activity WHERE datname = '${A##*/}' AND application_name = 'fingerprint'"; }
expect_eq "$(kept)" 1 "the server keeps one connection to the database between calls"
sql "$SERVER" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${A##*/}' AND application_name = 'fingerprint'" >/dev/null
alike "show after the database ended the kept connection" "$T" --store "$A" show --json "$lib"
expect_eq "$(cat "$T/on.rc")" 0 "it answers"
expect_eq "$(kept)" 1 "and keeps its new connection"

# d. The same URL, another PGDATABASE: another database's answer.
base=${SERVER%%\?*}
base=${base%/*}
PGDATABASE=${A##*/} alike "a URL without a database, PGDATABASE the store's" "$T" --store "$base" show "$lib"
expect_eq "$(cat "$T/on.rc")" 0 "answers from the store's database"
PGDATABASE=${B##*/} alike "the same URL, PGDATABASE another database" "$T" --store "$base" show "$lib"
expect_eq "$(cat "$T/on.rc")" 1 "answers from the other database: nothing there"

# g. A statement that fails inside a walk: a role that may read the
# manifests' entries' inputs, which the walk follows, but not their paths,
# which the rows read, so the statement sent with the COMMIT fails. The same
# error both ways, and the transaction the walk began is rolled back: the
# kept connection answers once the role may.
sql "$A" "CREATE ROLE fp_qs_$$ LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO fp_qs_$$; REVOKE SELECT ON fingerprint_manifest_entries FROM fp_qs_$$; GRANT SELECT (input, manifest) ON fingerprint_manifest_entries TO fp_qs_$$" >/dev/null
LIMITED="postgresql://fp_qs_$$@${A#*@}"
alike "consumers by a role that may not read the manifests' entries" "$T" --store "$LIMITED" consumers "$libc"
expect_eq "$(cat "$T/on.rc") $(grep -c 'permission denied for table fingerprint_manifest_entries' "$T/on.err")" "1 1" \
  "it fails, naming the table"
sql "$A" "GRANT SELECT ON fingerprint_manifest_entries TO fp_qs_$$" >/dev/null
alike "the same once the role may read them" "$T" --store "$LIMITED" consumers --json "$libc"
expect_eq "$(cat "$T/on.rc")" 0 "it answers"
expect_eq "$(sql "$SERVER" "SELECT state FROM pg_stat_activity WHERE usename = 'fp_qs_$$'")" idle \
  "its kept connection is idle, in no transaction"

# e. Concurrent queries: every one as one alone.
FINGERPRINT_RECORDER=off "$FP" --store "$A" consumers --transitive --json "$libc" >alone.json
for i in $(seq 1 12); do
  "$FP" --store "$A" consumers --transitive --json "$libc" >"par.$i.json" 2>"par.$i.err" &
done
wait
same=0
for i in $(seq 1 12); do
  cmp -s alone.json "par.$i.json" && [[ ! -s par.$i.err ]] && same=$((same + 1))
done
expect_eq "$same" 12 "12 concurrent queries each answer as one alone"

finish
