# as_user.sh — with SANDBOX_AS=user, re-run the calling test file as an
# unprivileged user created here: root hides bugs.  The build tree may not
# be reachable by that user, so what it needs is copied to a fresh dir.
TEST_USER=corraltest
run_as_user_if_asked() {
  local file=$1
  [ "${SANDBOX_AS:-root}" = user ] || return 0
  [ "$(id -u)" -eq 0 ] || { echo "needs root to create the unprivileged user: skipped"; exit 77; }
  id "$TEST_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$TEST_USER"
  local bin home rc
  bin=$(mktemp -d /tmp/corral-bin-XXXXXX); chmod 755 "$bin"
  mkdir -p "$bin/security"
  cp "$CORRAL" "$bin/corral"; cp "$PROBE" "$bin/probe" 2>/dev/null
  cp "$here"/*.sh "$here"/*.py "$bin/security/"; cp "$here/../lib.sh" "$bin/"
  cp /bin/bash "$bin/suid-bash"; chmod 4755 "$bin/suid-bash"
  [ -d "${SOURCE_ROOT:-}/src" ] && cp -r "$SOURCE_ROOT/src" "$SOURCE_ROOT/include" "$bin/"
  chmod -R a+rX "$bin"
  home=$(getent passwd "$TEST_USER" | cut -d: -f6)
  setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" CORRAL="$bin/corral" \
    PROBE="$bin/probe" SUID_BASH="$bin/suid-bash" SANDBOX_AS=inner SOURCE_ROOT="$bin" \
    bash "$bin/security/$file"
  rc=$?
  rm -rf "$bin"
  exit $rc
}
