#!/usr/bin/env bash
# fingerprint-launch and the recorder (runner/recorder.cpp): the first link
# hook finds no recorder, runs the runner and starts one; the next are served
# by it, with the launcher's working directory, environment, umask and
# standard streams, the command run by the launcher with its exit status
# passed through, the build id of the launcher's build tool, and every way
# the recorder can fail ending as a runner started per link would.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

LAUNCHER=$(dirname "$FP")/fingerprint-launch
if [[ ! -x $LAUNCHER ]]; then
  fail "no fingerprint-launch beside $FP (it is built on x86-64 Linux)"
  exit 1
fi
# A runner of this test's own, so that its recorder (named after the runner's
# path and identity) is no other test's.
mkdir -p "$T/bin"
cp "$FP" "$T/bin/fingerprint"
RUNNER=$T/bin/fingerprint
export FINGERPRINT_RECORDER_IDLE=30 FINGERPRINT_CPU_LOG=$T/cpu.log
unset GLIBC_TUNABLES # the recorder's are checked below
S=$T/store
mkdir -p "$T/work/bd"
cd "$T/work"

expect_ne() {
  if [[ $1 != "$2" ]]; then _result 1 "$3"; else _result 0 "$3: got '$1'"; fi
}
expect_match() {
  if [[ $1 =~ $2 ]]; then _result 1 "$3"; else _result 0 "$3: '$1' does not match $2"; fi
}

