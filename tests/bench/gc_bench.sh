#!/usr/bin/env bash
# gc --dry-run on a generated store of 100,000 artifacts (store_gen.py: 1,000
# builds of 10 projects, 10 products a build, a build tree per 4 builds of a
# project). A benchmark, not a test: prints the times.
#   tests/bench/gc_bench.sh build/test/runner/fingerprint [artifacts]
set -euo pipefail
FP=$(realpath "${1:?usage: $0 /path/to/fingerprint [artifacts]}")
ARTIFACTS=${2:-100000}
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-gc-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

echo "generating a store of $ARTIFACTS artifacts in $work/store"
"$PY" "$(dirname "${BASH_SOURCE[0]}")/store_gen.py" "$work/store" --artifacts "$ARTIFACTS"

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
measure "gc --dry-run --keep-builds 2 (half the builds go)" gc --dry-run --keep-builds 2
measure "fsck (every file)" fsck
