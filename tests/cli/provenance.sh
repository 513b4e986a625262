#!/usr/bin/env bash
# Provenance people can act on: the Debian package of a file no
# fingerprinted build made (dpkg's database, indexed once into the cache).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

# A link against Debian's libc and a header of Debian's nlohmann-json3-dev,
# recorded as a build would record them.
libc=/lib/x86_64-linux-gnu/libc.so.6
header=/usr/include/nlohmann/json.hpp
printf 'app\n' >app
run "$FP" --store S record --project p --target app --build-id 1 --produced app --consumed "$libc" --compiled "$header"
expect_rc 0 "record a product of Debian's libc and a header of a Debian package"
libc_version=$(dpkg-query -W -f='${Version}' libc6)
json_version=$(dpkg-query -W -f='${Version}' nlohmann-json3-dev)

run "$FP" --store S show --json "$libc"
expect_rc 0 "show libc"
expect_json_each "$T/out" <<EOF
libc is Debian's package libc6 :: d['package']['package'] == 'libc6'
at the version dpkg has installed :: d['package']['version'] == '$libc_version'
for its architecture :: d['package']['architecture'] == '$(dpkg --print-architecture)'
under the path the package lists :: d['package']['path'] == '$libc'
no fingerprinted build produced it :: d['producers'] == []
EOF
[[ -n $(ls "$FINGERPRINT_CACHE_DIR"/dpkg-*.index 2>/dev/null) ]] && ok "the package index is kept in the cache" ||
  fail "no package index in $FINGERPRINT_CACHE_DIR"
run "$FP" --store S show "$libc"
expect_in out "produced by (no fingerprinted build):" "the table says no fingerprinted build made it"
expect_in out "Debian package libc6 $libc_version" "and names the package and its version"
# Merged /usr: the package lists /lib/..., the build read /usr/lib/...
run "$FP" --store S show --json "/usr$libc"
expect_json "$T/out" "d['package']['package'] == 'libc6'" "the /usr spelling of libc's path finds libc6 too"
run "$FP" --store S show --json "$header"
expect_json "$T/out" "(d['package']['package'], d['package']['version']) == ('nlohmann-json3-dev', '$json_version')" \
  "a header is its -dev package's"
run "$FP" --store S show --json app
expect_json "$T/out" "d['package'] is None and d['producers'][0]['project'] == 'p'" \
  "a fingerprinted product names its build, no package"
run "$FP" --store S why --json app "$libc"
expect_json "$T/out" "d['artifacts'][0]['package']['package'] == 'libc6' and 'package' not in d['artifacts'][1]" \
  "why names the package at the root of the chain, which no build made"
run "$FP" --store S why app "$libc"
expect_in out "no recorded build produced it: Debian package libc6 $libc_version" "and says so in its text"

# The graph groups them by package: with --all, one node per Debian
# package and version instead of one for every file no build made.
run "$FP" --store S graph --all
expect_in out "libc6 $libc_version (Debian) -> p  (libc.so.6)" "graph --all draws libc from libc6's node"
expect_in out "nlohmann-json3-dev $json_version (Debian) -> p  (json.hpp)" "and the header from its -dev package's"
expect_not_in out "(no producer)" "no file is left to the node of unknown origin"

# A bill of materials: export --format cyclonedx, grouped by origin and
# checked by CycloneDX's reference validator (tools/test.sh installs it).
printf 'core lib\n' >lib.so
printf 'tool\n' >tool
printf 'int main() {}\n' >main.c
run "$FP" --store S record --project core --version 1.4 --target lib --build-id 7 --produced lib.so --consumed "$libc"
run "$FP" --store S record --project p --version 2.0 --target tool --build-id 3 --produced tool --consumed lib.so "$libc" \
  --compiled "$header" main.c
