# A generated project of 19 targets in nested subdirectories, built with
# ninja -j8 so the hooks run concurrently: every artifact recorded, one build
# id for the invocation, no temporary file left or shared; touching a source
# gives the relinked targets a new build id; a no-op build records nothing.
source "$(dirname "$0")/lib.sh" "$@"

p=$T/many
mkdir -p "$p/libs/static" "$p/libs/deep/shared" "$p/apps"
cat >"$p/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(many VERSION 1.0 LANGUAGES CXX)
find_package(Fingerprint REQUIRED)
include(Fingerprint)
add_subdirectory(libs)
add_subdirectory(apps)
CMAKE
echo 'add_subdirectory(static)
add_subdirectory(deep/shared)' >"$p/libs/CMakeLists.txt"
for i in 1 2 3 4 5 6 7 8; do
  echo "int s$i() { return $i; }" >"$p/libs/static/s$i.cpp"
  echo "add_library(s$i STATIC s$i.cpp)
set_property(TARGET s$i PROPERTY POSITION_INDEPENDENT_CODE ON)" >>"$p/libs/static/CMakeLists.txt"
done
for i in 1 2 3 4 5 6; do
  echo "int s$i(); int d$i() { return s$i() + 10; }" >"$p/libs/deep/shared/d$i.cpp"
  echo "add_library(d$i SHARED d$i.cpp)
target_link_libraries(d$i PRIVATE s$i)" >>"$p/libs/deep/shared/CMakeLists.txt"
done
for i in 1 2 3 4; do
  echo "int d$i(); int s7(); int main() { return d$i() + s7() > 0 ? 0 : 1; }" >"$p/apps/app$i.cpp"
  echo "add_executable(app$i app$i.cpp)
target_link_libraries(app$i PRIVATE d$i s7)" >>"$p/apps/CMakeLists.txt"
done
echo 'extern "C" int plugin() { return 1; }' >"$p/apps/plugin.cpp"
echo 'add_library(plugin MODULE plugin.cpp)' >>"$p/apps/CMakeLists.txt"

configure "$p" "$T/b"
expect_in out "Fingerprinting 19 targets" "all 19 targets in nested subdirectories are hooked"
build "$T/b" -j 8

index_count() { find "$FINGERPRINT_DIR/builds/many" -name '*.jsonl' | wc -l; }
expect_eq "$(index_count)" 1 "one ninja invocation, one build id"
first=$(find "$FINGERPRINT_DIR/builds/many" -name '*.jsonl')
expect_json_each <(python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' "$first") <<'PY'
19 targets produced :: len({e["target"] for e in d if e["event"] == "produced"}) == 19
one produced event per target :: len([e for e in d if e["event"] == "produced"]) == 19
one build id :: len({e["build"] for e in d}) == 1
the build id is the tree's sequence :: d[0]["build"].startswith("1-")
PY
expect_eq "$(find "$T/b/CMakeFiles/fingerprint/deps" -type f 2>/dev/null | wc -l)" 0 "no dependency file left behind"

for f in "$T"/b/apps/app1 "$T"/b/libs/deep/shared/libd3.so "$T"/b/libs/static/libs8.a "$T"/b/apps/libplugin.so; do
  run "$FP" show --json "$f"
  expect_rc 0 "$(basename "$f") is recorded"
done
query "$T/s7.json" consumers --json "$T/b/libs/static/libs7.a"
expect_json "$T/s7.json" 'sorted(e["target"] for e in d) == ["app1", "app2", "app3", "app4"]' \
  "the four programs consumed libs7.a"

old_id=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["build"])' "$first")
build "$T/b"
expect_eq "$(index_count)" 1 "a build with nothing to do records nothing"

echo "int s3() { return 33; }" >"$p/libs/static/s3.cpp"
build "$T/b" -j 8
expect_eq "$(index_count)" 2 "a rebuild after a change is a new build"
second=$(find "$FINGERPRINT_DIR/builds/many" -name '*.jsonl' ! -path "$first")
expect_json_each <(python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' "$second") <<PY
only what was relinked :: {e["target"] for e in d if e["event"] == "produced"} <= {"s3", "d3", "app3"}
the changed archive :: "s3" in {e["target"] for e in d if e["event"] == "produced"}
a new build id :: {e["build"] for e in d} == {e["build"] for e in d} and all(e["build"] != "$old_id" for e in d)
the next number :: all(e["build"].startswith("2-") for e in d)
PY

rm "$T/b/apps/app3"
FINGERPRINT_BUILD_ID=release-77 run cmake --build "$T/b"
expect_rc 0 "a relink with FINGERPRINT_BUILD_ID set"
expect_file "$FINGERPRINT_DIR/builds/many/release-77.jsonl" "FINGERPRINT_BUILD_ID names the build"

finish
