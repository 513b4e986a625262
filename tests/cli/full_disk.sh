#!/usr/bin/env bash
# A record call on a full disk (a 256 KiB tmpfs) fails whole: nothing of it
# in any log, no empty log left behind, a clear error; a retry once there is
# room records it once. Counts what was acknowledged against what is stored.
#
# Needs root, to mount the tmpfs; not root, or no mount allowed (a
# container): SKIP, exit 77 (the test's SKIP_RETURN_CODE).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: full_disk: needs root, to mount a small tmpfs"
  exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
mkdir disk
if ! mount -t tmpfs -o size=256k tmpfs disk 2>mount.err; then
  echo "SKIP: full_disk: cannot mount a tmpfs here: $(cat mount.err)"
  trap - EXIT
  rm -rf "$T"
  exit 77
fi
trap 'umount "$T/disk" 2>/dev/null || true; on_exit' EXIT

mkdir files
for i in $(seq 1 40); do echo "file $i" >"files/$i"; done
run "$FP" --store disk/s record --project p --target t --build-id first --produced files/1 --consumed files/2
expect_rc 0 "record while there is room"

# Fill the disk, leaving five pages. Each call below starts a build index
# and an artifact log of its own, a page each: two calls fit, then one finds
# room for its artifact log and not for its index, then none fits.
dd if=/dev/zero of=disk/room bs=4k count=5 2>/dev/null
dd if=/dev/zero of=disk/fill bs=4k 2>/dev/null || true
rm disk/room
acknowledged=1 failed=0 taken_back=0
for i in $(seq 3 40); do
  run "$FP" --store disk/s record --project p --target "t$i" --build-id "b$i" --produced "files/$i" --consumed files/2
  if ((RC == 0)); then
    acknowledged=$((acknowledged + 1))
  else
    failed=$((failed + 1))
    if grep -q 'were taken back' "$T/err"; then taken_back=$((taken_back + 1)); fi
    if ! grep -q 'nothing was recorded' "$T/err"; then
      fail "record $i failed without saying nothing was recorded: $ERR"
    fi
  fi
done
expect_eq "$((failed > 0))" 1 "records fail once the disk is full ($failed of 38 failed)"
expect_eq "$((acknowledged > 1))" 1 "records succeed until it is ($acknowledged acknowledged)"
expect_eq "$((taken_back > 0))" 1 "a call that had appended to some logs took them back ($taken_back)"
# Every acknowledged call's produced event, and nothing of a failed one.
stored=0 half=0
for i in 1 $(seq 3 40); do
  run "$FP" --store disk/s show "files/$i"
  if ((RC == 0)); then stored=$((stored + 1)); fi
done
expect_eq "$stored" "$acknowledged" "stored products equal acknowledged calls ($acknowledged)"
run "$FP" --store disk/s fsck
expect_rc 0 "fsck on the full disk: no one-sided events, no empty logs"
expect_in out "no problems" "fsck says so"
run "$FP" --store disk/s builds --json
expect_json "$T/out" "sum(b['produced'] for b in d) == $acknowledged" "the build indexes count the acknowledged products"
echo "figures: $acknowledged record calls ($((acknowledged * 2)) events) acknowledged, $stored stored, $failed refused on a full disk ($taken_back of them after appending to some logs, taken back)"

# Room again: a retry of a failed call records it once.
rm disk/fill
run "$FP" --store disk/s record --project p --target t40 --build-id b40 --produced files/40 --consumed files/2
expect_rc 0 "the retry records"
run "$FP" --store disk/s show --json files/40
expect_json "$T/out" "len(d['producers']) == 1" "the retried product has one producer event"
finish
