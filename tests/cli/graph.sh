#!/usr/bin/env bash
# graph: the producer -> consumer graph as text, DOT (fed to Graphviz),
# Mermaid, JSON, SVG and a self-contained HTML page, the page loaded in a
# real headless Chromium. A chain core -> apps -> dist -> docs across four
# projects (dist also consumes lib.so directly), names that need escaping,
# a store with edges too long for a naive DOT label, and stand-ins for a
# missing, a failing and a slow-reading dot.
# Needs Graphviz (graphviz) and Chromium (chromium), which the test command
# installs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

DOCS='docs & "more"' # a project name for DOT, JSON and HTML to escape
# A target name that would end a <script> element (with the space, escaping
# ">" alone would not stop it), with a U+2028 LINE SEPARATOR in it.
PWN=$'html\xe2\x80\xa8</script ><i id=pwn>'
# The same as Python text, for the JSON checks (one line each: Python's
# splitlines() would cut a raw U+2028).
PWN_PY='html\u2028</script ><i id=pwn>'
PROJECTS="['apps', 'core', 'dist', '$DOCS']"

printf 'lib\n' >lib.so
printf 'app\n' >app
printf 'bundle\n' >bundle.tar
printf 'doc\n' >doc.html
record() { run "$FP" --store S record --build-dir "$T" "$@"; expect_rc 0 "record $*"; }
record --project core --target lib --build-id 1 --produced lib.so
record --project apps --target app --build-id 7 --produced app --consumed lib.so
record --project dist --target bundle --build-id 3 --produced bundle.tar --consumed app lib.so
record --project "$DOCS" --target "$PWN" --build-id 1 --produced doc.html --consumed bundle.tar
# The same build linking lib again: the page shows one row, not two.
record --project core --target lib --build-id 1 --produced lib.so

# Facts about an SVG, an HTML page or a DOM dumped by Chromium, as JSON for
# expect_json_each (checks.py page-summary).
summary() { checks_py page-summary "$1" "$2" >"$3" || true; } # a failure shows as JSON that does not parse

for tool in dot chromium; do
  if ! command -v $tool >/dev/null; then
    fail "$tool is missing: the test command installs graphviz and chromium (the checks that need it fail)"
  fi
done

# ---- text, DOT, Mermaid, JSON --------------------------------------------

run "$FP" --store S graph
expect_rc 0 "graph (text)"
expect_eq "$OUT" "apps -> dist  (app)
core -> apps  (lib.so)
core -> dist  (lib.so)
dist -> $DOCS  (bundle.tar)" "graph (text) lists the four edges with what they pass"

run "$FP" --store S graph --format json
expect_rc 0 "graph --format json"
expect_json_each "$T/out" <<EOF
the four projects are nodes :: d['nodes'] == $PROJECTS
each edge with its artifacts :: [(e['from'], e['to'], e['artifacts']) for e in d['edges']] == [('apps', 'dist', ['app']), ('core', 'apps', ['lib.so']), ('core', 'dist', ['lib.so']), ('dist', '$DOCS', ['bundle.tar'])]
EOF

run "$FP" --store S graph --format json --project apps
expect_json "$T/out" "[(e['from'], e['to']) for e in d['edges']] == [('apps', 'dist'), ('core', 'apps')]" \
  "--project apps keeps the edges into and out of apps"
run "$FP" --store S graph --format json --project "$DOCS"
expect_json "$T/out" "[(e['from'], e['to']) for e in d['edges']] == [('dist', '$DOCS')]" \
  "--project with a name that needs quoting"
run "$FP" --store S graph --format json --artifacts
expect_json "$T/out" "'$DOCS/$PWN_PY' in d['nodes'] and 'core/lib' in d['nodes']" "--artifacts: one node per target"

run "$FP" --store S graph --format mermaid
expect_rc 0 "graph --format mermaid"
expect_eq "$(head -1 "$T/out")" "graph LR" "mermaid: a left-to-right flowchart"
expect_eq "$(grep -cE '^  n[0-9]+\["' "$T/out")" 4 "mermaid: one declared node per project"
expect_eq "$(grep -cE '^  n[0-9]+ -->\|".*"\| n[0-9]+$' "$T/out")" 4 "mermaid: one labelled edge per edge"
expect_in out '["docs & #quot;more#quot;"]' "mermaid: a quote in a name is an entity code, not the end of the label"

