#!/usr/bin/env bash
# The change observer on a generated workspace of 20,000 files in 1,000
# directories (about 200 MiB), warm cache, against `git status --porcelain`
# with an up-to-date index, alternating in one run.
# Targets: fingerprint before launch <= 1.0x git status; fingerprint plus
# diff after exit (100 files modified) <= 1.0x git status.
. "$(dirname "$0")/lib.sh"
bench_build git
ROUNDS=${ROUNDS:-15}
ws=$(mktemp -d /var/tmp/corral-observe-XXXXXX)
trap 'rm -rf "$ws"' EXIT
python3 - "$ws" <<'PY'
import os, sys
root = sys.argv[1]
block = os.urandom(1024)
for d in range(1000):
    p = os.path.join(root, "d%04d" % d)
    os.mkdir(p)
    for f in range(20):
        with open(os.path.join(p, "f%02d.txt" % f), "wb") as fh:
            fh.write(block * 10)   # 10 KiB: 20,000 files, ~200 MiB
PY
(cd "$ws" && git init -q && git add -A && git -c user.email=b@example.invalid -c user.name=b commit -qm init)
sleep 4 # past the observer's racy window, as a real workspace would be
read -r g b a n < <("$BUILD/bench/observe" "$ws" "$ROUNDS")
rb=$(awk -v x="$b" -v y="$g" 'BEGIN {printf "%.2f", x / y}')
ra=$(awk -v x="$a" -v y="$g" 'BEGIN {printf "%.2f", x / y}')
echo "git status --porcelain:            median ${g} ms"
echo "fingerprint before launch:         median ${b} ms (${rb}x, target <= 1.0x)"
echo "fingerprint + diff after exit:     median ${a} ms (${ra}x, target <= 1.0x; $n changes)"
awk -v x="$rb" -v y="$ra" 'BEGIN {exit !(x <= 1.0 && y <= 1.0)}'
