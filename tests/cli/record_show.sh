#!/usr/bin/env bash
# record, then show / consumers; the store layout (README, "The store"); store selection.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

S=$T/store
printf 'library bytes\n' >lib.a
printf 'application bytes\n' >app
printf 'tool bytes\n' >tool
lib=$(sha256sum lib.a | cut -c1-64)
app=$(sha256sum app | cut -c1-64)
tool=$(sha256sum tool | cut -c1-64)

run "$FP" --store "$S" record --project up --target lib --build-id 1 --produced lib.a
expect_rc 0 "record the producer of lib.a"
run "$FP" --store "$S" record --project app --target app --build-id 7 --produced app --consumed lib.a
expect_rc 0 "record app consuming lib.a"
run "$FP" --store "$S" record --project tool --target tool --build-id 3 --produced tool --consumed app
expect_rc 0 "record tool consuming app"

# show --json: the object the README documents.
run "$FP" --store "$S" show --json lib.a
expect_rc 0 "show --json lib.a"
cp "$T/out" show.json
expect_json_each show.json <<EOF
show --json has exactly the keys digest, size, names, producers, consumers, package :: sorted(d) == sorted(["digest", "size", "names", "producers", "consumers", "package"])
no package for a file no Debian package installed :: d["package"] is None
show --json digest is sha256:<sha256sum of lib.a> :: d["digest"] == "sha256:$lib"
show --json size is the file size :: d["size"] == $(stat -c %s lib.a)
show --json names is the absolute path of lib.a :: d["names"] == ["$T/lib.a"]
lib.a has 1 producer and 1 consumer :: len(d["producers"]) == 1 and len(d["consumers"]) == 1
the producer has project, target, build, build_dir, host, time, path :: all(k in d["producers"][0] for k in ["project", "target", "build", "build_dir", "host", "time", "path"])
the producer is project up, target lib :: d["producers"][0]["project"] == "up" and d["producers"][0]["target"] == "lib"
the producer is build 1 :: str(d["producers"][0]["build"]) == "1"
the producer's build_dir is the cwd :: d["producers"][0]["build_dir"] == "$T"
the producer's path is lib.a's absolute path :: d["producers"][0]["path"] == "$T/lib.a"
the producer's host is this host :: d["producers"][0]["host"] == "$(hostname)"
the producer's time is RFC 3339 UTC :: re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", d["producers"][0]["time"])
the consumer is project app, target app, build 7 :: [d["consumers"][0][k] for k in ("project", "target", "build")] == ["app", "app", "7"]
the consumer has build_dir, host, time, path :: all(k in d["consumers"][0] for k in ["build_dir", "host", "time", "path"])
the consumer's product is the digest of app :: d["consumers"][0]["product"] == "sha256:$app"
the consumer's role is link (it was --consumed) :: d["consumers"][0]["role"] == "link"
EOF

# The human form names the same builds.
run "$FP" --store "$S" show lib.a
expect_rc 0 "show lib.a"
expect_in out "sha256:$lib" "show lib.a prints the digest"
expect_in out "up" "show lib.a prints the producer"
expect_eq "$(grep -A2 '^consumed by:' "$T/out" | tail -2 | awk '{print $3}' | paste -sd' ')" "ROLE link" \
  "show lib.a: the consumers' table has a ROLE column, link for app"

# consumers, direct and transitive.
run "$FP" --store "$S" consumers --json lib.a
expect_rc 0 "consumers --json lib.a"
cp "$T/out" consumers.json
expect_json_each consumers.json <<EOF
consumers --json lib.a is an array of 1 :: isinstance(d, list) and len(d) == 1
the consumer of lib.a is app, producing app :: d[0]["project"] == "app" and d[0]["product"] == "sha256:$app"
no depth without --transitive :: "depth" not in d[0]
with its role :: d[0]["role"] == "link"
EOF
run "$FP" --store "$S" consumers lib.a
expect_eq "$(awk '{print $3}' "$T/out" | paste -sd' ')" "ROLE link" "consumers lib.a (table) has a ROLE column"
run "$FP" --store "$S" consumers --json --transitive lib.a
expect_rc 0 "consumers --json --transitive lib.a"
cp "$T/out" transitive.json
expect_json_each transitive.json <<EOF
consumers --transitive lib.a is an array of 2 :: isinstance(d, list) and len(d) == 2
transitive consumers are app at depth 1 and tool at depth 2 :: sorted((e["project"], e["depth"]) for e in d) == [("app", 1), ("tool", 2)]
the depth-2 consumer produced tool :: [e["product"] for e in d if e["depth"] == 2] == ["sha256:$tool"]
EOF
run "$FP" --store "$S" consumers --json tool
expect_rc 0 "consumers --json tool"
expect_json "$T/out" 'd == []' "tool has no consumers: []"

# Querying by digest gives the same JSON as querying by file.
run "$FP" --store "$S" show --json "sha256:$lib"
expect_rc 0 "show --json sha256:<lib.a>"
expect_same_file "$T/out" show.json "show --json by digest equals show --json by file"
run "$FP" --store "$S" consumers --json --transitive "sha256:$lib"
expect_rc 0 "consumers --json --transitive sha256:<lib.a>"
expect_same_file "$T/out" transitive.json "consumers --transitive by digest equals by file"

# Something never recorded.
printf 'never recorded\n' >stranger
run "$FP" --store "$S" show stranger
expect_rc 1 "show of an unrecorded file"
expect_in err "stranger" "the message names the file"
expect_in err "not recorded" "the message says it is not recorded"
run "$FP" --store "$S" consumers stranger
expect_rc 1 "consumers of an unrecorded file"

