#!/usr/bin/env bash
# exec_command of `true` through `corral mcp`: median added latency over
# `corral run -- true` (target <= 1 ms), and the server's resident memory
# after 1,000 calls within 1 MiB of its size after 10 (no growth).
. "$(dirname "$0")/lib.sh"
bench_build python3
ws=$(mktemp -d /var/tmp/corral-mcp-bench-XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
TRUE=$(command -v true)
read -r run _ < <("$BUILD/bench/timing" 200 "$CORRAL" run -- "$TRUE")
read -r mcp _ _ < <(python3 "$BENCH_DIR/mcp_client.py" "$CORRAL" "$ws" 200)
read -r run2 _ < <("$BUILD/bench/timing" 200 "$CORRAL" run -- "$TRUE")
read -r _ rss10 rss1000 < <(python3 "$BENCH_DIR/mcp_client.py" "$CORRAL" "$ws" 1000)
runm=$(awk -v a="$run" -v b="$run2" 'BEGIN {printf "%.4f", (a + b) / 2}')
added=$(awk -v m="$mcp" -v r="$runm" 'BEGIN {printf "%.3f", m - r}')
echo "corral run -- true:                  median ${runm} ms (before and after)"
echo "exec_command true via corral mcp:    median ${mcp} ms, 200 calls in a row"
echo "added latency: ${added} ms (target <= 1 ms)"
echo "server RSS after 10 calls ${rss10} KiB, after 1000 calls ${rss1000} KiB (target: within 1024 KiB)"
awk -v a="$added" -v x="$rss10" -v y="$rss1000" 'BEGIN {exit !(a <= 1.0 && y - x <= 1024)}'
