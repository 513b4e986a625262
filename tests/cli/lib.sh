# Shared helpers for the command-line tests. Sourced by each script with the
# runner as the first argument:  source lib.sh "$@"
#
# Every check prints "ok: ..." or "FAIL: ..." and counts failures; the script
# ends with `finish`, which exits 1 if any check failed. The temp dir $T is
# removed on success and kept (its path printed) on failure.

FP=${1:?usage: $0 /path/to/fingerprint}

# Debian's python3 directly: a version manager's shim in front of it (pyenv)
# costs a second per call, and the checks call it often.
if [[ -x /usr/bin/python3 ]]; then
  python3() { /usr/bin/python3 "$@"; }
fi
# checks_py NAME ARG...: one of the Python checks and fixtures in checks.py.
CHECKS=$(realpath "$(dirname "${BASH_SOURCE[0]}")/checks.py")
checks_py() { python3 "$CHECKS" "$@"; }
TEST_NAME=$(basename "$0" .sh)
failures=0
checks=0
SHOWN=0

if [[ ! -x $FP ]]; then
  echo "FAIL: $TEST_NAME: the runner '$FP' is not an executable file" >&2
  exit 1
fi
FP=$(realpath "$FP")

T=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-cli-$TEST_NAME.XXXXXX")
export FINGERPRINT_CACHE_DIR=$T/cache
# What hooks spool while a database is out of reach: never the user's own.
export FINGERPRINT_SPOOL_DIR=$T/spool
unset FINGERPRINT_DIR FINGERPRINT_BUILD_ID
cd "$T"

on_exit() {
  local rc=$?
  if ((rc == 0 && failures == 0)); then
    rm -rf "$T"
  else
    echo "$TEST_NAME: FAILED (exit $rc, $failures failed checks of $checks); kept $T" >&2
    exit 1
  fi
}
trap on_exit EXIT

fail() {
  failures=$((failures + 1))
  echo "FAIL: $TEST_NAME: $*" >&2
}

ok() {
  echo "ok: $*"
}

# check COND-RESULT MESSAGE: the common ending of every check.
_result() {
  local passed=$1
  shift
  checks=$((checks + 1))
  if ((passed)); then ok "$@"; else fail "$@"; fi
}

# use_pg_server URL_FILE: for the tests on the `postgresql` fixture's server
# (tests/pg/server.sh start writes its URL to URL_FILE): sets SERVER to the
# URL, leaves out the PG variables of the caller's environment, and defines
# `sql URL STATEMENT` (one value per line, nothing else). Exits 1, saying
# why, without the URL or psql.
use_pg_server() {
  if [[ ! -s $1 ]]; then
    echo "FAIL: $TEST_NAME: no server URL in $1 (does the pg.start test, tests/pg/server.sh start, run first?)" >&2
    exit 1
  fi
  if ! command -v psql >/dev/null; then
    echo "FAIL: $TEST_NAME: psql is missing (apt-get install postgresql-client)" >&2
    exit 1
  fi
  unset PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD PGSERVICE PGOPTIONS
  SERVER=$(head -1 "$1")
  sql() { psql "$1" -X -v ON_ERROR_STOP=1 -qAtc "$2"; }
}

# run CMD ARGS...: runs with a timeout ($RUN_TIMEOUT, 10 s by default); stdout in $T/out (and $OUT),
# stderr in $T/err (and $ERR), exit code in $RC. A timeout is a failure.
run() {
  RC=0
  timeout "${RUN_TIMEOUT:-10}" "$@" >"$T/out" 2>"$T/err" || RC=$?
  SHOWN=0
  OUT=$(cat "$T/out")
  ERR=$(cat "$T/err")
  if ((RC == 124)); then
    fail "timed out after ${RUN_TIMEOUT:-10} s: $*"
  fi
}

# show_output: what the last `run` printed, once per run, after a failure.
show_output() {
  if ((SHOWN)); then return; fi
  SHOWN=1
  echo "  --- exit code: $RC"
  echo "  --- stdout:"
  head -40 "$T/out" | sed "s/^/  | /"
  echo "  --- stderr:"
  head -40 "$T/err" | sed "s/^/  | /"
}

# expect_rc N WHAT: the last `run` exited with N.
expect_rc() {
  local want=$1
  shift
  if ((RC == want)); then
    _result 1 "$* exits $want"
  else
    _result 0 "$* exits $RC, expected $want"; show_output >&2
  fi
}

# expect_in out|err|both TEXT WHAT: stdout, stderr or either of the last
# run contains TEXT (fixed string, case-insensitive).
expect_in() {
  local file=$1 text=$2
  shift 2
  if _grep_output "$file" "$text"; then
    _result 1 "$*: $(_label "$file") contains '$text'"
  else
    _result 0 "$*: $(_label "$file") does not contain '$text'"; show_output >&2
  fi
}

