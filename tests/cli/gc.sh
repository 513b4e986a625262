#!/usr/bin/env bash
# gc: --keep-builds, --missing-build-dirs, --older-than, --dry-run. Only the
# chosen builds' events go; artifacts left without events go; a dry run
# changes nothing; the store stays consistent (fsck).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

digest_of() { sha256sum "$1" | cut -c1-64; }
printf 'core library\n' >lib.so
mkdir -p core-build app-build
run "$FP" --store S record --build-dir "$T/core-build" --project core --target lib --build-id 1 --produced lib.so
expect_rc 0 "record the library"
for b in 1 2 3 4 5; do
  printf 'app of build %d\n' "$b" >"app$b"
  run "$FP" --store S record --build-dir "$T/app-build" --project apps --target app --build-id "$b" --produced "app$b" --consumed lib.so
  expect_rc 0 "record app build $b"
done
# Another target of the same project and build: kept per target.
printf 'tool\n' >tool
run "$FP" --store S record --build-dir "$T/app-build" --project apps --target tool --build-id 1 --produced tool
expect_rc 0 "record the tool in build 1"

run "$FP" --store S gc
expect_rc 2 "gc without a criterion is a usage error"
run "$FP" --store S gc --older-than 3x
expect_rc 2 "an age without a unit is a usage error"
expect_in err "90d" "and shows what an age looks like"
run "$FP" --store S gc --keep-builds 0
expect_rc 2 "--keep-builds 0 is a usage error"

snapshot S >before
run "$FP" --store S gc --dry-run --keep-builds 2 --json
expect_rc 0 "gc --dry-run --keep-builds 2"
expect_json_each "$T/out" <<EOF
a dry run :: d['dry_run'] is True
three of app's builds would go (tool's only build stays) :: d['targets_dropped'] == 3
their three artifacts would go :: d['artifact_logs_removed'] == 3
the library's log would be rewritten :: d['artifact_logs_rewritten'] == 1
the builds it would drop, each with its tree and targets :: [(b['project'], b['build'], b['build_dir'], b['targets']) for b in d['builds']] == [('apps', '1', '$T/app-build', ['app']), ('apps', '2', '$T/app-build', ['app']), ('apps', '3', '$T/app-build', ['app'])]
EOF
run "$FP" --store S gc --dry-run --keep-builds 2
expect_eq "$(grep -c '^gc: would drop build [123] of apps in '"$T"'/app-build on .* (target app)$' "$T/out")" 3 \
  "the text lists each build that would go, with its tree and target"
expect_unchanged S before "a dry run changes nothing"

run "$FP" --store S gc --keep-builds 2 --json
expect_rc 0 "gc --keep-builds 2"
expect_json "$T/out" "d['events_dropped'] == 6 and d['errors'] == []" "6 events dropped: 3 produced + 3 consumed"
for b in 1 2 3; do
  run "$FP" --store S show "app$b"
  expect_rc 1 "app of build $b is gone"
done
expect_no_file "S/objects/sha256/$(digest_of app1 | cut -c1-2)/$(digest_of app1).jsonl" "its log is removed"
run "$FP" --store S show --json lib.so
expect_json "$T/out" "sorted(e['build'] for e in d['consumers']) == ['4', '5'] and len(d['producers']) == 1" \
  "the library keeps its producer and the two newest consumers"
run "$FP" --store S show tool
expect_rc 0 "the tool (another target of build 1) stays"
run "$FP" --store S builds --json
expect_json "$T/out" "sorted((b['project'], b['build']) for b in d) == [('apps', '1'), ('apps', '4'), ('apps', '5'), ('core', '1')]" \
  "build 1 stays in the index (its tool), 2 and 3 go"
run "$FP" --store S fsck
expect_rc 0 "fsck after gc finds nothing wrong"

# --keep-builds counts per build tree: a newer tree's builds leave an older
# tree's newest builds (whose files may still be installed) alone.
mkdir -p old-tree new-tree
for b in 1 2; do
  printf 'old tree %d\n' "$b" >"old$b"
  run "$FP" --store T2 record --build-dir "$T/old-tree" --project p --target app --build-id "old-$b" --produced "old$b"
