#!/usr/bin/env bash
# Roles (README, "What a target consumed"): every consumed edge says how the
# file was used (link, compile, interface, declared), and every query over
# the graph sees the edges that input manifests hold: show and consumers
# (tables, --role, JSON), why through a static library's interface edge,
# graph (what no fingerprinted build produced is hidden unless --all, and
# counted), build show / builds, export. A consumed event of an old store
# (no role) reads as a link edge.
#
# Each check is one a link-only recorder fails: with --compiled, --interface
# and --declared recorded as --consumed, every role is "link"; with them
# dropped, a.cpp and friends are not recorded at all and the chain through
# libb.a's interface edge does not exist.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

S=$T/store
mkdir -p b1 b2 b3 b4 b5 sys
printf 'library\n' >lib.a
printf 'product\n' >prod
printf 'int main() {}\n' >a.cpp
printf '#pragma once\n' >a.hpp
printf 'other archive\n' >other.a
printf 'data\n' >data.txt
printf 'second library\n' >lib2.a
printf 'archive b\n' >libb.a
printf '#pragma once // b\n' >sys/b.hpp
printf 'application\n' >app
digest_of() { sha256sum "$1" | cut -c1-64; }
prod=$(digest_of prod)
record() { run "$FP" --store "$S" record "$@"; expect_rc 0 "record ${*:1:6}"; }
record --build-dir "$T/b1" --project U --target lib --build-id 1 --produced lib.a
record --build-dir "$T/b2" --project P --target T --build-id 1 --produced prod --consumed lib.a \
  --compiled a.cpp a.hpp --interface other.a --declared data.txt
# A static library libb.a of project B hands lib2.a (project Q's) to its
# consumers: an interface edge. App links libb.a only.
record --build-dir "$T/b3" --project Q --target lib2 --build-id 1 --produced lib2.a
record --build-dir "$T/b4" --project B --target libb --build-id 4 --produced libb.a --compiled sys/b.hpp \
  --interface lib2.a
record --build-dir "$T/b5" --project A --target app --build-id 9 --produced app --consumed libb.a
snapshot "$S" >store-before

# ---- show ----------------------------------------------------------------

run "$FP" --store "$S" show --json a.cpp
expect_rc 0 "show --json a.cpp (a source, read by a compile)"
expect_json_each "$T/out" <<EOF
a.cpp is consumed once, with role compile :: [e['role'] for e in d['consumers']] == ['compile']
by P's target T, to make prod :: [(e['project'], e['target'], e['product']) for e in d['consumers']] == [('P', 'T', 'sha256:$prod')]
under its path :: d['names'] == ['$T/a.cpp'] and d['consumers'][0]['path'] == '$T/a.cpp'
EOF
for pair in lib.a:link a.hpp:compile other.a:interface data.txt:declared; do
  run "$FP" --store "$S" show --json "${pair%:*}"
  expect_json "$T/out" "[e['role'] for e in d['consumers']] == ['${pair#*:}']" "show --json ${pair%:*}: consumed with role ${pair#*:}"
done
run "$FP" --store "$S" show other.a
expect_rc 0 "show other.a (table)"
expect_eq "$(grep -A1 '^consumed by:' "$T/out" | tail -1 | awk '{print $3}')" ROLE "show: the consumers' table has a ROLE column"
expect_eq "$(grep -A2 '^consumed by:' "$T/out" | tail -1 | awk '{print $1, $2, $3}')" "P T interface" "show: other.a's row says interface"
run "$FP" --store "$S" show --json --role compile,declared a.hpp
expect_json "$T/out" "[e['role'] for e in d['consumers']] == ['compile']" "show --role compile,declared keeps the compile edge"
run "$FP" --store "$S" show --json --role link a.hpp
expect_rc 0 "show --role link of a header"
expect_json "$T/out" "d['consumers'] == [] and len(d['names']) == 1" "show --role link drops the compile edge, keeps the record"
run "$FP" --store "$S" show --role link a.hpp
expect_in out "(none recorded with role link)" "show --role (table) says which roles it kept"

