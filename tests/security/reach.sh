# What the command must not reach: the host's global /proc entries, corral's
# own init and its report channel, capabilities, the caller's keyrings.
# Every case is an attack written as an attacker would write it (small
# Python programs run inside), on both adapters, and checks the host after.
# Run as root and, with SANDBOX_AS=user, as an unprivileged user.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked reach.sh

# Outside /tmp (a write root) and outside any repository: the landlock-only
# adapter runs here too.
ws=$(mktemp -d "$HOME/corral-reach-ws-XXXXXX")
outside=$(mktemp -d "$HOME/corral-reach-out-XXXXXX")
hostpids=()
trap 'for p in "${hostpids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$ws" "$outside"' EXIT
cd "$ws"
root=false; [ "$(id -u)" -eq 0 ] && root=true
mapfile -t allows < <(socket_allows)
backends=(linux landlock)
cr() { local b=$1; shift; "$CORRAL" run --backend "$b" "${allows[@]}" "$@"; }

# --- 1. global /proc entries -------------------------------------------
# Every entry under /proc that is not a process's own, opened for writing;
# then the known ones written for real.  Two are world-writable by design
# and act on nothing: /proc/pressure (unprivileged pressure triggers) and
# kernel/ns_last_pid (a write needs CAP_CHECKPOINT_RESTORE over the pid
# namespace's owner).
walk_proc='
import os, re
own = {"self", "thread-self"}
hits = []
for top in sorted(os.listdir("/proc")):
    if top.isdigit() or top in own or top == "pressure":
        continue
    p = "/proc/" + top
    paths = [p]
    if os.path.isdir(p) and not os.path.islink(p):
        paths = []
        for d, subdirs, files in os.walk(p, followlinks=False):
            paths += [os.path.join(d, f) for f in files]
    for f in paths:
        try:
            if f == "/proc/sys/kernel/ns_last_pid":
                continue
            fd = os.open(f, os.O_WRONLY | os.O_NONBLOCK)
            hits.append(f); os.close(fd)
        except OSError:
            pass
print("writable:", " ".join(hits[:20]) if hits else "none")
'
write_knobs='
import sys
for f, v in (("/proc/sys/kernel/core_pattern", "|/tmp/pwn %p"), ("/proc/sys/fs/protected_symlinks", "0"),
             ("/proc/sys/vm/drop_caches", "1"), ("/proc/sysrq-trigger", "h"),
             ("/proc/irq/default_smp_affinity", "1")):
    try:
        open(f, "w").write(v); print("WROTE", f)
    except OSError:
        pass
'
pattern_before=$(cat /proc/sys/kernel/core_pattern)
symlinks_before=$(cat /proc/sys/fs/protected_symlinks)
for b in "${backends[@]}"; do
  t "$b: no global /proc entry is writable"
  # (corral's own lines say what was refused: the walk's writes were)
  expect_eq "writable: none" "$(cr "$b" -- python3 -c "$walk_proc" 2>&1 | grep -v '^corral: ')"
  t "$b: writing the host's core_pattern, sysctls, sysrq-trigger and irq affinity"
  expect_not_contains "$(cr "$b" -- python3 -c "$write_knobs" 2>&1)" WROTE
  expect_eq "$pattern_before" "$(cat /proc/sys/kernel/core_pattern)" "core_pattern"
  expect_eq "$symlinks_before" "$(cat /proc/sys/fs/protected_symlinks)" "protected_symlinks"
done

t "linux: a process's own /proc entries stay its own to write (not as root)"
out=$(cr linux -- sh -c 'echo 5 > /proc/self/oom_score_adj && echo x > /proc/self/comm && echo own-ok' 2>&1)
if $root; then expect_not_contains "$out" own-ok; else expect_contains "$out" own-ok; fi

t "linux: root-only readers of host state"
out=$(cr linux -- sh -c 'cat /proc/timer_list /proc/keys 2>/dev/null | head -c 100 | wc -c')
expect_eq 0 "$out"

