#!/usr/bin/env bash
# What change reports cost (issue: change reports at no cost), alternating
# in one run (bench/changes.py):
#   - corral mcp exec_command `true` with changes on, in workspaces of
#     20,000 / 100,000 / 500,000 files against an empty one
#     (targets <= 1.3x at 20,000, <= 2x at 500,000);
#   - a command appending to 100 files in the 20,000-file one, changes on
#     minus changes off, against one `git status --porcelain` (<= 0.25x);
#   - corral run --changes -- true there against git status (<= 0.5x);
#   - the server's resident memory once it watches 100,000 files (<= 32 MiB).
# Workspaces: directories of 20 files; BIG=0 leaves out the 500,000.  A
# workspace that wide costs every run a little without change reports too
# (the nested repositories looked for at launch): "changes off there" says
# how much of a ratio is the observer's.
. "$(dirname "$0")/lib.sh"
bench_build git python3
ROUNDS=${ROUNDS:-30}
BIG=${BIG:-1}
base=$(mktemp -d /var/tmp/corral-changes-XXXXXX)
trap 'rm -rf "$base"' EXIT
python3 - "$base" "$BIG" <<'PY'
import os, sys
base, big = sys.argv[1], sys.argv[2] == "1"
block = os.urandom(1024)
for name, dirs, size in [("empty", 0, 0), ("ws20k", 1000, 1), ("ws100k", 5000, 1),
                         ("ws500k", 25000 if big else 0, 0)]:
    root = os.path.join(base, name)
    os.mkdir(root)
    for d in range(dirs):
        p = os.path.join(root, "d%04d" % (1000 + d) if dirs <= 1000 else "d%05d" % d)
        os.mkdir(p)
        for f in range(20):
            with open(os.path.join(p, "f%02d.txt" % f), "wb") as fh:
                fh.write(block * size)
PY
(cd "$base/ws20k" && git init -q && git add -A &&
  git -c user.email=b@example.invalid -c user.name=b commit -qm init)
sleep 1
big_ws=()
[ "$BIG" = 1 ] && big_ws=("$base/ws500k")
declare -A m
while read -r k v; do m[$k]=$v; done < <(python3 "$BENCH_DIR/changes.py" "$CORRAL" \
  "$base/empty" "$base/ws20k" "$base/ws100k" "${big_ws[@]}" "$ROUNDS")
ratio() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%.2f", x / y}'; }
r20=$(ratio "${m[20k]}" "${m[empty]}")
r100=$(ratio "${m[100k]}" "${m[empty]}")
report=$(awk -v a="${m[touch_on]}" -v b="${m[touch_off]}" 'BEGIN {printf "%.3f", a - b}')
rt=$(ratio "$report" "${m[git]}")
rr=$(ratio "${m[run_changes]}" "${m[git]}")
echo "exec_command true, empty workspace:      median ${m[empty]} ms"
echo "  20,000 files:                          median ${m[20k]} ms (${r20}x, target <= 1.3x;" \
  "changes off there ${m[20k_off]} ms)"
echo "  100,000 files:                         median ${m[100k]} ms (${r100}x;" \
  "changes off there ${m[100k_off]} ms)"
ok=1
if [ "$BIG" = 1 ]; then
  r500=$(ratio "${m[500k]}" "${m[empty]}")
  echo "  500,000 files:                         median ${m[500k]} ms (${r500}x, target <= 2x)"
  awk -v x="$r500" 'BEGIN {exit !(x <= 2.0)}' || ok=0
fi
echo "git status --porcelain, 20,000 files:    median ${m[git]} ms"
echo "100 files appended to, changes on/off:   ${m[touch_on]} / ${m[touch_off]} ms:" \
  "the report costs ${report} ms (${rt}x git status, target <= 0.25x; ${m[reported]} changes)"
echo "corral run --changes -- true:            median ${m[run_changes]} ms" \
  "(${rr}x git status, target <= 0.5x; without --changes ${m[run_plain]} ms)"
echo "server RSS watching 100,000 files:       $((m[rss100k_kib] / 1024)) MiB (target <= 32 MiB)"
awk -v a="$r20" -v b="$rt" -v c="$rr" -v d="${m[rss100k_kib]}" -v n="${m[reported]}" \
  'BEGIN {exit !(a <= 1.3 && b <= 0.25 && c <= 0.5 && d <= 32768 && n == 100)}' || ok=0
[ "$ok" = 1 ]
