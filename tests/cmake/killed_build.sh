# One build, one id, even when the build tool dies (issue 13, item 6): a
# project of 30 programs whose links are slow (a RULE_LAUNCH_LINK that
# pauses, kept inside the Fingerprint launcher); ninja is killed with
# SIGKILL ten times while four links are in flight, and the links, now
# orphans, finish and record; a last run builds everything. Every run gets
# one build id: the orphans keep their killed run's id rather than each
# advancing the counter. Then the same with Unix Makefiles: killing the top
# make leaves its sub-make building, and what it links after the kill
# joins the killed run's id.
source "$(dirname "$0")/lib.sh" "$@"

if ! command -v ninja >/dev/null || ! command -v make >/dev/null; then
  echo "SKIP: needs ninja and make"
  exit 77
fi

p=$T/slow
mkdir -p "$p" "$T/marks"
cat >"$p/slowlink.sh" <<'SH'
#!/bin/sh
# Says that a link started, then links after a pause: the test kills the
# build tool while links are in flight.
: >"$LINK_MARKS/$$"
sleep 1
exec "$@"
SH
chmod +x "$p/slowlink.sh"
cat >"$p/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(slow LANGUAGES C)
find_package(Fingerprint REQUIRED)
include(Fingerprint)
set_property(GLOBAL PROPERTY RULE_LAUNCH_LINK "${CMAKE_CURRENT_SOURCE_DIR}/slowlink.sh")
foreach(i RANGE 1 30)
  add_executable(p${i} p${i}.c)
endforeach()
CMAKE
for i in $(seq 1 30); do
  echo "int main(void) { return $i - $i; }" >"$p/p$i.c"
done

# wait_until SECONDS WHAT CMD...: polls CMD until it succeeds (a deadline
# for something that must happen, not a measure of how fast).
wait_until() {
  local limit=$1 what=$2
  shift 2
  local i
  for ((i = 0; i < limit * 10; i++)); do
    if "$@"; then
      return 0
    fi
    sleep 0.1
  done
  fail "$what: still not so after $limit s"
  return 1
}
marks() { find "$T/marks/$1" -type f | wc -l; }
all_marks() { find "$T/marks" -type f | wc -l; }
# builds_of TREE: "<build id> <products>" per build whose events name TREE.
builds_of() {
  python3 - "$FINGERPRINT_DIR/builds/slow" "$1" <<'PY'
import collections, json, os, sys
counts = collections.Counter()
root = sys.argv[1]
for name in os.listdir(root) if os.path.isdir(root) else []:
    for line in open(os.path.join(root, name)):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("build_dir") == sys.argv[2] and e.get("event") == "produced":
            counts[e["build"]] += 1
for build, n in sorted(counts.items(), key=lambda kv: int(kv[0].split("-")[0]) if kv[0].split("-")[0].isdigit() else 0):
    print(build, n)
PY
}
# children_of PID: the processes whose parent is PID (/proc, no procps needed)
children_of() {
  python3 - "$1" <<'PY'
import glob, sys
for stat in glob.glob("/proc/[0-9]*/stat"):
    try:
        fields = open(stat).read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        continue
    if fields[1] == sys.argv[1]:
        print(stat.split("/")[2])
PY
}
produced_of() { builds_of "$1" | awk '{ n += $2 } END { print n + 0 }'; }
# every link that started has recorded its program
all_recorded() { (($(produced_of "$1") >= $(all_marks))); }
enough_in_flight() { (($(marks "$1") >= 4)) || ! kill -0 "$2" 2>/dev/null; }

configure "$p" "$T/b"
expect_in out "Fingerprinting 30 targets" "all 30 programs are hooked"

runs=10
killed=0
for r in $(seq 1 $runs); do
  mkdir -p "$T/marks/$r"
  LINK_MARKS=$T/marks/$r ninja -C "$T/b" -j 4 >"$T/ninja-$r.log" 2>&1 &
  pid=$!
  wait_until 600 "run $r: four links in flight" enough_in_flight "$r" "$pid" || break
  if kill -9 "$pid" 2>/dev/null; then
    killed=$((killed + 1))
  fi
  { wait "$pid"; } 2>/dev/null || true # "Killed"
  # The orphans finish their links and record before the next run starts,
  # which would relink the same programs (ninja never logged them).
  wait_until 300 "run $r: the orphaned links recorded" all_recorded "$T/b" || break
done
expect_eq "$killed" "$runs" "ninja was killed with links in flight in each of the $runs runs"
mkdir -p "$T/marks/last"
LINK_MARKS=$T/marks/last run ninja -C "$T/b" -j 4
expect_rc 0 "a last ninja run builds what is left"
wait_until 300 "every link recorded" all_recorded "$T/b"

builds_of "$T/b" >"$T/ninja-builds"
ids=$(wc -l <"$T/ninja-builds")
echo "ninja: $((runs + 1)) invocations ($runs killed), $ids build ids, $(all_marks) links:"
sed 's/^/  | /' "$T/ninja-builds"
expect_eq "$ids" "$((runs + 1))" "one build id per ninja invocation, killed or not"
tag=$(head -1 "$T/ninja-builds" | cut -d' ' -f1 | cut -d- -f2)
expect_eq "$(cut -d' ' -f1 "$T/ninja-builds" | tr '\n' ' ')" "$(for n in $(seq 1 $((runs + 1))); do printf '%s ' "$n-$tag"; done)" \
  "the ids are the sequence 1..$((runs + 1)) of the tree"
