# include(Fingerprint) into a PostgreSQL store, through the installed
# package: hooks record into the database, queries and the CTest round
# trips read it back, and a server that is down fails the build only with
# FINGERPRINT_REQUIRED=ON. The second argument is the file holding the
# test server's URL (the `postgresql` fixture, tests/pg).
URL_FILE=${2:?give the file that holds the test server URL}
source "$(dirname "$0")/lib.sh" "$1"

server=$(cat "$URL_FILE")
database=fp_cmake_$$
psql "$server" -v ON_ERROR_STOP=1 -qAtc "CREATE DATABASE $database" >/dev/null || {
  fail "cannot create the test database on $server"
  finish
}
trap 'psql "$server" -qAtc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1; on_exit' EXIT
url=${server%/*}/$database
# The URL as a user with a password would write it: trust ignores the
# password, and it must appear nowhere.
secret_url=${url/postgres@/postgres:hunter2@}

expect_file "$PREFIX/bin/fingerprint-postgresql" "the package installs the PostgreSQL runner beside fingerprint"

configure "$HERE/projects/small" "$T/b" -DFINGERPRINT_DIR="$secret_url"
expect_in out "Fingerprinting 2 targets into postgresql://postgres:***@" "the configure log names the database"
expect_not_in both hunter2 "the configure log masks the password"
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

# A server that is not there: port 1 refuses at once.
down="postgresql://postgres:hunter2@127.0.0.1:1/fingerprint"
configure "$HERE/projects/small" "$T/off" -DFINGERPRINT_DIR="$down"
build "$T/off"
expect_eq "$(grep -c 'warning: .*not fingerprinted' "$T/out")" 2 "server down, REQUIRED OFF: one warning per target"
expect_in out "cannot connect" "the warning gives the runner's reason"
expect_not_in both hunter2 "and masks the password"

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
