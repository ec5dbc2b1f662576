# The escape suite: each case is a real attempt from inside `corral run`
# (default policy unless it says otherwise), asserting that the attempt
# failed AND that the host is unchanged.  Run as root and as an
# unprivileged user (SANDBOX_AS=user).  One line above each case says what
# the attack is.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
: "${PROBE:?PROBE must point at the probe binary}"
. "$here/as_user.sh"
run_as_user_if_asked escape.sh

ws=$(mktemp -d "$HOME/corral-esc-ws-XXXXXX")
outside=$(mktemp -d "$HOME/corral-esc-out-XXXXXX")
hostpids=()
trap 'for p in "${hostpids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$ws" "$outside"' EXIT
cd "$ws"
echo original > "$outside/target"
sum() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }
orig=$(sum "$outside/target")
cr() { "$CORRAL" run "$@"; }
cases=0
case_() { t "$1"; cases=$((cases + 1)); }

# Write outside the write roots through a symlink planted in the workspace.
case_ "symlink planted in the workspace"
ln -s "$outside" "$ws/link"
cr -- sh -c "echo evil > $ws/link/target; echo evil > $ws/link/new" 2>/dev/null && fail "succeeded" || pass
expect_eq "$orig" "$(sum "$outside/target")"; expect_absent "$outside/new"

# Hard-link a host file into the workspace and write it.
case_ "hard link of a host file"
cr -- sh -c "ln $outside/target $ws/hl && echo evil > $ws/hl" 2>/dev/null && fail "succeeded" || pass
expect_eq "$orig" "$(sum "$outside/target")"

# Rename a workspace file over a path outside.
case_ "rename over a path outside"
echo evil > "$ws/evil"
cr -- mv "$ws/evil" "$outside/target" 2>/dev/null && fail "succeeded" || pass
expect_eq "$orig" "$(sum "$outside/target")"

# Write through /proc/self/root and /proc/self/cwd.
case_ "/proc/self/root and /proc/self/cwd"
cr -- sh -c "echo evil > /proc/self/root$outside/target; cd /; echo evil > /proc/self/cwd$outside/target; echo evil > /proc/1/root$outside/target" 2>/dev/null && fail "succeeded" || pass
expect_eq "$orig" "$(sum "$outside/target")"

# Open a host block device.
case_ "host block device"
dev=$(lsblk -dnpo NAME 2>/dev/null | head -1); dev=${dev:-/dev/vda}
out=$(cr -- sh -c "head -c 512 $dev | wc -c; mknod /tmp/blk b 8 0 && head -c 1 /tmp/blk | wc -c" 2>&1)
expect_not_contains "$out" "512"
expect_contains "$out" "No such file"

# Read /proc/kcore.
case_ "/proc/kcore"
out=$(cr -- sh -c 'head -c 16 /proc/kcore | wc -c' 2>&1)
expect_contains "$out" "0"
expect_not_contains "$out" "16"

# Mount a tmpfs over a read-only path and write into it.
case_ "tmpfs over a read-only path"
cr -- sh -c "mount -t tmpfs none $outside && echo evil > $outside/target" 2>/dev/null && fail "succeeded" || pass
expect_eq "$orig" "$(sum "$outside/target")"

# Unshare a new user namespace inside and try the same writes and mounts.
case_ "nested user namespace"
cr -- unshare -Urm sh -c "mount -t tmpfs none $outside; echo evil > $outside/target; mount -o remount,rw /" 2>/dev/null
expect_eq "$orig" "$(sum "$outside/target")"

# Remount / read-write.
case_ "remount / read-write"
cr -- sh -c "mount -o remount,rw / && echo evil > $outside/target" 2>/dev/null && fail "succeeded" || pass
expect_eq "$orig" "$(sum "$outside/target")"

# ptrace the sandbox's init.
case_ "ptrace of init"
out=$(cr -- "$PROBE" ptrace 1); expect_contains "$out" "failed"

# Signal a host process by pid.
case_ "signal a host process"
sleep 300 & hp=$!; hostpids+=($hp)
cr -- "$PROBE" kill "$hp" >/dev/null
kill -0 "$hp" 2>/dev/null && pass || fail "host process killed"

# Inject terminal input with TIOCSTI.
case_ "TIOCSTI"
out=$(cr -- "$PROBE" tiocsti); expect_contains "$out" "failed"

# Reach a host Unix socket outside the write roots with --block-unix-sockets.
case_ "host Unix socket with --block-unix-sockets"
python3 -c "
import socket, os, time
s = socket.socket(socket.AF_UNIX); s.bind('$outside/sock'); s.listen(); time.sleep(30)" &
hostpids+=($!); sleep 0.3
out=$(cr --block-unix-sockets -- "$PROBE" unix-connect "$outside/sock"); expect_contains "$out" "failed"

