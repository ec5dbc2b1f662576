#!/usr/bin/env bash
# What the sandbox adds to each system call: a loop of one-byte writes
# (bench/syscall_loop.c) unsandboxed, inside `corral run`, inside
# bubblewrap (which loads no seccomp filter by default), and inside
# bubblewrap given a one-instruction filter that allows everything — the
# kernel's fixed cost of running any seccomp filter at all.  Rounds
# alternate; medians of the loop's own ns per call (start-up excluded).
# Target: corral's filter costs nothing beyond that fixed cost (at most
# 1.05x the one-instruction filter).
. "$(dirname "$0")/lib.sh"
bench_build bubblewrap
ROUNDS=${ROUNDS:-9}
LOOP=$BUILD/bench/syscall_loop
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# SECCOMP_RET_ALLOW: BPF_RET|BPF_K (0x0006), jt 0, jf 0, k 0x7fff0000.
printf '\x06\x00\x00\x00\x00\x00\xff\x7f' >"$dir/allow.bpf"
BW=(bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent)
: >"$dir/none" >"$dir/corral" >"$dir/bwrap" >"$dir/filter"
for _ in $(seq "$ROUNDS"); do
  "$LOOP" >>"$dir/none"
  "$CORRAL" run -- "$LOOP" >>"$dir/corral"
  "${BW[@]}" "$LOOP" >>"$dir/bwrap"
  "${BW[@]}" --seccomp 9 "$LOOP" 9<"$dir/allow.bpf" >>"$dir/filter"
done
none=$(median <"$dir/none") corral=$(median <"$dir/corral")
bwrap=$(median <"$dir/bwrap") filter=$(median <"$dir/filter")
r() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
echo "ns per write: unsandboxed $none, corral $corral, bwrap $bwrap," \
  "bwrap with a one-instruction seccomp filter $filter"
echo "corral: $(r "$corral" "$none")x unsandboxed, $(r "$corral" "$filter")x the" \
  "one-instruction filter (target <= 1.05x); that filter alone: $(r "$filter" "$none")x"
awk -v c="$corral" -v f="$filter" 'BEGIN {exit !(c <= 1.05 * f)}'
