#!/usr/bin/env bash
# What each --deny-read path costs at launch: `corral run` with 0, 100 and
# 300 denied directories (all in one parent, each holding a file) against
# bubblewrap with a tmpfs over each, alternating.
# Target: corral's time at 300 paths at most bubblewrap's.
. "$(dirname "$0")/lib.sh"
bench_build bubblewrap
ROUNDS=${ROUNDS:-100}
TRUE=$(command -v true)
tree=$(mktemp -d /var/tmp/corral-bench-deny-XXXXXX)
trap 'rm -rf "$tree"' EXIT
deny=() tmpfs=()
for i in $(seq 1 300); do
  mkdir "$tree/d$i" && echo secret >"$tree/d$i/key"
  deny+=(--deny-read "$tree/d$i") tmpfs+=(--tmpfs "$tree/d$i")
done
BW=(bwrap --ro-bind / / --dev /dev --proc /proc --unshare-user --unshare-pid --unshare-net
  --die-with-parent)
# On a /tmp of its own (a fresh tmpfs, as on a new machine: corral reads
# /tmp on every run, and this machine's has grown large).
read -r -d '' results < <(unshare -m sh -c 'mount -t tmpfs tmpfs /tmp && cd /tmp && exec "$@"' sh \
  "$BUILD/bench/timing" "$ROUNDS" \
  "$CORRAL" run -- "$TRUE" ::: \
  "$CORRAL" run "${deny[@]:0:200}" -- "$TRUE" ::: \
  "$CORRAL" run "${deny[@]}" -- "$TRUE" ::: \
  "${BW[@]}" "$TRUE" ::: \
  "${BW[@]}" "${tmpfs[@]:0:200}" "$TRUE" ::: \
  "${BW[@]}" "${tmpfs[@]}" "$TRUE"; printf '\0')
col() { sed -n "${1}p" <<<"$results" | cut -d' ' -f1; }
c0=$(col 1) c100=$(col 2) c300=$(col 3) b0=$(col 4) b100=$(col 5) b300=$(col 6)
per() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b - a) * 1000 / 300}'; }
echo "corral run:  0 paths ${c0} ms, 100 paths ${c100} ms, 300 paths ${c300} ms" \
  "($(per "$c0" "$c300") us per path)"
echo "bwrap:       0 paths ${b0} ms, 100 paths ${b100} ms, 300 paths ${b300} ms" \
  "($(per "$b0" "$b300") us per path)"
ratio=$(awk -v c="$c300" -v b="$b300" 'BEGIN {printf "%.2f", c / b}')
echo "at 300 paths: ${ratio}x bubblewrap (target <= 1.0x)"
awk -v r="$ratio" 'BEGIN {exit !(r <= 1.0)}'