# Reach a TCP server on the host's 127.0.0.1 with the network denied.
case_ "host loopback TCP with the network denied"
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
python3 -c "
import socket, time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(('127.0.0.1',$port)); s.listen(); time.sleep(30)" &
hostpids+=($!); sleep 0.3
out=$(cr -- python3 -c "
import socket
try: socket.create_connection(('127.0.0.1',$port),timeout=2); print('connected')
except OSError: print('refused')")
expect_eq refused "$out"

# Read each default secret store (fake ones in a temporary HOME).
case_ "default secret stores"
fh=$(mktemp -d "$HOME/corral-esc-home-XXXXXX")
mkdir -p "$fh/.ssh" "$fh/.aws" "$fh/.config/gh"
for f in .ssh/id_rsa .aws/credentials .netrc .git-credentials .npmrc .config/gh/hosts.yml; do
  echo "TOPSECRET" > "$fh/$f"
done
out=$(HOME=$fh cr -- sh -c "cat $fh/.ssh/id_rsa $fh/.aws/credentials $fh/.netrc $fh/.git-credentials $fh/.npmrc $fh/.config/gh/hosts.yml; grep -r TOPSECRET $fh" 2>&1)
expect_not_contains "$out" TOPSECRET
rm -rf "$fh"

# Find a secret environment variable.
case_ "secret environment variable"
out=$(ANTHROPIC_API_KEY=TOPSECRET aws_secret_access_key=TOPSECRET cr -- sh -c 'env; cat /proc/self/environ' 2>&1)
expect_not_contains "$out" TOPSECRET

# Keep a process alive after corral run returns (double fork + setsid).
case_ "double fork + setsid"
cr -- sh -c '(setsid sh -c "sleep 4321 &" &) ; exit 0'
sleep 0.2
pgrep -f '^sleep 4321$' >/dev/null && fail "survived" || pass

# Survive the supervisor's SIGKILL.
case_ "survive SIGKILL of the supervisor"
"$CORRAL" run -- sh -c 'trap "" TERM HUP; sleep 4322 & sleep 4322' & rp=$!
for _ in $(seq 100); do pgrep -f '^sleep 4322$' >/dev/null && break; sleep 0.02; done
kill -KILL $rp; wait $rp 2>/dev/null
for _ in $(seq 100); do pgrep -f '^sleep 4322$' >/dev/null || break; sleep 0.02; done
pgrep -f '^sleep 4322$' >/dev/null && fail "survived" || pass

# Exhaust the caller with output (bounded).
case_ "output flood"
out=$(cr --json --timeout 2 -- sh -c 'yes flood' | python3 -c '
import sys,json; d=json.load(sys.stdin); print(len(d["stdout"]), d["truncated"]["stdout"], d["outcome"]["kind"])')
expect_eq "1048576 True timed_out" "$out"

# Exhaust the host: a fork bomb and a memory hog, with no timeout, are ended
# by their limits (limits.sh has the rest), and nothing of them is left.
case_ "exhaust the host: a fork bomb"
out=$(timeout 60 "$CORRAL" run --json -- bash -c ':(){ :|:& };:; sleep 300 # esc-bomb' 2>/dev/null |
  json_get outcome.limit.name)
expect_eq processes "$out"
sleep 0.5; pgrep -f esc-bomb >/dev/null && fail "survived" || pass
case_ "exhaust the host: memory"
out=$(timeout 60 "$CORRAL" run --json --memory 256M -- python3 -c 'b = b"x" * (1 << 30); import time; time.sleep(300) # esc-hog' 2>/dev/null |
  json_get outcome.limit.name)
expect_eq memory "$out"
pgrep -f esc-hog >/dev/null && fail "survived" || pass

# Create a protected metadata directory through rename and through a symlink.
case_ "protected metadata through rename"
mkdir "$ws/staging"
cr -- mv "$ws/staging" "$ws/.agents" 2>/dev/null; expect_eq 125 $?
expect_absent "$ws/.agents"
case_ "protected metadata through a symlink"
cr -- ln -s "$outside" "$ws/.corral" 2>/dev/null; expect_eq 125 $?
expect_absent "$ws/.corral"
[ -d "$outside" ] && pass || fail "the symlink's target was removed"

# Climb out of the new root through ".." from a mount point, and look for
# the host's old root left in the mount table (pivot_root leaves it on top
# of the new root until it is detached).
case_ "the old root after pivot_root"
out=$(cr -- sh -c "echo evil > /tmp/../../$(basename "$outside")-dotdot; ls -a /tmp/../.. | wc -l; ls -a / | wc -l; awk '\$5 == \"/\"' /proc/self/mountinfo | wc -l" 2>/dev/null)
expect_eq "$(cr -- sh -c 'ls -a / | wc -l')
$(cr -- sh -c 'ls -a / | wc -l')
1" "$out"
expect_absent "/$(basename "$outside")-dotdot"

# Built in place, the host's /proc and /dev (and corral's scratch files
# below /dev) are still in the mount table, covered by the sandbox's own:
# unmounting those, directly or from a nested user namespace, must fail.
case_ "uncover the host's /proc and /dev"
sleep 30 & hostpids+=($!); hp=$!
uncover='for m in /dev/shm /dev/pts /dev /proc; do umount -l $m; umount $m; done 2>/dev/null'
for how in "sh -c" "unshare -Urm sh -c"; do
  out=$(cr -- $how "$uncover; test -e /proc/$hp && echo host-pid; ls /dev /dev/shm" 2>/dev/null)
  expect_not_contains "$out" host-pid
  expect_not_contains "$out" denied
  expect_eq "" "$(grep -xE '(sd|vd|nvme|xvd|hd)[a-z0-9]*|loop[0-9]+' <<<"$out")"
done
kill "$hp" 2>/dev/null

echo "escape cases: $cases"
finish
