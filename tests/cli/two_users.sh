# Two users of one group for the shared-store tests, sourced after lib.sh:
# $G the group, $UA and $UB the users, "${AS_A[@]}" CMD... and
# "${AS_B[@]}" CMD... run CMD as each (in $T/work-A, $T/work-B, with homes
# $T/home-A, $T/home-B), and $FP a copy of the runner they can reach.
# Needs root (setpriv); the caller checks.

# Ids no account or group uses: G the shared group; A and B each have a
# private group of their own id and G only as a supplementary group, so a
# file gets group G only through the setgid bit (with G as their primary
# group, a lost setgid bit would go unseen).
unused_id() {
  local id=$1
  while getent passwd "$id" >/dev/null || getent group "$id" >/dev/null; do id=$((id + 1)); done
  echo "$id"
}
G=$(unused_id 47100)
UA=$(unused_id $((G + 1)))
UB=$(unused_id $((UA + 1)))

# "${AS_A[@]}" CMD... runs CMD as user A (AS_B: B), in its work directory,
# with its own HOME and none of the cache or store variables this shell has;
# the last word is env, so NAME=VALUE or -u NAME may come before CMD.
# Arrays, not a function: `run` hands them to timeout, which runs a program.
unset_vars=(-u FINGERPRINT_CACHE_DIR -u XDG_CACHE_HOME -u XDG_DATA_HOME -u FINGERPRINT_DIR)
AS_A=(setpriv --reuid="$UA" --regid="$UA" --groups="$G" env -C "$T/work-A" "${unset_vars[@]}" HOME="$T/home-A" env)
AS_B=(setpriv --reuid="$UB" --regid="$UB" --groups="$G" env -C "$T/work-B" "${unset_vars[@]}" HOME="$T/home-B" env)

# $T (root's, mode 700) becomes traversable by group G only.
chgrp "$G" "$T"
chmod 750 "$T"
# The runner where the users can reach it, wherever the build tree is (a
# clone under a private directory, as mktemp -d makes, is not traversable).
mkdir -m 755 "$T/bin"
cp "$FP" "$T/bin/fingerprint"
FP=$T/bin/fingerprint
for who in A B; do
  uid=$UA
  if [[ $who == B ]]; then uid=$UB; fi
  mkdir -m 700 "home-$who"
  mkdir -m 755 "work-$who"
  chown "$uid:$uid" "home-$who" "work-$who"
done
