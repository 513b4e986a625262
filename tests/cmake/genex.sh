# Generator expressions in fingerprint_target(CONSUMES/PRODUCES): kept as
# given and evaluated at generate time, per configuration. An absolute one
# ($<TARGET_FILE:genex_tool>) is recorded as it evaluates; a relative result
# is taken from the target's source (CONSUMES) or binary (PRODUCES)
# directory, sub/, for every generator; an empty result is no file.
source "$(dirname "$0")/lib.sh" "$@"
src=$HERE/projects/genex

check_config() { # BUILD-DIR CONFIG TOOL
  local b=$1 config=$2 tool=$3
  query "$T/tool.json" consumers --json "$tool"
  expect_rc 0 "$config: consumers of $tool"
  expect_json "$T/tool.json" '{(e["target"], e["path"]) for e in d} == {("genex_app", "'"$tool"'")}' \
    "$config: CONSUMES \$<TARGET_FILE:genex_tool> recorded at the tool's absolute path"
  local data=$src/sub/${config,,}.txt
  query "$T/data.json" consumers --json "$data"
  expect_json "$T/data.json" '{(e["target"], e["path"]) for e in d} == {("genex_app", "'"$data"'")}' \
    "$config: the \$<CONFIG:$config> CONSUMES is sub/${config,,}.txt, from the target's source directory"
  local map=$b/sub/genex_app-$config.map
  query "$T/map.json" show --json "$map"
  expect_rc 0 "$config: the map file named with generator expressions is recorded"
  expect_json "$T/map.json" 'd["producers"][0]["target"] == "genex_app" and d["producers"][0]["path"] == "'"$map"'"' \
    "$config: as produced by genex_app, in the target's binary directory"
}

configure "$src" "$T/b" -DCMAKE_BUILD_TYPE=Release
build "$T/b"
expect_not_in both "not fingerprinted" "every hook recorded"
check_config "$T/b" Release "$T/b/genex_tool"
run "$FP" consumers "$src/sub/debug.txt"
expect_rc 1 "Release: the Debug-only CONSUMES is not consumed"
query "$T/plain.json" consumers --json "$src/sub/data.txt"
expect_json "$T/plain.json" '{e["target"] for e in d} == {"genex_app"}' "a plain CONSUMES beside them still counts"

# Ninja Multi-Config: evaluated for the configuration being built.
GENERATOR="Ninja Multi-Config" configure "$src" "$T/multi" -DFINGERPRINT_DIR="$T/multi-store"
export FINGERPRINT_DIR=$T/multi-store
build "$T/multi" --config Debug
expect_not_in both "not fingerprinted" "Multi-Config Debug: every hook recorded"
check_config "$T/multi" Debug "$T/multi/Debug/genex_tool"

finish