expect_not_in() {
  local file=$1 text=$2
  shift 2
  if _grep_output "$file" "$text"; then
    _result 0 "$*: $(_label "$file") contains '$text' but must not"; show_output >&2
  else
    _result 1 "$*: $(_label "$file") does not contain '$text'"
  fi
}

_grep_output() {
  case $1 in
    both) grep -qiF -- "$2" "$T/out" "$T/err" ;;
    *) grep -qiF -- "$2" "$T/$1" ;;
  esac
}

_label() {
  case $1 in
    both) echo "stdout/stderr" ;;
    *) echo "std$1" ;;
  esac
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
  local actual=$1 expected=$2
  shift 2
  if [[ $actual == "$expected" ]]; then
    _result 1 "$*"
  else
    _result 0 "$*: got '$actual', expected '$expected'"
  fi
}

# expect_same_file A B WHAT: byte-identical files.
expect_same_file() {
  local a=$1 b=$2
  shift 2
  if cmp -s -- "$a" "$b"; then
    _result 1 "$*"
  else
    _result 0 "$*: files differ:"$'\n'"$(diff -- "$a" "$b" | head -20 | cat -A | sed 's/^/  | /')"
  fi
}

# expect_file PATH WHAT / expect_no_file PATH WHAT
expect_file() {
  local path=$1
  shift
  if [[ -f $path ]]; then _result 1 "$*: $path exists"; else _result 0 "$*: $path does not exist"; fi
}
expect_no_file() {
  local path=$1
  shift
  if [[ -e $path || -L $path ]]; then _result 0 "$*: $path exists but must not"; else _result 1 "$*: no $path"; fi
}

# expect_json FILE PYTHON-EXPR WHAT: FILE parses as JSON and the expression
# (with the document bound to `d`) is true.
expect_json() {
  expect_json_each "$1" <<<"$3 :: $2"
}

# expect_json_each FILE <<EOF
#   WHAT :: PYTHON-EXPR
#   ...
# EOF
# One python3 run for many checks of one JSON document (bound to `d`).
expect_json_each() {
  local file=$1 spec line want got=0
  spec=$(cat)
  want=$(grep -c ' :: ' <<<"$spec")
  while IFS= read -r line; do
    case $line in
      "PASS "*) got=$((got + 1)); _result 1 "${line#PASS }" ;;
      "FAIL "*) got=$((got + 1)); _result 0 "${line#FAIL }" ;;
      *) echo "  | $line" >&2 ;;
    esac
  done < <(checks_py json-each "$file" "$spec" 2>&1)
  if ((got != want)); then
    _result 0 "expected $want JSON check results for $file, got $got (is python3 working?)"
  fi
}

# snapshot DIR: names, sizes, modes and contents of everything in DIR.
snapshot() {
  if [[ ! -d $1 ]]; then
    echo "(no directory $1)"
    return
  fi
  (cd "$1" && find . -printf '%P %s %m %y\n' | sort && find . -type f -print0 | sort -z | xargs -0r sha256sum) 2>&1 || true
}

# expect_unchanged DIR BEFORE-FILE WHAT: DIR matches a saved snapshot.
expect_unchanged() {
  local dir=$1 before=$2
  shift 2
  local after
  after=$(snapshot "$dir")
  if [[ $after == "$(cat "$before")" ]]; then
    _result 1 "$*: store unchanged"
  else
    _result 0 "$*: store changed:"$'\n'"$(diff "$before" <(echo "$after") | sed 's/^/  | /')"
  fi
}

finish() {
  if ((checks == 0)); then
    fail "no checks ran"
  fi
  if ((failures > 0)); then
    exit 1
  fi
  echo "$TEST_NAME: all $checks checks passed"
}

# summary_rewrite FILE PYTHON-EXPR: rewrites the build lines of FILE, a builds
# summary's text (store/build_summary.hpp), (each `l`, a
# list of its words) by the expression, with a correct end line.
summary_rewrite() {
  python3 - "$1" "$2" <<'EOF'
import sys
path, expr = sys.argv[1], sys.argv[2]
lines = open(path, "rb").read().decode().split("\n")
head, body = lines[0], [l.split(" ") for l in lines[1:-2]]
body = [eval(expr) for l in body]
text = head + "\n" + "".join(" ".join(l) + "\n" for l in body)
h = 0xcbf29ce484222325
for c in text.encode():
    h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
open(path, "w").write(text + "end %d %016x\n" % (len(body), h))
EOF
}
# fake_linker FILE <<'EOF' ... EOF: writes an executable "linker" FILE that
# takes -o OUT and -Wl,--dependency-file=DEP into $out and $dep, writes
# "linked" to $out, then runs the script read from standard input.
fake_linker() {
  {
    cat <<'PRELUDE'
#!/usr/bin/env bash
out= dep=
while (($#)); do
  case $1 in
    -o) out=$2; shift ;;
    -Wl,--dependency-file=*) dep=${1#-Wl,--dependency-file=} ;;
  esac
  shift
done
echo linked >"$out"
PRELUDE
    cat
  } >"$1"
  chmod +x "$1"
}