# Through an installed copy whose bytes differ from the product's (its
# rpath rewritten) and which another project installed: the edge comes from
# the project that built the original, not from the installer.
printf 'lib, installed with another rpath\n' >installed-lib.so
run "$FP" --store S3 record --project core --target lib --build-id 1 --produced lib.so
run "$FP" --store S3 record --project apps --target app --build-id 7 --produced app --consumed installed-lib.so
lib_digest=$(sha256sum lib.so | cut -c1-64)
inst_digest=$(sha256sum installed-lib.so | cut -c1-64)
mkdir -p S3/builds/pkg
printf '{"v":1,"event":"installed","digest":"sha256:%s","size":32,"path":"%s","project":"pkg","version":"","target":"lib","build":"1","build_dir":"%s","host":"h","time":"2026-11-30T00:00:00.000Z","from":"sha256:%s"}\n' \
  "$inst_digest" "$T/installed-lib.so" "$T" "$lib_digest" >S3/builds/pkg/1.jsonl
run "$FP" --store S3 graph
expect_rc 0 "graph through an installed copy"
expect_eq "$OUT" "core -> apps  (installed-lib.so)" "an installed copy's edge comes from the build of its original"

# The DOT, laid out by Graphviz itself.
dot_accepted() { # FILE WHAT NODES: Graphviz lays FILE out, with NODES (a Python list) as its nodes
  local file=$1 what=$2 nodes=$3
  run dot -Tsvg "$file"
  expect_rc 0 "Graphviz's dot accepts $what"
  cp "$T/out" dot-out.svg
  summary dot-out.svg svg dot-out.json
  expect_json dot-out.json "d['xml_error'] is None and sorted(d['nodes']) == sorted($nodes)" \
    "dot's SVG of $what parses as XML with the expected nodes"
}
run "$FP" --store S graph --format dot
expect_rc 0 "graph --format dot"
cp "$T/out" projects.dot
dot_accepted projects.dot "the project graph" "$PROJECTS"
run "$FP" --store S graph --format dot --artifacts
cp "$T/out" targets.dot
dot_accepted targets.dot "the target graph (a target named with </script>)" \
  "['core/lib', 'apps/app', 'dist/bundle', '$DOCS/$PWN_PY']"

# ---- SVG -----------------------------------------------------------------

run "$FP" --store S graph --format svg
expect_rc 0 "graph --format svg"
cp "$T/out" graph.svg
summary graph.svg svg svg.json
expect_json_each svg.json <<EOF
--format svg is XML :: d['xml_error'] is None
an SVG document :: d['root'] == '{http://www.w3.org/2000/svg}svg'
with a node per project :: sorted(d['nodes']) == sorted($PROJECTS)
a title and what it shows :: d['heading'][0] == 'Fingerprint build graph' and d['heading'][1].startswith('4 projects, 4 edges')
each project its own colour :: len({f[0] for f in d['fills'].values()}) == 4
a legend naming each project's colour :: d['legend'] == {p: d['fills'][p][0] for p in $PROJECTS}
a sans-serif font throughout :: d['fonts'] == ['Helvetica,Arial,sans-serif']
not a strip (left to right, this chain is 2.9 times as wide as high) :: 0.5 <= d['width'] / d['height'] <= 2
EOF
run "$FP" --store S graph --format svg --project core --output core.svg
expect_rc 0 "graph --format svg --output FILE"
expect_eq "$OUT" "" "--output: nothing on standard output"
summary core.svg svg core-svg.json
expect_json core-svg.json "sorted(d['nodes']) == ['apps', 'core', 'dist']" "--output wrote core's edges as SVG"
run "$FP" --store S graph --format svg --output "$T/no/such/dir/g.svg"
expect_rc 1 "--output into a missing directory"
expect_in err "graph: --output: $T/no/such/dir/g.svg" "and says where"
run "$FP" --store S graph --format png
expect_rc 2 "an unknown format is a usage error"
expect_in err "svg, html" "and lists the formats"