# ---- consumers -------------------------------------------------------------

run "$FP" --store "$S" consumers other.a
expect_rc 0 "consumers other.a"
expect_eq "$(head -1 "$T/out" | awk '{print $3}')" ROLE "consumers: the table has a ROLE column"
expect_eq "$(sed -n 2p "$T/out" | awk '{print $1, $3}')" "P interface" "consumers: other.a's consumer, role interface"
run "$FP" --store "$S" consumers --json --role compile a.hpp
expect_json "$T/out" "[(e['project'], e['role']) for e in d] == [('P', 'compile')]" "consumers --role compile a.hpp"
run "$FP" --store "$S" consumers --json --role link,interface,declared a.hpp
expect_json "$T/out" "d == []" "consumers --role without compile: none for a header"
run "$FP" --store "$S" consumers --role link a.hpp
expect_in out "no consumers recorded for sha256:$(digest_of a.hpp) with role link" "and says so with the role"
run "$FP" --store "$S" consumers --role linker a.hpp
expect_rc 2 "consumers --role linker (unknown) is a usage error"
expect_in err "unknown role 'linker' (known: link, compile, interface, declared)" "naming the known roles"
run "$FP" --store "$S" show --role compile,bogus a.hpp
expect_rc 2 "show --role with an unknown role in the list is a usage error"
expect_in err "unknown role 'bogus'" "naming it"

# --transitive: --role filters the first hop, what consumed the file itself.
run "$FP" --store "$S" consumers --json --transitive lib2.a
expect_json "$T/out" "[(e['project'], e['role'], e['depth']) for e in d] == [('B', 'interface', 1), ('A', 'link', 2)]" \
  "consumers --transitive lib2.a: libb.a (interface) at 1, app (link) at 2"
run "$FP" --store "$S" consumers --json --transitive --role interface lib2.a
expect_json "$T/out" "[(e['project'], e['depth']) for e in d] == [('B', 1), ('A', 2)]" \
  "--transitive --role interface: the first hop filtered, app still reached through it"
run "$FP" --store "$S" consumers --json --transitive --role link lib2.a
expect_json "$T/out" "d == []" "--transitive --role link: no first hop, nothing downstream"
run "$FP" --store "$S" consumers --json --transitive --role link libb.a
expect_json "$T/out" "[(e['project'], e['role'], e['depth']) for e in d] == [('A', 'link', 1)]" \
  "--transitive --role link libb.a: app"

# ---- why: through the static library's interface edge ----------------------

run "$FP" --store "$S" why --json app lib2.a
expect_rc 0 "why app lib2.a (app links libb.a, which hands on lib2.a)"
expect_json_each "$T/out" <<EOF
it depends :: d['depends'] is True
two edges: interface into libb.a, link into app :: [(e['role'], e['project'], e['target']) for e in d['chain']] == [('interface', 'B', 'libb'), ('link', 'A', 'app')]
every artifact of the chain with the build that produced it :: [(a['digest'][7:], a['producer']['project'], a['producer']['target'], a['producer']['build']) for a in d['artifacts']] == [('$(digest_of lib2.a)', 'Q', 'lib2', '1'), ('$(digest_of libb.a)', 'B', 'libb', '4'), ('$(digest_of app)', 'A', 'app', '9')]
the producers are produced events, with their build trees :: [(a['producer']['event'], a['producer']['build_dir']) for a in d['artifacts']] == [('produced', '$T/b3'), ('produced', '$T/b4'), ('produced', '$T/b5')]
EOF
run "$FP" --store "$S" why app lib2.a
expect_rc 0 "why app lib2.a (text)"
expect_in out "lib2.a (sha256:$(digest_of lib2.a | cut -c1-12)...), produced by Q lib2, build 1" "why names the producing build of the first artifact"
expect_in out "consumed by B libb, build 4 in $T/b4 as an interface input, to make:" "why names the interface edge's role"
expect_in out "libb.a (sha256:$(digest_of libb.a | cut -c1-12)...), produced by B libb, build 4" "why names the producing build of the middle artifact"
expect_in out "as a link input" "why names the link edge's role"
run "$FP" --store "$S" why --json app sys/b.hpp
expect_json "$T/out" "[e['role'] for e in d['chain']] == ['compile', 'link'] and d['artifacts'][0]['producer'] is None" \
  "why app b.hpp: a header no build produced, through a compile edge"
