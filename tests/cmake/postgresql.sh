# include(Fingerprint) into a PostgreSQL store, through the installed
# package: hooks record into the database, queries and the CTest round
# trips read it back, and a server that is down fails the build only with
# FINGERPRINT_REQUIRED=ON. The database belongs to a role that must give a
# password: a URL holding it is refused at configure time and leaves it in
# no build file; the URL without it records, libpq reading the password
# from PGPASSFILE. The second argument is the file holding the test server's
# URL (the `postgresql` fixture, tests/pg); tests/cmake/secrets.sh checks the
# other forms of a password in a URL.
URL_FILE=${2:?give the file that holds the test server URL}
source "$(dirname "$0")/lib.sh" "$1"
unset PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE PGSERVICE PGSERVICEFILE PGOPTIONS

server=$(cat "$URL_FILE")
hostport=${server#*@}
hostport=${hostport%%/*}
database=fp_cmake_$$
role=fp_cmake_$$
sql() { psql "$server" -v ON_ERROR_STOP=1 -qAtc "$1"; }
# The fixture trusts every connection: one rule, first in pg_hba.conf, asks
# this role for its password on this database only.
hba=$(sql 'SHOW hba_file') && cp "$hba" "$T/pg_hba.conf" || {
  fail "cannot read the test server's pg_hba.conf on $server"
  finish
}
restore() {
  cat "$T/pg_hba.conf" >"$hba" && sql 'SELECT pg_reload_conf()' >/dev/null
  sql "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1
  sql "DROP ROLE IF EXISTS $role" >/dev/null 2>&1
}
trap 'rc=$?; restore; (exit $rc); on_exit' EXIT
{
  sql "CREATE ROLE $role LOGIN PASSWORD 'hunter2'" &&
    sql "CREATE DATABASE $database OWNER $role" &&
    { echo "host $database $role 127.0.0.1/32 scram-sha-256"; cat "$T/pg_hba.conf"; } >"$hba" &&
    sql 'SELECT pg_reload_conf()'
} >/dev/null || {
  fail "cannot set up a database with a password on $server"
  finish
}
url=postgresql://$role@$hostport/$database
secret_url=postgresql://$role:hunter2@$hostport/$database

expect_file "$PREFIX/bin/fingerprint-postgresql" "the package installs the PostgreSQL runner beside fingerprint"

# The server does ask: without a password the runner cannot connect.
PGPASSFILE=$T/no-pgpass run "$FP" --store "$url" builds
if ((RC != 0)); then ok "without a password the role cannot connect"; else fail "the role connected without a password"; fi
expect_in err "password" "the server asked for one"

# A URL holding the password is refused, says where a password goes, and
# leaves it nowhere: the cache CMake saves after the error holds it masked.
run cmake -S "$HERE/projects/small" -B "$T/b" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX;$T/prefix" \
  -DCMAKE_INSTALL_PREFIX="$T/prefix" -DFINGERPRINT_DIR="$secret_url"
if ((RC != 0)); then ok "configure with a password in the URL fails"; else fail "configure with a password in the URL succeeded"; fi
expect_in err "FINGERPRINT_DIR holds a password" "the message says what"
expect_in err "the process list" "and why"
expect_in err "postgresql://$role:***@$hostport/$database" "and names the URL masked"
expect_in err "-DFINGERPRINT_DIR=$url" "and the URL to give instead"
expect_in err "~/.pgpass" "and libpq's password file"
expect_in err "PGPASSFILE" "and PGPASSFILE"
expect_in err "PGSERVICE" "and PGSERVICE"
expect_not_in both hunter2 "the configure log never shows the password"
expect_eq "$(grep -rlF hunter2 "$T/b" | head -3)" "" "no file of the refused build tree holds the password"

# The recommended way, end to end: the URL without the password (the same
# tree, configured again), the password in a mode-0600 file PGPASSFILE names.
echo "${hostport%:*}:${hostport##*:}:$database:$role:hunter2" >"$T/pgpass"
chmod 0600 "$T/pgpass"
export PGPASSFILE=$T/pgpass
configure "$HERE/projects/small" "$T/b" -DFINGERPRINT_DIR="$url"
expect_in out "Fingerprinting 2 targets into $url with" "the configure log names the database"
build "$T/b"
expect_not_in both "not fingerprinted" "every hook recorded into the database"

run "$FP" --store "$url" show --json "$T/b/small_app"
expect_rc 0 "the program is recorded in the database"
cp "$T/out" "$T/app.json"
expect_json_each "$T/app.json" <<JSON
  produced by the small project's small_app :: [(p['project'], p['target']) for p in d['producers']] == [('small', 'small_app')]
  in this build tree :: d['producers'][0]['build_dir'] == '$T/b'
JSON

lib=$(find "$T/b" -name 'libsmall_lib.*' -type f | head -1)
FINGERPRINT_DIR=$url run "$FP" consumers --json "$lib"
expect_rc 0 "consumers of the library (FINGERPRINT_DIR holding the URL)"
cp "$T/out" "$T/consumers.json"
expect_json "$T/consumers.json" "[(e['target'], e['product'] == json.load(open('$T/app.json'))['digest']) for e in d] == [('small_app', True)]" \
  "small_app consumed the library to make the recorded program"

# fingerprint_add_tests: `check --store URL` round trips through the database.
run ctest --test-dir "$T/b" --output-on-failure
expect_rc 0 "the CTest round trips pass against the database"
expect_in out "100% tests passed" "every round trip ran"

expect_eq "$(grep -rlF hunter2 "$T/b" | head -3)" "" "after build and tests, no file of the build tree holds the password"

# A server that is not there: port 1 refuses at once.
down="postgresql://postgres@127.0.0.1:1/fingerprint"
configure "$HERE/projects/small" "$T/off" -DFINGERPRINT_DIR="$down"
build "$T/off"
expect_eq "$(grep -c 'warning: ' "$T/out")" 1 "server down, REQUIRED OFF: one warning per build"
expect_in out "spooled to $T/spool/" "the events are spooled (tests/pg/outage.sh delivers them)"
expect_in out "cannot connect" "the warning gives the runner's reason"

configure "$HERE/projects/small" "$T/on" -DFINGERPRINT_DIR="$down" -DFINGERPRINT_REQUIRED=ON
run cmake --build "$T/on"
if ((RC == 0)); then
  fail "server down, REQUIRED ON: the build succeeded"
else
  ok "server down, REQUIRED ON: the build failed"
fi
expect_in out "FINGERPRINT_REQUIRED is ON" "the failure says it is on purpose"
expect_in out "127.0.0.1:1" "and names the server"

finish
