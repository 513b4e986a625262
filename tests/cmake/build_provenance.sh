# A build's provenance, recorded once per build by its first hook: a real
# git repository (its commit, branch, dirtiness and remote, the remote's
# credentials stripped), the compilers CMake found, the build type, a
# digest of the flags, the CI run; shown by builds, build show, show, the
# HTML page and both exports. Ninja Multi-Config records each build's own
# configuration; a tree outside git and FINGERPRINT_PROVENANCE=OFF record
# no source or nothing.
source "$(dirname "$0")/lib.sh" "$@"
# The run is not a CI's, whatever runs this test.
unset FINGERPRINT_BUILD_ID GITHUB_ACTIONS GITHUB_RUN_ID CI_JOB_ID CI_JOB_URL BUILD_URL BUILD_TAG BUILDKITE_BUILD_ID \
  BUILDKITE_BUILD_URL
export GIT_CONFIG_GLOBAL=$T/gitconfig GIT_CONFIG_NOSYSTEM=1
git config --global user.email test@example.com
git config --global user.name test
git config --global init.defaultBranch main

# json FILE EXPRESSION: one value of a JSON file, for the checks below.
json() {
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

cp -r "$SRC/examples/greet" "$T/greet"
run git -C "$T/greet" init -q
run git -C "$T/greet" add -A
run git -C "$T/greet" commit -qm "greet 1.2.0"
expect_rc 0 "commit the project's sources"
run git -C "$T/greet" remote add origin "https://builder:s3cr3t-token@example.com/greet.git"
commit=$(git -C "$T/greet" rev-parse HEAD)

configure "$T/greet" "$T/b" -DCMAKE_BUILD_TYPE=RelWithDebInfo
build "$T/b"
cxx_version=$(sed -n 's/^set(CMAKE_CXX_COMPILER_VERSION "\(.*\)")$/\1/p' "$T"/b/CMakeFiles/*/CMakeCXXCompiler.cmake)
cxx_id=$(sed -n 's/^set(CMAKE_CXX_COMPILER_ID "\(.*\)")$/\1/p' "$T"/b/CMakeFiles/*/CMakeCXXCompiler.cmake)
cmake_version=$(cmake --version | sed -n 's/^cmake version //p')

query "$T/builds.json" builds --json
expect_json "$T/builds.json" 'len(d) == 1' "one build"
first=$(json "$T/builds.json" 'd[0]["build"]')
query "$T/build.json" build show greet "$first" --json
expect_rc 0 "build show --json"
expect_json_each "$T/build.json" <<PY
the build's source commit :: d["provenance"]["source"]["commit"] == "$commit"
its branch :: d["provenance"]["source"]["branch"] == "main"
clean :: d["provenance"]["source"]["dirty"] is False
its remote, without the credentials :: d["provenance"]["source"]["remote"] == "https://example.com/greet.git"
the C++ compiler CMake found, and its version :: (d["provenance"]["compilers"]["CXX"]["id"], d["provenance"]["compilers"]["CXX"]["version"]) == ("$cxx_id", "$cxx_version")
CMake's version and generator :: d["provenance"]["cmake"] == {"version": "$cmake_version", "generator": "Ninja"}
the build type :: d["provenance"]["build_type"] == "RelWithDebInfo"
the configuration's flags :: d["provenance"]["flags"]["CXX_RELWITHDEBINFO"] == "-O2 -g -DNDEBUG"
and their digest :: d["provenance"]["flags_digest"].startswith("sha256:") and len(d["provenance"]["flags_digest"]) == 71
no CI run :: d["provenance"]["ci"] is None
the build and its tree :: (d["provenance"]["project"], d["provenance"]["build"], d["provenance"]["build_dir"]) == ("greet", "$first", "$T/b")
PY
if grep -rq 's3cr3t-token' "$FINGERPRINT_DIR" "$T/b/CMakeFiles/fingerprint"; then
  fail "the remote's token reached the store or the build tree"
else
  ok "the remote's token is nowhere in the store or the build tree"
fi
provenance_files=$(find "$FINGERPRINT_DIR/builds" -name '*.provenance.json' | wc -l)
expect_eq "$provenance_files" 1 "one provenance document for one build of three targets"

run "$FP" build show greet "$first"
expect_in out "source: git $commit on main, clean, https://example.com/greet.git" "build show says the source"
expect_in out "CXX $cxx_id $cxx_version" "and the compiler"
expect_in out "configuration: RelWithDebInfo, flags sha256:" "and the configuration"
run "$FP" builds
expect_in out "${commit:0:12}" "builds lists the commit"
query "$T/show.json" show --json "$T/b/libgreet.so"
expect_json "$T/show.json" 'd["producers"][0]["provenance"]["source"]["commit"] == "'"$commit"'"' \
  "show --json gives each producer its build's provenance"
run "$FP" show "$T/b/libgreet.so"
expect_in out "source: git $commit" "show says what the producing build was built from"

query "$T/intoto.json" export --format in-toto "$T/b/libgreet.so"
expect_json_each "$T/intoto.json" <<PY
SLSA names the source commit as a resolved dependency :: {"uri": "git+https://example.com/greet.git@$commit", "digest": {"gitCommit": "$commit"}} in [{k: r[k] for k in ("uri", "digest") if k in r} for r in d["predicate"]["buildDefinition"]["resolvedDependencies"]]
and the compiler :: any(r.get("name") == "CXX compiler" and r["annotations"]["version"] == "$cxx_version" for r in d["predicate"]["buildDefinition"]["resolvedDependencies"])
the toolchain is among the internal parameters :: d["predicate"]["buildDefinition"]["internalParameters"]["compilers"]["CXX"]["version"] == "$cxx_version" and d["predicate"]["buildDefinition"]["internalParameters"]["build_type"] == "RelWithDebInfo"
PY
query "$T/greet.cdx.json" export --format cyclonedx "$T/b/libgreet.so"
expect_json_each "$T/greet.cdx.json" <<PY
the BOM names the repository and commit :: d["metadata"]["component"]["externalReferences"] == [{"type": "vcs", "url": "https://example.com/greet.git", "comment": "git commit $commit"}]
and the compiler among the tools :: {"type": "application", "name": "$cxx_id CXX compiler", "version": "$cxx_version"} in d["metadata"]["tools"]["components"]
PY
validate=$SRC/tests/validate
modules=${FINGERPRINT_NODE_MODULES:-$SRC/build/validate/node_modules}
if [[ -d $modules/@cyclonedx/cyclonedx-library ]]; then
  NODE_PATH=$modules run node "$validate/cyclonedx.js" "$T/greet.cdx.json"
  expect_rc 0 "CycloneDX's validator accepts the BOM with its provenance"
else
  fail "CycloneDX's validator is not installed in $modules (tools/test.sh runs npm ci in build/validate)"
fi
run "$FP" graph --format html --output "$T/graph.html"
expect_rc 0 "graph --format html"
checks_py page-summary "$T/graph.html" html >"$T/page.json" || true
expect_json "$T/page.json" "[(b['project'], (b['provenance'] or {}).get('source', {}).get('commit')) for b in d['graph_data']['builds']] == [('greet', '$commit')]" \
  "the page's builds (its builds table and build panels) carry the commit"

# A tracked file changed, not committed: the next build is dirty, from the
# same commit; a CI's run is named by its URL.
printf '// changed\n' >>"$T/greet/src/greet.cpp"
GITHUB_ACTIONS=true GITHUB_REPOSITORY=octo/greet GITHUB_RUN_ID=4242 GITHUB_RUN_ATTEMPT=1 build "$T/b"
query "$T/builds2.json" builds --json
expect_json_each "$T/builds2.json" <<PY
a second build :: len(d) == 2
its id is the CI run's :: d[1]["build"] != "$first"
built from the same commit :: d[1]["provenance"]["source"]["commit"] == "$commit"
dirty :: d[1]["provenance"]["source"]["dirty"] is True
its CI run :: d[1]["provenance"]["ci"] == {"url": "https://github.com/octo/greet/actions/runs/4242/attempts/1"}
the first build's provenance is as it was :: d[0]["provenance"]["source"]["dirty"] is False
PY
run "$FP" builds
expect_in out "${commit:0:12}+dirty" "builds marks the dirty build"

# Off: the next build records none.
configure "$T/greet" "$T/b" -DFINGERPRINT_PROVENANCE=OFF
expect_no_file "$T/b/CMakeFiles/fingerprint/toolchain.json" "no toolchain file with FINGERPRINT_PROVENANCE OFF"
printf '// again\n' >>"$T/greet/src/greet.cpp"
build "$T/b"
query "$T/builds3.json" builds --json
expect_json "$T/builds3.json" 'len(d) == 3 and d[2]["provenance"] is None' "with FINGERPRINT_PROVENANCE OFF, a build has none"

# Ninja Multi-Config, outside git: each build its own configuration, no source.
cp -r "$SRC/examples/greet" "$T/plain"
configure "$T/plain" "$T/multi" -G "Ninja Multi-Config"
build "$T/multi" --config Debug
query "$T/multi.json" builds --json
expect_json_each "$T/multi.json" <<PY
the Debug build :: [b["provenance"]["build_type"] for b in d if b["build_dir"] == "$T/multi"] == ["Debug"]
its Debug flags :: [b["provenance"]["flags"]["CXX_DEBUG"] for b in d if b["build_dir"] == "$T/multi"] == ["-g"]
no git work tree, no source :: [b["provenance"]["source"] for b in d if b["build_dir"] == "$T/multi"] == [None]
PY
build "$T/multi" --config Release
query "$T/multi2.json" builds --json
expect_json "$T/multi2.json" '[b["provenance"]["build_type"] for b in d if b["build_dir"] == "'"$T"'/multi"] == ["Debug", "Release"]' \
  "the Release build's provenance is Release's"

query "$T/fsck.json" fsck --json
expect_rc 0 "fsck finds nothing wrong with a store of provenance documents"
finish
