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
query "$T/graph.dot" graph --format dot
run dot -Tsvg -o "$T/graph-from-dot.svg" "$T/graph.dot"
expect_rc 0 "Graphviz accepts the examples' DOT"
run "$FP" graph --format svg --output "$T/graph.svg"
expect_rc 0 "graph --format svg of the examples"
run "$FP" graph --format html --output "$T/graph.html"
expect_rc 0 "graph --format html of the examples"
for project in greet hello chorus; do
  if grep -q "$project" "$T/graph.svg" && grep -q "$project" "$T/graph.html"; then
    ok "the SVG and the page show $project"
  else
    fail "the SVG or the page lacks $project"
  fi
done
if grep -qE '(src|href)="https?:' "$T/graph.html"; then fail "the page fetches from the network"; else ok "the page fetches nothing"; fi
run "$FP" graph --format mermaid --project hello
expect_in out 'graph LR' "mermaid output"
expect_not_in out 'libgreet_static.a' "--project hello leaves out greet -> chorus (the only edge carrying the archive)"

# The queries of the examples' store: the build index, why, provenance.
query "$T/builds.json" builds --json
expect_rc 0 "builds --json"
expect_json_each "$T/builds.json" <<PY
one build per example :: sorted(b["project"] for b in d) == ["chorus", "greet", "hello"]
each in its own build tree :: sorted(b["build_dir"] for b in d) == ["$T/b-chorus", "$T/b-greet", "$T/b-hello"]
greet produced its libraries :: [b["produced"] >= 2 for b in d if b["project"] == "greet"] == [True]
PY
greet_build=$(/usr/bin/python3 -c 'import json,sys; print([b["build"] for b in json.load(open(sys.argv[1])) if b["project"] == "greet"][0])' "$T/builds.json")
query "$T/greet-build.json" build show greet "$greet_build" --json
expect_rc 0 "build show greet"
expect_json "$T/greet-build.json" 'any("/libgreet.so" in e["path"] for e in d["produced_events"])' "greet's build produced libgreet.so"
query "$T/why.json" why --json "$T/b-chorus/chorus" "$T/b-greet/libgreet.so"
expect_rc 0 "why chorus depends on greet's build-tree libgreet.so"
expect_json_each "$T/why.json" <<'PY'
it does :: d["depends"] is True
the last step is a chorus link :: d["chain"][-1]["project"] == "chorus" and d["chain"][-1]["event"] == "consumed"
PY
query "$T/why-hello.json" why --json "$T/b-chorus/chorus" "$T/b-hello/libhello.so"
expect_rc 0 "why chorus depends on hello's build-tree libhello.so"
expect_json "$T/why-hello.json" '[(e["event"], e["project"]) for e in d["chain"]] == [("installed", "hello"), ("consumed", "chorus")]' \
  "through hello's install (the installed copy's bytes differ) to chorus's link"
query "$T/provenance.json" export --format in-toto "$T/b-chorus/chorus"
expect_rc 0 "export --format in-toto of chorus"
expect_json_each "$T/provenance.json" <<PY
an in-toto Statement v1 with SLSA Provenance v1 :: d["_type"] == "https://in-toto.io/Statement/v1" and d["predicateType"] == "https://slsa.dev/provenance/v1"
the subject is chorus :: "$T/b-chorus/chorus" in [s["name"] for s in d["subject"]]
it names the installed libgreet.so it consumed, by digest :: "$(sha256sum "$lib" | cut -c1-64)" in [r.get("digest", {}).get("sha256") for r in d["predicate"]["buildDefinition"]["resolvedDependencies"]]
and the declared lyrics.txt :: any(r["name"].endswith("/lyrics.txt") for r in d["predicate"]["buildDefinition"]["resolvedDependencies"])
PY
# The installed chorus: its RPATH rewritten, no build produced these bytes;
# it exports the build that produced the build tree's chorus, with itself
# a subject beside it.
installed=$T/prefix/bin/chorus
query "$T/installed-provenance.json" export --format in-toto "$installed"
expect_rc 0 "export --format in-toto of the installed, RPATH-rewritten chorus"
expect_json_each "$T/installed-provenance.json" <<PY
its bytes differ from the build tree's :: "$(sha256sum "$installed" | cut -c1-64)" != "$(sha256sum "$T/b-chorus/chorus" | cut -c1-64)"
the installed file is a subject, by its own digest :: ("$installed", "$(sha256sum "$installed" | cut -c1-64)") in [(s["name"], s["digest"]["sha256"]) for s in d["subject"]]
and the build tree's chorus it was installed from :: ("$T/b-chorus/chorus", "$(sha256sum "$T/b-chorus/chorus" | cut -c1-64)") in [(s["name"], s["digest"]["sha256"]) for s in d["subject"]]
the build is chorus's :: d["predicate"]["buildDefinition"]["externalParameters"]["project"] == "chorus"
it names what that build consumed :: "$(sha256sum "$lib" | cut -c1-64)" in [r.get("digest", {}).get("sha256") for r in d["predicate"]["buildDefinition"]["resolvedDependencies"]]
PY

