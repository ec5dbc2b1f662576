#!/usr/bin/env bash
# What recording the sandbox's refusals costs (issue: say what the sandbox
# refused): every call that writes by path or connects waits on init while
# it looks.  Each workload alternates with the same under --no-refusals in
# one run (bench/timing), and the ratio is reported:
#   - unpacking 20,000 small files into the workspace (target <= 1.10x);
#   - building 200 C files with make -j2 (target <= 1.02x);
#   - launching `true` (target: +0.1 ms).
. "$(dirname "$0")/lib.sh"
bench_build gcc make tar
ROUNDS=${ROUNDS:-11}
TIMING=$BUILD/bench/timing
base=$(mktemp -d /var/tmp/corral-refusals-XXXXXX)
trap 'umount "$base" 2>/dev/null; rm -rf "$base"' EXIT
# On a tmpfs where one can be had (root): a disk's own noise (ext4 here
# slows down after mass deletions) would drown what is measured.
[ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4G corral-bench "$base" || true
cd "$base"
python3 - <<'PY'
import os
os.mkdir("src")
for d in range(200):
    os.mkdir("src/d%03d" % d)
    for f in range(100):
        with open("src/d%03d/f%02d.txt" % (d, f), "w") as fh:
            fh.write("x" * 100)
os.mkdir("c")
for i in range(200):
    with open("c/u%03d.c" % i, "w") as fh:
        fh.write("#include <stdio.h>\n#include <string.h>\n")
        fh.write("int f%d(const char *s) { return (int)strlen(s) + %d; }\n" % (i, i))
with open("c/Makefile", "w") as fh:
    fh.write("OBJS := $(patsubst %.c,%.o,$(wildcard *.c))\nall: $(OBJS)\n"
             "%.o: %.c\n\t$(CC) -O1 -c $< -o $@\nclean:\n\trm -f *.o\n")
PY
tar cf files.tar src && rm -rf src
mkdir ws
cp -r c ws/c
unpack="rm -rf out && mkdir out && tar xf $base/files.tar -C out"
build="make -s -C c clean && make -s -C c -j2"
cd ws
read -r unpack_on unpack_off < <("$TIMING" "$ROUNDS" "$CORRAL" run -- sh -c "$unpack" ::: \
  "$CORRAL" run --no-refusals -- sh -c "$unpack" | awk '{print $1}' | paste -sd' ')
read -r build_on build_off < <("$TIMING" "$ROUNDS" "$CORRAL" run -- sh -c "$build" ::: \
  "$CORRAL" run --no-refusals -- sh -c "$build" | awk '{print $1}' | paste -sd' ')
read -r true_on true_off < <("$TIMING" 300 "$CORRAL" run -- true ::: \
  "$CORRAL" run --no-refusals -- true | awk '{print $1}' | paste -sd' ')
ratio() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%.2f", x / y}'; }
echo "unpack 20,000 files: ${unpack_on} ms, off ${unpack_off} ms: $(ratio "$unpack_on" "$unpack_off")x (target <= 1.10x)"
echo "make -j2 of 200 C files: ${build_on} ms, off ${build_off} ms: $(ratio "$build_on" "$build_off")x (target <= 1.02x)"
echo "launch (true): ${true_on} ms, off ${true_off} ms: +$(awk -v x="$true_on" -v y="$true_off" 'BEGIN {printf "%.3f", x - y}') ms (target +0.1 ms)"
