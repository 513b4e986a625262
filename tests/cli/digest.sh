#!/usr/bin/env bash
# fingerprint digest: byte-identical to the coreutils *sum tools.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

# Sizes around the read-buffer and mmap boundaries, random content.
mkdir files
sizes=(0 1 4095 4096 4097 65535 65536 131071 131072 131073 262143 262144 262145
  $((1024 * 1024 + 1)) $((8 * 1024 * 1024 + 3)))
for size in "${sizes[@]}"; do
  head -c "$size" /dev/urandom >"files/size-$size"
done
# Names that sha256sum escapes (backslash, newline, carriage return) or keeps (spaces).
printf 'backslash' >'files/back\slash'
printf 'newline' >"files/new"$'\n'"line"
printf 'carriage' >"files/carriage"$'\r'"return"
printf 'spaces' >'files/with  two spaces '
printf 'all' >"files/ all"$'\\\n\r'" of them"
mapfile -d '' names < <(find files -type f -print0 | sort -z)
expect_eq "${#names[@]}" "$((${#sizes[@]} + 5))" "all test files were created"

# Every algorithm against its coreutils tool, file by file and all at once.
for pair in sha256:sha256sum md5:md5sum sha1:sha1sum sha512:sha512sum blake2b512:b2sum; do
  algorithm=${pair%%:*} tool=${pair#*:}
  "$tool" -- "${names[@]}" >"expected.$algorithm"
  if [[ $algorithm == sha256 ]]; then
    run "$FP" digest -- "${names[@]}"
  else
    run "$FP" digest --algorithm "$algorithm" -- "${names[@]}"
  fi
  expect_rc 0 "digest --algorithm $algorithm of ${#names[@]} files"
  cp "$T/out" "actual.$algorithm"
  expect_same_file "actual.$algorithm" "expected.$algorithm" \
    "digest --algorithm $algorithm output is byte-identical to $tool"
done

# One file at a time as well, so a failure names the size that broke.
for size in "${sizes[@]}"; do
  run "$FP" digest "files/size-$size"
  expect_eq "$OUT" "$(sha256sum "files/size-$size")" "digest of a $size-byte file matches sha256sum"
done

# The output is sha256sum -c compatible (escaped names included).
if sha256sum -c --strict actual.sha256 >check.out 2>&1; then
  expect_eq "$(grep -c ': OK$' check.out)" "${#names[@]}" "sha256sum -c accepts every line of the digest output"
else
  fail "sha256sum -c rejects the digest output:"$'\n'"$(sed 's/^/  | /' check.out)"
fi

# --jobs does not change the output (order included).
run "$FP" digest --jobs 1 -- "${names[@]}"
expect_rc 0 "digest --jobs 1"
cp "$T/out" jobs1
run "$FP" digest --jobs 4 -- "${names[@]}"
expect_rc 0 "digest --jobs 4"
cp "$T/out" jobs4
expect_same_file jobs1 jobs4 "digest --jobs 1 and --jobs 4 give the same output"
expect_same_file jobs4 expected.sha256 "digest --jobs 4 matches sha256sum"

# Standard input as "-", alone and among files.
big="files/size-$((1024 * 1024 + 1))"
run "$FP" digest - <"$big"
expect_rc 0 "digest - (stdin)"
expect_eq "$OUT" "$(sha256sum - <"$big")" "digest - of a 1 MiB+1 stdin matches sha256sum -"
run "$FP" digest files/size-1 - files/size-0 <"$big"
expect_eq "$OUT" "$(sha256sum files/size-1 - files/size-0 <"$big")" "digest FILE - FILE matches sha256sum"
run "$FP" digest - </dev/null
expect_eq "$OUT" "$(sha256sum - </dev/null)" "digest - of empty stdin matches sha256sum"
run "$FP" digest - < <(printf 'piped')
expect_eq "$OUT" "$(printf 'piped' | sha256sum -)" "digest - from a pipe matches sha256sum"

# A missing file among good ones: good lines printed, error on stderr, exit 1.
run "$FP" digest files/size-1 files/does-not-exist files/size-4096
expect_rc 1 "digest with a missing file among good ones"
expect_eq "$OUT" "$(sha256sum files/size-1 files/size-4096)" "the good files' lines are still printed"
expect_in err "files/does-not-exist" "the error names the missing file"
expect_in err "No such file" "the error gives the reason"
expect_in err "fingerprint: " "the error has the 'fingerprint: ' prefix"
expect_not_in out "does-not-exist" "stdout has no line for the missing file"

# Usage errors.
run "$FP" digest
expect_rc 2 "digest without files"
run "$FP" digest --algorithm md9 files/size-1
expect_rc 2 "digest --algorithm md9"
expect_in err "md9" "the unknown algorithm is named"

finish