# --- 2. corral's init and its report channel ---------------------------
# The attacker looks at every process it can see that is not its own
# descendant (init, a helper, the supervisor) and tries to read its
# environment and memory, take or reopen its descriptors, and write forged
# report records into them: a protected-path denial naming a directory
# outside the sandbox (which a trusting supervisor would remove), then an
# exit record.
attack_init='
import os, struct, ctypes, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
victim = sys.argv[1]
me = os.getpid()
mine = {me}
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            ppid = int(open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid in mine:
            mine.add(int(pid))
# Init is pid 1 in its own pid namespace, else (landlock-only) the parent;
# above it the supervisor.  Nothing else of the host is touched.
init = os.getppid()
try:
    above = int(open("/proc/%d/stat" % init).read().rsplit(")", 1)[1].split()[1])
except OSError:
    above = 0
targets = sorted({p for p in (1, 2, init, above) if p > 0 and p not in mine and
                  os.path.exists("/proc/%d" % p) and (init == 1 or p != 1)})
rec_deny = struct.pack("<IIii480s", 0x636f7272, 4, 3, 0, victim.encode())
rec_exit = struct.pack("<IIii480s", 0x636f7272, 5, 0, 0, b"")
found = []
for t in targets:
    for what in ("environ", "mem"):
        try:
            data = open("/proc/%d/%s" % (t, what), "rb").read(1 << 16)
            if b"TOPSECRET" in data: found.append("%s of %d" % (what, t))
        except OSError:
            pass
    try:  # (the supervisor is a host process: landlock-only shows its cmdline)
        if t != above and b"ARGVMARK" in open("/proc/%d/cmdline" % t, "rb").read():
            found.append("cmdline of %d" % t)
    except OSError:
        pass
    try:
        fds = os.listdir("/proc/%d/fd" % t)
    except OSError:
        fds = []
    for fd in fds:
        try:
            w = os.open("/proc/%d/fd/%s" % (t, fd), os.O_WRONLY | os.O_NONBLOCK)
            os.write(w, rec_deny); os.write(w, rec_exit); found.append("reopened fd %s of %d" % (fd, t))
        except OSError:
            pass
    try:
        pfd = os.pidfd_open(t)
        for fd in range(64):
            got = libc.syscall(438, pfd, fd, 0)
            if got >= 0:
                found.append("pidfd_getfd %d of %d" % (fd, t))
                try: os.write(got, rec_deny)
                except OSError: pass
    except OSError:
        pass
# Signals to init: refused (landlock-only: another domain), or ignored
# (pid 1 of a pid namespace takes none from inside): the run goes on.
for sig in (signal.SIGUSR1, signal.SIGTERM, signal.SIGKILL):
    try:
        os.kill(init, sig)
    except OSError:
        pass
print("reached:", ", ".join(found) if found else "nothing")
print("still running")
'
for b in "${backends[@]}"; do
  t "$b: init's memory, environment, descriptors and report channel"
  mkdir -p "$outside/victim"; echo keep > "$outside/victim/file"
  json=$(ANTHROPIC_API_KEY=TOPSECRET "$CORRAL" run --backend "$b" "${allows[@]}" --deny-read /nonexistent/ARGVMARK \
    --json -- python3 -c "$attack_init" "$outside/victim" 2>/dev/null)
  out=$(printf '%s' "$json" | json_get stdout)
  expect_contains "$out" "reached: nothing"
  expect_contains "$out" "still running"
  expect_eq success "$(printf '%s' "$json" | json_get outcome.kind)" "outcome kind"
  [ -f "$outside/victim/file" ] && pass || fail "the forged record's directory was removed"
done

# --- 3. capabilities, and nothing outlives the run ---------------------
caps='grep -E "^(CapInh|CapPrm|CapEff|CapAmb|CapBnd|NoNewPrivs)" /proc/self/status | tr -s "\t" " "'
for b in "${backends[@]}"; do
  t "$b: no capability in any set, no_new_privs"
  out=$(cr "$b" -- sh -c "$caps")
  for set in CapInh CapPrm CapEff CapAmb; do expect_contains "$out" "$set: 0000000000000000"; done
  expect_contains "$out" "NoNewPrivs: 1"
  # Without a user namespace an unprivileged caller cannot empty its
  # bounding set (CAP_SETPCAP); no_new_privs leaves it nothing to gain.
  if $root || [ "$b" = linux ]; then expect_contains "$out" "CapBnd: 0000000000000000"; fi
done

t "landlock: root's device and raw-network powers are gone (network allowed)"
out=$(cr landlock --network allow -- python3 -c '
import os, socket
try: socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print("PACKET")
except OSError: pass
try: os.mknod("blk", 0o600 | 0o060000, os.makedev(8, 0)); print("MKNOD")
except OSError: pass' 2>&1)
expect_not_contains "$out" PACKET; expect_not_contains "$out" MKNOD; expect_absent "$ws/blk"

# A host process of the same user with a handler for SIGURG (whose default
# is to be ignored, so nothing else on the host is harmed if this fails)
# says whether a signal from inside reached it.
python3 -c '
import signal, time, sys
signal.signal(signal.SIGURG, lambda *a: open(sys.argv[1], "w").write("got"))
time.sleep(60)' "$outside/caught" & hostpids+=($!); catcher=$!
sleep 0.3
for b in "${backends[@]}"; do
  t "$b: signalling everything reachable reaches nothing outside"
  cr "$b" -- sh -c "kill -URG -1; kill -URG $catcher" >/dev/null 2>&1
  sleep 0.3
  expect_absent "$outside/caught"
  # Only once that holds: the same with SIGKILL would hit the host.
  [ -e "$outside/caught" ] && continue
  t "$b: a command that kills whatever it can reach leaves nothing behind"
  cr "$b" -- sh -c "kill -KILL \$PPID;
     setsid sh -c 'kill -KILL -1 2>/dev/null; exec sleep 4477' & sleep 0.2; exit 0" >/dev/null 2>&1
  sleep 0.3
  kill -0 "$catcher" 2>/dev/null && pass || fail "the host process was killed"
  pgrep -f '^sleep 4477$' >/dev/null && { fail "a setsid process survived"; pkill -f '^sleep 4477$'; } || pass
done

t "landlock: the user's other terminals are out of reach, the command's own is not"
python3 -c '
import os, pty, sys, time
m, s = pty.openpty()
open(sys.argv[1], "w").write(os.ttyname(s))
time.sleep(30)' "$outside/pty" & hostpids+=($!)
for _ in $(seq 50); do [ -s "$outside/pty" ] && break; sleep 0.05; done
other=$(cat "$outside/pty")
out=$(cr landlock -- python3 -c '
import os, sys
for flags, what in ((os.O_WRONLY, "WROTE"), (os.O_RDONLY, "READ")):
    try:
        fd = os.open(sys.argv[1], flags | os.O_NOCTTY | os.O_NONBLOCK); print(what)
    except OSError:
        pass' "$other" 2>&1)
expect_not_contains "$out" WROTE; expect_not_contains "$out" READ
out=$(script -qec "\"$CORRAL\" exec --backend landlock ${allows[*]} -- sh -c 'echo own > \$(tty) && echo own-tty-ok'" /dev/null 2>&1)
expect_contains "$out" own-tty-ok

# --- daemons listening where the user's own do --------------------------
# An agent no variable names (started by another shell), in the places
# such daemons use: a directory of the user's own in /tmp, the user's
# runtime directory, and for root /run.  The default adapter hides them;
# the landlock-only one cannot and refuses to run.
rt=$(mktemp -d /tmp/corral-reach-rt-XXXXXX); chmod 700 "$rt"
agentdir=$(mktemp -d /tmp/ssh-corral-reach-XXXXXX) # where ssh-agent puts its socket
socks=("$agentdir/agent.1" "$rt/agent.2")
if $root; then mkdir -p /run/corral-reach-$$; socks+=("/run/corral-reach-$$/s"); fi
for sk in "${socks[@]}"; do
  python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(30)' "$sk" &
  hostpids+=($!)
done
for _ in $(seq 50); do ok=1; for sk in "${socks[@]}"; do [ -S "$sk" ] || ok=0; done; [ $ok = 1 ] && break; sleep 0.05; done
t "linux: sockets of daemons no variable names are hidden"
out=$(XDG_RUNTIME_DIR=$rt SSH_AUTH_SOCK= cr linux -- python3 -c '
import socket, sys
for p in sys.argv[1:]:
    try:
        socket.socket(socket.AF_UNIX).connect(p); print("CONNECTED", p)
    except OSError:
        pass' "${socks[@]}" 2>&1)
expect_not_contains "$out" CONNECTED
t "landlock: refuses to run beside sockets it cannot hide"
XDG_RUNTIME_DIR=$rt SSH_AUTH_SOCK= cr landlock -- true 2>/dev/null; expect_eq 125 $?
rm -rf "$agentdir" "$rt"; $root && rm -rf /run/corral-reach-$$

# Sockets in /tmp are found by listing it, whatever its size and however
# they got there (bound through another path, renamed or linked in, bound
# in another network namespace): filling it hides nothing.
fill=/tmp/corral-reach-fill-$$
fill_dir() { python3 -c '
import os, sys
for i in range(int(sys.argv[2])): os.close(os.open("%s-%d" % (sys.argv[1], i), os.O_CREAT | os.O_WRONLY, 0o600))' "$@"; }
listen() {
  python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(30)' "$1" &
  hostpids+=($!)
  for _ in $(seq 50); do [ -S "$1" ] && break; sleep 0.05; done
}
try_connect='
import socket, sys
for p in sys.argv[1:]:
    try:
        socket.socket(socket.AF_UNIX).connect(p); print("CONNECTED", p)
    except OSError:
        pass'
t "an agent's socket stays hidden behind a /tmp filled with entries, however it was bound"
agentdir=$(mktemp -d /tmp/ssh-corral-fill-XXXXXX); listen "$agentdir/agent.3"
listen /tmp//corral-fill-$$.sock                              # a path not as it is listed
listen "$agentdir/../corral-fill-b-$$.sock"
listen /tmp/corral-fill-c-$$.tmp && mv /tmp/corral-fill-c-$$.tmp /tmp/corral-fill-c-$$.sock  # renamed in
unshare -n true 2>/dev/null && { unshare -n python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(30)' /tmp/corral-fill-d-$$.sock &
  hostpids+=($!); for _ in $(seq 50); do [ -S /tmp/corral-fill-d-$$.sock ] && break; sleep 0.05; done; }
fill_dir "$fill" 3000
out=$(SSH_AUTH_SOCK= cr linux -- python3 -c "$try_connect" "$agentdir/agent.3" /tmp/corral-fill-$$.sock \
  /tmp/corral-fill-b-$$.sock /tmp/corral-fill-c-$$.sock /tmp/corral-fill-d-$$.sock 2>&1); rc=$?
expect_eq 0 $rc "exit"; expect_not_contains "$out" CONNECTED
find /tmp -maxdepth 1 -name "${fill#/tmp/}-*" -delete
rm -rf /tmp/corral-fill-$$.sock /tmp/corral-fill-[bcd]-$$.sock "$agentdir"

t "a runtime directory too full to look through fails closed"
rt=$(mktemp -d /tmp/corral-reach-rt-XXXXXX); chmod 700 "$rt"; fill_dir "$rt/f" 66000
err=$(XDG_RUNTIME_DIR=$rt cr linux -- true 2>&1); rc=$?
expect_eq 125 $rc "exit"; expect_contains "$err" "too many entries"
XDG_RUNTIME_DIR=$rt cr linux --block-unix-sockets -- true; expect_eq 0 $? "with Unix sockets refused"
rm -rf "$rt"

# On a /tmp of its own (a private mount namespace), small and large.
if $root; then
  # The binary may itself lie below /tmp (a checkout there): a copy
  # outside it, since the new /tmp hides what was below.
  bin=$(mktemp -d /var/tmp/corral-reach-bin-XXXXXX); cp "$CORRAL" "$bin/corral"
  for n in 10 5000; do
    t "linux: an agent's socket in a /tmp of $n entries is hidden"
    out=$(unshare -m sh -c '
      mount --make-rprivate / && mount -t tmpfs tmpfs /tmp && mkdir -m 700 /tmp/ssh-corral &&
      python3 -c "
import os, socket, subprocess, sys
for i in range(int(sys.argv[1])): open(\"/tmp/f%d\" % i, \"w\").close()
s = socket.socket(socket.AF_UNIX); s.bind(\"/tmp/ssh-corral/agent.4\"); s.listen()
print(\"size\", os.stat(\"/tmp\").st_size)
sys.exit(subprocess.call(sys.argv[2:]))" "$1" "$2" run -- python3 -c "$3" /tmp/ssh-corral/agent.4
    ' sh "$n" "$bin/corral" "$try_connect" 2>&1); rc=$?
    expect_eq 0 $rc "exit"; expect_not_contains "$out" CONNECTED; expect_contains "$out" size
  done
  rm -rf "$bin"
fi

# Resource limits and priority of processes outside: only the same uid is
# needed, and no namespace or scope covers them (a lowered limit kills).
sleep 60 & hostpids+=($!); victim=$!
limits_before=$(cat /proc/$victim/limits); nice_before=$(ps -o ni= -p $victim)
for b in "${backends[@]}"; do
  t "$b: another process's limits and priority, and the supervisor's"
  out=$(cr "$b" -- sh -c "prlimit --pid $victim --cpu=1:1 && echo CHANGED; renice -n 19 -p $victim >/dev/null && echo CHANGED
    p=\$PPID; [ \$p = 1 ] || p=\$(awk '/^PPid/{print \$2}' /proc/\$PPID/status)
    prlimit --pid \$p --nofile=0:0 && echo CHANGED; mkdir .agents; sleep 0.2" 2>/dev/null); rc=$?
  expect_not_contains "$out" CHANGED
  expect_eq 125 $rc "exit (the protected name is still stopped)"
  expect_absent "$ws/.agents"
  expect_eq "$limits_before" "$(cat /proc/$victim/limits)" "the host process's limits"
  expect_eq "$nice_before" "$(ps -o ni= -p $victim)" "the host process's priority"
done

# --- 4. the caller's keyrings ------------------------------------------
# A key in the caller's session keyring (joined anew here, so the test
# owns it) and one in its user keyring: printed, searched, updated or
# added to from inside.
keys_attack='
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
found = []
for ring in (-3, -4, -5):  # session, user, user-session
    k = libc.syscall(250, 10, ring, b"user", b"corral-test-key", 0)  # KEYCTL_SEARCH
    if k >= 0:
        buf = ctypes.create_string_buffer(64)
        n = libc.syscall(250, 11, k, buf, 64)  # KEYCTL_READ
        found.append("found %d: %r" % (ring, buf.raw[:max(n, 0)]))
        if libc.syscall(250, 2, k, b"EVIL", 4) == 0: found.append("updated")  # KEYCTL_UPDATE
    if libc.syscall(248, b"user", b"corral-planted", b"EVIL", 4, ring) >= 0:  # add_key
        found.append("added to %d" % ring)
try:
    if "corral-test-key" in open("/proc/keys").read(): found.append("/proc/keys")
except OSError:
    pass
print("keys:", ", ".join(found) if found else "none")
'
for b in "${backends[@]}"; do
  t "$b: the caller's session and user keyrings"
  out=$(python3 - "$CORRAL" "$b" "$keys_attack" "${allows[@]}" <<'EOF'
import ctypes, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall(250, 1, None)  # KEYCTL_JOIN_SESSION_KEYRING: a session of our own
libc.syscall(250, 8, -4, -3)  # KEYCTL_LINK the user keyring into it: its keys are ours to set
for ring in (-4, -5):  # what an earlier, failed run may have planted in the persistent ones
    for _ in range(16):
        k = libc.syscall(250, 10, ring, b"user", b"corral-planted", 0)
        if k < 0 or libc.syscall(250, 9, k, ring) < 0:  # KEYCTL_UNLINK
            break
s = libc.syscall(248, b"user", b"corral-test-key", b"TOPSECRET", 9, -3)
u = libc.syscall(248, b"user", b"corral-test-key", b"TOPSECRET", 9, -4)
for k in (s, u):  # readable and writable by its user, possessed or not: the best case inside
    libc.syscall(250, 5, k, 0x3f3f0000)  # KEYCTL_SETPERM
r = subprocess.run([sys.argv[1], "run", "--backend", sys.argv[2]] + sys.argv[4:] +
                   ["--", "python3", "-c", sys.argv[3]], capture_output=True, text=True)
print(r.stdout.strip())
for k in (s, u):
    buf = ctypes.create_string_buffer(64)
    n = libc.syscall(250, 11, k, buf, 64)
    print("host key:", buf.raw[:max(n, 0)].decode())
for ring in (-3, -4):
    print("planted:", libc.syscall(250, 10, ring, b"user", b"corral-planted", 0) >= 0)
libc.syscall(250, 21, u)  # KEYCTL_INVALIDATE the user keyring's test key
EOF
)
  # Landlock cannot hide one file of /proc: the landlock-only adapter shows
  # /proc/keys (descriptions, no payload) and refuses every keyring call.
  if [ "$b" = linux ]; then expect_contains "$out" "keys: none"
  else expect_contains "$out" "keys: /proc/keys"; fi
  expect_eq 2 "$(grep -c '^host key: TOPSECRET$' <<<"$out")" "host keys unchanged"
  expect_not_contains "$out" "planted: True"
done

finish
