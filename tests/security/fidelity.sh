# Fidelity from the inside: a real project's own tests of how processes see
# their ids and priorities pass inside the sandbox as an unprivileged user
# (CPython's test_os and test_subprocess: chown without permission, set*id
# to an id of another user, priorities of one's own).  Alone (not beside
# other tests: test_subprocess starts hundreds of processes), and as the
# user only: root's own expectations differ.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked fidelity.sh

ws=$(mktemp -d "$HOME/corral-fid-ws-XXXXXX")
trap 'rm -rf "$ws"' EXIT
cd "$ws"
t "CPython's test_os and test_subprocess pass inside"
if [ -f /usr/lib/python3.11/test/test_os.py ]; then
  out=$(timeout 600 "$CORRAL" run -- /usr/bin/python3 -m test test_os test_subprocess 2>&1)
  expect_contains "$(printf '%s' "$out" | tail -3)" "Tests result: SUCCESS"
  [ "$(printf '%s' "$out" | grep -c 'Tests result: SUCCESS')" -ge 1 ] || printf '%s\n' "$out" | tail -40 >&2
else
  fail "CPython's test suite is not installed (libpython3.11-testsuite)"
fi
finish