done
for b in 1 2 3; do
  printf 'new tree %d\n' "$b" >"new$b"
  run "$FP" --store T2 record --build-dir "$T/new-tree" --project p --target app --build-id "new-$b" --produced "new$b"
done
run "$FP" --store T2 gc --keep-builds 1 --json
expect_rc 0 "gc --keep-builds 1 over two build trees"
expect_json "$T/out" "sorted(b['build'] for b in d['builds']) == ['new-1', 'new-2', 'old-1']" \
  "each tree keeps its newest build: old-2 and new-3 stay"

# --missing-build-dirs: this host's builds whose tree is gone; another
# host's build with the same missing tree stays.
mkdir -p gone
printf 'temporary\n' >temp.bin
run "$FP" --store S record --build-dir "$T/gone" --project scratch --target t --build-id 1 --produced temp.bin
expect_rc 0 "record a build in a tree that will go"
rmdir gone
other=$(digest_of lib.so)
printf '{"v":1,"event":"consumed","digest":"sha256:%s","size":13,"path":"/x/lib.so","project":"remote","version":"","target":"r","build":"9","build_dir":"%s","host":"another-host","time":"2026-11-30T00:00:00.000Z","product":"sha256:%s"}\n' \
  "$other" "$T/gone" "$other" | tee -a "S/objects/sha256/${other:0:2}/$other.jsonl" >/dev/null
mkdir -p S/builds/remote
printf '{"v":1,"event":"consumed","digest":"sha256:%s","size":13,"path":"/x/lib.so","project":"remote","version":"","target":"r","build":"9","build_dir":"%s","host":"another-host","time":"2026-11-30T00:00:00.000Z","product":"sha256:%s"}\n' \
  "$other" "$T/gone" "$other" >S/builds/remote/9.jsonl
run "$FP" --store S gc --missing-build-dirs --json
expect_rc 0 "gc --missing-build-dirs"
expect_json "$T/out" "d['targets_dropped'] == 1" "only this host's build in the missing tree goes"
run "$FP" --store S show temp.bin
expect_rc 1 "its artifact is gone"
run "$FP" --store S show --json lib.so
expect_json "$T/out" "'remote' in [e['project'] for e in d['consumers']]" "the other host's build stays"

# --older-than: an event from 2020 goes, today's stay.
printf '{"v":1,"event":"produced","digest":"sha256:%s","size":1,"path":"/old/a","project":"old","version":"","target":"t","build":"1","build_dir":"/old","host":"h","time":"2020-01-01T00:00:00.000Z"}\n' \
  "$(printf '%064d' 1)" >old-event
mkdir -p S/objects/sha256/00 S/builds/old
cp old-event "S/objects/sha256/00/$(printf '%064d' 1).jsonl"
cp old-event S/builds/old/1.jsonl
run "$FP" --store S gc --older-than 365d --json
expect_json "$T/out" "d['targets_dropped'] == 1 and d['build_indexes_removed'] == 1" "the build from 2020 goes"
expect_no_file "S/builds/old/1.jsonl" "its index is removed"
run "$FP" --store S builds --json
expect_json "$T/out" "len(d) == 5" "today's builds stay (apps 1, 4, 5; core 1; remote 9)"
run "$FP" --store S fsck
expect_rc 0 "fsck after every gc finds nothing wrong"

