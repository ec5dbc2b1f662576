#!/usr/bin/env bash
# Start-up cost of a sandboxed `true`: corral (default policy) against
# bubblewrap with a comparable sandbox and against bare `true`, alternating;
# first on a quiet machine, then with every CPU kept busy (one `yes` per
# CPU: an agent's commands run beside its builds and test suites).
# Targets: quiet, corral's median <= 0.6x bubblewrap's and <= 1.5 ms above
# `true`; under load, <= bubblewrap's.
. "$(dirname "$0")/lib.sh"
bench_build bubblewrap
ROUNDS=${ROUNDS:-300}
LOADED_ROUNDS=${LOADED_ROUNDS:-200}
TRUE=$(command -v true)
cd "$(mktemp -d)"
BW=(bwrap --ro-bind / / --dev /dev --proc /proc --unshare-user --unshare-pid --unshare-net
  --die-with-parent)
# On a /tmp of its own (a fresh tmpfs, as on a new machine: corral reads
# /tmp on every run, and a large one costs its reading time).
measure() {
  unshare -m sh -c 'mount -t tmpfs tmpfs /tmp && cd /tmp && exec "$@"' sh \
    "$BUILD/bench/timing" "$1" "$CORRAL" run -- "$TRUE" ::: "${BW[@]}" "$TRUE" ::: "$TRUE"
}
ratio() { awk -v c="$1" -v b="$2" 'BEGIN {printf "%.2f", c / b}'; }

read -r -d '' results < <(measure "$ROUNDS"; printf '\0')
c=$(sed -n 1p <<<"$results" | cut -d' ' -f1)
b=$(sed -n 2p <<<"$results" | cut -d' ' -f1)
t=$(sed -n 3p <<<"$results" | cut -d' ' -f1)
quiet=$(ratio "$c" "$b")
above=$(awk -v c="$c" -v t="$t" 'BEGIN {printf "%.3f", c - t}')
echo "quiet:  corral ${c} ms, bwrap ${b} ms, true ${t} ms"
echo "quiet:  ratio to bwrap ${quiet}x (target <= 0.6x); above bare true ${above} ms" \
  "(target <= 1.5 ms)"

hogs=()
for _ in $(seq "$(nproc)"); do yes >/dev/null & hogs+=($!); done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
read -r -d '' results < <(measure "$LOADED_ROUNDS"; printf '\0')
kill "${hogs[@]}"; wait "${hogs[@]}" 2>/dev/null || true
lc=$(sed -n 1p <<<"$results" | cut -d' ' -f1)
lb=$(sed -n 2p <<<"$results" | cut -d' ' -f1)
lt=$(sed -n 3p <<<"$results" | cut -d' ' -f1)
loaded=$(ratio "$lc" "$lb")
echo "loaded ($(nproc) CPUs busy): corral ${lc} ms, bwrap ${lb} ms, true ${lt} ms"
echo "loaded: ratio to bwrap ${loaded}x (target <= 1.0x)"
awk -v r="$quiet" -v a="$above" -v l="$loaded" 'BEGIN {exit !(r <= 0.6 && a <= 1.5 && l <= 1.0)}'