query "$T/gc.json" gc --dry-run --keep-builds 1 --json
expect_json "$T/gc.json" 'd["builds_dropped"] == 0 and d["events_dropped"] == 0' "gc --dry-run --keep-builds 1 keeps the only build of each"
query "$T/fsck.json" fsck --json
expect_rc 0 "fsck of the examples' store finds nothing wrong"

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

# Lineage: greet is fixed, rebuilt and reinstalled over the old one; hello
# and chorus were built against the old libgreet.so and must rebuild.
run "$FP" stale
expect_rc 0 "nothing is stale before the fix"
expect_in out "nothing stale" "and stale says so"
cp -r "$SRC/examples/greet" "$T/greet-fixed"
sed -i 's/"hello, "/"Hello, "/' "$T/greet-fixed/src/greet.cpp"
configure "$T/greet-fixed" "$T/b-greet-fixed"
build "$T/b-greet-fixed"
install_tree "$T/b-greet-fixed"
installed_lib=$(realpath "$lib")
query "$T/history.json" history --json "$lib"
expect_rc 0 "history of the reinstalled libgreet.so"
expect_json_each "$T/history.json" <<PY
both versions, oldest first :: len(d["versions"]) == 2 and d["versions"][0]["first_seen"] <= d["versions"][1]["first_seen"]
the newer is the file there now :: [v["current"] for v in d["versions"]] == [False, True] and d["now"] == "sha256:$(sha256sum "$lib" | cut -c1-64)"
each installed by greet, the newer from the fixed tree :: [[(e["event"], e["project"], e["build_dir"]) for e in v["producers"]] for v in d["versions"]] == [[("installed", "greet", "$T/b-greet")], [("installed", "greet", "$T/b-greet-fixed")]]
the older was consumed by hello and chorus, the newer by nobody yet :: sorted({e["project"] for e in d["versions"][0]["consumers"]}) == ["chorus", "hello"] and d["versions"][1]["consumers"] == []
PY
run "$FP" history "$lib"
expect_in out "2 versions, oldest first" "history (text) counts the versions"
expect_in out "(the file there now)" "and marks the current one"
query "$T/consumers-all.json" consumers --json --all-versions "$lib"
expect_json "$T/consumers-all.json" '{"hello", "chorus"} <= {e["project"] for e in d}' \
  "consumers --all-versions: the consumers of the older version too"
query "$T/consumers-now.json" consumers --json "$lib"
expect_json "$T/consumers-now.json" 'd == []' "while plain consumers answers for the bytes there now only"
query "$T/stale.json" stale --json
expect_rc 1 "stale exits 1: hello and chorus were built from the older libgreet.so"
expect_json_each "$T/stale.json" <<PY
hello's library and chorus are stale, from the installed libgreet.so :: {(e["project"], e["target"]) for e in d if e["input"] in ("$lib", "$installed_lib")} >= {("hello", "hello"), ("chorus", "chorus")}
with the digest they read and the one there now :: all(e["recorded"] != e["now"] and e["now"] == "sha256:$(sha256sum "$lib" | cut -c1-64)" for e in d if e["input"] in ("$lib", "$installed_lib"))
greet itself is not :: not any(e["project"] == "greet" for e in d)
PY
query "$T/stale-chorus.json" stale --json --project chorus
expect_json "$T/stale-chorus.json" 'd and {e["project"] for e in d} == {"chorus"}' "stale --project keeps one project's consumers"
run "$FP" stale
expect_in out "rebuild:" "stale (text) says what to rebuild"
# chorus rebuilt against the fixed library: no longer stale.
build "$T/b-hello" --target clean
build "$T/b-hello"
install_tree "$T/b-hello"
build "$T/b-chorus" --target clean
build "$T/b-chorus"
query "$T/stale-after.json" stale --json --project chorus
expect_json "$T/stale-after.json" 'not any(e["input"] in ("$lib", "$installed_lib") for e in d)' \
  "after chorus is rebuilt, its newest build read the libgreet.so there now"

finish
