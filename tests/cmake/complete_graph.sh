# The complete graph (headers, header-only libraries, generated files,
# link interfaces, every installed file) on three unmodified projects
# fingerprinted by injection: base (a static library installed from a
# subdirectory under CMP0082 OLD), hdr (header-only) and mid (a static
# library with a PUBLIC dependency on base's installed archive, a generated
# header, and a program that gets the archive only through mid; it also
# includes Debian's /usr/include/nlohmann/json.hpp). Each check below is one
# a recorder of link inputs alone fails: it records no header, no generated
# file, nothing a static library read, and only installed binaries.
source "$(dirname "$0")/lib.sh" "$@"

P=$HERE/projects/graph
inject=(-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$MODULE")

configure "$P/base" "$T/base" "${inject[@]}"
expect_not_in both "CMP0082" "configure says nothing of CMP0082: installs are recorded whatever the policy"
build "$T/base"
install_tree "$T/base"
installed_count=$(grep -c . "$T/base/install_manifest.txt")
expect_in out "Fingerprinted $installed_count installed file(s) of base" \
  "every file base installed from its subdirectory is recorded (CMP0082 OLD)"
query "$T/base-hpp.json" show --json "$T/prefix/include/base/base.hpp"
expect_json_each "$T/base-hpp.json" <<EOF
the installed header names base as its installer :: [(e["event"], e["project"], e["version"]) for e in d["producers"]] == [("installed", "base", "1.0")]
and the source file it was copied from :: d["producers"][0]["source"] == "$P/base/lib/include/base/base.hpp"
EOF
query "$T/answer.json" show --json "$T/base/lib/base_answer.hpp"
expect_json "$T/answer.json" '[(e["event"], e["target"]) for e in d["producers"]] == [("produced", "lib/base_answer.hpp")]' \
  "a header generated in a subdirectory is recorded once, by its custom command"
query "$T/base-config.json" show --json "$T/prefix/lib/cmake/base/baseTargets.cmake"
expect_json "$T/base-config.json" '[e["project"] for e in d["producers"]] == ["base"]' \
  "a generated CMake package file is recorded as installed by base"

configure "$P/hdr" "$T/hdr" "${inject[@]}"
build "$T/hdr"
install_tree "$T/hdr"
hdr_hpp=$T/prefix/include/hdr/hdr.hpp
query "$T/hdr-show.json" show --json "$hdr_hpp"
expect_json "$T/hdr-show.json" '[(e["event"], e["project"]) for e in d["producers"]] == [("installed", "hdr")]' \
  "the header-only library's installed header is recorded, installed by hdr"

configure "$P/mid" "$T/mid" "${inject[@]}"
build "$T/mid"
run "$T/mid/tool"
expect_in out '"version":"2.0.1"' "the program runs"

query "$T/hdr-consumers.json" consumers --json "$hdr_hpp"
expect_json_each "$T/hdr-consumers.json" <<EOF
the header-only library is consumed by mid's compile, under its installed name :: [(e["project"], e["target"], e["role"], e["path"]) for e in d] == [("mid", "mid", "compile", "$hdr_hpp")]
EOF
query "$T/hdr-transitive.json" consumers --json --transitive "$hdr_hpp"
expect_json "$T/hdr-transitive.json" '("tool", 2) in [(e["target"], e["depth"]) for e in d]' \
  "and, through libmid.a, by the program"

base_a=$T/prefix/lib/libbase.a
query "$T/base-consumers.json" consumers --json "$base_a"
expect_json_each "$T/base-consumers.json" <<EOF
libmid.a hands the installed libbase.a on: role interface :: ("mid", "interface") in [(e["target"], e["role"]) for e in d]
the program links it, though it never names it :: ("tool", "link") in [(e["target"], e["role"]) for e in d]
EOF
run "$FP" why "$T/mid/libmid.a" "$base_a"
expect_rc 0 "why finds the static library's dependency on the other project's archive"
query "$T/base-hpp-consumers.json" consumers --json --transitive "$T/prefix/include/base/base.hpp"
expect_json "$T/base-hpp-consumers.json" '{"mid", "tool"} <= {e["target"] for e in d}' \
  "the other project's installed header reaches mid and the program"

query "$T/version.json" show --json "$T/mid/version.hpp"
expect_json_each "$T/version.json" <<EOF
the generated header is produced by its custom command :: [(e["event"], e["project"], e["target"]) for e in d["producers"]] == [("produced", "mid", "version.hpp")]
and consumed by mid's compile :: [(e["target"], e["role"]) for e in d["consumers"]] == [("mid", "compile")]
EOF
query "$T/version-txt.json" consumers --json --transitive "$P/mid/version.txt"
expect_json "$T/version-txt.json" '[(e["target"], e["depth"]) for e in d] == [("version.hpp", 1), ("notes.txt", 1), ("mid", 2), ("tool", 3)]' \
  "the data file reaches the program through the generated header and the archive (and makes notes.txt)"

# What CMake does not hand the custom command's launcher: its DEPENDS and
# its DEPFILE, read from the build files it generated.
query "$T/table-format.json" consumers --json "$P/mid/table.format"
expect_json "$T/table-format.json" '[(e["target"], e["role"]) for e in d] == [("table.hpp", "declared")]' \
  "a DEPENDS that no command line names is an input of the header made"
query "$T/table-inc.json" consumers --json --transitive "$P/mid/table.inc"
expect_json_each "$T/table-inc.json" <<EOF
a file only the DEPFILE lists is read by the command :: [(e["target"], e["role"], e["depth"]) for e in d if e["depth"] == 1] == [("table.hpp", "compile", 1)]
and reaches the program through the header and the archive :: ("tool", 3) in [(e["target"], e["depth"]) for e in d]
EOF
run "$FP" consumers "$T/mid/table.d"
expect_rc 1 "the DEPFILE the command wrote, named on its command line, is not taken for an input"

query "$T/notes.json" show --json "$T/mid/notes.txt"
expect_json "$T/notes.json" '[e["target"] for e in d["producers"]] == ["notes.txt"]' \
  "a custom command that starts with a variable assignment runs and is recorded"
query "$T/json.json" consumers --json /usr/include/nlohmann/json.hpp
expect_json "$T/json.json" '[(e["target"], e["role"]) for e in d] == [("tool", "compile")]' \
  "Debian's nlohmann/json.hpp is consumed by the program's compile"
query "$T/json-show.json" show --json /usr/include/nlohmann/json.hpp
expect_json "$T/json-show.json" '"/usr/include/nlohmann/json.hpp" in d["names"] and d["producers"] == []' \
  "and answered by show, with no producer (a system file)"

# An unchanged relink (the source touched, the same bytes made) adds its
# products' produced events and no manifest, no reverse-index line.
manifests_before=$(find "$FINGERPRINT_DIR/manifests" -type f | wc -l)
inputs_before=$(find "$FINGERPRINT_DIR/inputs" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
touch "$P/mid/mid.cpp" "$P/mid/tool.cpp"
build "$T/mid"
expect_eq "$(find "$FINGERPRINT_DIR/manifests" -type f | wc -l)" "$manifests_before" \
  "an unchanged rebuild stores no new manifest"
expect_eq "$(find "$FINGERPRINT_DIR/inputs" -type f -printf '%s\n' | awk '{s += $1} END {print s}')" "$inputs_before" \
  "and adds nothing to the reverse index"
query "$T/hdr-again.json" consumers --json "$hdr_hpp"
expect_json "$T/hdr-again.json" 'len(d) == 2 and len({e["build"] for e in d}) == 2' \
  "the second build is listed as a consumer too"

# Under Ninja the compiles run as they are: what they read comes from
# Ninja's deps log at link time (the trees above: every "compile" edge).
run ninja -C "$T/mid" -t commands tool
expect_not_in out "fingerprint compile" "Ninja: no compile runs through a launcher of ours"

# A compile launcher the project has (ccache) keeps working: alone by
# default, inside ours with FINGERPRINT_COMPILE_LAUNCHER=ON. A rebuild served
# from its cache still records what the compiles read, either way.
export CCACHE_DIR=$T/ccache
for launcher in OFF ON; do
  configure "$P/mid" "$T/mid-ccache-$launcher" "${inject[@]}" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DFINGERPRINT_COMPILE_LAUNCHER=$launcher
  run ninja -C "$T/mid-ccache-$launcher" -t commands tool
  if [[ $launcher == ON ]]; then
    expect_in out "fingerprint compile -- ccache /usr/bin/c++" "ccache runs inside the compile hook"
  else
    expect_in out "ccache /usr/bin/c++" "ccache runs the compiles"
    expect_not_in out "fingerprint compile" "with no compile hook around it"
  fi
  build "$T/mid-ccache-$launcher"
  build "$T/mid-ccache-$launcher" --target clean
  run ccache --zero-stats
  build "$T/mid-ccache-$launcher"
  run ccache --print-stats
  hits=$(awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {s += $2} END {print s + 0}' "$T/out")
  if ((hits >= 2)); then ok "the clean rebuild was served by ccache ($hits hits)"; else fail "ccache hits: $hits"; fi
  query "$T/hdr-ccache.json" consumers --json "$hdr_hpp"
  expect_json "$T/hdr-ccache.json" \
    'len([e for e in d if e["build_dir"] == "'"$T/mid-ccache-$launcher"'" and e["role"] == "compile"]) == 2' \
    "compile launcher $launcher: both builds of the ccache tree, the cached one too, recorded the header"
done
unset CCACHE_DIR

GENERATOR="Unix Makefiles" configure "$P/mid" "$T/mid-make" "${inject[@]}"
build "$T/mid-make"
query "$T/make.json" consumers --json --transitive "$P/mid/version.txt"
expect_json "$T/make.json" '("tool", "'"$T/mid-make"'") in [(e["target"], e["build_dir"]) for e in d]' \
  "Unix Makefiles: the data file reaches the program"
query "$T/make-hdr.json" consumers --json "$hdr_hpp"
expect_json "$T/make-hdr.json" '("mid", "'"$T/mid-make"'") in [(e["target"], e["build_dir"]) for e in d]' \
  "Unix Makefiles: the header-only library is consumed"
for input in table.format:declared table.inc:compile; do
  query "$T/make-table.json" consumers --json "$P/mid/${input%:*}"
  expect_json "$T/make-table.json" '("table.hpp", "'"${input#*:}"'") in [(e["target"], e["role"]) for e in d if e["build_dir"] == "'"$T/mid-make"'"]' \
    "Unix Makefiles: the custom command's ${input%:*} (${input#*:}) is read from its build.make and DependInfo.cmake"
done

GENERATOR="Ninja Multi-Config" configure "$P/mid" "$T/mid-multi" "${inject[@]}"
for config in Debug Release; do
  build "$T/mid-multi" --config $config
done
query "$T/multi.json" consumers --json "$hdr_hpp"
expect_json "$T/multi.json" \
  'len({e["product"] for e in d if e["build_dir"] == "'"$T/mid-multi"'"}) == 2' \
  "Ninja Multi-Config: each configuration's archive consumed the header"
query "$T/multi-base.json" consumers --json "$base_a"
expect_json "$T/multi-base.json" \
  'sum(1 for e in d if e["build_dir"] == "'"$T/mid-multi"'" and e["role"] == "interface") == 2' \
  "Ninja Multi-Config: both archives hand the installed archive on"
query "$T/multi-table.json" consumers --json "$P/mid/table.inc"
expect_json "$T/multi-table.json" '("table.hpp", "compile") in [(e["target"], e["role"]) for e in d if e["build_dir"] == "'"$T/mid-multi"'"]' \
  "Ninja Multi-Config: the custom command's DEPFILE is read from the configuration's build file"

# A build tree reached through a symbolic link: its objects are still its
# own, and what their compiles read is recorded.
mkdir "$T/real"
ln -s "$T/real" "$T/link"
configure "$P/mid" "$T/link/mid" "${inject[@]}"
build "$T/link/mid"
query "$T/link.json" consumers --json "$hdr_hpp"
expect_json "$T/link.json" '("mid", "compile") in [(e["target"], e["role"]) for e in d if e["build_dir"] == "'"$T/link/mid"'"]' \
  "a build tree behind a symbolic link records its compile inputs"

# With Ninja an archive's steps before its last (rm, ar) run in the build's
# own shell, not through fingerprint-launch: libmid.a's three steps start
# one launcher, which logs one line. (The clean build above took the same
# way: the checks of the header-only library's consumers are the shell's
# kept ar step reaching the archive's record.)
rm -f "$T/mid/libmid.a"
FINGERPRINT_CPU_LOG=$T/mid-cpu.log run ninja -C "$T/mid" libmid.a
expect_rc 0 "libmid.a relinked"
expect_eq "$(grep -c '^launcher ' "$T/mid-cpu.log" || true)" 1 "one launcher start for the archive's three steps"
expect_no_file "$T/mid/CMakeFiles/mid.dir/fingerprint.ar-steps" "the kept ar step is taken by the last step"

run "$FP" fsck
expect_rc 0 "fsck finds the store healthy"

finish
