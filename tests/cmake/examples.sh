# The three examples end to end: each configured, built and installed on
# its own through find_package(Fingerprint); the store then links the
# library's producer to its consumers in the two downstream projects, and
# the CTest round trips pass, then fail when an artifact is modified or its
# record is lost.
source "$(dirname "$0")/lib.sh" "$@"

for project in greet hello chorus; do
  configure "$SRC/examples/$project" "$T/b-$project"
  build "$T/b-$project"
  install_tree "$T/b-$project"
done
lib=$T/prefix/lib/libgreet.so

query "$T/consumers.json" consumers --json --transitive "$lib"
expect_rc 0 "consumers --transitive of the installed libgreet.so"
expect_json_each "$T/consumers.json" <<'PY'
hello's library consumed it directly :: any(e["project"] == "hello" and e["target"] == "hello" and e["depth"] == 1 for e in d)
hello's program consumed it directly :: any(e["project"] == "hello" and e["target"] == "hello_app" and e["depth"] == 1 for e in d)
chorus consumed it directly (through Hello's link interface) :: any(e["project"] == "chorus" and e["depth"] == 1 for e in d)
chorus consumed it transitively, through libhello.so :: any(e["project"] == "chorus" and e["depth"] == 2 for e in d)
every event names a product digest :: all(e["product"].startswith("sha256:") for e in d)
PY

query "$T/hello.json" consumers --json "$T/prefix/lib/libhello.so"
expect_rc 0 "consumers of the installed libhello.so"
expect_json "$T/hello.json" 'any(e["project"] == "chorus" and e["path"] == "'"$T"'/prefix/lib/libhello.so" for e in d)' \
  "chorus consumed the installed copy of libhello.so, under its installed path"

query "$T/show.json" show --json "$T/prefix/lib/libhello.so"
expect_rc 0 "show the installed libhello.so"
expect_json_each "$T/show.json" <<PY
its producer is hello's install, linked to the build tree's file :: any(e["event"] == "installed" and e["project"] == "hello" and e["from"].startswith("sha256:") for e in d["producers"])
the build tree's file and the installed one differ (RPATH rewritten) :: all(e["from"] != d["digest"] for e in d["producers"] if e["event"] == "installed")
PY

query "$T/lyrics.json" consumers --json "$SRC/examples/chorus/lyrics.txt"
expect_rc 0 "consumers of the declared lyrics.txt"
expect_json "$T/lyrics.json" 'len(d) == 1 and d[0]["target"] == "chorus"' "CONSUMES reached the store"

query "$T/system.json" show --json "$T/b-chorus/chorus"
expect_rc 0 "show chorus"
run "$FP" consumers --json /lib/x86_64-linux-gnu/libc.so.6
expect_rc 0 "libc.so.6 was recorded (origin unknown) from the linker's dependency file"
expect_in out '"project": "chorus"' "chorus is among libc's consumers"

query "$T/graph.json" graph --format json
expect_rc 0 "graph --format json"
expect_json_each "$T/graph.json" <<'PY'
project edges, through installed copies :: sorted((e["from"], e["to"]) for e in d["edges"]) == [("greet", "chorus"), ("greet", "hello"), ("hello", "chorus")]
the nodes are the three projects :: d["nodes"] == ["chorus", "greet", "hello"]
each edge names what was consumed :: "libhello.so" in [a for e in d["edges"] if e["from"] == "hello" for a in e["artifacts"]]
PY
run "$FP" graph --format mermaid --project hello
expect_in out 'graph LR' "mermaid output"
expect_not_in out 'libgreet_static.a' "--project hello leaves out greet -> chorus (the only edge carrying the archive)"

for project in greet hello chorus; do
  run ctest --test-dir "$T/b-$project" --output-on-failure
  expect_rc 0 "the CTest round trips of $project pass"
done
run ctest --test-dir "$T/b-greet" -N
expect_in out "fingerprint.greet_static" "one round-trip test per target"

# Modified after the build: the round trip must fail.
cp "$T/b-greet/libgreet_static.a" "$T/saved.a"
printf 'x' >>"$T/b-greet/libgreet_static.a"
run ctest --test-dir "$T/b-greet" -R 'fingerprint.greet_static$' --output-on-failure
expect_rc 8 "the round trip fails for a modified archive"
expect_in out "modified after the build" "and says why"
cp "$T/saved.a" "$T/b-greet/libgreet_static.a"

# The store lost the record: the round trip must fail.
digest=$(sha256sum "$T/b-greet/libgreet_static.a" | cut -c1-64)
log=$FINGERPRINT_DIR/objects/sha256/${digest:0:2}/$digest.jsonl
expect_file "$log" "the archive's log"
mv "$log" "$T/saved.jsonl"
run ctest --test-dir "$T/b-greet" -R 'fingerprint.greet_static$' --output-on-failure
expect_rc 8 "the round trip fails when the store lost the record"
expect_in out "no record of it from this build tree" "and says why"
mv "$T/saved.jsonl" "$log"
run ctest --test-dir "$T/b-greet" --output-on-failure
expect_rc 0 "restored, the round trips pass again"

finish
