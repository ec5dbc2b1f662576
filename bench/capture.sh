#!/usr/bin/env bash
# Capture throughput and memory: 1 GiB on stdout through `corral run`,
# against `head | cat >/dev/null` in the same run, alternating.
# Targets: corral's wall time <= 1.3x the reference, peak RSS <= 8 MiB.
. "$(dirname "$0")/lib.sh"
bench_build
ROUNDS=${ROUNDS:-7}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$ROUNDS"); do
  /usr/bin/time -f "%e %M" -o "$tmp/c" "$CORRAL" run --unsandboxed -- head -c 1G /dev/zero >/dev/null 2>&1
  /usr/bin/time -f "%e %M" -o "$tmp/r" sh -c 'head -c 1G /dev/zero | cat >/dev/null'
  cut -d' ' -f1 "$tmp/c" >> "$tmp/c_wall"; cut -d' ' -f2 "$tmp/c" >> "$tmp/c_rss"
  cut -d' ' -f1 "$tmp/r" >> "$tmp/r_wall"
done
cw=$(median < "$tmp/c_wall"); rw=$(median < "$tmp/r_wall")
rss=$(sort -n "$tmp/c_rss" | tail -1)
ratio=$(awk -v a="$cw" -v b="$rw" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
echo "corral run --unsandboxed -- head -c 1G /dev/zero: median ${cw}s, peak RSS ${rss} KiB"
echo "head -c 1G /dev/zero | cat >/dev/null:          median ${rw}s"
echo "ratio ${ratio}x (target <= 1.3x); peak RSS $((rss / 1024)) MiB (target <= 8 MiB)"
awk -v r="$ratio" -v m="$rss" 'BEGIN {exit !(r <= 1.3 && m <= 8192)}'