# Without Graphviz: a clear error for SVG; the page draws the graph itself.
mkdir -p nodot
run env PATH="$T/nodot" "$FP" --store S graph --format svg
expect_rc 1 "svg without Graphviz's dot on PATH"
expect_in err "graph: --format svg needs Graphviz's dot (apt-get install graphviz)" "says what to install"
expect_eq "$OUT" "" "and writes no SVG"

# dot failing: its own message in ours.
mkdir -p faildot cat-dot early-dot
printf '#!/bin/sh\necho "Error: this dot refuses" >&2\nexit 3\n' >faildot/dot
printf '#!/bin/sh\nexec /bin/cat\n' >cat-dot/dot
printf '#!/bin/sh\nexec 0<&-\necho "dot: stopped reading" >&2\nexit 4\n' >early-dot/dot
chmod +x faildot/dot cat-dot/dot early-dot/dot
run env PATH="$T/faildot" "$FP" --store S graph --format svg
expect_rc 1 "svg when dot fails"
expect_in err "exit status 3): Error: this dot refuses" "the error carries dot's exit status and message"

# Edges that pass 700 long names: a DOT tooltip of 400 KB, beyond Graphviz's
# 16 KiB limit on one quoted string, and more than a socket or pipe buffers.
mkdir big
name=$(printf 'x%.0s' {1..190})
for i in {100..799}; do echo "$i" >"big/f${i}_$name"; done
echo p >big/prod
record_big() { "$FP" --store B record --build-dir "$T/big" --target t "$@" >big.log 2>&1 || fail "record $1 $2 in the big store: $(tail -3 big.log)"; }
record_big --project p0 --produced big/f*
for p in p1 p2 p3; do record_big --project $p --produced big/prod --consumed big/f*; done
run "$FP" --store B graph --format dot
cp "$T/out" big.dot
expect_eq "$(($(wc -c <big.dot) > 400000))" 1 "the big DOT is over 400 kB"
dot_accepted big.dot "700 long names on one edge" "['p0', 'p1', 'p2', 'p3']"
# A dot that echoes its input as it reads it: the runner must read dot's
# output while it is still writing its input, or both wait for ever.
run env PATH="$T/cat-dot" "$FP" --store B graph --format svg
expect_rc 0 "svg through a dot that writes while it reads"
expect_same_file "$T/out" big.dot "the DOT went to dot's input whole and its output came back whole"
# A dot that closes its input at once: EPIPE for the runner, not SIGPIPE.
run env PATH="$T/early-dot" "$FP" --store B graph --format svg
expect_rc 1 "svg through a dot that stops reading (not killed by SIGPIPE: 141)"
expect_in err "exit status 4): dot: stopped reading" "and its message"

# ---- The HTML page, as written ---------------------------------------------
# Its script draws the tables and panels from the JSON it carries: the
# page as written holds the data, the rendered DOM (below, in Chromium)
# the rows.