# A clock that was ahead (issue 13, item 7): build 2 of a tree is recorded a
# year in the future. The tree's sequence wins: --keep-builds 1 keeps build
# 3, the real newest, and --older-than collects build 2 once the builds
# after it are old enough. Ids of another form keep going by time. gc says
# which time it did not trust.
at() { date -u -d "$1" +%Y-%m-%dT%H:%M:%S.000Z; }
# plant STORE PROJECT BUILD N TIME: build BUILD of PROJECT produced artifact N at TIME.
plant() {
  local hex line
  hex=$(printf '%064x' "$4")
  line=$(printf '{"v":1,"event":"produced","digest":"sha256:%s","size":1,"path":"/t/a%s","project":"%s","version":"","target":"t","build":"%s","build_dir":"/t","host":"h","time":"%s"}' \
    "$hex" "$4" "$2" "$3" "$5")
  mkdir -p "$1/objects/sha256/${hex:0:2}" "$1/builds/$2"
  printf '%s\n' "$line" >>"$1/objects/sha256/${hex:0:2}/$hex.jsonl"
  printf '%s\n' "$line" >>"$1/builds/$2/$3.jsonl"
}
printf 'seed\n' >seed
run "$FP" --store K record --project seed --target seed --build-id seed --produced seed
expect_rc 0 "a store for the skewed builds"
plant K tree 1-0badc0de 1 "$(at '-30 days')"
plant K tree 2-0badc0de 2 "$(at '+365 days')"
plant K tree 3-0badc0de 3 "$(at '-20 days')"
plant K plain hand-a 4 "$(at '+365 days')"
plant K plain hand-b 5 "$(at '-1 day')"
cp -a K K2
run "$FP" --store K fsck --json
expect_rc 0 "fsck of the skewed store: a warning is not a problem"
expect_json_each "$T/out" <<'EOF2'
fsck warns about build 2 of the tree, in the future :: any('tree 2-0badc0de is recorded at' in w and 'in the future' in w for w in d['warnings'])
and about the hand-named build in the future :: any('plain hand-a' in w for w in d['warnings'])
about nothing else :: len(d['warnings']) == 2
EOF2

run "$FP" --store K2 gc --keep-builds 1 --json
expect_rc 0 "gc --keep-builds 1 with a build in the future"
expect_json_each "$T/out" <<'EOF2'
builds 1 and 2 of the tree go, and plain's older one :: d['targets_dropped'] == 3
the corrected time is reported :: [(c['build'], c['later_build']) for c in d['times_corrected']] == [('2-0badc0de', '3-0badc0de')]
EOF2
expect_in err "build 2-0badc0de of tree is recorded at" "gc says which build's time it did not trust"
expect_in err "taken as of" "and which time it went by"
run "$FP" --store K2 builds --json
expect_json "$T/out" "sorted((b['project'], b['build']) for b in d) == [('plain', 'hand-a'), ('seed', 'seed'), ('tree', '3-0badc0de')]" \
  "the tree keeps build 3, its newest by sequence; ids of another form keep the newest by time"

plant K tree 4-0badc0de 6 "$(at '-1 day')"
run "$FP" --store K gc --older-than 15d --json
expect_rc 0 "gc --older-than 15d with a build in the future"
expect_json "$T/out" "d['targets_dropped'] == 3" "builds 1, 2 and 3 of the tree go"
run "$FP" --store K builds --json
expect_json "$T/out" "sorted((b['project'], b['build']) for b in d) == [('plain', 'hand-a'), ('plain', 'hand-b'), ('seed', 'seed'), ('tree', '4-0badc0de')]" \
  "build 2 is collected with the old builds after it; build 4 and the other ids stay"
run "$FP" --store K fsck
expect_rc 0 "fsck after gc of the skewed builds finds nothing wrong"

# A later build whose clock was behind (a machine that booted at 1970) does
# not drag the builds before it back in time: only a time in the future is
# lowered.
run "$FP" --store L record --project seed --target seed --build-id seed --produced seed
plant L tree 1-0badcafe 1 "$(at '-2 days')"
plant L tree 2-0badcafe 2 "$(at '-1 day')"
plant L tree 3-0badcafe 3 "1970-01-02T00:00:00.000Z"
run "$FP" --store L gc --older-than 15d --json
expect_rc 0 "gc --older-than 15d with a later build from a clock that was behind"
expect_json "$T/out" "d['times_corrected'] == []" "no time is corrected for a clock that was behind"
run "$FP" --store L builds --json
expect_json "$T/out" "[b['build'] for b in d if b['project'] == 'tree'] == ['1-0badcafe', '2-0badcafe']" \
  "builds 1 and 2 stay; only build 3, recorded as of 1970, goes"

