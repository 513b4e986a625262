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
expect_json_each "$T/out" <<'EOF'
a dry run :: d['dry_run'] is True
three of app's builds would go (tool's only build stays) :: d['targets_dropped'] == 3
their three artifacts would go :: d['artifact_logs_removed'] == 3
the library's log would be rewritten :: d['artifact_logs_rewritten'] == 1
EOF
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

finish
