#!/usr/bin/env bash
# Nothing lands outside the store (README, "The store"): a group member who
# plants a hard link in a shared store, to a file of theirs or to one of the
# store's logs, or a file nobody of the store owns, cannot make another
# user's record, gc or fsck --repair write through it. fsck reports such
# files and --repair gives the store a file of its own in their place,
# without adding a link to the outside file.
#
# Needs root, to run the runner as two users of one group (setpriv). Not
# root: SKIP, exit 77 (the test's SKIP_RETURN_CODE).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: planted_link: needs root, to run the runner as two users of one group (setpriv)"
  exit 77
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh" "$@"
source "$HERE/two_users.sh"
UC=$((UB + 1))
while getent passwd "$UC" >/dev/null || getent group "$UC" >/dev/null; do UC=$((UC + 1)); done

S=$T/store
mkdir "$S"
chgrp "$G" "$S"
chmod 2775 "$S"
umask 002
for f in lib.a lib2.a tool; do printf '%s bytes\n' "$f" >"work-A/$f"; done
chown "$UA:$UA" work-A/*
digest_of() { sha256sum "$1" | cut -c1-64; }
log_of() { local d; d=$(digest_of "$1"); echo "$S/objects/sha256/${d:0:2}/$d.jsonl"; }
sleep 0.05

run "${AS_A[@]}" "$FP" --store "$S" record --project lib --target lib --build-id a1 --produced lib.a
expect_rc 0 "A records lib.a"

# 1. B plants a hard link to a file of B's own, writable by all, where the
#    log of A's next product goes.
printf 'precious\n' >home-B/precious
chown "$UB:$UB" home-B/precious
chmod 646 home-B/precious # others may write: A can append to it
planted=$(log_of work-A/lib2.a)
run "${AS_B[@]}" mkdir -p "$(dirname "$planted")"
run "${AS_B[@]}" ln "$T/home-B/precious" "$planted"
expect_rc 0 "B plants a hard link to B's file in the store"
run "${AS_A[@]}" "$FP" --store "$S" record --project lib --target lib2 --build-id a1 --produced lib2.a
expect_rc 1 "A's record refuses the log with two hard links"
expect_in err "2 hard links: refused" "says why"
expect_in err "nothing was recorded" "says nothing was recorded"
expect_eq "$(cat home-B/precious)" "precious" "B's file outside the store is unchanged"
if grep -q lib2 "$S/builds/lib/a1.jsonl"; then fail "the refused call's event is in the build index"; else ok "the build index has nothing of the refused call"; fi

# 2. A file of a user outside the store's group, where a log belongs.
foreign=$(log_of work-A/tool)
mkdir -p "$(dirname "$foreign")"
printf '' >"$foreign"
chown "$UC:$UC" "$foreign"
chmod 666 "$foreign"
run "${AS_A[@]}" "$FP" --store "$S" record --project lib --target tool --build-id a1 --produced tool
expect_rc 1 "A's record refuses a log owned by a user outside the store's group"
expect_in err "owned by user $UC and group $UC" "names the owner"
expect_eq "$(stat -c %s "$foreign")" 0 "the foreign file got nothing"

# 3. B takes a second link to A's real log; A's gc must not rewrite it.
run "${AS_A[@]}" "$FP" --store "$S" record --project lib --target lib --build-id a2 --produced lib.a
lib_log=$(log_of work-A/lib.a)
run "${AS_B[@]}" ln "$lib_log" "$T/home-B/grab"
expect_rc 0 "B takes a hard link to A's log (group-writable, so allowed)"
cp home-B/grab grab.before
run "${AS_A[@]}" "$FP" --store "$S" gc --keep-builds 1
expect_rc 1 "A's gc refuses to rewrite a log with two hard links"
expect_in both "2 hard links" "says why"
expect_same_file home-B/grab grab.before "B's link still holds what it held"

# 4. fsck reports all three; --repair gives the store files of its own.
run "${AS_A[@]}" "$FP" --store "$S" fsck --json
expect_rc 1 "fsck exits 1"
cp "$T/out" fsck.json
expect_json_each fsck.json <<EOF
reports the planted link :: any(p['file'].endswith('$(basename "$planted")') and 'hard links' in p['problem'] for p in d['problems'])
reports the foreign file :: any(p['file'].endswith('$(basename "$foreign")') and 'owned by user $UC' in p['problem'] for p in d['problems'])
reports A's log linked from outside :: any(p['file'].endswith('$(basename "$lib_log")') and 'hard links' in p['problem'] for p in d['problems'])
the refused gc left its builds' indexes whole (no event on one side only) :: not any(p['kind'] == 'one-sided' for p in d['problems'])
EOF
run "${AS_A[@]}" "$FP" --store "$S" fsck --repair
expect_rc 0 "fsck --repair mends them"
expect_eq "$(stat -c %h home-B/precious)" 1 "B's file has one link again: none in the store or its quarantine"
expect_eq "$(cat home-B/precious)" "precious" "B's file is unchanged"
expect_eq "$(stat -c %h home-B/grab)" 1 "the log B linked to is no longer the store's"
expect_eq "$(stat -c %h "$lib_log")" 1 "the store's lib.a log is a file of its own"
expect_eq "$(find "$S/quarantine" -type f -links +1 | wc -l)" 0 "nothing in the quarantine has a second link"
expect_eq "$(stat -c %a "$planted" 2>/dev/null || echo none)" none "the planted link's name held no event: nothing left in its place"
expect_eq "$(find "$S/quarantine" -name "$(basename "$planted")" -printf '%m')" 600 "the quarantine's copy of the outside file is A's alone"
expect_eq "$(stat -c '%a %g' "$lib_log")" "664 $G" "the rebuilt lib.a log has the store's mode and group, not the outside link's"
run "${AS_A[@]}" "$FP" --store "$S" show --json lib.a
expect_json "$T/out" "sorted(e['build'] for e in d['producers']) == ['a1', 'a2']" "lib.a keeps both producer events"
run "${AS_A[@]}" "$FP" --store "$S" record --project lib --target lib2 --build-id a3 --produced lib2.a
expect_rc 0 "after the repair, A records lib2.a"
expect_eq "$(cat home-B/precious)" "precious" "and B's file still holds nothing of it"
run "${AS_A[@]}" "$FP" --store "$S" fsck
expect_rc 0 "fsck after the repair: no problems"
finish
