#!/usr/bin/env bash
# The build index and dependency chains: builds, build show, why.
# A chain lib -> app -> bundle across three projects, an installed copy of
# lib that a fourth project consumes, and an unrelated artifact.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

printf 'lib\n' >lib.so
printf 'app\n' >app
printf 'bundle\n' >bundle.tar
printf 'installed lib with another rpath\n' >installed-lib.so
printf 'plugin\n' >plugin.so
printf 'other\n' >other
mkdir -p b1 b2 b3 b4
record() { run "$FP" --store S record --build-dir "$1" "${@:2}"; expect_rc 0 "record ${*:2}"; }
record "$T/b1" --project core --target lib --build-id 1 --produced lib.so
record "$T/b2" --project apps --target app --build-id 7 --produced app --consumed lib.so
record "$T/b3" --project dist --target bundle --build-id 3 --produced bundle.tar --consumed app
record "$T/b1" --project misc --target other --build-id 2 --produced other
digest_of() { sha256sum "$1" | cut -c1-64; }

run "$FP" --store S builds --json
expect_rc 0 "builds --json"
expect_json_each "$T/out" <<EOF
four builds :: len(d) == 4
oldest first :: [b['project'] for b in d] == ['core', 'apps', 'dist', 'misc']
apps build 7 produced 1 and consumed 1 :: [(b['build'], b['produced'], b['consumed']) for b in d if b['project'] == 'apps'] == [('7', 1, 1)]
the build dir is recorded :: [b['build_dir'] for b in d if b['project'] == 'dist'] == ['$T/b3']
every build has a host and a time :: all(b['host'] and b['time'].endswith('Z') for b in d)
EOF
run "$FP" --store S builds --project dist --json
expect_json "$T/out" "[b['build'] for b in d] == ['3']" "builds --project keeps one project"
run "$FP" --store S builds
expect_rc 0 "builds (table)"
expect_in out "PROJECT" "the table has a header"
expect_eq "$(grep -c "$T/b" "$T/out")" 4 "one table line per build"
run "$FP" --store S builds --project nosuch
expect_rc 1 "builds of an unknown project is a negative answer"

run "$FP" --store S build show apps 7 --json
expect_rc 0 "build show --json"
expect_json_each "$T/out" <<EOF
what it produced :: [e['path'] for e in d['produced_events']] == ['$T/app']
what it consumed :: [e['path'] for e in d['consumed_events']] == ['$T/lib.so']
the consumed event names its product :: d['consumed_events'][0]['product'] == 'sha256:$(digest_of app)'
with its role, from app's input manifest :: [e['role'] for e in d['consumed_events']] == ['link']
EOF
run "$FP" --store S build show apps 7
expect_in out "lib.so" "build show (table) lists the consumed file"
expect_in out "link  sha256:$(digest_of lib.so | cut -c1-12)" "build show (table) gives its role"
run "$FP" --store S build show apps 8
expect_rc 1 "build show of an unknown build is a negative answer"
expect_in err "builds --project apps" "and says how to list the builds"
run "$FP" --store S build list apps
expect_rc 2 "build with anything but show is a usage error"

run "$FP" --store S why --json bundle.tar lib.so
expect_rc 0 "why bundle.tar lib.so"
expect_json_each "$T/out" <<EOF
it depends :: d['depends'] is True
two steps: app consumed lib, bundle consumed app :: [(e['project'], e['digest'][7:]) for e in d['chain']] == [('apps', '$(digest_of lib.so)'), ('dist', '$(digest_of app)')]
each step's product is the next step's artifact :: d['chain'][0]['product'] == d['chain'][1]['digest']
the last product is the consumer :: d['chain'][-1]['product'] == 'sha256:$(digest_of bundle.tar)'
each step's role :: [e['role'] for e in d['chain']] == ['link', 'link']
each artifact of the chain, with the build that produced it :: [(a['digest'][7:], a['producer']['project'], a['producer']['target'], a['producer']['build']) for a in d['artifacts']] == [('$(digest_of lib.so)', 'core', 'lib', '1'), ('$(digest_of app)', 'apps', 'app', '7'), ('$(digest_of bundle.tar)', 'dist', 'bundle', '3')]
EOF
run "$FP" --store S why bundle.tar lib.so
expect_in out "consumed by apps app, build 7" "the human chain names each build"
expect_in out "lib.so (sha256:$(digest_of lib.so | cut -c1-12)...), produced by core lib, build 1" "the human chain names the build that produced lib.so"
expect_in out "app (sha256:$(digest_of app | cut -c1-12)...), produced by apps app, build 7" "and app's"
expect_in out "in $T/b2 as a link input, to make:" "and each edge's role"
run "$FP" --store S why lib.so bundle.tar
expect_rc 1 "the reverse does not depend"
expect_in out "does not depend" "and says so"
run "$FP" --store S why other lib.so
expect_rc 1 "an unrelated artifact does not depend"
run "$FP" --store S why --json "sha256:$(digest_of app)" "sha256:$(digest_of lib.so)"
expect_json "$T/out" "len(d['chain']) == 1" "digests work as arguments"
run "$FP" --store S why app
expect_rc 2 "why needs two arguments"

