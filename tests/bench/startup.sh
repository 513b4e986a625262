#!/usr/bin/env bash
# The runner's start-up, side by side with /bin/true: CPU time (perf stat's
# task-clock, mean of 400 runs) of `<runner> --version`, for each runner
# given, in alternating rounds; the median round is the figure. E.g. the
# static runner against one linked with a shared glibc:
#   tests/bench/startup.sh build/runner/fingerprint /tmp/fingerprint-dynamic
set -euo pipefail
(($# > 0)) || { echo "usage: $0 RUNNER..." >&2; exit 2; }
command -v perf >/dev/null || { echo "$0: needs perf (apt-get install linux-perf)" >&2; exit 1; }
rounds=${ROUNDS:-5}
declare -A times
for ((round = 0; round < rounds; round++)); do
  for binary in /bin/true "$@"; do
    args=()
    [[ $binary == /bin/true ]] || args=(--version)
    ms=$(perf stat -r 400 -x, -e task-clock "$binary" "${args[@]}" 2>&1 >/dev/null | tail -1 | cut -d, -f1)
    times[$binary]+="$ms "
  done
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
printf '%-50s %s\n' "program" "task-clock ms (median of $rounds rounds; all rounds)"
for binary in /bin/true "$@"; do
  median=$(tr ' ' '\n' <<<"${times[$binary]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-50s %s  (%s)\n' "$binary" "$median" "${times[$binary]% }"
done
