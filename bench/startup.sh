#!/usr/bin/env bash
# Start-up cost of a sandboxed `true`: corral (default policy) against
# bubblewrap with a comparable sandbox and against bare `true`, alternating.
# Targets: corral's median <= 0.6x bubblewrap's, and <= 1.5 ms above `true`.
. "$(dirname "$0")/lib.sh"
bench_build bubblewrap
ROUNDS=${ROUNDS:-300}
TRUE=$(command -v true)
cd "$(mktemp -d)"
read -r -d '' results < <("$BUILD/bench/timing" "$ROUNDS" \
  "$CORRAL" run -- "$TRUE" ::: \
  bwrap --ro-bind / / --dev /dev --proc /proc --unshare-user --unshare-pid --unshare-net \
        --die-with-parent "$TRUE" ::: \
  "$TRUE"; printf '\0')
c=$(sed -n 1p <<<"$results" | cut -d' ' -f1)
b=$(sed -n 2p <<<"$results" | cut -d' ' -f1)
t=$(sed -n 3p <<<"$results" | cut -d' ' -f1)
ratio=$(awk -v c="$c" -v b="$b" 'BEGIN {printf "%.2f", c / b}')
above=$(awk -v c="$c" -v t="$t" 'BEGIN {printf "%.3f", c - t}')
echo "corral run -- true: median ${c} ms"
echo "bwrap ... true:     median ${b} ms"
echo "true:               median ${t} ms"
echo "ratio to bwrap ${ratio}x (target <= 0.6x); above bare true ${above} ms (target <= 1.5 ms)"
awk -v r="$ratio" -v a="$above" 'BEGIN {exit !(r <= 0.6 && a <= 1.5)}'