expect_rc 0 "record a tool of project p from core's lib.so, libc, a Debian header and a source"
run "$FP" --store S export --format cyclonedx tool
expect_rc 0 "export --format cyclonedx tool"
cp "$T/out" tool.cdx.json
validate=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../validate")
modules=${FINGERPRINT_NODE_MODULES:-$(realpath -m "$validate/../../build/validate/node_modules")}
if [[ -d $modules/@cyclonedx/cyclonedx-library ]]; then
  NODE_PATH=$modules run node "$validate/cyclonedx.js" tool.cdx.json
  expect_rc 0 "CycloneDX's reference validator accepts the BOM (strict JSON schema, spec 1.5)"
  # A document it must refuse, so that its acceptance means something.
  python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); d["components"][0]["type"] = "binary"; json.dump(d, open(sys.argv[2], "w"))' \
    tool.cdx.json broken.cdx.json
  NODE_PATH=$modules run node "$validate/cyclonedx.js" broken.cdx.json
  expect_rc 1 "and refuses one with a component type the spec does not have"
else
  fail "CycloneDX's validator is not installed in $modules (tools/test.sh runs npm ci in build/validate)"
fi
lib_hex=$(sha256sum lib.so | cut -c1-64)
libc_hex=$(sha256sum "$libc" | cut -c1-64)
expect_json_each tool.cdx.json <<EOF
a CycloneDX 1.5 BOM :: d['bomFormat'] == 'CycloneDX' and d['specVersion'] == '1.5' and d['serialNumber'].startswith('urn:uuid:')
the build is the metadata's component, with its product :: d['metadata']['component']['name'] == 'p' and d['metadata']['component']['version'] == '2.0' and [c['name'] for c in d['metadata']['component']['components']] == ['$T/tool']
core's lib.so is in core 1.4's group, by its SHA-256 :: [(c['name'], c['version'], [(f['name'], f['hashes'][0]['alg'], f['hashes'][0]['content']) for f in c['components']]) for c in d['components'] if c.get('bom-ref') == 'project:core@1.4'] == [('core', '1.4', [('$T/lib.so', 'SHA-256', '$lib_hex')])]
libc is in libc6's group, with its purl :: [(f['name'], f['hashes'][0]['content']) for c in d['components'] if c['name'] == 'libc6' and c['purl'].startswith('pkg:deb/debian/libc6@') for f in c['components']] == [('$libc', '$libc_hex')]
the header is in its -dev package's group :: any(c['name'] == 'nlohmann-json3-dev' and c['version'] == '$json_version' for c in d['components'])
the source, of no known origin, stands alone :: [c['type'] for c in d['components'] if c['name'] == '$T/main.c'] == ['file']
the build depends on each group and on the source :: set(d['dependencies'][0]['dependsOn']) == {c['bom-ref'] for c in d['components']}
and core, whose lib.so was made from libc, on libc6's group :: [x['dependsOn'] for x in d['dependencies'] if x['ref'] == 'project:core@1.4'] == [[c['bom-ref'] for c in d['components'] if c['name'] == 'libc6']]
EOF

# Stripped and split copies answer by their GNU build-id: a program built
# here, recorded, then stripped and its debug part split off with objcopy.
printf 'int main(void) { return 0; }\n' >prog.c
cc -g -o prog prog.c
run "$FP" --store S record --project p --target prog --build-id 9 --produced prog --compiled prog.c
build_id=$(readelf -n prog | awk '/Build ID/ {print $3}')
expect_json <(sed -n 1p "S/objects/sha256/$(sha256sum prog | cut -c1-2)/$(sha256sum prog | cut -c1-64).jsonl") \
  "d['build_id'] == '$build_id' and len('$build_id') == 40" "the produced event holds the program's GNU build-id"
strip -o prog.stripped prog
objcopy --only-keep-debug prog prog.debug
for copy in prog.stripped prog.debug; do
  run "$FP" --store S show --json "$copy"
  expect_rc 0 "show $copy, whose bytes are not recorded"
  expect_json "$T/out" "d['matched_by_build_id'] == {'build_id': '$build_id', 'digest': 'sha256:$(sha256sum "$copy" | cut -c1-64)'} and d['digest'] == 'sha256:$(sha256sum prog | cut -c1-64)' and d['producers'][0]['target'] == 'prog'" \
    "$copy is matched by build-id to the program's record"
  expect_in err "matched by build-id $build_id" "and show says so"
done
run "$FP" --store S export --format in-toto prog.stripped
expect_rc 0 "export of the stripped copy"
expect_json "$T/out" "{'$T/prog.stripped', '$T/prog'} <= {s['name'] for s in d['subject']}" \
  "exports the program's build, the stripped copy a subject beside it"