# The recorder of $RUNNER: its pid, once it listens (empty if none in 5 s).
recorder_pid() {
  local i pid
  for ((i = 0; i < 100; i++)); do
    for pid in $(pgrep -f -- "--serve-recorder fingerprint-recorder-$(id -u)-" || true); do
      if [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$RUNNER" ]]; then
        echo "$pid"
        return 0
      fi
    done
    sleep 0.05
  done
}
# launch_app [ENV=VALUE...] -- COMMAND...: a link hook of target app, output out.
launch_app() {
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  run env "${envs[@]}" "$LAUNCHER" "$RUNNER" launch --store "$S" --project p --target app --output out --build-dir bd \
    ${REQUIRED:+--required} -- "$@"
}
# log_count LABEL: lines of $FINGERPRINT_CPU_LOG for LABEL (launch: a runner
# the launcher became; recorder-launch: a served call).
log_count() { { grep -c "^$1 " "$FINGERPRINT_CPU_LOG" 2>/dev/null || true; } | head -1; }
digest_of() { echo "sha256:$("$RUNNER" digest "$1" | cut -d" " -f1)"; }
# expect_runner_records WHAT [ENV=VALUE...]: a hook of new bytes that the
# runner itself records (the recorder not asked, or not answering).
expect_runner_records() {
  local what=$1 before
  shift
  before=$(log_count launch)
  echo "$what $RANDOM" >in.o
  launch_app "$@" -- cp in.o out
  expect_rc 0 "$what"
  expect_eq "$(log_count launch)" "$((before + 1))" "$what: the runner ran it"
  run "$RUNNER" --store "$S" show --json out
  expect_in out "\"$(digest_of out)\"" "$what: and recorded it"
}

# 1. No recorder yet: the runner records, and starts one.
echo one >in.o
launch_app -- cp in.o out
expect_rc 0 "the first hook"
expect_eq "$(log_count launch)/$(log_count recorder-launch)" "1/0" "the first hook ran the runner itself"
expect_eq "$(log_count launcher)" 0 "a launcher become the runner logs no CPU of its own (the runner's line holds it)"
run "$RUNNER" --store "$S" show out
expect_rc 0 "the first hook recorded out"
pid=$(recorder_pid)
# tunables PID: the GLIBC_TUNABLES a process was started with (glibc splits
# the copy /proc shows at each ':' as it reads it: one tunable is checked
# here, more in unit.ResidentTunables).
tunables() { tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^GLIBC_TUNABLES=//p'; }
expect_eq "$(tunables "$pid")" "glibc.malloc.tcache_count=1024" \
  "the recorder is started with a thread cache of 1,024 blocks a size (launch.cpp, set_resident_tunables)"
expect_ne "$pid" "" "the first hook started a recorder"

# 2. Served: the working directory (out and in.o are relative), the
# environment (the build id), and the record as the runner would make it.
echo two >in.o
launch_app FINGERPRINT_BUILD_ID=served-7 -- cp in.o out
expect_rc 0 "a served hook"
expect_eq "$(log_count launch)/$(log_count recorder-launch)" "1/1" "the second hook was served by the recorder"
expect_eq "$(log_count launcher)" 1 "a served hook's launcher logs its own CPU"
expect_eq "$(grep -cE '^launcher [0-9]+ [0-9]+$' "$FINGERPRINT_CPU_LOG")" 1 "as \"launcher USER SYSTEM\" in microseconds"
run "$RUNNER" --store "$S" show --json out
expect_in out "\"$(digest_of out)\"" "the served hook recorded out's new bytes"
expect_in out '"build": "served-7"' "with the build id of the launcher's environment"
expect_in out "\"build_dir\": \"$T/work/bd\"" "and the build tree taken from the launcher's working directory"
run "$RUNNER" --store "$S" show --json in.o
expect_in out '"role": "link"' "in.o, on the link line, recorded as consumed"

# 3. The command's streams are the launcher's; its status is the hook's.
launch_app -- sh -c 'echo to-out; echo to-err >&2; cp in.o out'
expect_rc 0 "a command that writes"
expect_eq "$OUT" "to-out" "the command's standard output passes through"
expect_eq "$ERR" "to-err" "and its standard error"
before=$(log_count recorder-launch)
launch_app -- sh -c 'exit 3'
expect_rc 3 "a command that fails: its status"
launch_app -- sh -c 'kill -TERM $$'
expect_rc 143 "a command killed by a signal: 128 + its number"
launch_app -- ./no-such-linker
expect_rc 127 "a command that cannot be started: 127, as from a shell"
expect_in err "cannot run ./no-such-linker: error 2" "the launcher's child says which and why, on its own stack"
expect_eq "$(log_count launch)/$(log_count recorder-launch)" "1/$((before + 3))" "all three served"
echo three >in.o
launch_app -- sh -c 'read -r line; echo "$line" >out'  <<<"from-stdin"
expect_rc 0 "a command that reads its standard input"
expect_eq "$(cat out)" "from-stdin" "the command reads the launcher's standard input"

# 4. A hook that cannot record: a warning, or with --required the step fails,
# the message written where the launcher writes.
rm -f out
launch_app -- true
expect_rc 0 "no output, not required"
expect_in err "app: not fingerprinted" "the served hook warns on the launcher's standard error"
REQUIRED=1 launch_app -- true
expect_rc 1 "no output, --required: the step fails"
expect_in err "FINGERPRINT_REQUIRED is ON" "and says why"

# 5. An archive's steps: the ones before the last are the launcher's alone
# (no recorder asked, no runner started): a step that names members (ar)
# keeps its command for the last, one that names none (rm) removes what an
# earlier build left, and the last (--record-after) records, taking the
# objects from the kept commands and what their compiles read.
cat >"$T/ranlib" <<'EOF'
#!/bin/sh
cp "$1" "$1.tmp" && mv "$1.tmp" "$1"
EOF
chmod +x "$T/ranlib"
archive_step() {
  run "$LAUNCHER" "$RUNNER" launch --store "$S" --project p --target lib --output lib.a --build-dir bd \
    --type STATIC_LIBRARY --record-after "$T/ranlib" -- "$@"
}
kept_steps() { find bd/CMakeFiles/fingerprint/deps -name 'lib.*.ar-steps' 2>/dev/null | wc -l; }
echo "struct member {};" >member.h
member=bd/CMakeFiles/lib.dir/member.c.o
mkdir -p "${member%/*}"
echo "member object $RANDOM" >$member
echo "${member#bd/}: $T/work/member.h" >$member.d # what "its compile" read, as Unix Makefiles keep it
served=$(log_count recorder-launch)
runners=$(log_count launch)
launchers=$(log_count launcher)
archive_step sh -c 'cat "$1" >lib.a; echo step-ran' ar $member
expect_rc 0 "an archive's ar step"
expect_eq "$OUT" "step-ran" "the ar step ran, its output passed through"
expect_eq "$(kept_steps)" 1 "the ar step kept its command for the last step"
archive_step sh -c 'rm -f lib.a'
expect_rc 0 "an archive's rm step"
expect_eq "$(kept_steps)" 0 "the rm step removed the kept commands of an earlier build"
archive_step sh -c 'cat "$1" >lib.a' ar $member
run "$RUNNER" --store "$S" show lib.a
expect_rc 1 "nothing recorded before the last step"
expect_eq "$(log_count launch)/$(log_count recorder-launch)" "$runners/$served" \
  "no step before the last asked the recorder or started the runner"
expect_eq "$(log_count launcher)" "$((launchers + 3))" "each step's launcher logged its CPU before its exec"
archive_step "$T/ranlib" lib.a
expect_rc 0 "an archive's ranlib step"
expect_eq "$(log_count recorder-launch)" "$((served + 1))" "the last step was served"
run "$RUNNER" --store "$S" show lib.a
expect_rc 0 "the archive recorded after its last step"
run "$RUNNER" --store "$S" consumers --json member.h
expect_in out '"role": "compile"' "with what its member's compile read, from the ar step's kept command"
expect_in out "\"$(digest_of lib.a)\"" "as an input of the archive"
expect_eq "$(kept_steps)" 0 "and the kept commands taken"

# 5b. --archive-steps FILE: the steps before the last kept by the build's
# own shell (the CMake module's function with Ninja) in the file it names,
# taken from there by the last step and removed; a name that is not a file
# of an archive's steps is refused (an error with --required) and left
# alone.
steps_file=bd/CMakeFiles/lib.dir/fingerprint.ar-steps
printf '%s\0' ar qc lib.a "$member" '' >"$steps_file"
echo "archive two $RANDOM" >lib.a
run "$LAUNCHER" "$RUNNER" launch --store "$S" --project p --target lib --output lib.a --build-dir bd \
  --type STATIC_LIBRARY --archive-steps "$steps_file" --record-after "$T/ranlib" -- "$T/ranlib" lib.a
expect_rc 0 "an archive's last step with --archive-steps"
run "$RUNNER" --store "$S" consumers --json member.h
expect_in out "\"$(digest_of lib.a)\"" "the member's compile inputs taken from the file --archive-steps names"
expect_no_file "$steps_file" "which the last step removed"
echo "not a step" >bd/keep.txt
echo "archive three $RANDOM" >lib.a
run "$LAUNCHER" "$RUNNER" launch --store "$S" --project p --target lib --output lib.a --build-dir bd \
  --type STATIC_LIBRARY --archive-steps bd/keep.txt --record-after "$T/ranlib" --required -- "$T/ranlib" lib.a
expect_rc 1 "a wrong --archive-steps fails the step with --required"
expect_in err "not a file of an archive's steps" "it is refused, and said"
expect_file bd/keep.txt "the file it named is left alone"

# 6. The umask is the launcher's: a new store's files under umask 077.
# (run's status from the subshell: its RC is the subshell's own.)
RC=0
(umask 077 && echo four >in.o && S=$T/private launch_app -- cp in.o out && exit "$RC") || RC=$?
expect_rc 0 "a hook under umask 077"
expect_eq "$(find "$T/private" -type f -perm /077 | head -3)" "" "the store it made is private, as the launcher's umask asks"

# 7. The build id of the launcher's build tool: two links of one ninja run
# share it, the next run has the next one.
if command -v ninja >/dev/null; then
  mkdir -p "$T/nb"
  cat >"$T/nb/build.ninja" <<EOF
rule link
  command = $LAUNCHER $RUNNER launch --store $S --project nb --target \$target --output \$out --build-dir $T/nb -- cp \$in \$out
build $T/nb/a: link $T/work/in.o
  target = a
build $T/nb/b: link $T/work/in.o
  target = b
EOF
  run ninja -C "$T/nb"
  expect_rc 0 "a ninja run of two served links"
  first=$("$RUNNER" --store "$S" show --json "$T/nb/a" | python3 -c 'import json,sys; print([e["build"] for e in json.load(sys.stdin)["producers"]][-1])')
  second=$("$RUNNER" --store "$S" show --json "$T/nb/b" | python3 -c 'import json,sys; print([e["build"] for e in json.load(sys.stdin)["producers"]][-1])')
  expect_eq "$first" "$second" "both links of one ninja run have one build id"
  expect_match "$first" '^[0-9]+-[0-9a-f]+$' "counted per invocation of the build tool"
  echo five >>"$T/work/in.o"
  run ninja -C "$T/nb"
  third=$("$RUNNER" --store "$S" show --json "$T/nb/a" | python3 -c 'import json,sys; print([e["build"] for e in json.load(sys.stdin)["producers"]][-1])')
  expect_eq "${third%%-*}" "$((${first%%-*} + 1))" "the next ninja run has the next build number"

  # 7b. A file is looked at once a ninja run (digest::BuildMemo): a link
  # after an undeclared change of its input in the same run records what
  # the run's first link found; the next run looks again.
  consumers_of() {
    "$RUNNER" --store "$S" consumers --json "$1" |
      python3 -c 'import json,sys; print(" ".join(sorted(e["target"] + "@" + e["build"].split("-")[0] for e in json.load(sys.stdin))))'
  }
  echo "first bytes" >"$T/work/memo.o"
  cat >"$T/nb/build.ninja" <<EOF
rule link
  command = $LAUNCHER $RUNNER launch --store $S --project nb --target \$target --output \$out --build-dir $T/nb -- cp \$in \$out
rule change_input
  command = echo changed during the run >>$T/work/memo.o && touch \$out
build $T/nb/c: link $T/work/memo.o
  target = c
build $T/nb/changed: change_input || $T/nb/c
build $T/nb/d: link $T/work/memo.o || $T/nb/changed
  target = d
EOF
  run ninja -C "$T/nb" -j1
  expect_rc 0 "a ninja run whose input changes between two links"
  # c is a copy of the input's first bytes, in.changed of its last.
  cp "$T/work/memo.o" "$T/nb/in.changed"
  expect_ne "$(digest_of "$T/nb/in.changed")" "$(digest_of "$T/nb/c")" "the input did change during the run"
  expect_eq "$(consumers_of "$T/nb/c")" "c@$((${third%%-*} + 1)) d@$((${third%%-*} + 1))" "both links of the run record the bytes its first link found"
  expect_eq "$(consumers_of "$T/nb/in.changed")" "" "and not the bytes changed during the run"
  rm -f "$T/nb/c" "$T/nb/d"
  run ninja -C "$T/nb" -j1 "$T/nb/d"
  expect_rc 0 "the next ninja run"
  expect_eq "$(consumers_of "$T/nb/in.changed")" "c@$((${third%%-*} + 2)) d@$((${third%%-*} + 2))" "the next run records the changed bytes"
  # The same with the build id from the environment (a CI's): the run is
  # still the build tool's.
  echo "first bytes again" >"$T/work/memo.o"
  rm -f "$T/nb/c" "$T/nb/d" "$T/nb/changed"
  FINGERPRINT_BUILD_ID=77-ci run ninja -C "$T/nb" -j1
  expect_rc 0 "a ninja run with FINGERPRINT_BUILD_ID whose input changes between two links"
  expect_eq "$(consumers_of "$T/nb/c")" "c@77 d@77" "with the build id from the environment too, both record the first bytes"
  # 7c. Hooks run by a script, no build tool above them: the script's
  # process is no build tool's run, so each hook looks at its inputs. (Under
  # an outer ninja or make, `ninja test`, the run is that tool's.)
  tool_above=""
  pid=$$
  while ((pid > 1)) && [[ -r /proc/$pid/stat ]]; do
    stat_line=$(</proc/$pid/stat)
    name=${stat_line#*(}
    name=${name%)*}
    [[ $name == ninja || $name == make || $name == gmake ]] && tool_above=$name
    read -r -a after_name <<<"${stat_line##*) }"
    pid=${after_name[1]}
  done
  targets_of() { consumers_of "$1" | sed 's/@[0-9]*//g'; }
  echo "script 1" >"$T/work/script.o"
  # "; true": bash would exec the last command, no longer its parent.
  run bash -c '"$1" "$2" launch --store "$3" --project p --target s1 --output s1 --build-dir bd -- cp script.o s1 &&
    echo "script 2, longer" >script.o &&
    "$1" "$2" launch --store "$3" --project p --target s2 --output s2 --build-dir bd -- cp script.o s2; true' \
    _ "$LAUNCHER" "$RUNNER" "$S"
  expect_rc 0 "two hooks run by one script, the input changed between them"
  if [[ -z $tool_above ]]; then
    expect_eq "$(targets_of "$T/work/s2")" "s2" "with no build tool above, the second hook records the changed bytes"
    expect_eq "$(targets_of "$T/work/s1")" "s1" "and the first the bytes it read"
  else
    echo "note: this test runs under $tool_above: both hooks are of its run"
    expect_eq "$(targets_of "$T/work/s1")" "s1 s2" "under $tool_above, both hooks of its run record the first bytes"
  fi
else
  fail "ninja is needed for the build id checks"
fi

# 8. A recorder that ends before it answers, after the command ran: said,
# and the step fails only as it would have (its status, --required).
echo six >in.o
launch_app FINGERPRINT_TEST_RECORDER_DIE=1 -- cp in.o out
expect_rc 0 "the recorder died after the link, not required"
expect_in err "not fingerprinted: the recorder ended before it recorded this link" "the launcher says so"
REQUIRED=1 launch_app FINGERPRINT_TEST_RECORDER_DIE=1 -- cp in.o out
expect_rc 1 "the same with --required: the step fails"
launch_app FINGERPRINT_TEST_RECORDER_DIE=1 -- sh -c 'exit 4'
expect_rc 4 "the same after a failed link: the link's status"

# 9. A call the recorder hands back (as it does for a PostgreSQL store): the
# launcher runs the runner itself, which records.
expect_runner_records "a call handed back" FINGERPRINT_TEST_RECORDER_FALLBACK=1

# 9b. FINGERPRINT_RECORDER=off: the launcher runs the runner without asking.
before=$(log_count launch)
served=$(log_count recorder-launch)
echo seven-b >in.o
launch_app FINGERPRINT_RECORDER=off -- cp in.o out
expect_rc 0 "a hook with FINGERPRINT_RECORDER=off"
expect_eq "$(log_count launch)/$(log_count recorder-launch)" "$((before + 1))/$served" "the runner ran it, not the recorder"

# 10. The recorder killed: the next hook runs the runner and starts another.
pid=$(recorder_pid)
kill -9 "$pid"
sleep 0.1
expect_runner_records "a hook after the recorder was killed" GLIBC_TUNABLES=glibc.malloc.tcache_count=5
new_pid=$(recorder_pid)
expect_ne "$new_pid" "" "a new recorder listens"
expect_ne "$new_pid" "$pid" "another process"
expect_eq "$(tunables "$new_pid")" "glibc.malloc.tcache_count=5" \
  "a thread cache's count the hook's environment sets is the recorder's"

# 11. Abstract names are open to every user: the recorder serves no other
# user, and a launcher talks to no other user's recorder.
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
  name=$(tr -d '\0' <"/proc/$new_pid/cmdline" | sed 's/.*--serve-recorder//')
  shared=$T/shared # a directory the other user may write
  mkdir -p "$shared" && chmod 1777 "$shared"
  chmod 711 "$T"
  run env -C / setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import array, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect("\0" + sys.argv[1])
    # A whole request, as fingerprint-launch sends it: a recorder that served
    # this user would answer it (launch without options: a usage error).
    strings = b"/bin/fingerprint\0launch\0"
    fds = array.array("i", [0, 1, 2, os.open("/", os.O_RDONLY | os.O_DIRECTORY)])
    s.sendmsg([struct.pack("=5I", 0x02525046, 0o22, 2, 0, len(strings))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    s.sendall(strings)
    print("closed" if s.recv(16) == b"" else "answered")
except (BrokenPipeError, ConnectionResetError):
    print("closed") # closed before, or while, the request was sent
' "$name"
  expect_eq "$OUT" "closed" "the recorder closes a call of another user"
  [[ $OUT == closed ]] || show_output >&2
  kill -9 "$new_pid"
  sleep 0.1
  # A listener of another user squatting on the name: the launcher runs the runner.
  env -C / setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + sys.argv[1]); s.listen(8)
open(sys.argv[2], "w").close()
time.sleep(20)' "$name" "$shared/squatting" &
  squatter=$!
  for ((i = 0; i < 100; i++)); do [[ -e $shared/squatting ]] && break; sleep 0.05; done
  expect_eq "$(stat -c %u "$shared/squatting" 2>/dev/null)" 65534 "another user listens under the recorder's name"
  expect_runner_records "a hook beside another user's listener"
  kill "$squatter" 2>/dev/null || true
  wait "$squatter" 2>/dev/null || true
fi

for pid in $(pgrep -f -- "--serve-recorder fingerprint-recorder-"); do
  [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$RUNNER" ]] && kill -9 "$pid"
done
finish
