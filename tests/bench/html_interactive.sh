#!/usr/bin/env bash
# When the page of `graph --format html` is first interactive, on a
# generated store of 10,000 artifacts: 10 projects x 10 builds, each build
# producing 100 artifacts and consuming 5 of another project's (the store
# gc_bench.sh generates). A benchmark, not a test: prints the figures.
#   tests/bench/html_interactive.sh build/test/runner/fingerprint [artifacts]
# Needs Graphviz, /usr/bin/chromium and playwright-core
# ($FINGERPRINT_NODE_MODULES, else build/validate/node_modules: tools/test.sh).
set -euo pipefail
FP=$(realpath "${1:?usage: $0 /path/to/fingerprint [artifacts]}")
ARTIFACTS=${2:-10000}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export FINGERPRINT_NODE_MODULES=${FINGERPRINT_NODE_MODULES:-$top/build/validate/node_modules}
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-html-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "generating a store of $ARTIFACTS artifacts in $work/store"
python3 - "$work/store" "$ARTIFACTS" <<'EOF'
import hashlib, json, os, sys
root, artifacts = sys.argv[1], int(sys.argv[2])
projects, per_build = 10, 100
builds_per_project = max(1, artifacts // (projects * per_build))
os.makedirs(root, exist_ok=True)
with open(os.path.join(root, "fingerprint-store.json"), "w") as f:
    json.dump({"format": 1, "created": "2026-11-30T00:00:00.000Z"}, f)
def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()
def line(kind, hexd, path, project, build, product=None):
    e = {"v": 1, "event": kind, "digest": "sha256:" + hexd, "size": 100 + int(hexd[:3], 16), "path": path,
         "project": project, "version": "1.%d" % build, "target": "t%d" % (int(hexd[:2], 16) % 10),
         "build": str(build), "build_dir": "/b/" + project, "host": "bench",
         "time": "2026-11-%02dT%02d:00:00.000Z" % (1 + build % 28, build % 24)}
    if product:
        e["product"] = "sha256:" + product
    return json.dumps(e, separators=(",", ":")) + "\n"
logs = {}
for p in range(projects):
    project = "project%d" % p
    os.makedirs(os.path.join(root, "builds", project), exist_ok=True)
    for b in range(builds_per_project):
        index = []
        products = [digest("%s/%d/%d" % (project, b, i)) for i in range(per_build)]
        for i, d in enumerate(products):
            l = line("produced", d, "/b/%s/out%d" % (project, i), project, b)
            index.append(l)
            logs.setdefault(d, []).append(l)
        other = "project%d" % ((p + 1) % projects)
        for i in range(5):
            d = digest("%s/%d/%d" % (other, b, i))
            l = line("consumed", d, "/b/%s/out%d" % (other, i), project, b, products[0])
            index.append(l)
            logs.setdefault(d, []).append(l)
        with open(os.path.join(root, "builds", project, "%d.jsonl" % b), "w") as f:
            f.writelines(index)
for d, lines in logs.items():
    directory = os.path.join(root, "objects", "sha256", d[:2])
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, d + ".jsonl"), "w") as f:
        f.writelines(lines)
print("%d artifact logs, %d build indexes" % (len(logs), projects * builds_per_project))
EOF

start=$(date +%s%N)
"$FP" --store "$work/store" graph --format html --output "$work/page.html"
end=$(date +%s%N)
echo "graph --format html: $(((end - start) / 1000000)) ms, $(($(wc -c <"$work/page.html") / 1024)) KiB"

# Time to interactive: from navigation start to the mark the page's script
# sets when its tables, graph and handlers are ready (performance.mark
# "interactive", with <body data-ready>); then how long a search takes to
# redraw. Best of three loads, each in a fresh page.
node - "$work/page.html" <<'EOF'
const {chromium} = require(require("path").join(process.env.FINGERPRINT_NODE_MODULES, "playwright-core"));
(async () => {
  const browser = await chromium.launch({executablePath: "/usr/bin/chromium", args: ["--no-sandbox"]});
  const figures = [];
  for (let run = 0; run < 3; run++) {
    const page = await browser.newPage({viewport: {width: 1280, height: 800}});
    await page.goto("file://" + process.argv[2]);
    await page.waitForSelector("body[data-ready]", {timeout: 120000});
    const interactive = await page.evaluate(() => performance.getEntriesByName("interactive")[0].startTime);
    const search = await page.evaluate(() => new Promise(resolve => {
      const q = document.getElementById("q"), t = performance.now();
      q.value = "project3 out42";
      q.dispatchEvent(new Event("input"));
      // The search waits 120 ms for more typing on a large store: counted.
      const poll = () => location.hash.includes("q=") ? resolve(performance.now() - t) : setTimeout(poll, 5);
      poll();
    }));
    const rows = await page.evaluate(() => document.getElementById("count").textContent);
    figures.push({interactive, search, rows});
    await page.close();
  }
  figures.sort((a, b) => a.interactive - b.interactive);
  for (const f of figures) {
    console.log(`interactive after ${f.interactive.toFixed(0)} ms; a search redrawn in ${f.search.toFixed(0)} ms (${f.rows})`);
  }
  console.log(`time to interactive, best of 3: ${figures[0].interactive.toFixed(0)} ms`);
  await browser.close();
})();
EOF
grep -m1 'model name' /proc/cpuinfo
