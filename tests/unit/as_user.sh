# as_user.sh BINARY — runs a unit-test binary as an unprivileged user (some
# cases, like unreadable directories, mean nothing to root).  Skips (77)
# when not root.
[ "$(id -u)" -eq 0 ] || { echo "needs root to switch to the test user: skipped"; exit 77; }
user=corraltest
id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
dir=$(mktemp -d /tmp/corral-unit-XXXXXX); chmod 755 "$dir"
cp "$1" "$dir/"; chmod 755 "$dir/$(basename "$1")"
setpriv --reuid="$user" --regid="$user" --init-groups env -i PATH=/usr/bin:/bin HOME=/tmp \
  "$dir/$(basename "$1")"
rc=$?
rm -rf "$dir"
exit $rc
