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
