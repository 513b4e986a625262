# ALIAS targets given to fingerprint_target(), fingerprint_exclude() and
# fingerprint_add_tests(): each acts on the real target (a property cannot
# be set on an ALIAS), so the declared consumption is recorded, the
# exclusion holds and the round trip exists, by the real target's name.
source "$(dirname "$0")/lib.sh" "$@"
data=$HERE/projects/alias/data.txt
more=$HERE/projects/alias/more.txt

configure "$HERE/projects/alias" "$T/b"
expect_in out "Fingerprinting 2 targets" "alias_app and alias_lib; alias_skipped excluded through its alias"
expect_in err "fingerprint_target(alias_app) was called before" \
  "the call by the real name after the one by the alias is a second call"
build "$T/b"
query "$T/data.json" consumers --json "$data"
expect_rc 0 "consumers of data.txt, declared through the alias"
expect_json "$T/data.json" 'len(d) == 1 and d[0]["target"] == "alias_app" and d[0]["path"] == "'"$data"'"' \
  "alias::app's CONSUMES recorded as alias_app's"
query "$T/more.json" consumers --json "$more"
expect_json "$T/more.json" 'len(d) == 1 and d[0]["target"] == "alias_app"' \
  "the second call's CONSUMES added to the same target"
run "$FP" show "$T/b/libalias_skipped.a"
expect_rc 1 "alias::skipped excluded: its archive is not recorded"
run ctest --test-dir "$T/b" -N
expect_in out "fingerprint.alias_app" "fingerprint_add_tests(TARGETS alias::app) registers the real target's round trip"
run ctest --test-dir "$T/b" --output-on-failure
expect_rc 0 "the round trip passes"

# FINGERPRINT_AUTO=OFF: only the target named (by its alias) is hooked.
configure "$HERE/projects/alias" "$T/manual" -DFINGERPRINT_AUTO=OFF -DFINGERPRINT_DIR="$T/manual-store"
expect_in out "Fingerprinting 1 targets" "FINGERPRINT_AUTO=OFF: alias::app's target only"
build "$T/manual"
FINGERPRINT_DIR=$T/manual-store query "$T/manual.json" consumers --json "$data"
expect_json "$T/manual.json" 'len(d) == 1 and d[0]["target"] == "alias_app"' \
  "FINGERPRINT_AUTO=OFF: alias_app recorded with its declared consumption"
FINGERPRINT_DIR=$T/manual-store query "$T/lib.json" show --json "$T/manual/libalias_lib.a"
expect_json "$T/lib.json" 'd["producers"] == [] and d["consumers"][0]["target"] == "alias_app"' \
  "FINGERPRINT_AUTO=OFF: alias_lib not hooked, only alias_app's consumption of it"

finish
