#!/usr/bin/env bash
# --version, help, and running without arguments.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

run "$FP" --version
expect_rc 0 "fingerprint --version"
if [[ $OUT =~ ^fingerprint\ [0-9]+\.[0-9]+\.[0-9]+ ]]; then
  _result 1 "--version prints 'fingerprint X.Y.Z'"
else
  _result 0 "--version prints '$OUT', expected 'fingerprint X.Y.Z'"
fi

run "$FP" help
expect_rc 0 "fingerprint help"
for command in digest record show consumers verify; do
  if grep -qE "^  $command +[^ ]" "$T/out"; then
    _result 1 "fingerprint help lists $command with a summary"
  else
    _result 0 "fingerprint help does not list '$command'"; show_output >&2
  fi
done
cp "$T/out" help.txt
run "$FP" --help
expect_rc 0 "fingerprint --help"
expect_same_file "$T/out" help.txt "fingerprint --help prints the same as fingerprint help"

run "$FP" help record
expect_rc 0 "fingerprint help record"
for option in --produced --consumed --project --target --build-id --store; do
  expect_in out "$option" "fingerprint help record"
done
cp "$T/out" help-record.txt
run "$FP" record --help
expect_rc 0 "fingerprint record --help"
expect_same_file "$T/out" help-record.txt "record --help prints the same as help record"
for command in digest show consumers verify; do
  run "$FP" help "$command"
  expect_rc 0 "fingerprint help $command"
  expect_in out "usage: fingerprint $command" "fingerprint help $command"
done
run "$FP" help shwo
expect_rc 2 "fingerprint help shwo (unknown command)"
expect_in err "did you mean 'show'" "help shwo"

# -h, like --help, on every command (before a "--", after which it is the
# wrapped command's); help help.
for command in $(sed -n 's/^  \([a-z]\+\) .*/\1/p' help.txt); do
  [[ $command == help ]] && continue
  run "$FP" "$command" -h
  expect_rc 0 "fingerprint $command -h"
  expect_in out "usage: fingerprint $command " "fingerprint $command -h prints its usage"
done
run "$FP" help help
expect_rc 0 "fingerprint help help"
expect_in out "usage: fingerprint help [COMMAND]" "help help says how help is used"
run "$FP" help --format roff
expect_rc 2 "help --format of an unknown format"
run "$FP" --store "$T/none" compile -- /bin/sh -c 'exit 3' -h
expect_rc 3 "after --, -h is the wrapped command's: it runs"

# A project name the store does not have is "not recorded" for every
# command that takes one, with the name it likely meant.
printf 'lib\n' >lib.a
run "$FP" --store S record --project MYLIB --target lib --build-id 1 --produced lib.a
expect_rc 0 "record MYLIB"
for command in builds graph stale; do
  run "$FP" --store S "$command" --project mylib
  expect_rc 1 "$command --project mylib"
  expect_in err "no project mylib in the store" "$command says the project is not there"
  expect_in err "did you mean 'MYLIB'?" "$command suggests MYLIB"
done
run "$FP" --store S build show MYLIBB 1
expect_rc 1 "build show of a project the store does not have"
expect_in err "did you mean 'MYLIB'?" "build show suggests MYLIB"
run "$FP" --store S builds --project zzzzzz
expect_in err "fingerprint builds lists the projects" "a name like none of them: where to look"
run "$FP" --store S graph --project MYLIB
expect_rc 0 "graph --project of a project the store has"

run "$FP"
expect_rc 2 "fingerprint without arguments"
expect_in err "usage: fingerprint" "fingerprint without arguments prints the usage on stderr"
expect_eq "$OUT" "" "fingerprint without arguments prints nothing on stdout"
run "$FP" --store "$T/store"
expect_rc 2 "fingerprint --store DIR without a command"
expect_no_file "$T/store" "no store is created without a command"
run "$FP" --bogus
expect_rc 2 "fingerprint --bogus"
expect_in err "--bogus" "the unknown option is named"

finish
