#!/usr/bin/env bash
# What the limits cost.
#  1. Launch: `corral run -- true` with the default limits against the same
#     with every limit off, alternating.  Target: at most +0.2 ms.
#  2. The watch: CPU time of corral's init while the command idles for
#     10 s (`sleep 10`), with the default limits and with none (the
#     reference: init's own waiting).  Target: under 1 ms of CPU.
# As root: init is not dumpable, and only root reads its schedstat.
. "$(dirname "$0")/lib.sh"
bench_build
ROUNDS=${ROUNDS:-400}
TRUE=$(command -v true)
OFF=(--max-procs none --memory none --max-file-size none --max-open-files none --cpu-time none)
cd "$(mktemp -d)"
# On a /tmp of its own (a fresh tmpfs, as on a new machine: a large /tmp
# costs every run the time to read it, the same with limits and without).
read -r -d '' results < <(unshare -m sh -c 'mount -t tmpfs tmpfs /tmp && cd /tmp && exec "$@"' sh \
  "$BUILD/bench/timing" "$ROUNDS" \
  "$CORRAL" run -- "$TRUE" ::: "$CORRAL" run "${OFF[@]}" -- "$TRUE"; printf '\0')
on=$(sed -n 1p <<<"$results" | cut -d' ' -f1)
off=$(sed -n 2p <<<"$results" | cut -d' ' -f1)
delta=$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a - b}')
echo "launch: limits on ${on} ms, off ${off} ms: +${delta} ms (target <= +0.2 ms)"

# init's CPU (ns, from schedstat) between 0.5 s and 10.5 s of a sleep 11.
watch_cpu() {
  "$CORRAL" run "$@" -- sleep 11 & local cr=$!
  sleep 0.5
  local init; init=$(pgrep -P "$cr" | head -1)
  local a; a=$(cut -d' ' -f1 "/proc/$init/schedstat")
  sleep 10
  local b; b=$(cut -d' ' -f1 "/proc/$init/schedstat")
  wait "$cr"
  echo $((b - a))
}
# Three of each, the median (a wakeup on this machine's hypervisor costs
# 60-120 us of CPU, and now and then much more).
w_on=$(for _ in 1 2 3; do watch_cpu; done | median)
w_off=$(for _ in 1 2 3; do watch_cpu "${OFF[@]}"; done | median)
w_on=${w_on%.*}; w_off=${w_off%.*}
echo "watch: init's CPU over 10 s idle: limits on $((w_on / 1000)) us, off $((w_off / 1000)) us" \
  "(target: under 1000 us)"
awk -v d="$delta" -v w="$w_on" 'BEGIN {exit !(d <= 0.2 && w < 1000000)}'
