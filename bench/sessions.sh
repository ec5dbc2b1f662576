#!/usr/bin/env bash
# The process manager: PTY echo round trip (median <= 1 ms), 64 idle
# sessions (no CPU while idle, measured over 10 s), 64 sessions flooding
# output (resident memory <= 64 x 2 MiB + 16 MiB).
. "$(dirname "$0")/lib.sh"
bench_build
read -r med p90 < <("$BUILD/bench/sessions" echo "${ROUNDS:-2000}")
echo "PTY echo round trip through a cat session: median ${med} ms, p90 ${p90} ms (target median <= 1 ms)"
idle=$("$BUILD/bench/sessions" idle 10)
echo "64 idle sessions over 10 s: manager CPU ${idle} ms (target: none)"
read -r rss bound < <("$BUILD/bench/sessions" flood)
echo "64 flooding sessions: peak RSS ${rss} KiB (target <= ${bound} KiB)"
awk -v m="$med" -v i="$idle" -v r="$rss" -v b="$bound" 'BEGIN {exit !(m <= 1.0 && i <= 5 && r <= b)}'
