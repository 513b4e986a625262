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
