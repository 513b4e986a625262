#!/usr/bin/env bash
# gc --dry-run on a generated store of 100,000 artifacts: 10 projects x 100
# builds, each build producing 100 artifacts and consuming 5 of another
# project's. A benchmark, not a test: prints the times.
#   tests/bench/gc_bench.sh build/test/runner/fingerprint [artifacts]
set -euo pipefail
FP=$(realpath "${1:?usage: $0 /path/to/fingerprint [artifacts]}")
ARTIFACTS=${2:-100000}
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-gc-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

echo "generating a store of $ARTIFACTS artifacts in $work/store"
"$PY" - "$work/store" "$ARTIFACTS" <<'EOF'
import hashlib, json, os, sys
root, artifacts = sys.argv[1], int(sys.argv[2])
projects, per_build = 10, 100
builds_per_project = artifacts // (projects * per_build)
os.makedirs(root, exist_ok=True)
with open(os.path.join(root, "fingerprint-store.json"), "w") as f:
    json.dump({"format": 1, "created": "2026-11-30T00:00:00.000Z"}, f)
def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()
def line(kind, hexd, path, project, build, when, product=None):
    e = {"v": 1, "event": kind, "digest": "sha256:" + hexd, "size": 100, "path": path, "project": project,
         "version": "", "target": "t%d" % (int(hexd[:2], 16) % 10), "build": str(build), "build_dir": "/b/" + project,
         "host": "bench", "time": "2026-11-%02dT%02d:00:00.000Z" % (1 + build % 28, build % 24)}
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
            l = line("produced", d, "/b/%s/out%d" % (project, i), project, b, None)
            index.append(l)
            logs.setdefault(d, []).append(l)
        other = "project%d" % ((p + 1) % projects)
        for i in range(5):
            d = digest("%s/%d/%d" % (other, b, i))
            l = line("consumed", d, "/b/%s/out%d" % (other, i), project, b, None, products[0])
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

measure() {
  local label=$1
  shift
  local best=
  for _ in 1 2 3; do
    local start end
    start=$(date +%s%N)
    "$FP" --store "$work/store" "$@" >"$work/out"
    end=$(date +%s%N)
    local ms=$(((end - start) / 1000000))
    if [[ -z $best ]] || ((ms < best)); then best=$ms; fi
  done
  echo "$label: best of 3 $best ms: $(head -c 300 "$work/out")"
}
measure "gc --dry-run --older-than 3650d (nothing goes: the build index only)" gc --dry-run --older-than 3650d
measure "gc --dry-run --keep-builds 50 (half the builds go)" gc --dry-run --keep-builds 50
measure "fsck (every file)" fsck
