# Ninja Multi-Config (per-config paths, both configurations recorded) and
# Unix Makefiles (recursive make, one build id per invocation).
source "$(dirname "$0")/lib.sh" "$@"

GENERATOR="Ninja Multi-Config" configure "$HERE/projects/small" "$T/multi"
for config in Debug Release; do
  build "$T/multi" --config $config
  query "$T/$config.json" show --json "$T/multi/$config/small_app"
  expect_rc 0 "$config/small_app recorded"
  expect_json "$T/$config.json" 'd["producers"][0]["path"].endswith("/'$config'/small_app")' "$config path recorded"
  expect_file "$T/multi/CMakeFiles/fingerprint/targets/small_app/config-$config.args" "per-config settings for $config"
  run ctest --test-dir "$T/multi" -C $config --output-on-failure
  expect_rc 0 "the $config round trips pass"
done
query "$T/data.json" consumers --json "$HERE/projects/small/data.txt"
expect_json "$T/data.json" 'sorted(e["path"] for e in d) == ["'"$HERE"'/projects/small/data.txt"] * 2' \
  "data.txt consumed by both configurations' programs"
query "$T/lib.json" consumers --json "$T/multi/lib/Debug/libsmall_lib.a"
expect_json "$T/lib.json" 'len(d) == 1 and d[0]["target"] == "small_app"' "Debug program consumed the Debug archive"

GENERATOR="Unix Makefiles" configure "$HERE/projects/small" "$T/make"
build "$T/make" -j 4
query "$T/make.json" show --json "$T/make/small_app"
expect_rc 0 "Unix Makefiles: small_app recorded"
query "$T/makelib.json" show --json "$T/make/lib/libsmall_lib.a"
expect_rc 0 "Unix Makefiles: the archive recorded"
expect_json "$T/makelib.json" 'len(d["producers"]) == 1 and d["consumers"][0]["target"] == "small_app"' \
  "recorded once, after ranlib, and consumed by the program"
make_id() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["producers"][0]["build"])' "$1"; }
expect_eq "$(make_id "$T/make.json")" "$(make_id "$T/makelib.json")" "one build id across recursive makes"
run ctest --test-dir "$T/make" --output-on-failure
expect_rc 0 "Unix Makefiles round trips pass"

finish
