# Fail closed: when the kernel refuses the sandbox, the command does not run
# and the outcome says sandbox_setup_failure with the step; --allow-degraded
# runs it unenforced and says so.  The kernel refuses new user namespaces to
# a chrooted process, so corral runs here chrooted into a bind of / in a
# private mount namespace (needs root).
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "needs root: skipped"; exit 77; }
work=$(mktemp -d)
# Not under /tmp: the jail's paths must not lie beneath a write root.
jail=$(mktemp -d /var/tmp/corral-jail-XXXXXX)
trap 'rm -rf "$work"; rmdir "$jail"' EXIT
cd "$work"
jailed() {
  unshare --mount --propagation private sh -c \
    'mount --rbind / "$0" && cd "$0$1" && exec chroot "$0" sh -c "cd \"\$0\" && exec \"\$@\"" "$@"' \
    "$jail" "$work" "$@"
}
CORRAL_REAL=$CORRAL
corral_jailed() { jailed "$CORRAL_REAL" "$@"; }

t "no user namespaces: the command does not run"
json=$(corral_jailed run --json -- touch "$work/ran"); rc=$?
expect_eq 125 $rc
expect_absent "$work/ran"
expect_eq sandbox_setup_failure "$(printf '%s' "$json" | json_get outcome.kind)"
expect_eq failed "$(printf '%s' "$json" | json_get outcome.state)"
expect_eq -1 "$(printf '%s' "$json" | json_get outcome.exit.code)"
expect_eq false "$(printf '%s' "$json" | json_get outcome.launched)"
expect_contains "$(printf '%s' "$json" | json_get outcome.message)" clone3

t "the message reaches stderr without --json"
err=$(corral_jailed run -- true 2>&1); expect_eq 125 $?
expect_contains "$err" "sandbox"

t "--allow-degraded falls back to the landlock-only adapter, which still enforces"
mapfile -t llsock < <(socket_allows)
json=$(corral_jailed run --json --allow-degraded "${llsock[@]}" -- sh -c "echo ran > $work/ran; echo x > /etc/corral-fallback-probe"); rc=$?
expect_eq 2 $rc "sh exits 2 when a redirection fails"
expect_eq ran "$(cat "$work/ran" 2>/dev/null)"
expect_absent /etc/corral-fallback-probe
expect_eq landlock "$(printf '%s' "$json" | json_get outcome.enforcement.backend)"
expect_eq native "$(printf '%s' "$json" | json_get outcome.enforcement.level)"

t "what the fallback cannot express runs degraded, and says what is missing"
echo a > "$work/keep"
json=$(corral_jailed run --json --allow-degraded --deny-write "$work/keep" -- true); rc=$?
expect_eq 0 $rc
expect_eq true "$(printf '%s' "$json" | json_get outcome.enforcement.degraded)"
expect_eq degraded "$(printf '%s' "$json" | json_get outcome.enforcement.level)"
expect_contains "$(printf '%s' "$json" | json_get outcome.enforcement.downgradeReason)" "a read-only path in or around a write root"

finish