# Store layout (README, "The store").
expect_file "$S/fingerprint-store.json" "the store has a format file"
expect_json "$S/fingerprint-store.json" 'd["format"] == 4' 'fingerprint-store.json says "format": 4 (input manifests, their journal, builds.recent)'
# Each artifact's log holds its produced event; what app and tool consumed
# is in their input manifests, whose own logs hold the produced events that
# name them.
for pair in "$lib:1" "$app:1" "$tool:1"; do
  hex=${pair%:*} want=${pair#*:}
  log="$S/objects/sha256/${hex:0:2}/$hex.jsonl"
  expect_file "$log" "the object log objects/sha256/${hex:0:2}/$hex.jsonl"
  if [[ -f $log ]]; then expect_eq "$(wc -l <"$log")" "$want" "objects/.../$hex.jsonl holds $want lines"; fi
done
for pair in up/1:1 app/7:1 tool/3:1; do
  index="$S/builds/${pair%:*}.jsonl" want=${pair#*:}
  expect_file "$index" "the build index builds/${pair%:*}.jsonl"
  if [[ -f $index ]]; then expect_eq "$(wc -l <"$index")" "$want" "builds/${pair%:*}.jsonl holds $want lines"; fi
done
unexpected=$(cd "$S" 2>&1 && find . -regextype posix-extended -type f ! -name fingerprint-store.json ! -path ./change.lock \
  ! -regex '\./objects/sha256/([0-9a-f]{2})/\1[0-9a-f]{62}\.jsonl' ! -regex '\./builds/[^/]+/[^/]+\.jsonl' \
  ! -regex '\./(manifests|inputs)/sha256/([0-9a-f]{2})/\2[0-9a-f]{62}' ! -path ./inputs/sha256/journal ! -path ./builds.recent) || true
expect_eq "$unexpected" "" "the store holds no files outside the documented layout"
expect_eq "$(find "$S/manifests" -type f | wc -l)" 2 "two input manifests: app's and tool's"
expect_eq "$(python3 "$CHECKS" journal "$S/inputs/sha256/journal" | cut -d' ' -f1 | sort | paste -sd' ')" \
  "$(find "$S/manifests" -type f -printf '%f\n' | sort | paste -sd' ')" \
  "the reverse index's journal: one line each for tool's and app's manifests"
run "$FP" --store "$S" fsck --repair
expect_rc 0 "fsck --repair folds the journal"
expect_eq "$(find "$S/inputs" -type f -print0 | xargs -0r python3 "$CHECKS" reverse-index | sort | paste -sd' ')" \
  "$(find "$S/manifests" -type f -printf '%f\n' | sort | paste -sd' ')" \
  "then the reverse indexes of lib.a and of app: one line each, naming tool's and app's manifests"
expect_eq "$(find "$S" -name '*.jsonl' | wc -l)" 8 "the store holds 3 object logs, 2 manifest logs and 3 build indexes"
# Every line of every log is one newline-terminated JSON object.
find "$S" -name '*.jsonl' -print0 | xargs -0 python3 "$CHECKS" jsonl-lines >bad-lines 2>&1 \
  || echo "python3 failed" >>bad-lines
expect_eq "$(cat bad-lines)" "" "every line of the 8 logs is one JSON object"

# Store selection: --store > $FINGERPRINT_DIR > ${XDG_DATA_HOME:-$HOME/.local/share}/fingerprint.
mkdir home xdg
record_one() { run env "$@" "$FP" record --project sel --target t --build-id 1 --produced lib.a; }
record_one FINGERPRINT_DIR="$T/env-store" XDG_DATA_HOME="$T/xdg" HOME="$T/home"
expect_rc 0 "record with FINGERPRINT_DIR set"
expect_file "$T/env-store/builds/sel/1.jsonl" "FINGERPRINT_DIR selects the store"
expect_no_file "$T/xdg/fingerprint" "with FINGERPRINT_DIR set, XDG_DATA_HOME is not used"
run env FINGERPRINT_DIR="$T/env-store" "$FP" show --json lib.a
expect_json "$T/out" 'any(p["project"] == "sel" for p in d["producers"])' "show reads the FINGERPRINT_DIR store"
snapshot env-store >env-before
run env FINGERPRINT_DIR="$T/env-store" "$FP" --store "$T/opt-store" record --project opt --target t --build-id 1 --produced lib.a
expect_rc 0 "record with --store and FINGERPRINT_DIR"
expect_file "$T/opt-store/builds/opt/1.jsonl" "--store wins over FINGERPRINT_DIR"
expect_unchanged env-store env-before "--store given: the FINGERPRINT_DIR store"
run env FINGERPRINT_DIR="$T/env-store" "$FP" record --store "$T/opt-store" --project opt2 --target t --build-id 1 --produced lib.a
expect_file "$T/opt-store/builds/opt2/1.jsonl" "--store after the command also wins over FINGERPRINT_DIR"
run env -u FINGERPRINT_DIR XDG_DATA_HOME="$T/xdg" HOME="$T/home" "$FP" record --project xdg --target t --build-id 1 --produced lib.a
expect_rc 0 "record with only XDG_DATA_HOME"
expect_file "$T/xdg/fingerprint/builds/xdg/1.jsonl" "without --store and FINGERPRINT_DIR, \$XDG_DATA_HOME/fingerprint is used"
expect_no_file "$T/home/.local" "with XDG_DATA_HOME set, HOME is not used"
run env -u FINGERPRINT_DIR -u XDG_DATA_HOME HOME="$T/home" "$FP" record --project home --target t --build-id 1 --produced lib.a
expect_file "$T/home/.local/share/fingerprint/builds/home/1.jsonl" "without XDG_DATA_HOME, \$HOME/.local/share/fingerprint is used"
expect_unchanged env-store env-before "records into other stores: the FINGERPRINT_DIR store"

finish
