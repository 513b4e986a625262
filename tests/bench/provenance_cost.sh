#!/usr/bin/env bash
# What recording a build's provenance costs (README, "Build provenance"):
# the same project, a git work tree, configured twice by injection, with
# FINGERPRINT_PROVENANCE ON and OFF. A benchmark, not a test: it asserts
# nothing about time.
#
#   tests/bench/provenance_cost.sh PREFIX ABTIME [RUNS=40] [BUILDS=5]
#
# PREFIX holds the installed runner and module; ABTIME is the build's
# fingerprint_abtime. Three figures, each side by side in one run:
# - the first hook of a build (a `record` into the tree: git run, document
#   written, store written) against the same hook with provenance off;
# - any later hook of the build (the note that the store has it read, no
#   more) against the same hook with provenance off;
# - a whole clean build of examples/greet, ON against OFF, alternating.
# Prints key=value lines: medians in ms and the ratios.
set -euo pipefail
prefix=$(cd "${1:?usage: $0 PREFIX ABTIME [RUNS] [BUILDS]}" && pwd)
ab=${2:?usage: $0 PREFIX ABTIME [RUNS] [BUILDS]}
runs=${3:-40}
builds=${4:-5}
src_dir=$(cd "$(dirname "$0")/../.." && pwd)
fp=$prefix/bin/fingerprint
module=$prefix/lib/cmake/Fingerprint/Fingerprint.cmake
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-provenance.XXXXXX")
trap 'rm -rf "$work"' EXIT
say() { echo "==> $*" >&2; }
unset FINGERPRINT_BUILD_ID GITHUB_ACTIONS CI_JOB_URL BUILD_URL BUILDKITE_BUILD_URL
export FINGERPRINT_DIR=$work/store FINGERPRINT_CACHE_DIR=$work/cache

say "a git work tree of examples/greet in $work/src"
cp -r "$src_dir/examples/greet" "$work/src"
git -C "$work/src" init -q
git -C "$work/src" add -A
git -C "$work/src" -c user.email=bench@example.com -c user.name=bench commit -qm bench
git -C "$work/src" remote add origin https://example.com/greet.git
for side in on off; do
  flag=ON
  [[ $side == off ]] && flag=OFF
  cmake -S "$work/src" -B "$work/$side" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$module" -DFINGERPRINT_PROVENANCE=$flag >/dev/null
done
printf 'artifact\n' >"$work/artifact"

# hook SIDE FORGET: one hook of a build of tree SIDE; with FORGET, as the
# build's first (the note and the kept document removed first).
hook() {
  local dir=$work/$1/CMakeFiles/fingerprint forget=$2
  local rm="true"
  [[ $forget == 1 ]] && rm="rm -f $dir/provenance.sent $dir/provenance.json"
  echo "$rm; exec $fp record --project greet --target t --build-id 1-0badcafe --build-dir $work/$1 --produced $work/artifact"
}
say "the first hook of a build, $runs runs each, alternating"
first=$("$ab" "$runs" 3 sh -c "$(hook on 1)" --vs-- sh -c "$(hook off 1)")
say "a later hook of the build"
later=$("$ab" "$runs" 3 sh -c "$(hook on 0)" --vs-- sh -c "$(hook off 0)")
echo "first_hook: $first"
echo "later_hook: $later"

say "clean builds of greet, ON and OFF alternating, $builds rounds"
on_ms=()
off_ms=()
for ((round = 0; round < builds; ++round)); do
  for side in on off; do
    ninja -C "$work/$side" -t clean >/dev/null
    start=$(date +%s%N)
    ninja -C "$work/$side" >/dev/null
    end=$(date +%s%N)
    ms=$(((end - start) / 1000000))
    if [[ $side == on ]]; then on_ms+=("$ms"); else off_ms+=("$ms"); fi
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
on=$(median "${on_ms[@]}")
off=$(median "${off_ms[@]}")
echo "clean_build: on_ms=$on off_ms=$off ratio=$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
documents=$(find "$work/store/builds" -name '*.provenance.json' | wc -l)
echo "provenance_documents=$documents"