run "$FP" --store "$S" why app sys/b.hpp
expect_in out "origin unknown" "and says its origin is unknown"

# ---- graph -----------------------------------------------------------------
# Produced by a fingerprinted build: lib.a, lib2.a, libb.a. Not: a.cpp,
# a.hpp, other.a, data.txt, b.hpp (5 files).

run "$FP" --store "$S" graph
expect_rc 0 "graph"
expect_eq "$OUT" "B -> A  (libb.a)
Q -> B  (lib2.a)
U -> P  (lib.a)
5 toolchain/system files hidden (no fingerprinted build produced them; --all shows them)" \
  "graph (text): the interface edge Q -> B, and a line counting the 5 files left out"
run "$FP" --store "$S" graph --format json
expect_json_each "$T/out" <<EOF
graph --format json: 3 edges :: [(e['from'], e['to']) for e in d['edges']] == [('B', 'A'), ('Q', 'B'), ('U', 'P')]
and the count of files left out :: d['hidden_files'] == 5
EOF
run "$FP" --store "$S" graph --format json --all
expect_json_each "$T/out" <<EOF
graph --all: the unproduced files come from one node :: [(e['from'], e['to'], e['artifacts']) for e in d['edges'] if e['from'] == '(no producer)'] == [('(no producer)', 'B', ['b.hpp']), ('(no producer)', 'P', ['a.cpp', 'a.hpp', 'data.txt', 'other.a'])]
graph --all: none left out :: d['hidden_files'] == 0 and '(no producer)' in d['nodes']
EOF
run "$FP" --store "$S" graph --all
expect_in out "(no producer) -> P  (a.cpp, a.hpp, data.txt, other.a)" "graph --all (text)"
expect_not_in out "hidden" "graph --all (text) hides nothing"
run "$FP" --store "$S" graph --format json --project B
expect_json "$T/out" "d['hidden_files'] == 1" "graph --project B: the one file B read that nobody produced"
run "$FP" --store "$S" graph --format dot
expect_in out '>5 toolchain/system files hidden (no fingerprinted build produced them' "graph --format dot says the count in the graph's label"
run "$FP" --store "$S" graph --format mermaid
expect_in out "%% 5 toolchain/system files hidden" "graph --format mermaid says it in a comment"
run env PATH="$T/nowhere" "$FP" --store "$S" graph --format html --output page.html
expect_rc 0 "graph --format html"
checks_py page-summary page.html html >page.json || true
expect_json_each page.json <<EOF
the artifact table says how many files it hides :: any(n.startswith('5 toolchain/system files hidden') for n in d['notes'])
its tables list the 5 produced artifacts, the other 5 behind the toggle :: [a['toolchain'] for a in d['graph_data']['artifacts']].count(False) == 5 and len(d['graph_data']['artifacts']) == 10 and not d['graph_data']['show_toolchain']
the consumed events of those carry the role :: sorted(e['role'] for e in d['graph_data']['events'] if e['kind'] == 'consumed' and not d['graph_data']['artifacts'][e['artifact']]['toolchain']) == ['interface', 'link', 'link']
still no URL :: d['network'] == []
EOF
run env PATH="$T/nowhere" "$FP" --store "$S" graph --format html --all --output all.html
checks_py page-summary all.html html >all.json || true
expect_json_each all.json <<EOF
graph --all --format html: all 10 artifacts, shown :: len(d['graph_data']['artifacts']) == 10 and d['graph_data']['show_toolchain']
and no hidden note :: not any('hidden' in n for n in d['notes'])
EOF