run "$FP" --store S graph --format html --output main.html
expect_rc 0 "graph --format html --output"
summary main.html html main.json
expect_json_each main.json <<EOF
no URL the browser could fetch :: d['network'] == []
a Content-Security-Policy forbids any request :: d['csp']
dot's SVG is inline :: 'svg' in d['tags'] and not d['layout']
the graph's nodes are the projects :: sorted(n['title'] for n in d['nodes']) == sorted($PROJECTS)
and its edges :: sorted(e['title'] for e in d['edges']) == ['apps->dist', 'core->apps', 'core->dist', 'dist->$DOCS']
the page's data: one artifact per artifact :: sorted(a['paths'][0].rsplit('/', 1)[1] for a in d['graph_data']['artifacts']) == ['app', 'bundle.tar', 'doc.html', 'lib.so']
one event per produced file and build, and per consumed file :: sorted(e['kind'] for e in d['graph_data']['events']) == ['consumed'] * 4 + ['produced'] * 4
one build per build :: sorted((b['project'], b['build']) for b in d['graph_data']['builds']) == sorted([('apps', '7'), ('core', '1'), ('dist', '3'), ('$DOCS', '1')])
each edge with the artifacts it passes :: [len(e['artifacts']) for e in d['graph_data']['edges']] == [1, 1, 1, 1]
a colour per project :: sorted(d['graph_data']['colours']) == sorted($PROJECTS) and len(set(d['graph_data']['colours'].values())) == 4
names are escaped, not markup :: 'i' not in d['tags'] and 'pwn' not in d['ids']
the graph data parses as JSON :: d['graph_data']['nodes'] == $PROJECTS
no toolchain drawing when every file read was built here :: d['graph_data']['toolchain'] is None
EOF
run "$FP" --store S graph --format html --project apps --output apps.html
summary apps.html html apps.json
expect_json_each apps.json <<EOF
--project apps: the graph has apps and its neighbours :: sorted(n['title'] for n in d['nodes']) == ['apps', 'core', 'dist']
--project apps: the artifacts apps produced or consumed (and, by digest only, what they went into) :: sorted(a['paths'][0].rsplit('/', 1)[1] for a in d['graph_data']['artifacts'] if a['paths']) == ['app', 'lib.so']
EOF
run env PATH="$T/nodot" "$FP" --store S graph --format html --artifacts --output nodot.html
expect_rc 0 "html without Graphviz's dot"
summary nodot.html html nodot.json
expect_json_each nodot.json <<EOF
without dot the page brings its own layout :: d['layout'] and d['nodes'] == []
and says so :: any('apt-get install graphviz' in n for n in d['notes'])
a </script> in the data does not end the script :: '$DOCS/$PWN_PY' in d['graph_data']['nodes']
the script's JSON is ASCII, U+2028 escaped :: d['graph_data_raw'].isascii() and 'u2028' in d['graph_data_raw']
still no URL :: d['network'] == []
EOF
run env PATH="$T/faildot" "$FP" --store S graph --format html --output faildot.html
expect_rc 0 "html when dot fails"
expect_in err "warning: graph:" "warns"
summary faildot.html html faildot.json
expect_json faildot.json "d['layout'] and any('this dot refuses' in n for n in d['notes'])" \
  "the page lays the graph out itself and says why"

# ---- Files no fingerprinted build produced ----------------------------------
# A compile's sources and system headers, a toolchain's runtime: in the
# input manifests, hidden from every format unless --all, and counted.
mkdir -p sys
printf '#include <stdio.h>\n' >sys/stdio.h
printf 'crt\n' >sys/crt1.o
printf 'int main() {}\n' >main.c
run "$FP" --store H record --build-dir "$T" --project core --target lib --build-id 1 --produced lib.so
run "$FP" --store H record --build-dir "$T" --project apps --target app --build-id 1 --produced app --consumed lib.so \
  sys/crt1.o --compiled main.c sys/stdio.h
expect_rc 0 "record app from lib.so, a source, a system header and a runtime object"
run "$FP" --store H graph
expect_eq "$OUT" "core -> apps  (lib.so)
3 toolchain/system files hidden (no fingerprinted build produced them; --all shows them)" \
  "graph (text): the edge, and how many files it left out"
run "$FP" --store H graph --all
expect_eq "$OUT" "(no producer) -> apps  (crt1.o, main.c, stdio.h)
core -> apps  (lib.so)" "graph --all (text): them too, from one node"
run "$FP" --store H graph --format json
expect_json "$T/out" "d['hidden_files'] == 3 and d['nodes'] == ['apps', 'core']" "graph --format json: hidden_files"
run "$FP" --store H graph --format json --all --artifacts
expect_json "$T/out" "d['hidden_files'] == 0 and d['nodes'] == ['(no producer)', 'apps/app', 'core/lib']" \
  "graph --all --artifacts: the node of unproduced files among the targets"
run "$FP" --store H graph --format svg
summary "$T/out" svg hidden-svg.json
expect_json hidden-svg.json "sorted(d['nodes']) == ['apps', 'core']" "graph --format svg: the two projects only"
expect_in out "3 toolchain/system files hidden" "and dot's SVG says how many it left out"
# Many of them, some read by two projects: each counted once, over the
# projects drawn.
mkdir -p many
for i in $(seq 0 169); do printf 'header %d\n' "$i" >"many/h$i.h"; done
run "$FP" --store H2 record --build-dir "$T" --project core --target lib --build-id 1 --produced lib.so
run "$FP" --store H2 record --build-dir "$T" --project apps --target app --build-id 1 --produced app --consumed lib.so \
  --compiled $(seq -f 'many/h%g.h' 0 149)
