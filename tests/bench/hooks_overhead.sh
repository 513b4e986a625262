#!/usr/bin/env bash
# What the hooks cost a clean build: wall and CPU time of building a project
# from clean, plain and fingerprinted by injection
# (-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=<prefix>/lib/cmake/Fingerprint/Fingerprint.cmake:
# the link hook, which also takes what the compiles read from Ninja's deps
# log), alternating, medians. A third tree is hooked the same way with
# -DFINGERPRINT_COMPILE_LAUNCHER=ON, every compile also run through
# `fingerprint compile`: what that opt-in launcher costs per compile. A
# benchmark, not a test: it asserts nothing about time.
#
#   tests/bench/hooks_overhead.sh PREFIX generated [TARGETS=200] [RUNS=5]
#   tests/bench/hooks_overhead.sh PREFIX gtest [RUNS=5]
#
# PREFIX holds the installed runner (bin/fingerprint) and module.
# `generated`: a project of TARGETS targets in subdirectories (a third
# static libraries, a third shared libraries linking one, a third programs
# linking one of each), one source each, including $FINGERPRINT_BENCH_HEADERS
# (default 30; 0 makes the trivial targets of issue 18) of a pool of 300
# project headers (each a small class with inline members and its own
# includes) and <string>, <vector>. `gtest`: GoogleTest's
# sources as Debian ships them in /usr/src/googletest, configured as
# tests/cmake/injection.sh does (BUILD_GMOCK=OFF, shared, Release).
#
# Each fingerprinted build starts from an empty store and digest cache (the
# most it can write: every input manifest is new); the last build's store
# and cache are moved aside outside the timed part, and removed at the end.
# Not removed before each build: on ext4 without a journal every new file
# steps past the inodes freed in the last minute (find_inode_bit,
# recently_deleted), so a store of some 1,500 files removed just before a
# build made each of the build's new files, the hooks' and the compiler's,
# pay for it, a cost no user's build has (docs/ARCHITECTURE.md, "A clean
# build's link counted whole"). FINGERPRINT_BENCH_REMOVE_STORE=1 removes it
# as before, for comparison. Builds run with ninja -j$(nproc).
#
# Prints on stdout one line of key=value pairs: the medians (wall ms, CPU
# user+sys ms) of each tree, the median of the per-round wall ratios
# hooked/plain, the number of compiles and links, the CPU the hooks add per
# link ((hooked - plain) / links), the CPU the opt-in compile launcher adds
# per compile ((launcher - hooked) / compiles), and the hooks' own CPU as the
# runners report it ($FINGERPRINT_CPU_LOG: each runner's CPU from its fork
# to its exit, without the tools it runs, and fingerprint-launch's and the
# recorder's the same way), per compile and per link: the
# steady figure, which the compilers' own variation does not blur. For
# `generated`, then a second line
# with the store's size after a clean build and after an unchanged rebuild
# (every source touched, bytes kept), see store_sizes below.
set -euo pipefail
prefix=$(cd "${1:?usage: $0 PREFIX generated|gtest [TARGETS] [RUNS]}" && pwd)
project=${2:?usage: $0 PREFIX generated|gtest [TARGETS] [RUNS]}
if [[ $project == generated ]]; then
  targets=${3:-200}
  runs=${4:-5}
else
  targets=0
  runs=${3:-5}
fi
module=$prefix/lib/cmake/Fingerprint/Fingerprint.cmake
fp=$prefix/bin/fingerprint
[[ -f $module && -x $fp ]] || {
  echo "error: $prefix has no bin/fingerprint and lib/cmake/Fingerprint/Fingerprint.cmake" >&2
  exit 1
}
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
work=$(mktemp -d "${TMPDIR:-/tmp}/fingerprint-hooks.XXXXXX")
# FINGERPRINT_BENCH_KEEP=1 keeps the trees, store and cache (for perf or
# callgrind on a hook afterwards) and says where.
if [[ ${FINGERPRINT_BENCH_KEEP:-0} == 1 ]]; then
  trap 'echo "kept: $work" >&2' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
