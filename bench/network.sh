#!/usr/bin/env bash
# Network mode filter (issue: network by name), on the host's loopback,
# each pair alternating in one run:
#   - 1 GiB through the proxy (a CONNECT tunnel from inside the sandbox)
#     against the same transfer without the sandbox (target <= 1.15x);
#   - connection set-up added by the proxy, per connection (<= 0.3 ms);
#   - the supervisor's memory with 1,000 idle tunnels (< 16 MiB);
#   - launch of a filter run against a deny run (<= +0.3 ms).
# The name is mapped to the loopback server through CORRAL_PROXY_HOSTS.
. "$(dirname "$0")/lib.sh"
bench_build python3
ROUNDS=${ROUNDS:-5}
LAUNCH_ROUNDS=${LAUNCH_ROUNDS:-200}
SIZE=${SIZE:-1073741824}
ulimit -n 8192
dir=$(mktemp -d /var/tmp/corral-netbench-XXXXXX)
python3 "$BENCH_DIR/network.py" server "$dir/port" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
port=$(cat "$dir/port")
echo "127.0.0.1 bench.test" > "$dir/hosts"
export CORRAL_PROXY_HOSTS="$dir/hosts"
cd "$dir"
policy=(--allow-domain "bench.test:$port" --allow-address 127.0.0.1)
client=(python3 "$BENCH_DIR/network.py" client)
inside() { "$CORRAL" run "${policy[@]}" -- env PROXY=127.0.0.1:3128 "${client[@]}" "$@"; }

direct=() proxied=()
for _ in $(seq "$ROUNDS"); do
  direct+=("$("${client[@]}" "bulk$SIZE" 127.0.0.1 "$port")")
  proxied+=("$(inside "bulk$SIZE" bench.test "$port")")
done
d=$(printf '%s\n' "${direct[@]}" | median)
p=$(printf '%s\n' "${proxied[@]}" | median)
bulk=$(awk -v p="$p" -v d="$d" 'BEGIN {printf "%.2f", p / d}')
echo "throughput: $((SIZE >> 20)) MiB direct ${d} s, through the proxy ${p} s: ${bulk}x (target <= 1.15x)"

direct=() proxied=()
for _ in $(seq "$ROUNDS"); do
  direct+=("$("${client[@]}" ping200 127.0.0.1 "$port")")
  proxied+=("$(inside ping200 bench.test "$port")")
done
d=$(printf '%s\n' "${direct[@]}" | median)
p=$(printf '%s\n' "${proxied[@]}" | median)
added=$(awk -v p="$p" -v d="$d" 'BEGIN {printf "%.3f", (p - d) * 1000}')
echo "connection set-up: direct $(awk -v d="$d" 'BEGIN {printf "%.3f", d * 1000}') ms," \
  "through the proxy $(awk -v p="$p" 'BEGIN {printf "%.3f", p * 1000}') ms: +${added} ms (target <= 0.3 ms)"

rm -f mark done
MARK=$dir/mark DONE=$dir/done "$CORRAL" run "${policy[@]}" -- env PROXY=127.0.0.1:3128 \
  MARK="$dir/mark" DONE="$dir/done" "${client[@]}" hold1000 bench.test "$port" >/dev/null &
run=$!
rss() { awk '/^VmRSS/ {print $2}' "/proc/$run/status"; }
until [ "$(cat mark 2>/dev/null)" = 0 ]; do sleep 0.05; done
rss0=$(rss)
until [ "$(cat mark 2>/dev/null)" = 1000 ]; do sleep 0.05; done
sleep 0.5
rss1=$(rss)
touch done
wait $run
echo "memory: supervisor RSS ${rss0} KiB idle, ${rss1} KiB with 1,000 idle tunnels" \
  "(+$((rss1 - rss0)) KiB; target under 16 MiB)"

read -r -d '' results < <("$BUILD/bench/timing" "$LAUNCH_ROUNDS" "$CORRAL" run "${policy[@]}" -- true \
  ::: "$CORRAL" run -- true; printf '\0')
f=$(sed -n 1p <<<"$results" | cut -d' ' -f1)
n=$(sed -n 2p <<<"$results" | cut -d' ' -f1)
launch=$(awk -v f="$f" -v n="$n" 'BEGIN {printf "%.3f", f - n}')
echo "launch: filter ${f} ms, deny ${n} ms: +${launch} ms (target <= 0.3 ms)"
awk -v b="$bulk" -v a="$added" -v m="$rss1" -v l="$launch" \
  'BEGIN {exit !(b <= 1.15 && a <= 0.3 && m < 16384 && l <= 0.3)}'