run "$FP" --store H2 record --build-dir "$T" --project tools --target tool --build-id 1 --produced bundle.tar \
  --consumed lib.so --compiled $(seq -f 'many/h%g.h' 100 169)
expect_rc 0 "record two projects that read 150 and 70 headers, 50 of them the same"
run "$FP" --store H2 graph
expect_eq "$OUT" "core -> apps  (lib.so)
core -> tools  (lib.so)
170 toolchain/system files hidden (no fingerprinted build produced them; --all shows them)" \
  "graph: 170 different files left out, each counted once"
run "$FP" --store H2 graph --format json --project tools
expect_json "$T/out" "d['hidden_files'] == 70" "graph --project tools: the 70 that tools read"
run "$FP" --store H2 graph --format json --project apps
expect_json "$T/out" "d['hidden_files'] == 150" "graph --project apps: the 150 that apps read"
run "$FP" --store H graph --format html --output hidden.html
summary hidden.html html hidden.json
expect_json_each hidden.json <<EOF
html: the page counts what it hides :: any(n.startswith('3 toolchain/system files hidden') for n in d['notes'])
html: the drawing shown has the two projects only :: sorted(n['title'] for n in d['nodes']) == ['apps', 'core']
html: a second drawing, behind the toggle, draws them from their origin :: sorted(d['graph_data']['toolchain']['nodes']) == ['(no producer)', 'apps', 'core']
html: the hidden files are in the data, marked :: sorted(a['paths'][0].rsplit('/', 1)[1] for a in d['graph_data']['artifacts'] if a['toolchain']) == ['crt1.o', 'main.c', 'stdio.h']
html: toggle off :: not d['graph_data']['show_toolchain']
html: still no URL :: d['network'] == []
EOF
run "$FP" --store H graph --format html --all --output hidden-all.html
summary hidden-all.html html hidden-all.json
expect_json_each hidden-all.json <<EOF
html --all: the toggle on, the toolchain's drawing shown :: d['graph_data']['show_toolchain'] and sorted(n['title'] for n in d['nodes']) == ['(no producer)', 'apps', 'core']
html --all: nothing said hidden :: not any('hidden' in n for n in d['notes'])
EOF

# ---- The page in Chromium ------------------------------------------------
# --dump-dom prints the DOM once the page has loaded, its scripts run; the
# page marks <body data-ready> when its script is done and copies any
# uncaught error into <html data-error>. --enable-logging=stderr puts every
# console message (script errors, Content-Security-Policy violations)
# in the log as "CONSOLE".

browse() { # URL DOM-JSON WHAT
  RUN_TIMEOUT=60 run env HOME="$T/home" chromium --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --user-data-dir="$T/chromium" --enable-logging=stderr --v=0 --dump-dom "$1"
  expect_rc 0 "chromium loads $3"
  cp "$T/out" dom.html
  summary dom.html html "$2"
  local console
  console=$(grep -F ':CONSOLE' "$T/err" || true)
  expect_eq "$console" "" "no console messages from $3 (errors, blocked requests)"
}
if command -v chromium >/dev/null; then
  started=$SECONDS
  browse "file://$T/main.html" dom-main.json "the page"
  expect_json_each dom-main.json <<EOF
