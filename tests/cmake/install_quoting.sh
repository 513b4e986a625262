# Paths with spaces and characters special to CMake's arguments and the
# shell: a store whose name closes quoted and bracket arguments (", \, ]],
# ]=]) and a build tree with spaces reach the link hooks and the install
# rule intact, so the installed copies are recorded in that store.
source "$(dirname "$0")/lib.sh" "$@"
store="$T/store ]] \"q\" \\b ]=] 'x' #1"
b="$T/b greet (1)"

configure "$SRC/examples/greet" "$b" -DFINGERPRINT_DIR="$store"
build "$b"
expect_not_in both "not fingerprinted" "every link hook recorded"
install_tree "$b"
expect_not_in both "recording the installed files failed" "the install rule ran"
query "$T/installed.json" --store "$store" show --json "$T/prefix/lib/libgreet.so"
expect_rc 0 "the installed libgreet.so is in the store named with special characters"
expect_json "$T/installed.json" \
  'any(e["event"] == "installed" and e["project"] == "greet" and e["build_dir"] == "'"$b"'" for e in d["producers"])' \
  "recorded as installed by greet, from the build tree with spaces"
run "$FP" --store "$store" show "$b/libgreet.so"
expect_rc 0 "the build tree's libgreet.so is recorded by its link hook"

# A name that ends in ] (and has no ]] of its own) must not close the
# install rule's bracket argument early.
store2="$T/plain store]"
b2="$T/b2"
configure "$SRC/examples/greet" "$b2" -DFINGERPRINT_DIR="$store2" -DCMAKE_INSTALL_PREFIX="$T/prefix2"
build "$b2"
install_tree "$b2"
run "$FP" --store "$store2" show "$T/prefix2/lib/libgreet.so"
expect_rc 0 "the installed libgreet.so is in the store whose name ends in ]"

# A "$" in the build tree's name: Ninja would take "$b" for a variable and
# the shell "$b" for one of its own, unless the hooks' command lines escape
# it for both (the Makefile generators escape it for make themselves).
for generator in "Ninja:n" "Unix Makefiles:m"; do
  b3="$T/b3-\$HOME-\$\$-${generator#*:}"
  GENERATOR="${generator%:*}" configure "$SRC/examples/greet" "$b3" -DFINGERPRINT_DIR="$T/store3-${generator#*:}"
  build "$b3"
  expect_not_in both "not fingerprinted" "${generator%:*}: every link hook recorded in a tree named with \$"
  query "$T/dollar.json" --store "$T/store3-${generator#*:}" show --json "$b3/libgreet.so"
  expect_rc 0 "${generator%:*}: libgreet.so of the tree named with \$ is recorded"
  expect_json "$T/dollar.json" 'd["producers"][0]["build_dir"] == "'"$b3"'"' \
    "${generator%:*}: with its build tree's name exact (\$HOME and \$\$ not expanded)"
done

# A static library in a subdirectory with a space, into the store named
# with special characters: with Ninja its rule is a shell function (only
# the last step starts the launcher), and the object directory it keeps the
# ar step in ("sub dir/CMakeFiles/s.dir") is one word to the shell and to
# the launcher, so the archive records what its member's compile read.
mkdir -p "$T/sp/sub dir"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(sp CXX)\nadd_subdirectory("sub dir")\n' >"$T/sp/CMakeLists.txt"
printf 'add_library(s STATIC s.cpp)\n' >"$T/sp/sub dir/CMakeLists.txt"
printf 'int s() { return 1; }\n' >"$T/sp/sub dir/s.cpp"
for generator in "Ninja:n" "Unix Makefiles:m"; do
  b4="$T/b4 ${generator#*:}"
  GENERATOR="${generator%:*}" configure "$T/sp" "$b4" -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$MODULE" \
    -DFINGERPRINT_DIR="$store"
  build "$b4"
  expect_not_in both "not fingerprinted" "${generator%:*}: the archive in a directory with a space is recorded"
  run "$FP" --store "$store" why "$b4/sub dir/libs.a" "$T/sp/sub dir/s.cpp"
  expect_rc 0 "${generator%:*}: the archive depends on its member's source"
  expect_in out "as a compile input" "${generator%:*}: taken from the member's compile"
done

finish