for r in $(seq 1 $runs); do
  expect_eq "$(awk -v id="$r-$tag" '$1 == id { print $2 }' "$T/ninja-builds")" "$(marks "$r")" \
    "killed run $r: each link in flight recorded under the run's id"
done
expect_eq "$(awk -v id="$((runs + 1))-$tag" '$1 == id { print $2 }' "$T/ninja-builds")" 30 \
  "the last run relinked all 30 programs (the orphans' links were never logged by ninja)"

# A hook killed while it rewrites build-sequence (Ctrl-C reaches every hook
# of the foreground group): strace kills the hook on entering each system
# call a rewrite may use, once per run, on that file only. The tree keeps
# its tag and numbering; a file left empty would restart them under a new tag.
seq_file=$T/b/CMakeFiles/fingerprint/build-sequence
seq_field() { head -1 "$seq_file" | cut -d' ' -f"$1"; }
if ! strace -f -qq -o /dev/null true 2>/dev/null; then
  echo "SKIP: a hook killed inside the rewrite of build-sequence: needs strace, with ptrace allowed"
else
  mkdir -p "$T/marks/inject"
  number=$(seq_field 1)
  killed_hooks=0
  for call in lseek write pwrite64 ftruncate; do
    if [[ $call == ftruncate ]]; then
      printf '\n%.0s' $(seq 1 200) >>"$seq_file" # blank lines: the next rewrite cuts the file
    fi
    touch "$p/p1.c"
    # The hooks run the runner here (FINGERPRINT_RECORDER=off): a recorder
    # is no child of ninja, and strace would not see its rewrite.
    FINGERPRINT_RECORDER=off LINK_MARKS=$T/marks/inject strace -f -qq -o /dev/null -P "$seq_file" -e trace=lseek,write,pwrite64,ftruncate \
      -e inject="$call":signal=KILL:when=1 ninja -C "$T/b" p1 >"$T/inject-$call.log" 2>&1 && rc=0 || rc=$?
    if ((rc != 0)); then
      killed_hooks=$((killed_hooks + 1))
    fi
    echo "hook killed on entering $call: $( ((rc != 0)) && echo yes || echo 'no (not called)'); build-sequence: $(head -1 "$seq_file")"
    expect_eq "$(seq_field 2)" "$tag" "hook killed on entering $call while rewriting build-sequence: the tree keeps its tag"
    if (($(seq_field 1) < number)); then
      fail "hook killed on entering $call: the numbering went back from $number to $(seq_field 1)"
    fi
    number=$(seq_field 1)
  done
  if ((killed_hooks == 0)); then
    fail "no hook was killed inside a rewrite of build-sequence: the check above proves nothing"
  fi
  builds_of "$T/b" | cut -d' ' -f1 | sort >"$T/ids-before"
  touch "$p/p2.c"
  LINK_MARKS=$T/marks/inject run ninja -C "$T/b" p2
  expect_rc 0 "a run after the killed rewrites"
  last=$(builds_of "$T/b" | cut -d' ' -f1 | sort | comm -13 "$T/ids-before" -)
  expect_eq "${last#*-}" "$tag" "the run after them records under a new id ('$last') with the tree's tag"
  if [[ ${last%%-*} =~ ^[0-9]+$ ]] && ((${last%%-*} > runs + 1)); then
    ok "and a number past the $((runs + 1)) runs before ($last; $killed_hooks hooks killed)"
  else
    fail "its number restarted: '$last' after $((runs + 1)) runs"
  fi
fi

# Unix Makefiles: the top make is killed once a link has recorded, with
# links left to start; its sub-make (now an orphan) goes on building.
rm -rf "$T/marks"/*
mkdir -p "$T/marks/make"
GENERATOR="Unix Makefiles" configure "$p" "$T/m"
LINK_MARKS=$T/marks/make make -C "$T/m" -j 4 >"$T/make.log" 2>&1 &
pid=$!
one_recorded() { (($(produced_of "$T/m") >= 1)) || ! kill -0 "$pid" 2>/dev/null; }
wait_until 600 "make: a link recorded" one_recorded
started=$(marks make)
children=$(children_of "$pid")
if kill -9 "$pid" 2>/dev/null; then
  ok "make killed after $started links started"
else
  fail "make finished before it could be killed"
fi
{ wait "$pid"; } 2>/dev/null || true
gone() {
  local child
  for child in $children; do
    if kill -0 "$child" 2>/dev/null; then
      return 1
    fi
  done
}
wait_until 600 "the orphaned sub-make finished" gone
builds_of "$T/m" >"$T/make-builds"
echo "make: 1 invocation (killed after $started of $(marks make) links started), $(wc -l <"$T/make-builds") build ids:"
sed 's/^/  | /' "$T/make-builds"
expect_eq "$(produced_of "$T/m")" 30 "the orphaned sub-make linked and recorded all 30 programs"
if ((started < 30)); then
  expect_eq "$(wc -l <"$T/make-builds")" 1 "one build id for the killed make run, also for the links its sub-make started after"
else
  fail "every link had started before make was killed: nothing was left for its orphans"
fi

finish