# Input manifests: a dropped build's products go from their manifests'
# logs too; a manifest left without users goes with its lines in its
# inputs' reverse indexes; one still used (by another target of the same
# build) stays. Build 1's app and tool read the same files: one manifest.
printf 'shared lib\n' >m.lib
for b in 1 2 3; do printf 'source %d\n' "$b" >"s$b.cpp"; printf 'app %d\n' "$b" >"mapp$b"; done
printf 'tool\n' >mtool
run "$FP" --store G record --project m --target app --build-id 1 --produced mapp1 --consumed m.lib --compiled s1.cpp
run "$FP" --store G record --project m --target tool --build-id 1 --produced mtool --consumed m.lib --compiled s1.cpp
run "$FP" --store G record --project m --target app --build-id 2 --produced mapp2 --consumed m.lib --compiled s2.cpp
run "$FP" --store G record --project m --target app --build-id 3 --produced mapp3 --consumed m.lib --compiled s3.cpp
expect_rc 0 "record four calls with three manifests"
run "$FP" --store G fsck --repair # their reverse index lines out of the journal, into a file per input
expect_rc 0 "fsck --repair folds the journal"
expect_eq "$(find G/manifests -type f | wc -l)" 3 "three manifests: build 1's shared by app and tool"
reverse_of() { echo "G/inputs/sha256/$(digest_of "$1" | cut -c1-2)/$(digest_of "$1")"; }
manifest_of() { # the manifest named by the produced event of $1
  checks_py json-get <(sed -n 1p "G/objects/sha256/$(digest_of "$1" | cut -c1-2)/$(digest_of "$1").jsonl") inputs | cut -d: -f2
}
m1=$(manifest_of mtool)
m2=$(manifest_of mapp2)
m3=$(manifest_of mapp3)
snapshot G >before
run "$FP" --store G gc --dry-run --keep-builds 1 --json
expect_rc 0 "gc --dry-run --keep-builds 1 of the manifests' store"
expect_json_each "$T/out" <<'EOF'
app's builds 1 and 2 would go :: d['targets_dropped'] == 2
build 2's manifest would go (build 1's is the tool's too) :: d['manifests_removed'] == 1
s2.cpp's reverse index would go :: d['reverse_indexes_removed'] == 1
m.lib's would lose a line :: d['reverse_indexes_rewritten'] == 1
EOF
expect_unchanged G before "a dry run removes no manifest"
run "$FP" --store G gc --keep-builds 1 --json
expect_rc 0 "gc --keep-builds 1 of the manifests' store"
expect_json "$T/out" "d['manifests_removed'] == 1 and d['reverse_indexes_removed'] == 1 and d['reverse_indexes_rewritten'] == 1 and d['errors'] == []" \
  "one manifest removed, one reverse index removed, one rewritten"
expect_no_file "G/manifests/sha256/${m2:0:2}/$m2" "build 2's manifest is gone"
expect_no_file "G/objects/sha256/${m2:0:2}/$m2.jsonl" "and its log"
expect_no_file "$(reverse_of s2.cpp)" "and s2.cpp's reverse index, which named only it"
expect_eq "$(checks_py reverse-index "$(reverse_of m.lib)" | sort | tr '\n' ' ')" "$(printf '%s\n%s\n' "$m1" "$m3" | sort | tr '\n' ' ')" \
  "m.lib's reverse index names the two manifests left"
expect_file "G/manifests/sha256/${m1:0:2}/$m1" "build 1's manifest stays: the tool still uses it"
expect_file "G/manifests/sha256/${m3:0:2}/$m3" "build 3's manifest stays"
run "$FP" --store G show --json s1.cpp
expect_json "$T/out" "[(e['target'], e['build'], e['role']) for e in d['consumers']] == [('tool', '1', 'compile')]" \
  "s1.cpp: the tool's compile edge stays, app build 1's went"
run "$FP" --store G show --json m.lib
expect_json "$T/out" "sorted((e['target'], e['build']) for e in d['consumers']) == [('app', '3'), ('tool', '1')]" \
  "m.lib: consumed by app build 3 and the tool"
run "$FP" --store G fsck
expect_rc 0 "fsck after gc of manifests finds nothing wrong"

finish
