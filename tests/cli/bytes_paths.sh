#!/usr/bin/env bash
# Paths are bytes: files whose names are not UTF-8 (a build tree named in
# Latin-1, a stray 0xFF), recorded by `record`, by `launch` from the linker's
# dependency file and by `installed`, are found again by their exact names:
# verify --build-dir says OK (it said MISSING when the stored name had
# U+FFFD), show, consumers, check and installed's `from` match them, and each
# stored line carries the name twice: with U+FFFD in "path"/"build_dir" for
# people and older readers, exactly in "path_bytes"/"build_dir_bytes"
# (percent-encoded). A UTF-8 name's line is unchanged: no *_bytes field.
#   tests/cli/bytes_paths.sh RUNNER            a directory store
#   tests/cli/bytes_paths.sh RUNNER URL_FILE   a database of the throwaway server in URL_FILE
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

URL_FILE=${2:-}
if [[ -n $URL_FILE ]]; then
  use_pg_server "$URL_FILE"
  DB=fp_cli_$$_bytes
  sql "$SERVER" "CREATE DATABASE $DB" >/dev/null
  base=${SERVER%%\?*}
  S=${base%/*}/$DB
  cleanup() {
    local rc=$?
    set +e
    sql "$SERVER" "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || echo "note: could not drop $DB" >&2
    (exit "$rc")
    on_exit
  }
  trap cleanup EXIT
  # Every stored line: each log's and each build index's copy.
  stored_lines() { sql "$S" "SELECT line FROM fingerprint_events ORDER BY id"; }
  echo "backend: PostgreSQL ($DB)"
else
  S=$T/store
  stored_lines() { cat "$S"/objects/*/*/*.jsonl "$S"/builds/*/*.jsonl; }
  echo "backend: directory"
fi

# The build tree's own name is Latin-1 ("tr\xe9e"), so is a directory in it;
# one name has a lone 0xFF, one a literal '%' beside 0xFF (the escape
# character must be escaped). A second tree is all UTF-8, with a '%' too.
B=$T/$'tr\xe9e'
LIB=$B/$'lib\xff.a'
OBJ=$B/$'dir\xe9/x.o'
PCT=$B/$'100%\xff.o'
HDR=$T/$'include\xfe.h'
EXT=$T/$'ext\xe9/libext.so'
U=$T/utf8
UTF=$U/$'caf\xc3\xa9.o'
FIFTY=$U/50%.txt
mkdir -p "$B/"$'dir\xe9' "$T/"$'ext\xe9' "$T/prefix" "$U"
for f in "$LIB" "$OBJ" "$PCT" "$HDR" "$EXT" "$UTF" "$FIFTY"; do
  printf '%s\n' "contents of $(basename "$f")" >"$f"
done
# lossy NAME: NAME as it is printed, U+FFFD for each byte that is not UTF-8.
lossy() { python3 -c 'import os, sys; print(os.fsencode(sys.argv[1]).decode("utf-8", "replace"))' "$1"; }

run "$FP" --store "$S" record --project p --target lib --build-id 1 --build-dir "$B" \
  --produced "$LIB" "$OBJ" "$PCT" --consumed "$HDR"
expect_rc 0 "record of files whose names are not UTF-8, in a build tree whose name is not"
run "$FP" --store "$S" record --project p --target utf --build-id 2 --build-dir "$U" --produced "$UTF" "$FIFTY"
expect_rc 0 "record of files with UTF-8 names"

# verify --build-dir opens the recorded names: U+FFFD in them made each MISSING.
run "$FP" --store "$S" verify --build-dir "$B"
expect_rc 0 "verify --build-dir of the unchanged tree"
expect_eq "$(grep -c ': OK$' "$T/out" || true)" 3 "verify --build-dir says OK for all 3 files"
expect_not_in out "MISSING" "verify --build-dir finds every file"
expect_in out "$(lossy "$LIB"): OK" "verify prints the name with U+FFFD"
run "$FP" --store "$S" verify "$LIB" "$OBJ" "$PCT"
expect_rc 0 "verify of the files by their names"
run "$FP" --store "$S" verify --build-dir "$U"
expect_rc 0 "verify --build-dir of the UTF-8 tree"
run "$FP" --store "$S" verify --json --build-dir "$B"
expect_rc 0 "verify --json --build-dir"
cp "$T/out" verify.json
expect_json_each verify.json <<EOF
verify --json: 3 files, all OK, each with path_bytes :: len(d) == 3 and all(v['status'] == 'OK' and 'path_bytes' in v for v in d)
verify --json: path_bytes of the lone 0xFF is percent-encoded :: any(v['path_bytes'] == '$T/tr%E9e/lib%FF.a' for v in d)
verify --json: a literal '%' is escaped too :: any(v['path_bytes'] == '$T/tr%E9e/100%25%FF.o' for v in d)
verify --json: the recorded events have the tree's bytes :: all(v['recorded']['build_dir_bytes'] == '$T/tr%E9e' for v in d)
EOF
run "$FP" --store "$S" verify --json --build-dir "$U"
cp "$T/out" verify-utf8.json
expect_json verify-utf8.json "len(d) == 2 and not any(k.endswith('_bytes') for v in d for k in list(v) + list(v['recorded']))" \
  "verify --json of UTF-8 names: no *_bytes field"

