# include(Fingerprint) in a project and again in its subproject does no
# harm: each target hooked once. fingerprint_exclude() leaves a target out;
# with FINGERPRINT_AUTO=OFF only fingerprint_target() targets are hooked;
# PRODUCES records a further output of the link.
source "$(dirname "$0")/lib.sh" "$@"

configure "$HERE/projects/nested" "$T/b"
expect_eq "$(grep -c 'Fingerprinting' "$T/out")" 1 "the hooks are attached once"
expect_in out "Fingerprinting 3 targets" "nested_app, sub_lib and sub_static; nested_skipped excluded"
build "$T/b"
index=$(find "$FINGERPRINT_DIR/builds/nested" -name '*.jsonl')
expect_json_each <(python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' "$index") <<'PY'
each output produced exactly once (nested_app's program and map) :: sorted(e["target"] for e in d if e["event"] == "produced") == ["nested_app", "nested_app", "sub_lib", "sub_static"]
the excluded target is absent :: all(e["target"] != "nested_skipped" for e in d)
PY

query "$T/map.json" show --json "$T/b/nested_app.map"
expect_rc 0 "the declared extra output (the link map) is recorded"
expect_json "$T/map.json" 'd["producers"][0]["target"] == "nested_app"' "as produced by nested_app's link"

configure "$HERE/projects/nested" "$T/manual" -DFINGERPRINT_AUTO=OFF -DFINGERPRINT_DIR="$T/manual-store"
expect_in out "Fingerprinting 1 targets" "FINGERPRINT_AUTO=OFF: only fingerprint_target()'s target"
build "$T/manual"
FINGERPRINT_DIR=$T/manual-store run "$FP" show "$T/manual/nested_app"
expect_rc 0 "nested_app recorded"
FINGERPRINT_DIR=$T/manual-store query "$T/sub.json" show --json "$T/manual/sub/libsub_lib.so"
expect_json "$T/sub.json" 'd["producers"] == [] and d["consumers"][0]["target"] == "nested_app"' \
  "FINGERPRINT_AUTO=OFF: sub_lib has no producer, only nested_app's consumption"

finish
