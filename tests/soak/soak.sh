# soak.sh — the library soak (tests/soak/soak.c), then 200 `corral run`
# processes 8 at a time: no leftover process, mount, lease or temp file.
. "$(dirname "$0")/../lib.sh"
: "${SOAK:?SOAK must point at the soak binary}"
ws=$(mktemp -d "$HOME/corral-soak-XXXXXX")
trap 'rm -rf "$ws"' EXIT
cd "$ws"
t "1000 sequential runs and 20 x 64 sessions through the library"
"$SOAK" "${SOAK_RUNS:-1000}" "${SOAK_ROUNDS:-20}"
expect_eq 0 $? "soak exit"

t "200 concurrent-ish corral run processes leave nothing behind"
mounts_before=$(wc -l < /proc/self/mountinfo)
temps_before=$(ls -d /tmp/corral-runtime-* 2>/dev/null | wc -l)
seq 200 | xargs -P 8 -I{} "$CORRAL" run -- sh -c 'exec sleep 0.0{}1' >/dev/null
expect_eq 0 $? "all runs succeeded"
sleep 0.3
pgrep -f '^sleep 0\.0[0-9]+1$' >/dev/null && fail "a sandboxed process was left" || pass
expect_eq "$mounts_before" "$(wc -l < /proc/self/mountinfo)" "mounts"
expect_eq "$temps_before" "$(ls -d /tmp/corral-runtime-* 2>/dev/null | wc -l)" "runtime temps"
leases=$(grep -c FLOCK /proc/locks)
[ "$leases" -lt 8 ] && pass || fail "$leases flock leases left"
finish