# ---- build show, builds, export ------------------------------------------

run "$FP" --store "$S" build show P 1 --json
expect_rc 0 "build show P 1 --json"
expect_json_each "$T/out" <<EOF
build show: the consumed files come from prod's manifest, each with its role :: sorted((e['path'][len('$T/'):], e['role']) for e in d['consumed_events']) == [('a.cpp', 'compile'), ('a.hpp', 'compile'), ('data.txt', 'declared'), ('lib.a', 'link'), ('other.a', 'interface')]
each for the product prod :: {e['product'] for e in d['consumed_events']} == {'sha256:$prod'}
and counted :: d['consumed'] == 5
EOF
run "$FP" --store "$S" build show B 4
expect_eq "$(grep -A1 '^consumed:' "$T/out" | tail -1 | awk '{print $2}')" ROLE "build show (table) has a ROLE column"
expect_in out "interface  sha256:$(digest_of lib2.a | cut -c1-12)" "build show (table): lib2.a as interface"
run "$FP" --store "$S" builds --json
expect_json "$T/out" "sorted((b['project'], b['consumed']) for b in d) == [('A', 1), ('B', 2), ('P', 5), ('Q', 0), ('U', 0)]" \
  "builds counts each build's consumed files from its manifests"
run "$FP" --store "$S" export --format in-toto prod
expect_rc 0 "export --format in-toto prod"
expect_json "$T/out" "sorted((m['name'][len('$T/'):], m['annotations']['roles']) for m in d['predicate']['buildDefinition']['resolvedDependencies']) == [('a.cpp', ['compile']), ('a.hpp', ['compile']), ('data.txt', ['declared']), ('lib.a', ['link']), ('other.a', ['interface'])]" \
  "export: the materials are prod's manifest, each with its role as an annotation"
expect_unchanged "$S" store-before "the queries"

# ---- an old store: consumed events without a role --------------------------
# What a runner before input manifests wrote: a consumed event in the
# input's log and in the consumer's build index.
O=$T/old
run "$FP" --store "$O" record --build-dir "$T/b1" --project U --target lib --build-id 1 --produced lib.a
old_line=$(printf '{"v":1,"event":"consumed","digest":"sha256:%s","size":8,"path":"%s","project":"old","version":"","target":"t","build":"1","build_dir":"%s","host":"h","time":"2026-11-30T00:00:00.000Z","product":"sha256:%s"}' \
  "$(digest_of lib.a)" "$T/lib.a" "$T/b2" "$prod")
lib=$(digest_of lib.a)
echo "$old_line" >>"$O/objects/sha256/${lib:0:2}/$lib.jsonl"
mkdir -p "$O/builds/old"
echo "$old_line" >>"$O/builds/old/1.jsonl"
run "$FP" --store "$O" show --json lib.a
expect_json "$T/out" "[(e['project'], e['role']) for e in d['consumers']] == [('old', 'link')]" "an old consumed event reads as a link edge, with role link in JSON"
run "$FP" --store "$O" consumers lib.a
expect_eq "$(sed -n 2p "$T/out" | awk '{print $1, $3}')" "old link" "and in the consumers table"
run "$FP" --store "$O" consumers --json --role link lib.a
expect_json "$T/out" "len(d) == 1" "--role link keeps it"
run "$FP" --store "$O" consumers --json --role compile lib.a
expect_json "$T/out" "d == []" "--role compile drops it"
run "$FP" --store "$O" build show old 1 --json
expect_json "$T/out" "[e['role'] for e in d['consumed_events']] == ['link']" "build show fills role link for it"

finish
