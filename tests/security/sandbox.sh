# The isolation core, from the inside: each case runs the real binary,
# attempts the forbidden (or the allowed) thing, and checks the host after.
# SANDBOX_AS=root runs as root; SANDBOX_AS=user re-runs this file as an
# unprivileged user created here (root hides bugs).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
: "${PROBE:?PROBE must point at the probe binary}"
. "$here/as_user.sh"
run_as_user_if_asked sandbox.sh

# Both outside /tmp, which is a write root by default.
ws=$(mktemp -d "$HOME/corral-ws-XXXXXX")
other=$(mktemp -d "$HOME/corral-other-XXXXXX")
hostpids=()
cleanup() {
  for p in "${hostpids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$ws" "$other"
}
trap cleanup EXIT
cd "$ws"
mark="corral-probe-$$-$RANDOM"
cr() { "$CORRAL" run "$@"; }

t "write /etc fails and nothing appears"
out=$(cr -- sh -c "echo x > /etc/$mark" 2>&1); rc=$?
[ $rc -ne 0 ] && pass || fail "write to /etc succeeded"
expect_contains "$out" "Read-only file system"
expect_absent "/etc/$mark"

t "write \$HOME outside the workspace fails"
cr -- sh -c "echo x > \$HOME/$mark" 2>/dev/null && fail "write to HOME succeeded" || pass
expect_absent "$HOME/$mark"

t "write another host directory fails"
cr -- sh -c "echo x > $other/$mark" 2>/dev/null && fail "write succeeded" || pass
expect_absent "$other/$mark"

t "write in the workspace and /tmp works"
cr -- sh -c "echo a > $ws/f1 && mkdir -p $ws/d/e && echo b > $ws/d/e/f2 && echo c > /tmp/$mark"
expect_eq 0 $? "exit"
expect_eq a "$(cat "$ws/f1")"
expect_eq b "$(cat "$ws/d/e/f2")"
expect_eq c "$(cat "/tmp/$mark")"; rm -f "/tmp/$mark"

t "--read-only makes the workspace read-only"
cr --read-only -- sh -c "echo x > $ws/ro-$mark" 2>/dev/null && fail "write succeeded" || pass
expect_absent "$ws/ro-$mark"

t "--no-temp makes /tmp read-only"
cr --no-temp -- sh -c "echo x > /tmp/$mark" 2>/dev/null && fail "write succeeded" || pass
expect_absent "/tmp/$mark"

t "a workspace at / is refused, not enforced as nothing"
out=$(cd / && "$CORRAL" run -- touch "/etc/$mark" 2>&1); rc=$?
expect_eq 125 $rc
expect_contains "$out" "whole filesystem writable"
expect_absent "/etc/$mark"

t "--allow-write adds a write root"
cr --allow-write "$other" -- sh -c "echo y > $other/aw"
expect_eq y "$(cat "$other/aw" 2>/dev/null)"

t "deny-write keeps a path read-only inside a write root"
mkdir -p "$ws/locked"; echo orig > "$ws/locked/file"
cr --deny-write "$ws/locked" -- sh -c "echo evil > $ws/locked/file; echo new > $ws/locked/new" 2>/dev/null
expect_eq orig "$(cat "$ws/locked/file")"
expect_absent "$ws/locked/new"

t "deny-read: a file cannot be read, a directory shows empty"
mkdir -p "$ws/secret/pub"; echo s3cr3t > "$ws/secret/key"; echo public > "$ws/secret/pub/readme"
echo topsecretcontent > "$ws/hidden.txt"
out=$(cr --deny-read "$ws/hidden.txt" -- cat "$ws/hidden.txt" 2>&1); rc=$?
[ $rc -ne 0 ] && pass || fail "deny-read file was readable"
expect_not_contains "$out" topsecretcontent
out=$(cr --deny-read "$ws/secret" -- sh -c "ls -A $ws/secret; cat $ws/secret/key" 2>&1)
expect_not_contains "$out" s3cr3t
expect_not_contains "$out" pub
expect_eq s3cr3t "$(cat "$ws/secret/key")" "host file untouched"