# Provenance: the build that produced app, as an in-toto Statement v1 with
# an SLSA Provenance v1 predicate.
run "$FP" --store S export --format in-toto app
expect_rc 0 "export --format in-toto app"
expect_json_each "$T/out" <<EOF
an in-toto Statement v1 :: d['_type'] == 'https://in-toto.io/Statement/v1'
with SLSA Provenance v1 :: d['predicateType'] == 'https://slsa.dev/provenance/v1'
the subject is what build 7 produced, by sha256 :: d['subject'] == [{'name': '$T/app', 'digest': {'sha256': '$(digest_of app)'}}]
the consumed library, by digest, its role annotated :: d['predicate']['buildDefinition']['resolvedDependencies'] == [{'name': '$T/lib.so', 'digest': {'sha256': '$(digest_of lib.so)'}, 'annotations': {'roles': ['link']}}]
the invocation is the build :: d['predicate']['runDetails']['metadata']['invocationId'] == 'apps/7'
a builder id :: d['predicate']['runDetails']['builder']['id'].startswith('urn:fingerprint:builder:')
the project is a parameter :: d['predicate']['buildDefinition']['externalParameters']['project'] == 'apps'
EOF
run "$FP" --store S export --format in-toto --project dist --build 3
expect_rc 0 "export --project --build"
expect_json "$T/out" "d['predicate']['buildDefinition']['resolvedDependencies'][0]['digest']['sha256'] == '$(digest_of app)'" "dist's build names app by digest"
run "$FP" --store S export --format in-toto "sha256:$(printf '%064d' 0)"
expect_rc 1 "export of an artifact nobody produced is a negative answer"
run "$FP" --store S export app
expect_rc 2 "export without --format is a usage error"
run "$FP" --store S export --format in-toto --project dist
expect_rc 2 "export --project without --build is a usage error"

# Through an installed copy: lib.so installed as installed-lib.so, which
# plugin.so consumed. The installed event links the two logs.
lib=$(digest_of lib.so)
inst=$(digest_of installed-lib.so)
run "$FP" --store S2 record --build-dir "$T/b1" --project core --target lib --build-id 1 --produced lib.so
cp lib.so b1/lib.so
run "$FP" --store S2 record --build-dir "$T/b4" --project plugins --target plugin --build-id 1 --produced plugin.so --consumed installed-lib.so
event_line=$(printf '{"v":1,"event":"installed","digest":"sha256:%s","size":33,"path":"%s","project":"core","version":"","target":"lib","build":"1","build_dir":"%s","host":"h","time":"2026-11-30T00:00:00.000Z","from":"sha256:%s"}' "$inst" "$T/installed-lib.so" "$T/b1" "$lib")
# (plugin.so's input manifest lists the installed copy: it has no log yet.)
mkdir -p "S2/objects/sha256/${inst:0:2}"
echo "$event_line" >>"S2/objects/sha256/${inst:0:2}/$inst.jsonl"
echo "$event_line" >>"S2/objects/sha256/${lib:0:2}/$lib.jsonl"
run "$FP" --store S2 why --json plugin.so lib.so
expect_rc 0 "why follows an installed copy"
expect_json_each "$T/out" <<EOF
the chain goes through the install :: [e['event'] for e in d['chain']] == ['installed', 'consumed']
the installed copy's maker is the install :: [(a['producer']['event'], a['producer']['project']) for a in d['artifacts']] == [('produced', 'core'), ('installed', 'core'), ('produced', 'plugins')]
EOF
run "$FP" --store S2 why plugin.so lib.so
expect_in out "installed-lib.so (sha256:$(digest_of installed-lib.so | cut -c1-12)...), installed by core lib, build 1" "why (text) names the install as the copy's maker"

# Digests cut short, as the tables print them (12 hex digits) and git takes
# them (8 or more). Fewer digits, more than the algorithm
# has, or not hex: a usage error (exit 2). A prefix several digests begin
# with lists them (exit 2); one none begins with is not recorded (exit 1).
app_hex=$(digest_of app)
run "$FP" --store S show --json app
cp "$T/out" show-full.json
for prefix in "${app_hex:0:12}" "${app_hex:0:8}" "${app_hex:0:63}"; do
  run "$FP" --store S show --json "sha256:$prefix"
  expect_rc 0 "show sha256:$prefix (a prefix of app's digest)"
  expect_same_file "$T/out" show-full.json "show sha256:$prefix answers as show of the whole digest"
