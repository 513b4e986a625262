# A FINGERPRINT_DIR URL holding a password is refused at configure time
# (it would be in CMakeCache.txt, build.ninja and every hook's argv), in
# both forms, without the password in the message or anywhere in the build
# tree; a refused tree configures again with a fixed URL; URLs with no
# password (an @ or : elsewhere, %3A, an empty password) keep working.
# Configure only: nothing connects (db.invalid never resolves), so no server
# is needed; tests/cmake/postgresql.sh records through a real one.
source "$(dirname "$0")/lib.sh" "$@"

# A project that does nothing but include the module: a second per configure.
mkdir -p "$T/probe" "$T/late"
cat >"$T/probe/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(probe LANGUAGES NONE)
find_package(Fingerprint REQUIRED)
include(Fingerprint)
CMAKE
# One that sets the store as a variable after the include.
cat >"$T/late/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(late LANGUAGES NONE)
find_package(Fingerprint REQUIRED)
include(Fingerprint)
set(FINGERPRINT_DIR "$ENV{LATE_STORE}")
CMAKE

n=0
# probe SOURCE BUILD [cmake args...]: configures, $RC and the output as `run` leaves them.
probe() {
  local source=$1 build=$2
  shift 2
  run cmake -S "$source" -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" "$@"
}

# no_secret BUILD SECRET WHAT: no file under BUILD holds SECRET.
no_secret() {
  local found
  found=$(grep -rlF -- "$2" "$1" 2>/dev/null | head -3)
  expect_eq "$found" "" "$3: no file under the build tree holds '$2'"
}

# expect_line TEXT WHAT: a line of the last run's stderr is TEXT (after its indentation).
expect_line() {
  if sed 's/^ *//' "$T/err" | grep -qxF -- "$1"; then
    _result 1 "$2: a line of stderr is '$1'"
  else
    _result 0 "$2: no line of stderr is '$1'"; show_output >&2
  fi
}

# refused URL MASKED WITHOUT WHAT: configuring with URL fails, names libpq's
# ways and the URL masked and without its password, and leaves hunter2 nowhere.
refused() {
  local url=$1 masked=$2 without=$3 what=$4
  n=$((n + 1))
  probe "$T/probe" "$T/r$n" -DFINGERPRINT_DIR="$url"
  if ((RC != 0)); then ok "$what: configure refused"; else fail "$what: configure succeeded"; show_output >&2; fi
  expect_in err "FINGERPRINT_DIR holds a password" "$what: the message says what"
  expect_in err "the build files would show it" "$what: and why"
  expect_in err "the process list" "$what: all of why"
  expect_line "$masked" "$what: and names the URL masked"
  expect_line "-DFINGERPRINT_DIR=$without" "$what: and the URL to give instead"
  expect_in err "~/.pgpass" "$what: and libpq's password file"
  expect_in err "PGPASSFILE" "$what: and PGPASSFILE"
  expect_in err "PGSERVICE" "$what: and PGSERVICE"
  expect_not_in both hunter2 "$what: the output never shows the password"
  no_secret "$T/r$n" hunter2 "$what"
}

# accepted URL WHAT: configures, and the configure log names URL as given.
accepted() {
  local url=$1 what=$2
  n=$((n + 1))
  probe "$T/probe" "$T/a$n" -DFINGERPRINT_DIR="$url"
  expect_rc 0 "$what: configure"
  expect_in out "Fingerprinting 0 targets into $url with" "$what: the store is the URL as given"
}

refused "postgresql://fp:hunter2@db.invalid:5432/fp" "postgresql://fp:***@db.invalid:5432/fp" \
  "postgresql://fp@db.invalid:5432/fp" "user:password@"
refused "postgres://fp:hunter2@db.invalid/fp" "postgres://fp:***@db.invalid/fp" \
  "postgres://fp@db.invalid/fp" "the postgres:// scheme"
refused "postgresql://fp:hunter2%2F%40x@db.invalid/fp" "postgresql://fp:***@db.invalid/fp" \
  "postgresql://fp@db.invalid/fp" "a percent-encoded password"
# libpq's user part ends at the first @; the mask runs to the last.
refused "postgresql://fp:hun@ter2@db.invalid/fp" "postgresql://fp:***@db.invalid/fp" \
  "postgresql://fp@db.invalid/fp" "an unencoded @ in the password"
expect_not_in both ter2 "an unencoded @ in the password: no part of it is shown"
refused "postgresql://db.invalid/fp?password=hunter2" "postgresql://db.invalid/fp?password=***" \
  "postgresql://db.invalid/fp" "?password="
refused "postgresql://fp@db.invalid/fp?connect_timeout=3&password=hunter2&application_name=x" \
  "postgresql://fp@db.invalid/fp?connect_timeout=3&password=***&application_name=x" \
  "postgresql://fp@db.invalid/fp?connect_timeout=3&application_name=x" "&password="
refused "postgresql://db.invalid/fp?pass%77ord=hunter2" "postgresql://db.invalid/fp?pass%77ord=***" \
  "postgresql://db.invalid/fp" "a percent-encoded password key"

# The refused tree: CMake saves CMakeCache.txt after the error, with the
# URL masked; configured again without a URL it is refused again (no silent
# fall-back to the default store), with a fixed one it works.
grep '^FINGERPRINT_DIR:' "$T/r1/CMakeCache.txt" >"$T/entry" || true
expect_eq "$(cat "$T/entry")" "FINGERPRINT_DIR:STRING=postgresql://fp:***@db.invalid:5432/fp" \
  "the refused tree's cache holds the URL masked"
probe "$T/probe" "$T/r1"
if ((RC != 0)); then ok "configured again as it is: refused again"; else fail "configured again as it is: accepted"; fi
expect_line "-DFINGERPRINT_DIR=postgresql://fp@db.invalid:5432/fp" "and the message says what to give"
probe "$T/probe" "$T/r1" -DFINGERPRINT_DIR="postgresql://fp@db.invalid:5432/fp"
expect_rc 0 "configured again with the URL without the password"
expect_in out "Fingerprinting 0 targets into postgresql://fp@db.invalid:5432/fp with" "which is the store"
no_secret "$T/r1" hunter2 "the reconfigured tree"

# A store the project sets after include(Fingerprint) is checked as well.
LATE_STORE="postgresql://fp:hunter2@db.invalid/fp" probe "$T/late" "$T/late-b"
if ((RC != 0)); then ok "a URL set by the project: refused"; else fail "a URL set by the project: accepted"; fi
expect_line "postgresql://fp:***@db.invalid/fp" "a URL set by the project: named masked"
expect_not_in both hunter2 "a URL set by the project: never shown"
no_secret "$T/late-b" hunter2 "a URL set by the project"

# Not passwords.
accepted "postgresql://fp@db.invalid/fp" "a user without a password"
accepted "postgresql://db.invalid:5432/fp?application_name=a:b@c" "an @ and : in the query"
accepted "postgresql://fp@db.invalid/a:b@c" "an @ and : in the database name"
accepted "postgresql://f%3Ap@db.invalid/fp" "a percent-encoded : in the user name"
accepted "postgresql://fp@db.invalid/fp?passwordless=1&password_hint=x" "keys that only start with password"
# Empty: libpq sends no password and reads ~/.pgpass as if none were given.
accepted "postgresql://fp:@db.invalid/fp" "an empty password after user:"
accepted "postgresql://db.invalid/fp?password=" "an empty ?password="
accepted "$T/dir:with@signs" "a directory whose name holds : and @"

finish