# The exact bytes are in the stored lines; the lossy text stays in "path".
stored_lines >lines.jsonl
cat >stored_lines.py <<'EOF'
import json, os, sys, urllib.parse
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
tree, utf8_tree, *names = [os.fsencode(a) for a in sys.argv[2:]]
def exact(e, field):
    escaped = e.get(field + "_bytes")
    return urllib.parse.unquote_to_bytes(escaped) if escaped is not None else e[field].encode()
def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
paths = {exact(e, "path") for e in lines}
for name in names:
    check(name in paths, f"a stored line decodes to exactly {name!r}")
check(all(e["path"] == exact(e, "path").decode("utf-8", "replace") for e in lines),
      "each line's path is its exact name with U+FFFD where the bytes are not UTF-8")
check(all(exact(e, "build_dir") == tree for e in lines if e["build"] == "1"),
      f"build 1's build_dir decodes to exactly {tree!r}")
# Two lines in a directory (each log and the index), one row per event in a database.
check(sum(e["build"] == "2" for e in lines) >= 2
      and all(not any(k.endswith("_bytes") for k in e) and os.fsencode(e["build_dir"]) == utf8_tree
              for e in lines if e["build"] == "2"),
      "the lines of build 2's 2 events (UTF-8 names) have no *_bytes field")
EOF
# (The consumed header is in the call's input manifest, not in a line: its
# exact name is checked through consumers --json below.)
run python3 stored_lines.py lines.jsonl "$B" "$U" "$LIB" "$OBJ" "$PCT" "$UTF" "$FIFTY"
expect_rc 0 "the stored lines read"
while IFS= read -r line; do
  case $line in
    "PASS "*) _result 1 "${line#PASS }" ;;
    *) _result 0 "${line#FAIL }" ;;
  esac
done <"$T/out"
expect_eq "$(grep -c '^PASS' "$T/out" || true)" 8 "all 8 checks of the stored lines passed"

# Queries find them by their names.
run "$FP" --store "$S" show "$LIB"
expect_rc 0 "show of the file named with 0xFF"
expect_in out "  $(lossy "$LIB")" "show lists its name, with U+FFFD"
expect_in out "$(lossy "$B")" "show lists the build tree, with U+FFFD"
run "$FP" --store "$S" show --json "$LIB"
cp "$T/out" show.json
expect_json_each show.json <<EOF
show --json: the producer's path_bytes :: d['producers'][0]['path_bytes'] == '$T/tr%E9e/lib%FF.a'
show --json: and its lossy path :: d['producers'][0]['path'] == '$T/tr\ufffde/lib\ufffd.a'
EOF
run "$FP" --store "$S" consumers --json "$HDR"
expect_rc 0 "consumers of the header named with 0xFE"
cp "$T/out" consumers.json
expect_json consumers.json "len(d) == 3 and all(e['path_bytes'] == '$T/include%FE.h' for e in d)" \
  "consumers --json: one event per product, each with the header's exact name"
run "$FP" --store "$S" check --build-dir "$B" "$LIB"
expect_rc 0 "check (the CTest round trip) of the file named with 0xFF"

# launch: the linker's dependency file names its inputs in bytes.
fake_linker fake-cc <<'EOF'
printf '%s: \\\n  %s \\\n  %s\n' "$out" "$LIB" "$EXT" >"$dep"
EOF
APP=$B/$'app\xff'
run env "LIB=$LIB" "EXT=$EXT" "$FP" --store "$S" launch --project p --target app --output "$APP" --build-dir "$B" \
  --depfile-driver "$T/fake-cc" --required -- "$T/fake-cc" -o "$APP" "$LIB"
expect_rc 0 "launch of a link whose dependency file names files with 0xFF and 0xE9"
run "$FP" --store "$S" consumers --json "$EXT"
cp "$T/out" launch.json
expect_json launch.json "len(d) == 1 and d[0]['target'] == 'app' and d[0]['path_bytes'] == '$T/ext%E9/libext.so'" \
  "the library read from the dependency file only is consumed by app, under its exact name"
run "$FP" --store "$S" verify "$APP"
expect_rc 0 "verify of the linked program named with 0xFF"

# installed: the copy is matched to its origin by its name in the tree.
cp "$LIB" "$T/prefix/"
printf 'rewritten\n' >>"$T/prefix/"$'lib\xff.a'
run "$FP" --store "$S" installed --project p --build-dir "$B" --required -- "$T/prefix/"$'lib\xff.a'
expect_rc 0 "installed of the copy named with 0xFF"
expect_in out "1 installed file" "installed finds the copy's origin in the build tree"
run "$FP" --store "$S" show --json "$T/prefix/"$'lib\xff.a'
cp "$T/out" installed.json
origin=$(sha256sum "$LIB" | cut -c1-64)
expect_json installed.json "d['producers'][0]['from'] == 'sha256:$origin'" "the installed copy is linked to its origin"

run "$FP" --store "$S" fsck
expect_rc 0 "fsck: the store is healthy"

# A file renamed since: the name recorded is no longer there.
mv "$OBJ" "$B/x.o"
run "$FP" --store "$S" verify --build-dir "$B"
expect_rc 1 "verify --build-dir after a rename"
expect_in out "$(lossy "$OBJ"): MISSING" "the renamed file is MISSING, under its old name"
expect_eq "$(grep -c ': OK$' "$T/out" || true)" 4 "the other 2 files, the program and the installed copy are OK"

finish