done
run "$FP" --store S why "sha256:$(digest_of bundle.tar | cut -c1-12)" "sha256:$(digest_of lib.so | cut -c1-12)"
expect_rc 0 "why takes prefixes for both artifacts"
run "$FP" --store S export --format in-toto "sha256:${app_hex:0:12}"
expect_rc 0 "export takes a prefix"
expect_in out "$app_hex" "and exports the whole digest"
for bad in "${app_hex:0:7}:needs 8 hex digits or more" "${app_hex}0:more than sha256's 64" "xyz12345:not lowercase hexadecimal"; do
  run "$FP" --store S show "sha256:${bad%%:*}"
  expect_rc 2 "show sha256:${bad%%:*} is a usage error"
  expect_in err "${bad#*:}" "and says why (${bad#*:})"
done
run "$FP" --store S show sha257:${app_hex}
expect_rc 2 "an unknown digest algorithm is a usage error"
run "$FP" --store S show "sha256:$(tr 0-9a-f 1-9a-f0 <<<"${app_hex:0:12}")"
expect_rc 1 "a prefix no recorded digest begins with is not recorded"
expect_in err "no artifact whose digest begins with" "and says so"
# Two more logs whose names begin as app's does (copies of its log).
twin_dir=S/objects/sha256/${app_hex:0:2}
for tail in 0 1; do
  cp "$twin_dir/$app_hex.jsonl" "$twin_dir/${app_hex:0:10}$(printf '%054d' "$tail").jsonl"
done
run "$FP" --store S show "sha256:${app_hex:0:10}"
expect_rc 2 "an ambiguous prefix is a usage error"
expect_in err "3 recorded digests begin with it" "it says how many"
expect_in err "sha256:$app_hex" "and lists the candidates"
run "$FP" --store S show "sha256:${app_hex:0:12}"
expect_rc 0 "a longer prefix tells them apart"
for tail in 0 1; do rm "$twin_dir/${app_hex:0:10}$(printf '%054d' "$tail").jsonl"; done

# Human output: relative times; colour on a terminal only, never with NO_COLOR.
run "$FP" --store S builds
if grep -qE '(just now|[0-9]+ (s|min) ago) \(20[0-9-]+ [0-9:]+ [+-][0-9]{2}:[0-9]{2}\)' "$T/out"; then
  ok "builds shows relative times"
else
  fail "builds shows no relative time: $OUT"
fi
# Times for people in local time with the offset, as $TZ says (a POSIX TZ,
# so no zone database is needed); --utc, before or after the command, in
# UTC; both the same moment as the exact time in --json.
run env TZ=IST-5:30 "$FP" --store S builds
expect_in out "+05:30)" "builds: local time with its offset, as TZ says"
cp "$T/out" local.txt
run env TZ=IST-5:30 "$FP" --store S --utc builds
expect_in out " UTC)" "--utc: times in UTC"
expect_not_in out "+05:30" "and only in UTC"
cp "$T/out" utc.txt
run env TZ=IST-5:30 "$FP" --store S builds --utc
expect_eq "$(grep -o '([0-9-]* [0-9:]* [A-Z+:0-9-]*)' "$T/out")" "$(grep -o '([0-9-]* [0-9:]* [A-Z+:0-9-]*)' utc.txt)" \
  "--utc after the command too (the same times, in UTC)"
run "$FP" --store S builds --json
cp "$T/out" builds.json
run python3 -c '
import datetime, json, re, sys
local = re.search(r"\((\S+ \S+) \+05:30\)", open("local.txt").read()).group(1)
utc = re.search(r"\((\S+ \S+) UTC\)", open("utc.txt").read()).group(1)
parse = lambda text: datetime.datetime.strptime(text, "%Y-%m-%d %H:%M")
exact = min(b["time"] for b in json.load(open("builds.json")))[:16].replace("T", " ")
print(int((parse(local) - parse(utc)).total_seconds() // 60), utc == exact)
'
expect_eq "$OUT" "330 True" "the local time is the UTC time plus 5:30, and the UTC time the recorded one"

if command -v script >/dev/null; then
  script -qec "$FP --store S verify app" /dev/null >tty.out 2>&1 || true
  if grep -q $'\e\[32mOK' tty.out; then ok "verify colours OK green on a terminal"; else fail "no colour on a terminal: $(od -c tty.out | head -3)"; fi
  script -qec "NO_COLOR=1 $FP --store S verify app" /dev/null >tty.out 2>&1 || true
  if grep -q $'\e' tty.out; then fail "colour despite NO_COLOR"; else ok "NO_COLOR switches colour off"; fi
else
  fail "script(1) is missing (bsdutils): cannot test colour on a terminal"
fi
run "$FP" --store S verify app
if grep -q $'\e' "$T/out"; then fail "colour in a pipe"; else ok "no colour when the output is not a terminal"; fi

finish
