#!/usr/bin/env bash
# fingerprint verify: OK, MODIFIED, MISSING, NOT RECORDED, and --json.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

S=$T/store
mkdir build
printf 'one\n' >build/one
printf 'two\n' >build/two
printf 'three\n' >build/three
run "$FP" --store "$S" record --project p --target t --build-id 1 --build-dir build \
  --produced build/one build/two build/three
expect_rc 0 "record three files produced in build/"

# All as recorded.
run "$FP" --store "$S" verify build/one build/two build/three
expect_rc 0 "verify of three unchanged files"
expect_eq "$OUT" "build/one: OK"$'\n'"build/two: OK"$'\n'"build/three: OK" "verify prints 'FILE: OK' per file, in order"
run "$FP" --store "$S" verify "$T/build/two"
expect_rc 0 "verify by absolute path"
expect_eq "$OUT" "$T/build/two: OK" "verify prints the path as given"
run "$FP" --store "$S" verify --build-dir build
expect_rc 0 "verify --build-dir of an unchanged tree"
expect_eq "$(grep -c ': OK$' "$T/out")" 3 "verify --build-dir says OK for each of the 3 files"

# Modified.
printf 'one, changed\n' >build/one
run "$FP" --store "$S" verify build/one build/two
expect_rc 1 "verify with a modified file"
expect_in out "build/one: MODIFIED" "the modified file is MODIFIED"
expect_in out "build/two: OK" "the unchanged file is still OK"
run "$FP" --store "$S" verify build/two
expect_rc 0 "verify of only the unchanged file"

# Missing, found through --build-dir.
rm build/three
run "$FP" --store "$S" verify --build-dir build
expect_rc 1 "verify --build-dir with a deleted file"
expect_in out "$T/build/three: MISSING" "the deleted file is MISSING"
expect_in out "$T/build/one: MODIFIED" "the modified file is MODIFIED in --build-dir mode too"
expect_in out "$T/build/two: OK" "the unchanged file is OK in --build-dir mode"
run "$FP" --store "$S" verify build/three
expect_rc 1 "verify of a deleted file by name"
expect_in out "build/three: MISSING" "the deleted file named on the command line is MISSING"

# Never recorded.
printf 'stranger\n' >stranger
run "$FP" --store "$S" verify stranger
expect_rc 1 "verify of a never-recorded file"
expect_eq "$OUT" "stranger: NOT RECORDED" "a never-recorded file is NOT RECORDED"
run "$FP" --store "$S" verify build/two stranger
expect_rc 1 "verify of a recorded and a never-recorded file"
run "$FP" --store "$S" verify --build-dir "$T/elsewhere"
expect_rc 1 "verify --build-dir of a tree nothing was recorded for"

# --json: an array, one object with a status per file.
run "$FP" --store "$S" verify --json build/one build/two build/three stranger
expect_rc 1 "verify --json with bad files"
cp "$T/out" verify.json
expect_json_each verify.json <<EOF
verify --json is an array of 4 :: isinstance(d, list) and len(d) == 4
verify --json statuses are MODIFIED, OK, MISSING, NOT RECORDED in argument order :: [e["status"] for e in d] == ["MODIFIED", "OK", "MISSING", "NOT RECORDED"]
verify --json paths are the arguments :: [e["path"] for e in d] == ["build/one", "build/two", "build/three", "stranger"]
verify --json gives the current digest of an OK file :: d[1]["digest"] == "sha256:$(sha256sum build/two | cut -c1-64)"
EOF
run "$FP" --store "$S" verify --json build/two
expect_rc 0 "verify --json of an unchanged file"
expect_json "$T/out" '[e["status"] for e in d] == ["OK"]' "verify --json of an unchanged file says OK"
run "$FP" --store "$S" verify --json --build-dir build
expect_rc 1 "verify --json --build-dir"
expect_json "$T/out" 'sorted(e["status"] for e in d) == ["MISSING", "MODIFIED", "OK"]' \
  "verify --json --build-dir has MISSING, MODIFIED and OK"

# A file that was only read (a header, recorded in the product's input
# manifest, not as an event of its own) is recorded for its path too.
printf '#pragma once\n' >build/api.h
printf 'linked\n' >build/prog
run "$FP" --store "$S" record --project p --target prog --build-id 2 --build-dir build --produced build/prog \
  --compiled build/api.h
expect_rc 0 "record prog, compiled from build/api.h"
run "$FP" --store "$S" verify build/api.h
expect_rc 0 "verify of an unchanged header that was only read"
expect_eq "$OUT" "build/api.h: OK" "a header only read is OK while it holds what the compile read"
printf '#pragma once // changed\n' >build/api.h
run "$FP" --store "$S" verify build/api.h
expect_rc 1 "verify of a header changed since the compile read it"
expect_in out "build/api.h: MODIFIED (recorded sha256:" "it is MODIFIED, not NOT RECORDED"
expect_in out "by p/prog build 2)" "naming the build that read it"
run "$FP" --store "$S" verify --json build/api.h
expect_json "$T/out" '[(e["status"], e["recorded"]["event"], e["recorded"]["role"]) for e in d] == [("MODIFIED", "consumed", "compile")]' \
  "verify --json: what was recorded for it is the compile edge"
run "$FP" --store "$S" verify --build-dir build
expect_not_in out "api.h" "verify --build-dir checks what the tree produced, not what it read"

# Putting the bytes back makes it OK again.
printf 'one\n' >build/one
run "$FP" --store "$S" verify build/one
expect_rc 0 "verify after restoring the original bytes"
expect_eq "$OUT" "build/one: OK" "the restored file is OK"

finish