t "deny-read covers are read-only, even to their owner, even in a write root"
# The covers are clones of one empty directory and one unreadable file of
# the sandbox's own: a cover made writable or readable would be one place
# shared by every denied path.  Also with something mounted over the place
# of that scratch tmpfs (/dev/shm) before the covers are made: a view for
# a denied path there, a deny-write of it.
for extra in "" "--deny-write /dev/shm" "--deny-read /dev/shm/corral-test-x"; do
  # shellcheck disable=SC2086 # $extra is two words or none
  out=$(cr $extra --deny-read "$ws/hidden.txt" --deny-read "$ws/secret" -- sh -c "
    chmod 644 $ws/hidden.txt && echo CHMOD-FILE; echo planted > $ws/hidden.txt && echo WROTE-FILE
    chmod 777 $ws/secret && echo CHMOD-DIR; touch $ws/secret/new && echo MADE-IN-DIR
    mkdir $ws/secret/d && echo MKDIR; cat $ws/hidden.txt; ls -ld $ws/hidden.txt" 2>&1)
  for what in CHMOD-FILE WROTE-FILE CHMOD-DIR MADE-IN-DIR MKDIR planted; do
    expect_not_contains "$out" "$what"
  done
  expect_contains "$out" "----------"
  expect_eq topsecretcontent "$(cat "$ws/hidden.txt")" "host file untouched ($extra)"
  expect_absent "$ws/secret/new"
  expect_absent "$ws/secret/d"
done

t "allow-read re-includes inside a deny-read"
out=$(cr --deny-read "$ws/secret" --allow-read "$ws/secret/pub" -- sh -c "cat $ws/secret/pub/readme; cat $ws/secret/key" 2>&1)
expect_contains "$out" public
expect_not_contains "$out" s3cr3t

t "the views' mask cache stays read-only, and stays, for a run whose write roots hold it"
# Its masks are layers of every running sandbox's views: a run that could
# change them could show another run what that one hides.
masks=/var/tmp/corral-masks-$(id -u)
env -u XDG_RUNTIME_DIR "$CORRAL" run -- true # the cache exists
if [ -d "$masks" ]; then
  before=$(find "$masks" | wc -l)
  mark=$(mktemp -u /var/tmp/corral-test-written-XXXXXX)
  out=$(env -u XDG_RUNTIME_DIR "$CORRAL" run --allow-write /var/tmp -- sh -c "
    touch $mark && echo WROTE-ROOT; touch $masks/planted && echo WROTE-CACHE
    rm -rf $masks/* 2>/dev/null; mv $masks $masks.moved && echo MOVED-CACHE" 2>&1)
  expect_contains "$out" WROTE-ROOT
  expect_not_contains "$out" WROTE-CACHE
  expect_not_contains "$out" MOVED-CACHE
  expect_absent "$masks/planted"
  expect_eq "$before" "$(find "$masks" | wc -l)" "entries of the cache after the run"
  rm -f "$mark"
else
  fail "no mask cache at $masks"
fi

t "restricted reads show only platform, read and write roots"
mkdir -p "$other/visible"; echo seen > "$other/visible/f"
out=$(cr --read-root "$other/visible" -- sh -c "cat $other/visible/f; ls /usr/bin/env; ls $HOME; ls /var" 2>&1)
expect_contains "$out" seen
expect_contains "$out" /usr/bin/env
expect_contains "$out" "No such file"
out=$(cr --read-root "$other/visible" -- ls /)
expect_not_contains "$out" var
expect_not_contains "$out" boot
echo nope > "$other/sibling"
out=$(cr --read-root "$other/visible" -- ls -A "$other")
expect_eq visible "$out" "siblings of a read root"

t "no block device under /dev"
out=$(cr -- sh -c 'find /dev -type b 2>/dev/null | wc -l; ls /dev | tr "\n" " "')
expect_contains "$out" "0"
expect_not_contains "$out" sda
expect_not_contains "$out" vda

t "its own user, mount, pid, ipc, uts and network namespaces"
nsids() { for n in user mnt pid ipc uts net; do printf '%s ' "$(readlink "/proc/self/ns/$n")"; done; }
host=$(nsids)
inside=$(cr -- sh -c "$(declare -f nsids); nsids")
read -r -a h <<<"$host"; read -r -a i <<<"$inside"
same=0; for k in 0 1 2 3 4 5; do [ "${h[$k]}" = "${i[$k]}" ] && same=$((same + 1)); done
expect_eq 0 "$same" "namespaces shared with the host ($host / $inside)"
inside=$(cr --network allow -- sh -c "$(declare -f nsids); nsids")
read -r -a i <<<"$inside"
expect_eq "${h[5]}" "${i[5]}" "--network allow shares the host's network"
[ "${h[3]}" != "${i[3]}" ] && pass || fail "the ipc namespace is the host's with --network allow"

t "/proc shows only the sandbox"
sleep 300 & hostpids+=($!); hp=$!
out=$(cr -- sh -c 'ls /proc | grep -c "^[0-9]*$"')
[ "$out" -lt 10 ] && pass || fail "$out processes visible"
cr -- test -e "/proc/$hp/cmdline" && [ "$hp" -gt 20 ] && fail "host pid $hp visible" || pass

t "kill of a host pid fails and the process lives"
cr -- "$PROBE" kill "$hp" >/dev/null
kill -0 "$hp" 2>/dev/null && pass || fail "host process was killed"

t "ptrace of a sibling fails"
out=$(cr -- "$PROBE" ptrace-child); rc=$?
expect_eq 1 $rc "probe exit"; expect_contains "$out" EPERM

t "process_vm_readv and io_uring_setup fail"
out=$(cr -- "$PROBE" io_uring); expect_contains "$out" "failed: EPERM"
out=$(cr -- "$PROBE" process_vm_readv); expect_contains "$out" "failed"

t "TIOCSTI fails"
out=$(cr -- "$PROBE" tiocsti); expect_contains "$out" "failed"

t "capabilities all zero, NoNewPrivs 1, seccomp on"
out=$(cr -- cat /proc/self/status)
for f in CapInh CapPrm CapEff CapBnd CapAmb; do
  expect_contains "$out" "$(printf '%s:\t0000000000000000' $f)"
done
expect_contains "$out" "$(printf 'NoNewPrivs:\t1')"
expect_contains "$out" "$(printf 'Seccomp:\t2')"

t "a setuid copy of a shell does not run as root"
if [ -n "${SUID_BASH:-}" ]; then
  out=$(cr -- "$SUID_BASH" -p -c 'id -u')
  expect_eq "$(id -u)" "$out"
else
  pass
fi

t "descriptors other than 0 1 2 are closed"
exec 7</dev/null
out=$(cr -- sh -c 'ls /proc/self/fd | tr "\n" " "')
expect_eq "0 1 2 3 " "$out"
exec 7<&-

t "no network namespace to be had: a denied network fails closed, naming the step"
# The limit is per user namespace and counts for every one below it.
nonet() { unshare --user --map-root-user sh -c 'echo 0 > /proc/sys/user/max_net_namespaces && exec "$@"' sh "$@"; }
json=$(nonet "$CORRAL" run --json -- touch "$ws/ran-net"); rc=$?
expect_eq 125 $rc
expect_absent "$ws/ran-net"
expect_eq sandbox_setup_failure "$(printf '%s' "$json" | json_get outcome.kind)"
expect_contains "$(printf '%s' "$json" | json_get outcome.message)" "network: new namespace"
t "... while an allowed network needs none"
nonet "$CORRAL" run --network allow -- touch "$ws/ran-net"; expect_eq 0 $?
expect_eq yes "$([ -e "$ws/ran-net" ] && echo yes)"

t "loopback inside works with the network denied"
out=$(cr -- python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b"ping"); print(a.recv(4).decode())')
expect_eq ping "$out"

t "a server on the host's loopback is unreachable"
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
python3 -c "
import socket,time
s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',$port));s.listen();time.sleep(60)" &
hostpids+=($!)
sleep 0.3
out=$(cr -- python3 -c "
import socket
try:
    socket.create_connection(('127.0.0.1', $port), timeout=2); print('connected')
except OSError as e: print('refused', e)")
expect_contains "$out" refused
python3 -c "import socket;socket.create_connection(('127.0.0.1',$port),timeout=2)" && pass || fail "host server itself not reachable: test broken"
out=$(cr --network allow -- python3 -c "
import socket
socket.create_connection(('127.0.0.1', $port), timeout=2); print('connected')")
expect_eq connected "$out" "--network allow"

t "--block-unix-sockets: AF_UNIX sockets cannot be created, socketpair works"
out=$(cr --block-unix-sockets -- "$PROBE" unix-socket); expect_contains "$out" "failed: EPERM"
out=$(cr --block-unix-sockets -- "$PROBE" socketpair); expect_contains "$out" succeeded
out=$(cr -- "$PROBE" unix-socket); expect_contains "$out" succeeded

t "markers are set"
out=$(cr -- env)
expect_contains "$out" CORRAL_SANDBOXED=1
expect_contains "$out" CORRAL_SANDBOX_BACKEND=linux
expect_contains "$out" CORRAL_SANDBOX_NETWORK=deny

t "SIGKILL of corral run leaves no sandboxed process"
n=$((RANDOM % 1000 + 3000))
"$CORRAL" run -- sh -c "sleep $n & sleep $n" & rp=$!
for _ in $(seq 100); do pgrep -f "^sleep $n\$" >/dev/null && break; sleep 0.02; done
pgrep -f "^sleep $n\$" >/dev/null && pass || fail "sandboxed sleep never started"
kill -KILL $rp; wait $rp 2>/dev/null
for _ in $(seq 100); do pgrep -f "^sleep $n\$" >/dev/null || break; sleep 0.02; done
pgrep -f "^sleep $n\$" >/dev/null && fail "sandboxed process survived" || pass

t "a background process left by the command is gone when run returns"
n=$((RANDOM % 1000 + 5000))
cr -- sh -c "setsid sleep $n >/dev/null 2>&1 & exit 0"
expect_eq 0 $? "exit"
pgrep -f "^sleep $n\$" >/dev/null && fail "background process survived" || pass

t "a missing program is executable_not_found"
json=$(cr --json -- corral-no-such-program); rc=$?
expect_eq 127 $rc
expect_eq executable_not_found "$(printf '%s' "$json" | json_get outcome.kind)"
expect_eq false "$(printf '%s' "$json" | json_get outcome.launched)"

t "the outcome names the backend"
json=$(cr --json -- true)
expect_eq linux "$(printf '%s' "$json" | json_get outcome.enforcement.backend)"
expect_eq native "$(printf '%s' "$json" | json_get outcome.enforcement.level)"
expect_eq true "$(printf '%s' "$json" | json_get outcome.launched)"

t "a broken policy file is a clear error, exit 2"
printf '{"network": "sometimes"}' > "$other/bad.json"
out=$(cr --policy "$other/bad.json" -- true 2>&1); expect_eq 2 $?
expect_contains "$out" "$other/bad.json"; expect_contains "$out" network
printf '{"denyRead": ["/x"],}' > "$other/bad2.json"
out=$(cr --policy "$other/bad2.json" -- true 2>&1); expect_eq 2 $?
expect_contains "$out" byte
printf '{"denyWrit": []}' > "$other/bad3.json"
out=$(cr --policy "$other/bad3.json" -- true 2>&1); expect_eq 2 $?
expect_contains "$out" "denyWrit"
out=$(cr --policy "$other/missing.json" -- true 2>&1); expect_eq 2 $?
expect_contains "$out" "No such file"

t "a policy file applies"
printf '{"denyRead": ["%s/secret"], "network": "deny"}' "$ws" > "$other/good.json"
out=$(cr --policy "$other/good.json" -- cat "$ws/secret/key" 2>&1)
expect_not_contains "$out" s3cr3t

t "mode disabled runs unenforced and says so"
printf '{"mode": "disabled"}' > "$other/off.json"
json=$(cr --json --policy "$other/off.json" -- true)
expect_eq disabled "$(printf '%s' "$json" | json_get outcome.enforcement.level)"
expect_eq direct "$(printf '%s' "$json" | json_get outcome.enforcement.backend)"

t "corral policy prints the profile"
json=$("$CORRAL" policy --deny-read '~/.x' --network allow)
expect_eq "$HOME/.x" "$(printf '%s' "$json" | json_get denyRead.0)"
expect_eq allow "$(printf '%s' "$json" | json_get network)"
expect_contains "$(printf '%s' "$json" | json_get writeRoots)" "\"$ws\""

# An id the namespace cannot map: the kernel would say EINVAL; a process on
# a real machine, without privilege, gets EPERM, and programs tell them apart.
t "set*id and chown to another id fail with EPERM, as outside"
out=$(cr -- python3 -c '
import os, errno
open("idf", "w").close()
u, g = os.getuid(), os.getgid()
def t(fn):
    try: fn(); return "ok"
    except OSError as e: return errno.errorcode[e.errno]
print(t(lambda: os.chown("idf", u + 1, -1)), t(lambda: os.chown("idf", -1, g + 1)),
      t(lambda: os.fchown(os.open("idf", os.O_RDONLY), u + 1, -1)),
      t(lambda: os.chown("idf", u + 1, -1, dir_fd=os.open(".", os.O_RDONLY))),
      t(lambda: os.setuid(u + 1)), t(lambda: os.setgid(g + 1)), t(lambda: os.setreuid(-1, u + 1)),
      t(lambda: os.setresgid(g, g, g + 3)),
      t(lambda: os.chown("idf", u, g)), t(lambda: os.chown("idf", -1, -1)), t(lambda: os.setuid(u)),
      t(lambda: os.setresuid(-1, -1, -1)))' 2>&1)
expect_eq "EPERM EPERM EPERM EPERM EPERM EPERM EPERM EPERM ok ok ok ok" "$out"
rm -f "$ws/idf"

t "a process renices itself and its children by pid, never corral's init"
out=$(cr -- sh -c 'renice -n 3 -p $$ >/dev/null && echo self; sleep 5 & renice -n 4 -p $! >/dev/null && echo child; kill $!
renice -n 5 -p 1 >/dev/null 2>&1 || echo init-refused; chrt -i -p 0 1 2>/dev/null || echo sched-refused' 2>&1)
expect_eq "self
child
init-refused
sched-refused" "$out"

finish