jobs=$(nproc)
headers=${FINGERPRINT_BENCH_HEADERS:-30}
say() { echo "==> $*" >&2; }

# generate DIR: the generated project.
generate() {
  local src=$1 i k h third=$((targets / 3)) pool=300
  mkdir -p "$src/include/gen"
  RANDOM=20261201 # the same project every run
  for ((h = 0; h < pool; h++)); do
    cat >"$src/include/gen/h$h.hpp" <<HPP
#pragma once
#include <cstdint>
#include <string>
#include <vector>
namespace gen$h {
// A small value type with inline members, as a project header has.
class Item$h {
public:
  explicit Item$h(std::string name) : m_name(std::move(name)) {}
  const std::string& name() const { return m_name; }
  std::uint64_t weight() const { std::uint64_t w = $h; for (char c : m_name) w = w * 31 + static_cast<unsigned char>(c); return w; }
  void add(int value) { m_values.push_back(value * $((h % 7 + 1))); }
  int total() const { int t = 0; for (int v : m_values) t += v; return t; }
private:
  std::string m_name;
  std::vector<int> m_values;
};
inline int helper$h(int x) { return x * $((h % 13 + 1)) + $h; }
} // namespace gen$h
HPP
  done
  {
    echo "cmake_minimum_required(VERSION 3.25)"
    echo "project(hooks_overhead LANGUAGES CXX)"
    echo "set(CMAKE_CXX_STANDARD 17)"
    echo "include_directories(\${PROJECT_SOURCE_DIR}/include)"
  } >"$src/CMakeLists.txt"
  for ((i = 0; i < targets; i++)); do
    local dir=$src/t$i
    mkdir -p "$dir"
    echo "add_subdirectory(t$i)" >>"$src/CMakeLists.txt"
    local picked=() seen=" "
    while ((${#picked[@]} < headers)); do # distinct headers
      h=$((RANDOM % pool))
      [[ $seen == *" $h "* ]] && continue
      seen+="$h "
      picked+=("$h")
    done
    {
      echo "#include <string>"
      echo "#include <vector>"
      for h in "${picked[@]}"; do echo "#include <gen/h$h.hpp>"; done
      echo "std::string t$i(int n) {"
      echo "  std::vector<std::string> parts;"
      for h in "${picked[@]:0:6}"; do
        [[ -n $h ]] || continue
        echo "  { gen$h::Item$h item(\"t$i\"); item.add(n); parts.push_back(item.name() + std::to_string(item.total() + gen$h::helper$h(n))); }"
      done
      echo "  std::string out;"
      echo "  for (const auto& part : parts) out += part;"
      echo "  return out;"
      echo "}"
      if ((i >= 2 * third)); then
        echo "int main(int argc, char**) { return t$i(argc).empty() ? 1 : 0; }"
      fi
    } >"$dir/t$i.cpp"
    if ((i < third)); then
      printf 'add_library(t%d STATIC t%d.cpp)\nset_property(TARGET t%d PROPERTY POSITION_INDEPENDENT_CODE ON)\n' \
        "$i" "$i" "$i" >"$dir/CMakeLists.txt"
    elif ((i < 2 * third)); then
      printf 'add_library(t%d SHARED t%d.cpp)\ntarget_link_libraries(t%d PRIVATE t%d)\n' \
        "$i" "$i" "$i" $((i - third)) >"$dir/CMakeLists.txt"
    else
      printf 'add_executable(t%d t%d.cpp)\ntarget_link_libraries(t%d PRIVATE t%d t%d)\n' \
        "$i" "$i" "$i" $(((i - 2 * third) % third + third)) $(((i - 2 * third) % third)) >"$dir/CMakeLists.txt"
    fi
  done
}

src=$work/src
options=(-DCMAKE_BUILD_TYPE=Release)
if [[ $project == generated ]]; then
  say "generating a project of $targets targets in $src"
  generate "$src"
else
  src=/usr/src/googletest
  [[ -f $src/CMakeLists.txt ]] || {
    echo "error: $src is missing: apt-get install googletest" >&2
    exit 1
  }
  options+=(-DBUILD_GMOCK=OFF -DBUILD_SHARED_LIBS=ON)
fi

store=$work/store
export FINGERPRINT_CACHE_DIR=$work/cache
export FINGERPRINT_RECORDER_IDLE=1 # each build's recorder ends, and logs its CPU, a second after it
unset FINGERPRINT_BUILD_ID
cmake -S "$src" -B "$work/plain" -G Ninja "${options[@]}" >/dev/null
cmake -S "$src" -B "$work/hooked" -G Ninja "${options[@]}" -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$module" \
  -DFINGERPRINT_DIR="$store" >"$work/hooked.configure"
grep -q "Fingerprinting .* targets" "$work/hooked.configure" || {
  cat "$work/hooked.configure" >&2
  echo "error: the injected module hooked nothing" >&2
  exit 1
}
# GoogleTest has two compiles: no per-compile share to measure there.
trees=(plain hooked launcher)
[[ $project == generated ]] || trees=(plain hooked)
cmake -S "$src" -B "$work/launcher" -G Ninja "${options[@]}" -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$module" \
  -DFINGERPRINT_DIR="$store" -DFINGERPRINT_COMPILE_LAUNCHER=ON >/dev/null
# FINGERPRINT_BENCH_RUNNER_TREE=1: a fourth tree hooked with
# -DFINGERPRINT_RECORDER=OFF (every link starts the runner, as before the
# recorder), in the same rotation: the recorder side by side with the runner.
if [[ ${FINGERPRINT_BENCH_RUNNER_TREE:-0} == 1 ]]; then
  cmake -S "$src" -B "$work/runner" -G Ninja "${options[@]}" -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$module" \
    -DFINGERPRINT_DIR="$store" -DFINGERPRINT_RECORDER=OFF >/dev/null
  trees+=(runner)
fi

# Each edge's command: compiles (-c) and the rest (links, archives).
ninja -C "$work/plain" -t commands >"$work/commands"
compiles=$(grep -c -- ' -c ' "$work/commands" || true)
links=$(($(wc -l <"$work/commands") - compiles))

# set_store_aside: the last hooked build's store and digest cache moved
# aside (removed at the end), so that the next starts from empty ones.
set_store_aside() {
  set_aside=$((${set_aside:-0} + 1))
  mkdir -p "$work/set-aside"
  [[ ! -e $store ]] || mv "$store" "$work/set-aside/store.$set_aside"
  [[ ! -e $FINGERPRINT_CACHE_DIR ]] || mv "$FINGERPRINT_CACHE_DIR" "$work/set-aside/cache.$set_aside"
}

# timed_ninja TREE LOG WHAT: ninja in TREE, its output in LOG; $work/time
# gets "wall user system" in seconds, $work/cpu.log what the hooks logged.
# The recorder (FINGERPRINT_RECORDER) is no descendant of ninja, so
# /usr/bin/time misses the CPU of the links it served: it logs it, each
# served link ("recorder-launch") and, as it ends, its own ("recorder"),
# one idle second after the build, which is waited for.
timed_ninja() {
  local tree=$1 log=$2 what=$3
  sync
  rm -f "$work/cpu.log"
  FINGERPRINT_CPU_LOG=$work/cpu.log /usr/bin/time -f "%e %U %S" -o "$work/time" ninja -C "$work/$tree" -j"$jobs" \
    >"$log" 2>&1 || {
    tail -20 "$log" >&2
    echo "error: the $tree $what failed" >&2
    exit 1
  }
  wait_for_recorders
}

# logged_us [LABEL...]: microseconds of CPU $work/cpu.log gives LABELs (every
# line without one); 0 without a log.
logged_us() {
  [[ -f $work/cpu.log ]] || { echo 0; return; }
  awk -v labels=" $* " 'NF > 0 && (labels == "  " || index(labels, " " $1 " ")) { us += $2 + $3 } END { printf "%d", us }' \
    "$work/cpu.log"
}

# build TREE: a clean build of TREE; appends "wall_ms cpu_ms" to TREE.times,
# the recorder's CPU added to the build's.
build() {
  local tree=$1
  ninja -C "$work/$tree" -t clean >/dev/null
  if [[ $tree != plain ]]; then
    if [[ ${FINGERPRINT_BENCH_REMOVE_STORE:-0} == 1 ]]; then
      rm -rf "$store" "$FINGERPRINT_CACHE_DIR"
    else
      set_store_aside
    fi
  fi
  timed_ninja "$tree" "$work/$tree.log" build
  awk -v served="$(logged_us recorder-launch recorder)" \
    '{ printf "%.0f %.0f\n", $1 * 1000, ($2 + $3) * 1000 + served / 1000 }' "$work/time" >>"$work/$tree.times"
  # The runners' own CPU by subcommand, in microseconds: "compile US launch US"
  # (a link hook's, where it ran: fingerprint-launch, and the runner it
  # became or the recorder that served it).
  if [[ -f $work/cpu.log ]]; then
    echo "$(logged_us compile) $(logged_us launcher launch recorder-launch recorder)" >>"$work/$tree.self"
  fi
}

# Until no recorder of this runner runs (another runner's, a test suite's,
# is not waited for).
wait_for_recorders() {
  local i pid mine
  for ((i = 0; i < 200; i++)); do
    mine=0
    for pid in $(pgrep -f -- '--serve-recorder' || true); do
      [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$(realpath "$fp")" ]] && mine=1
    done
    ((mine)) || return 0
    sleep 0.05
  done
  echo "warning: a recorder still listens 10 s after the build" >&2
}

# FINGERPRINT_BENCH_ONE_LINK=TARGET: instead of clean builds, the hook of
# one link of TARGET counted on its own, again and again in its built tree
# (an unchanged relink, store and caches warm), steadier than a build's CPU
# (which varies by more than a millisecond a link) and than the rule's with
# its linker (g++, collect2 and ld vary by several): perf stat
# --no-inherit of the hook's first process, so without the linker it runs,
# alternated round by round:
# - served: fingerprint-launch's own CPU, plus what the recorder logged for
#   the calls and, as it ended, for itself (its start included, 1/RUNS of it);
# - runner: the same rule with FINGERPRINT_RECORDER=off, the launcher
#   become the runner, as a hook was before the recorder (one process: the
#   count is the whole hook's).
# Prints medians of the rounds in ms: "one_link=TARGET launcher_ms=
# served_ms= hooked_ms= runner_ms=".
# FINGERPRINT_BENCH_ONE_LINK_NINJA=1: the served calls of a round are the
# $repeat edges of one `ninja -j1` run (build ids counted, as in a build,
# not $FINGERPRINT_BUILD_ID), so that what the recorder keeps for a build
# tool run (digest::BuildMemo) is used as a build's links use it.
if [[ -n ${FINGERPRINT_BENCH_ONE_LINK:-} ]]; then
  target=$FINGERPRINT_BENCH_ONE_LINK
  rounds=${FINGERPRINT_BENCH_ONE_LINK_ROUNDS:-7}
  repeat=${FINGERPRINT_BENCH_ONE_LINK_RUNS:-30}
  command -v perf >/dev/null || { echo "error: needs perf (apt-get install linux-perf)" >&2; exit 1; }
  ninja -C "$work/hooked" "$target" >/dev/null
  # One build, as the links of one ninja run are: its provenance (git) is
  # taken once, not by each run here.
  export FINGERPRINT_BUILD_ID=one-link-bench
  # The hooked rule's command (": && <launcher> ... -- <link> && :") as argv.
  ninja -C "$work/hooked" -t commands "$target" | tail -1 | "$PY" -c '
import shlex, sys
words = shlex.split(sys.stdin.read())
while words and words[0] in (":", "&&"):
    words.pop(0)
while words and words[-1] in (":", "&&"):
    words.pop()
sys.stdout.write("\0".join(words))' >"$work/hook.argv"
  # own_ms: task-clock ms of the hook's first process alone, the mean of $repeat.
  own_ms() {
    (cd "$work/hooked" && xargs -0 -a "$work/hook.argv" perf stat --no-inherit -r "$repeat" -x, -e task-clock -- \
      2>&1 >/dev/null) | tail -1 | cut -d, -f1
  }
  : >"$work/one.rows"
  for ((r = 0; r < rounds; r++)); do
    runner_ms=$(FINGERPRINT_RECORDER=off own_ms)
    # A recorder started, and warm; it logs its own share as it ends, one
    # idle second after the timed runs.
    (cd "$work/hooked" && FINGERPRINT_CPU_LOG=$work/cpu.log xargs -0 -a "$work/hook.argv" env) >/dev/null 2>&1
    rm -f "$work/cpu.log"
    launcher_ms=$(FINGERPRINT_CPU_LOG=$work/cpu.log own_ms)
    if [[ ${FINGERPRINT_BENCH_ONE_LINK_NINJA:-0} == 1 ]]; then
      wait_for_recorders
      {
        echo "rule hook"
        echo "  command = cd $work/hooked && xargs -0 -a $work/hook.argv env >/dev/null 2>&1"
        for ((k = 0; k < repeat; k++)); do echo "build run$k: hook"; done
      } >"$work/one.ninja"
      (unset FINGERPRINT_BUILD_ID && cd "$work/hooked" && xargs -0 -a "$work/hook.argv" env) >/dev/null 2>&1
      rm -f "$work/cpu.log"
      (unset FINGERPRINT_BUILD_ID && cd "$work" && FINGERPRINT_CPU_LOG=$work/cpu.log ninja -f one.ninja -j1 >/dev/null)
    fi
    wait_for_recorders
    served_ms=$(awk -v b="$(logged_us recorder-launch recorder)" -v n="$repeat" 'BEGIN { printf "%.4f", b / 1000 / n }')
    echo "$launcher_ms $served_ms $runner_ms" >>"$work/one.rows"
    say "round $((r + 1))/$rounds: a hook's own CPU, ms: launcher $launcher_ms + recorder $served_ms; runner $runner_ms"
  done
  "$PY" - "$work/one.rows" "$target" <<'EOF'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
med = lambda xs: statistics.median(xs)
print(f"one_link={sys.argv[2]} rounds={len(rows)} launcher_ms={med(r[0] for r in rows):.3f}"
      f" served_ms={med(r[1] for r in rows):.3f} hooked_ms={med(r[0] + r[1] for r in rows):.3f}"
      f" runner_ms={med(r[2] for r in rows):.3f}"
      f" hooked_over_runner={med((r[0] + r[1]) / r[2] for r in rows):.3f}")
EOF
  exit 0
fi

# One untimed build first: the page cache holds the compiler and headers.
build plain
for tree in "${trees[@]}"; do : >"$work/$tree.times"; done
rm -f "$work"/*.self
# Rounds rotate the order (plain hooked launcher, hooked launcher plain, ...),
# so that no tree always follows the same one.
for ((r = 0; r < runs; r++)); do
  for ((k = 0; k < ${#trees[@]}; k++)); do
    build "${trees[(r + k) % ${#trees[@]}]}"
  done
  say "round $((r + 1))/$runs: wall ms plain $(tail -1 "$work/plain.times" | cut -d' ' -f1)," \
    "hooked $(tail -1 "$work/hooked.times" | cut -d' ' -f1), with the compile launcher $(tail -1 "$work/launcher.times" 2>/dev/null | cut -d' ' -f1)" \
    "${FINGERPRINT_BENCH_RUNNER_TREE:+, without the recorder $(tail -1 "$work/runner.times" 2>/dev/null | cut -d' ' -f1)}"
done
# Links only, the steadier figure. A clean build's CPU varies by more than
# a millisecond a link from one build to the next (the compiles, some 40 s
# of CPU, vary by a few percent), and the hooks' cost drowns in that. They
# run at links only: with every object built, each tree's link outputs (the
# edges of CMake's *_LINKER__ rules) are removed and linked again, plain
# and hooked alternated, the hooked one into an empty store and digest
# cache as in the clean build, so that each link's hook does what it does
# there (its objects' compile-level inputs read and digested, every
# manifest and log new). Their CPU (the build tool's children, the
# recorder's as it logs it) differs only by the hooks.
# FINGERPRINT_BENCH_LINK_ROUNDS (default 9; 0: none) pairs.
link_rounds=${FINGERPRINT_BENCH_LINK_ROUNDS:-9}
relink() {
  local tree=$1 done
  ninja -C "$work/$tree" -t targets all | awk -F': ' '$2 ~ /_LINKER__/ { print $1 }' >"$work/link-outputs"
  (cd "$work/$tree" && xargs -r rm -f <"$work/link-outputs")
  [[ $tree == plain ]] || set_store_aside
  timed_ninja "$tree" "$work/$tree.relink.log" relink
  done=$(grep -c '^\[' "$work/$tree.relink.log" || true)
  if ((done != links)); then
    echo "error: the $tree relink ran $done edges, not the $links links" >&2
    exit 1
  fi
  awk -v served="$(logged_us recorder-launch recorder)" -v self="$(logged_us)" \
    '{ printf "%.1f %d\n", ($2 + $3) * 1000 + served / 1000, self }' "$work/time" >>"$work/$tree.links"
}
rm -f "$work"/*.links
if [[ $project == generated ]] && ((link_rounds > 0)); then
  for ((r = 0; r < link_rounds; r++)); do
    if ((r % 2 == 0)); then relink plain; relink hooked; else relink hooked; relink plain; fi
  done
  say "links only, $link_rounds pairs: CPU ms plain $(cut -d' ' -f1 "$work/plain.links" | paste -sd/)," \
    "hooked $(cut -d' ' -f1 "$work/hooked.links" | paste -sd/)"
fi

recorded=$("$fp" --store "$store" builds --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')

"$PY" - "$work" "$compiles" "$links" "$runs" "$recorded" <<'EOF'
import os, statistics, sys
work, compiles, links, runs, recorded = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
t = {}
for tree in ("plain", "hooked", "launcher", "runner"):
    if not os.path.exists(f"{work}/{tree}.times"):
        t[tree] = [(0, 0)]
        continue
    rows = [tuple(map(int, l.split())) for l in open(f"{work}/{tree}.times")]
    t[tree] = rows
self_of = lambda tree: [tuple(map(int, l.split())) for l in open(f"{work}/{tree}.self")] if os.path.exists(f"{work}/{tree}.self") else [(0, 0)]
self_us = self_of("hooked")
runner_us = self_of("runner")
med = lambda xs: statistics.median(xs)
def links_only():
    if not os.path.exists(f"{work}/hooked.links"):
        return ""
    rows = {tree: [tuple(map(float, l.split())) for l in open(f"{work}/{tree}.links")] for tree in ("plain", "hooked")}
    added = [(h[0] - p[0]) / links for h, p in zip(rows["hooked"], rows["plain"])]
    return (f" links_rounds={len(added)} links_cpu_plain_ms={med(r[0] for r in rows['plain']):.0f}"
            f" links_cpu_hooked_ms={med(r[0] for r in rows['hooked']):.0f}"
            f" links_cpu_added_per_link_ms={med(added):.2f}"
            f" links_cpu_added_all={'/'.join(f'{a:.2f}' for a in added)}"
            f" links_self_per_link_ms={med(r[1] for r in rows['hooked']) / 1000 / links:.3f}")
wall = {k: med([r[0] for r in v]) for k, v in t.items()}
cpu = {k: med([r[1] for r in v]) for k, v in t.items()}
pair = med([h[0] / p[0] for h, p in zip(t["hooked"], t["plain"])])
pair_cpu = med([h[1] / p[1] for h, p in zip(t["hooked"], t["plain"])])
per_compile = (cpu["launcher"] - cpu["hooked"]) / compiles if cpu["launcher"] else float("nan")
per_link = (cpu["hooked"] - cpu["plain"]) / links
print(f"runs={runs} compiles={compiles} links={links} builds_recorded={recorded}"
      f" wall_plain_ms={wall['plain']:.0f} wall_hooked_ms={wall['hooked']:.0f} wall_launcher_ms={wall['launcher']:.0f}"
      f" cpu_plain_ms={cpu['plain']:.0f} cpu_hooked_ms={cpu['hooked']:.0f} cpu_launcher_ms={cpu['launcher']:.0f}"
      f" wall_ratio={pair:.3f} cpu_ratio={pair_cpu:.3f}"
      f" cpu_per_compile_ms={per_compile:.2f} cpu_per_link_ms={per_link:.2f}"
      f" cpu_added_per_link_ms={(cpu['hooked'] - cpu['plain']) / links:.2f}"
      f" self_per_compile_ms={med([c for c, _ in self_us]) / 1000 / max(compiles, 1):.3f}"
      f" self_per_link_ms={med([l for _, l in self_us]) / 1000 / links:.3f}"
      f" self_all_per_link_ms={med([c + l for c, l in self_us]) / 1000 / links:.3f}"
      f" wall_runner_ms={wall['runner']:.0f} cpu_runner_ms={cpu['runner']:.0f}"
      f" cpu_runner_added_per_link_ms={(cpu['runner'] - cpu['plain']) / links if cpu['runner'] else float('nan'):.2f}"
      f" self_runner_per_link_ms={med([c + l for c, l in runner_us]) / 1000 / links:.3f}"
      f" wall_plain_all={'/'.join(str(r[0]) for r in t['plain'])}"
      f" wall_hooked_all={'/'.join(str(r[0]) for r in t['hooked'])}"
      + links_only())
EOF

[[ $project == generated ]] || exit 0

# store_sizes LABEL: files, bytes and lines under each part of the store
# (and of builds.recent, at its root), and
# the (product, input) pairs its manifests hold (a manifest's entries times
# its users, the produced events in its log that name it).
store_sizes() {
  "$PY" - "$store" "$1" <<'EOF'
import os, sys
root, label = sys.argv[1], sys.argv[2]
out = [f"{label}:"]
for part in ("objects", "builds", "manifests", "inputs"):
    files = size = lines = 0
    for d, _, names in os.walk(os.path.join(root, part)):
        for n in names:
            p = os.path.join(d, n)
            data = open(p, "rb").read()
            files += 1
            size += len(data)
            lines += data.count(b"\n")
    out.append(f"{part}_files={files} {part}_bytes={size} {part}_lines={lines}")
# builds.recent: a line per record call since the last gc (store/path_index.hpp).
recent = os.path.join(root, "builds.recent")
data = open(recent, "rb").read() if os.path.exists(recent) else b""
newlines = data.count(b"\n")
out.append(f"recent_files={int(os.path.exists(recent))} recent_bytes={len(data)} recent_lines={newlines}")
pairs = 0
for d, _, names in os.walk(os.path.join(root, "manifests")):
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            count = int(f.readline().split()[3])
        log = os.path.join(root, "objects", os.path.basename(os.path.dirname(d)), n[:2], n + ".jsonl")
        users = sum(1 for l in open(log, "rb") if b'"inputs":"' in l) if os.path.exists(log) else 0
        pairs += count * users
out.append(f"pairs={pairs}")
print(" ".join(out))
EOF
}
say "store size: a clean build into an empty store, then every source touched (bytes kept) and rebuilt"
ninja -C "$work/hooked" -t clean >/dev/null
rm -rf "$store" "$FINGERPRINT_CACHE_DIR"
ninja -C "$work/hooked" -j"$jobs" >/dev/null
first=$(store_sizes clean)
sleep 1 # a newer mtime than any the build left, whatever the file system's tick
find "$src" -name '*.cpp' -exec touch {} +
ninja -C "$work/hooked" -j"$jobs" >"$work/relink.log"
rebuilt=$(grep -c '^\[' "$work/relink.log" || true)
second=$(store_sizes relinked)
echo "$first edges_rebuilt=$rebuilt $second"