prog_digest=sha256:$(sha256sum prog | cut -c1-64)
run "$FP" --store S why --json prog.stripped prog.c
expect_rc 0 "why the stripped copy depends on prog.c"
expect_json_each "$T/out" <<EOF
it does, through the program's record :: d['depends'] is True and d['consumer'] == '$prog_digest'
and says how it was matched :: d['matched_by_build_id'] == [{'file': '$T/prog.stripped', 'digest': 'sha256:$(sha256sum prog.stripped | cut -c1-64)', 'build_id': '$build_id', 'product': '$prog_digest'}]
EOF
expect_in err "matched by build-id $build_id" "why says so"
mkdir -p shipped
cp prog.stripped shipped/prog
run "$FP" --store S history --json shipped/prog
expect_rc 0 "history of a stripped copy at a path no build recorded"
expect_json_each "$T/out" <<EOF
the history of the program's path :: d['path'] == '$T/prog' and [v['digest'] for v in d['versions']] == ['$prog_digest']
the version the copy is of is the current one :: d['versions'][0]['current'] is True
the match is named :: d['matched_by_build_id']['build_id'] == '$build_id' and d['matched_by_build_id']['file'] == '$T/shipped/prog'
EOF
run "$FP" --store S history shipped/prog
expect_in out "matched by build-id" "history (text) says the copy was matched by its build-id"
printf 'not elf\n' >plain.txt
run "$FP" --store S show plain.txt
expect_rc 1 "a file with no build-id and no record is still not recorded"

# stale looks at this host's builds only: another host's paths name that
# host's files. Both inputs change; the build moved to another host is not
# stale here.
printf 'one\n' >dep1.txt
printf 'two\n' >dep2.txt
printf 'p1\n' >hprod1
printf 'p2\n' >hprod2
run "$FP" --store S record --project h --target t1 --build-id 1 --produced hprod1 --compiled dep1.txt
run "$FP" --store S record --project h --target t2 --build-id 1 --produced hprod2 --compiled dep2.txt
run "$FP" --store S stale --project h
expect_rc 0 "nothing of project h is stale while its inputs are unchanged"
printf 'one, fixed\n' >dep1.txt
printf 'two, fixed\n' >dep2.txt
sed -i '/"target":"t2"/s/"host":"[^"]*"/"host":"elsewhere"/' S/builds/h/1.jsonl
run "$FP" --store S stale --project h --json
expect_rc 1 "stale exits 1 when an input changed"
expect_json "$T/out" "[(e['target'], e['input'], e['role']) for e in d] == [('t1', '$T/dep1.txt', 'compile')]" \
  "it names this host's t1 and its changed input, not t2, recorded on another host"

# A database of our own (DPKG_ADMINDIR, as dpkg takes it): an upgrade
# changes the status file and the next query reads the new version.
mkdir -p db/info
printf 'data\n' >data.bin
data=$T/data.bin
write_status() {
  printf 'Package: fake-data\nStatus: install ok installed\nArchitecture: all\nVersion: %s\n' "$1" >db/status
}
write_status 1.0-1
printf '/.\n%s\n' "$data" >db/info/fake-data.list
run "$FP" --store S record --project p --target app2 --build-id 2 --produced app --consumed "$data"
export DPKG_ADMINDIR=$T/db
run "$FP" --store S show --json "$data"
expect_json "$T/out" "(d['package']['package'], d['package']['version']) == ('fake-data', '1.0-1')" \
  "DPKG_ADMINDIR: the package of a file, from that database"
sleep 0.05
write_status 1.0-2
touch -d '+1 minute' db/status
run "$FP" --store S show --json "$data"
expect_json "$T/out" "d['package']['version'] == '1.0-2'" "after an upgrade, the new version"
expect_eq "$(ls "$FINGERPRINT_CACHE_DIR"/dpkg-*.index | wc -l)" 1 "one index is kept: the earlier state's went"
rm db/info/fake-data.list db/status
run "$FP" --store S show --json "$data"
expect_json "$T/out" "d['package'] is None" "no database: no package, and no error"
expect_rc 0 "show still answers"
unset DPKG_ADMINDIR

finish
