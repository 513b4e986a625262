#!/usr/bin/env bash
# A group-shared store (README, "The store"): two users of one group record
# into a setgid store directory an admin made, append to each other's logs
# and repair each other's logs; directories keep the group and the setgid
# bit, files the group write bit the umask allows. Each user's digest cache
# stays that user's own.
#
# Needs root, to run the runner as other users: setpriv with numeric ids,
# which needs no entry in /etc/passwd or /etc/group (nothing on the machine
# changes). Not root: SKIP, exit 77 (the test's SKIP_RETURN_CODE).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: shared_store: needs root, to run the runner as two users of one group (setpriv)"
  exit 77
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh" "$@"

source "$HERE/two_users.sh"
printf 'library bytes\n' >work-A/lib.a
printf 'application bytes\n' >work-B/app
printf 'plugin bytes\n' >work-A/plugin
printf 'generator bytes\n' >work-A/gen
printf 'second application\n' >work-B/app2
chown "$UA:$UA" work-A/*
chown "$UB:$UB" work-B/*
lib=$(sha256sum work-A/lib.a | cut -c1-64)
app=$(sha256sum work-B/app | cut -c1-64)
plugin=$(sha256sum work-A/plugin | cut -c1-64)
gen=$(sha256sum work-A/gen | cut -c1-64)
log_of() { echo "$S/objects/sha256/${1:0:2}/$1.jsonl"; }
# combine NAME=FILE...: one JSON object of saved `show --json` outputs (null
# for an empty one), so that one python3 run checks them all.
combine() {
  local sep='{' arg
  for arg; do
    printf '%s"%s": ' "$sep" "${arg%%=*}"
    if [[ -s ${arg#*=} ]]; then cat "${arg#*=}"; else printf null; fi
    sep=,
  done
  printf '}\n'
}

# The admin's part: a store directory of group G, setgid, group-writable.
S=$T/store
mkdir "$S"
chgrp "$G" "$S"
chmod 2775 "$S"

run "${AS_A[@]}" "$FP" --version
expect_rc 0 "user A can run the runner (it and \$T are reachable)"
run "${AS_B[@]}" cat "$T/work-A/lib.a"
expect_rc 0 "user B can read A's build output (the consumed file)"
# A digest is cached only for a file last changed a timestamp tick before
# it was read; the files above are far older than that by the first record.
sleep 0.05

umask 002
# 1. A produces lib.a: A makes the format file, the log, the build index.
run "${AS_A[@]}" "$FP" --store "$S" record --project lib --target lib --build-id a1 --produced lib.a
expect_rc 0 "umask 002: A records lib.a into the new store"
# 2. B consumes lib.a (B makes the reverse index's journal) and produces app.
run "${AS_B[@]}" "$FP" --store "$S" record --project app --target app --build-id b1 --produced app --consumed ../work-A/lib.a
expect_rc 0 "umask 002: B records app consuming A's lib.a"
# 3. A, in the same build as B, consumes app and lib.a: appends to B's
#    build index and to the reverse index's journal B made.
run "${AS_A[@]}" "$FP" --store "$S" record --project app --target plugin --build-id b1 --produced plugin \
  --consumed ../work-B/app ../work-A/lib.a
expect_rc 0 "umask 002: A records plugin consuming B's app (appends to B's build index and reverse index)"

# Fails when an append went missing (B could not write A's log, or the
# other way round, and the runner did not say so).
run "$FP" --store "$S" show --json work-A/lib.a
expect_rc 0 "show --json lib.a"
cp "$T/out" lib.json
run "$FP" --store "$S" show --json work-B/app
expect_rc 0 "show --json app"
cp "$T/out" app.json
run "$FP" --store "$S" show --json work-A/plugin
expect_rc 0 "show --json plugin"
cp "$T/out" plugin.json
combine lib=lib.json app=app.json plugin=plugin.json >shown.json
expect_json_each shown.json <<EOF
lib.a: one producer, A's build a1 :: [(e["project"], e["build"]) for e in d["lib"]["producers"]] == [("lib", "a1")]
lib.a: two consumers, B's app and A's plugin :: sorted((e["target"], e["product"]) for e in d["lib"]["consumers"]) == [("app", "sha256:$app"), ("plugin", "sha256:$plugin")]
app: one producer, B's build b1 :: [(e["target"], e["build"]) for e in d["app"]["producers"]] == [("app", "b1")]
app: one consumer, A's plugin :: [(e["target"], e["product"]) for e in d["app"]["consumers"]] == [("plugin", "sha256:$plugin")]
plugin: one producer, A's :: [e["target"] for e in d["plugin"]["producers"]] == ["plugin"]
EOF
index=$S/builds/app/b1.jsonl
expect_eq "$(grep -c . "$index" || true)" 2 "build app/b1's index holds B's event and A's"

# The users really are A and B, writing each other's files (else the mode
# checks below would prove nothing): fails when `as` ran things as root.
owner_has() { # FILE UID TEXT WHAT (a reverse index's lines are read as the manifests they name)
  local read=(cat)
  [[ $1 == */inputs/*/??/* ]] && read=(checks_py reverse-index)
  [[ $1 == */inputs/*/journal ]] && read=(checks_py journal)
  if [[ $(stat -c %u "$1") == "$2" ]] && "${read[@]}" "$1" | grep -qF -- "$3"; then
    _result 1 "$4"
  else
    _result 0 "$4: $1 is owned by $(stat -c %u "$1"), expected $2, or lacks '$3'"
  fi
}
plugin_inputs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["producers"][0]["inputs"][7:])' plugin.json)
owner_has "$S/inputs/sha256/journal" "$UB" "$plugin_inputs" "the reverse index's journal is B's and holds A's line"
# A folds it: lib.a's reverse index file is A's, B's journal is gone.
run "${AS_A[@]}" "$FP" --store "$S" fsck --repair
expect_rc 0 "A's fsck --repair folds B's journal"
expect_no_file "$S/inputs/sha256/journal" "the journal B made is folded and gone"
owner_has "$S/inputs/sha256/${lib:0:2}/$lib" "$UA" "$plugin_inputs" "lib.a's reverse index entry is A's and holds A's line"
owner_has "$(log_of "$plugin_inputs")" "$UA" '"target":"plugin"' "plugin's manifest log is A's and lists plugin"
owner_has "$index" "$UB" '"target":"plugin"' "build app/b1's index is B's and holds A's events"

# expect_modes WHAT MIN FIND-ARGS...: at least MIN entries under the store
# match FIND-ARGS, and each is group G and passes `test_mode` (octal mode).
expect_modes() {
  local what=$1 min=$2 bad=() mode group path seen=0
  shift 2
  while read -r mode group path; do
    seen=$((seen + 1))
    if [[ $group != "$G" ]] || ! test_mode "$mode"; then bad+=("$mode $group $path"); fi
  done < <(find "$S" "$@" -printf '%m %g %P\n')
  if ((seen < min)); then
    _result 0 "$what: found $seen, expected at least $min"
  elif ((${#bad[@]} == 0)); then
    _result 1 "$what"
  else
    _result 0 "$what; not so (mode group path):"$'\n'"$(printf '  | %s\n' "${bad[@]}")"
  fi
}
# The setgid and group write bits on every directory. Fails when mkdir uses
# a fixed 0755 or chmods what it made (losing the group write or setgid
# bit), or a directory is made elsewhere and renamed in (wrong group).
sweep_umask_002() {
  test_mode() { (((8#$1 & 02020) == 02020)); }
  expect_modes "$1: every directory is group G, setgid, group-writable" 7 -type d
  # Fails when a log, index, format file or temp file is created 0644 or
  # 0600, or lands in a directory without the setgid bit (group not G).
  test_mode() { (((8#$1 & 020) == 020)); }
  expect_modes "$1: every file is group G and group-writable" 6 -type f
  test_mode() { false; }
  expect_modes "$1: nothing but directories and files (no symlinks, no leftovers of other types)" 0 ! -type d ! -type f
  local temps
  temps=$(find "$S" -name '*.tmp.*' -o -name '*.compact.*' -o -name '*.repair.*')
  expect_eq "$temps" "" "$1: no temporary file is left behind"
}
sweep_umask_002 "after A and B recorded with umask 002"

# 4. B repairs A's log: fsck --repair rebuilds it through a temporary file
#    renamed over it, as compaction does (no subcommand compacts; this is
#    the command-line path that rewrites a log). A crashed writer's torn
#    line makes it need repair; the original goes to quarantine/.
printf '{"v":1,"event":"produced","dig' >>"$(log_of "$lib")"
run "${AS_B[@]}" "$FP" --store "$S" fsck --repair
expect_rc 0 "umask 002: B runs fsck --repair, rebuilding A's log with its torn line"
expect_not_in both "Permission denied" "fsck --repair by B"
if tail -c1 "$(log_of "$lib")" | od -An -c | grep -q '\\n'; then
  _result 1 "the torn line is gone from lib.a's log"
else
  _result 0 "lib.a's log still ends in the torn line (the repair did not happen)"
fi
# The rebuilt log is B's now; A must still append to it.
run "${AS_A[@]}" "$FP" --store "$S" record --project lib --target lib --build-id a1b --produced lib.a
expect_rc 0 "umask 002: A appends to the log B rebuilt"
sweep_umask_002 "after B's repair and A's append"
# Fails when a rebuilt log drops the events that were there.
run "$FP" --store "$S" show --json work-A/lib.a
cp "$T/out" lib2.json
expect_json lib2.json '[e["build"] for e in d["producers"]] == ["a1", "a1b"] and len(d["consumers"]) == 2' \
  "lib.a after the repair: producers a1 and a1b, its two consumers"

# 5. umask 022: what a user's umask withholds, the store does not add back.
# A new log and a new directory are not group-writable; B then cannot
# append to that log (below), nor make new logs in that directory.
# Fingerprint does not chmod g+w behind the user's umask: sharing is the
# admin's choice, made with umask 002 for the group's members (pam_umask,
# or UMASK 002 with USERGROUPS_ENAB in login.defs) or a default ACL on the
# store (setfacl -d -m g::rwx), which the 0666/0777 creation modes let
# through.
umask 022
run "${AS_A[@]}" "$FP" --store "$S" record --project tools --target gen --build-id a2 --produced gen --consumed ../work-B/app
expect_rc 0 "umask 022: A records gen (a new log, a new builds/tools directory) consuming B's app"
umask 002
gen_log=$(log_of "$gen")
# Fails when the store forces group write bits against the umask.
expect_eq "$(stat -c '%a %g' "$gen_log")" "644 $G" "umask 022: gen's new log is 644 and (setgid) group G"
expect_eq "$(stat -c '%a %g' "$S/builds/tools")" "2755 $G" \
  "umask 022: the new builds/tools is 2755, group G (setgid inherited, group write not)"
# Fails when an append changes an existing file's mode.
expect_eq "$(stat -c '%a' "$S/builds/app/b1.jsonl")" 664 "umask 022: B's build index A appended to is still 664"

# 6. A repair by a user whose umask is 022 keeps a shared log shared: the
# rebuilt log gets the mode the old one had. Fails when the temporary file's
# mode comes from the repairing user's umask (A, who appended to B's log
# before, could no longer).
printf '{"v":1,"event":"produced","dig' >>"$(log_of "$app")"
umask 022
run "${AS_B[@]}" "$FP" --store "$S" fsck --repair
umask 002
expect_rc 0 "umask 022: B runs fsck --repair on its own app log (torn)"
expect_eq "$(stat -c '%a %g' "$(log_of "$app")")" "664 $G" "umask 022: the log B rebuilt is still 664, group G"
run "${AS_A[@]}" "$FP" --store "$S" record --project app --target app --build-id b3 --produced ../work-B/app
expect_rc 0 "A appends to the log B rebuilt under umask 022"

# Last of the store runs (a half-recorded step would give fsck work): B,
# with the group-writable umask, cannot append to gen's umask-022 log.
run "${AS_B[@]}" "$FP" --store "$S" record --project tools --target gen --build-id b2 --produced ../work-A/gen
expect_rc 1 "B cannot record gen again (A's umask 022 log)"
expect_in err "$gen.jsonl" "B's failure names gen's log"
expect_in err "Permission denied" "B's failure says why"

# 7. Digest caches. Each user's is under its own HOME, private, holding
# only its own entries. Fails when the cache directory or its entries follow
# the umask (group G could write into A's cache) or a user's run wrote into
# the other's.
for who in A B; do
  uid=$UA
  if [[ $who == B ]]; then uid=$UB; fi
  cache=$T/home-$who/.cache/fingerprint
  expect_eq "$(find "$cache" -type f 2>/dev/null | wc -l | awk '{print ($1 > 0)}')" 1 "$who's cache under its HOME has entries"
  expect_eq "$(find "$T/home-$who" ! -user "$uid" -printf '%u %P\n')" "" "$who's HOME holds only $who's files"
  expect_eq "$(find "$cache" \( -perm /077 -o ! -group "$uid" \) -printf '%m %g %P\n')" "" \
    "$who's cache: no group or other permission bits"
done

# HOME unset and no cache variable: no cache, and no failure. Fails when the
# runner needs HOME or falls back to a cache in the working directory.
before=$(snapshot "$T/home-A")
run "${AS_A[@]}" -u HOME "$FP" --store "$S" show --json lib.a
expect_rc 0 "A without HOME: show lib.a"
cp "$T/out" homeless.json
expect_eq "$(find "$T/work-A" -mindepth 1 ! -name '*.a' ! -name plugin ! -name gen -printf '%P\n')" "" \
  "A without HOME: nothing new in the working directory"
expect_eq "$(snapshot "$T/home-A")" "$before" "A without HOME: A's usual cache is untouched"

# One cache directory inherited by both users ($FINGERPRINT_CACHE_DIR in a
# group-writable setgid place): A's run makes it; B's neither fails nor
# writes into it. Fails when the cache directories follow the umask (B's
# entries would land in A's cache).
mkdir shared
chgrp "$G" shared
chmod 2775 shared
C=$T/shared/cache
run "${AS_A[@]}" FINGERPRINT_CACHE_DIR="$C" "$FP" --store "$S" show --json lib.a
expect_rc 0 "shared cache: A shows lib.a"
run "${AS_B[@]}" FINGERPRINT_CACHE_DIR="$C" "$FP" --store "$S" show --json app
expect_rc 0 "shared cache: B shows app"
cp "$T/out" shared.json
expect_eq "$(find "$C" -type f 2>/dev/null | wc -l | awk '{print ($1 > 0)}')" 1 "shared cache: A's entries are there"
expect_eq "$(find "$C" ! -user "$UA" -printf '%u %P\n')" "" "shared cache: B wrote nothing into A's cache"

# An entry of another user's is not trusted, even where it can be read (an
# admin opened the cache up): a co-user could name any digest for B's files.
# The forged entry gives app the digest of lib.a. Fails when lookup does not
# check the entry's owner. The control (the same entry owned by B is used)
# shows the entry is well-formed and where the cache looks.
forge_entry() { # OWNER: an entry for work-B/app claiming lib.a's digest, in A's table
  local dev ino size mtime ctime
  read -r dev ino size mtime ctime < <(stat -c '%d %i %s %.9Y %.9Z' "$T/work-B/app")
  # The slot as DigestCache writes it (src/fingerprint/digest/cache.cpp):
  # sequence, device, inode, size, mtime, ctime, checksum, the raw digest.
  python3 - "$C/digests/sha256.table" "$dev" "$ino" "$size" "${mtime/./}" "${ctime/./}" "$lib" <<'PY'
import struct, sys
path, dev, ino, size, mtime, ctime, hexdigest = sys.argv[1], *map(int, sys.argv[2:7]), sys.argv[7]
M = (1 << 64) - 1
def mix(x):
    x ^= x >> 30; x = (x * 0xbf58476d1ce4e5b9) & M
    x ^= x >> 27; x = (x * 0x94d049bb133111eb) & M
    return x ^ (x >> 31)
digest = struct.unpack("<4Q", bytes.fromhex(hexdigest))
check = mix(dev ^ 0x66696E6765727072)
for word in (ino, size, mtime, ctime) + digest:
    check = mix(check ^ word)
home = mix(((dev * 0x9E3779B97F4A7C15) & M) ^ ino) & 0xFFFF
with open(path, "r+b") as table:
    table.seek((8 + home * 11) * 8)
    table.write(struct.pack("<11Q", 2, dev, ino, size, mtime, ctime, check | 1, *digest))
PY
  chown "$1" "$C/digests/sha256.table"
  chmod -R a+rX "$C"
}
forge_entry "$UA"
run "${AS_B[@]}" FINGERPRINT_CACHE_DIR="$C" "$FP" --store "$S" show --json app
expect_rc 0 "forged cache entry of A's: B shows app"
cp "$T/out" forged.json
forge_entry "$UB"
run "${AS_B[@]}" FINGERPRINT_CACHE_DIR="$C" "$FP" --store "$S" show --json app
cp "$T/out" control.json
combine homeless=homeless.json shared=shared.json forged=forged.json control=control.json >digests.json
expect_json_each digests.json <<EOF
A without HOME: lib.a's digest :: d["homeless"]["digest"] == "sha256:$lib"
shared cache: B's digest of app :: d["shared"]["digest"] == "sha256:$app"
B's digest of app is app's, not the one A's cache entry names :: d["forged"]["digest"] == "sha256:$app"
control: the same forged entry, owned by B, is used :: d["control"]["digest"] == "sha256:$lib"
EOF

finish