its script ran to the end :: d['ready'] == '1'
without an error :: d['error'] is None
the projects are in the rendered graph :: sorted(n['title'] for n in d['nodes']) == sorted($PROJECTS)
no node dimmed without a search :: not any(n['dim'] for n in d['nodes'])
a row per build, artifact, produced file and build, consumed file :: d['tables'] == {'builds': 4, 'artifacts': 4, 'producers': 4, 'consumers': 4}
the count says so :: d['count'] == '16 rows'
artifacts: name, path, digest and size :: any(r['text'].split()[:2] == ['lib.so', '$T/lib.so'] and 'sha256:$(sha256sum lib.so | cut -c1-12)' in r['text'] and '4 B' in r['text'] for r in d['rows'])
producers: project, target and build :: any(r['table'] == 'producers' and r['text'].split()[:5] == ['app', 'produced', 'apps', 'app', '7'] for r in d['rows'])
consumers: who and to produce what :: any(r['table'] == 'consumers' and r['text'].split()[:5] == ['app', 'dist', 'bundle', '3', 'bundle.tar'] for r in d['rows'])
times for people :: all(r['text'].split()[-2:] in (['min', 'ago'], ['s', 'ago'], ['just', 'now']) for r in d['rows'] if r['table'] == 'consumers')
no panel open :: d['panel']['hidden']
no markup from the data :: 'i' not in d['tags'] and 'pwn' not in d['ids']
names with markup in them read as text :: any('$PWN_PY' in r['text'] and '$DOCS' in r['text'] for r in d['rows'] if r['table'] == 'producers')
EOF

  browse "file://$T/main.html#q=bundle.tar%20DIST" dom-search.json "the page searching for 'bundle.tar DIST'"
  expect_json_each dom-search.json <<EOF
its script ran to the end :: d['ready'] == '1' and d['error'] is None
rows with both words stay, the others go :: sorted((r['table'], r['text'].split()[0]) for r in d['rows']) == [('artifacts', 'bundle.tar'), ('consumers', 'app'), ('consumers', 'lib.so'), ('producers', 'bundle.tar')]
the count says so :: d['count'] == '4 of 16 rows'
graph nodes that do not match are dimmed :: len(d['nodes']) == 4 and all(n['dim'] for n in d['nodes'])
the edge that passes bundle.tar into dist's reader is marked, the others dimmed :: [e['title'] for e in d['edges'] if e['match']] == ['dist->$DOCS'] and sum(e['dim'] for e in d['edges']) == 3
EOF
  browse "file://$T/hidden.html#toolchain=1" dom-toolchain.json "the page with the toolchain's files shown"
  expect_json_each dom-toolchain.json <<EOF
its script ran to the end :: d['ready'] == '1' and d['error'] is None
#toolchain=1 shows the toolchain's drawing :: sorted(n['title'] for n in d['nodes']) == ['(no producer)', 'apps', 'core']
and their rows :: sorted(r['text'].split()[0] for r in d['rows'] if r['table'] == 'artifacts') == ['app', 'crt1.o', 'lib.so', 'main.c', 'stdio.h']
with each consumer row's role :: sorted(r['text'].split()[5] for r in d['rows'] if r['table'] == 'consumers') == ['compile', 'compile', 'link', 'link']
EOF
  browse "file://$T/hidden.html#artifact=sha256:$(sha256sum lib.so | cut -c1-64)" dom-panel.json "the page with an artifact's panel open"
  expect_json_each dom-panel.json <<EOF
without the toggle only the built files' rows :: sorted(r['text'].split()[0] for r in d['rows'] if r['table'] == 'artifacts') == ['app', 'lib.so']
#artifact=DIGEST opens its panel :: not d['panel']['hidden'] and d['panel']['kind'] == 'artifact'
with its digest, producer and consumer :: all(w in d['panel']['text'] for w in ('sha256:$(sha256sum lib.so | cut -c1-64)', 'core 1', 'apps 1'))
EOF

  browse "file://$T/nodot.html#q=$(checks_py url-quote "$DOCS")" \
    dom-nodot.json "the page laid out without dot, searching for a quoted name"
  expect_json_each dom-nodot.json <<EOF
its script ran to the end :: d['ready'] == '1'
without an error :: d['error'] is None
it drew a node per target :: sorted(n['title'] for n in d['nodes']) == sorted(['core/lib', 'apps/app', 'dist/bundle', '$DOCS/$PWN_PY'])
the search from the URL dims the others :: [n['title'] for n in d['nodes'] if not n['dim']] == ['$DOCS/$PWN_PY']
no markup from the data :: 'i' not in d['tags'] and 'pwn' not in d['ids']
EOF
  echo "chromium: five pages in $((SECONDS - started)) s"
fi

finish
