# corral exec: live stdio, binary safety, a PTY for terminals, signals and
# the caller's terminal modes restored on every way out.
. "$(dirname "$0")/../lib.sh"
ws=$(mktemp -d "$HOME/corral-exec-XXXXXX")
trap 'rm -rf "$ws"' EXIT
cd "$ws"

t "a line-by-line echo server answers each line before the next is sent"
out=$(python3 - "$CORRAL" <<'PY'
import subprocess, sys, select
p = subprocess.Popen([sys.argv[1], "exec", "--", "python3", "-u", "-c",
    "import sys\nfor l in sys.stdin: print('echo:' + l.strip(), flush=True)"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
ok = 0
for i in range(5):
    p.stdin.write(b"line%d\n" % i)
    r, _, _ = select.select([p.stdout], [], [], 5)
    if r and p.stdout.readline() == b"echo:line%d\n" % i:
        ok += 1
p.stdin.close(); p.wait()
print(ok, p.returncode)
PY
)
expect_eq "5 0" "$out"

t "10 MiB of binary data round-trips unchanged"
head -c 10485760 /dev/urandom > in.bin
"$CORRAL" exec -- cat < in.bin > out.bin
expect_eq 0 $?
cmp -s in.bin out.bin && pass || fail "binary data changed"

t "exit status after a signal is 128+N"
"$CORRAL" exec -- sh -c 'kill -TERM $$'; expect_eq 143 $?
"$CORRAL" exec -- sh -c 'exit 7'; expect_eq 7 $?
"$CORRAL" exec -- corral-no-such-program 2>/dev/null; expect_eq 127 $?

t "a terminal shared with the program (stdout, not stdin) is restored: modes and size"
out=$(python3 - "$CORRAL" <<'PY'
import os, pty, subprocess, sys, termios, fcntl, struct
m, s = pty.openpty()
fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
before = termios.tcgetattr(s)
p = subprocess.Popen([sys.argv[1], "exec", "--", "sh", "-c",
                      "stty -echo -icanon <&1; stty rows 11 cols 33 <&1; echo changed"],
                     stdin=subprocess.PIPE, stdout=s, stderr=s)
p.stdin.close(); p.wait()
after = termios.tcgetattr(s)
rows, cols = struct.unpack("HHHH", fcntl.ioctl(s, termios.TIOCGWINSZ, b"\0" * 8))[:2]
os.set_blocking(m, False)
try: seen = os.read(m, 4096)
except BlockingIOError: seen = b""
print(p.returncode, after[3] == before[3], rows, cols, b"changed" in seen)
PY
)
expect_eq "0 True 40 100 True" "$out"

t "on a terminal, the program's own terminal is at its /dev/pts name, with the caller's modes and size"
out=$(python3 - "$CORRAL" <<'PY'
import os, pty, select, subprocess, sys, termios, fcntl, struct, time
m, s = pty.openpty()
fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 37, 91, 0, 0))
attrs = termios.tcgetattr(s)
attrs[3] &= ~termios.ECHO   # the caller's terminal without echo: the program's starts so too
termios.tcsetattr(s, termios.TCSANOW, attrs)
p = subprocess.Popen([sys.argv[1], "exec", "--", "sh", "-c",
                      "tty; python3 -c 'import os; print(os.ttyname(0))'; stty size; stty -a | grep -o -- '-echo ' | head -1; ls /dev/pts | tr '\\n' ' '"],
                     stdin=s, stdout=s, stderr=s)
out = b""
deadline = time.time() + 20
while time.time() < deadline:
    if select.select([m], [], [], 0.2)[0]:
        try: out += os.read(m, 4096)
        except OSError: break
    elif p.poll() is not None:
        break
p.wait()
lines = [l.strip() for l in out.decode().splitlines() if l.strip()]
name = lines[0]
print(name.startswith("/dev/pts/"), lines[1] == name, lines[2], lines[3],
      sorted(lines[4].split()) == sorted([name.split("/")[-1], "ptmx"]))
PY
)
expect_eq "True True 37 91 -echo True" "$out"

t "a write outside the workspace fails as under run"
"$CORRAL" exec -- sh -c 'echo x > /etc/corral-exec-probe' 2>/dev/null && fail "write succeeded" || pass
expect_absent /etc/corral-exec-probe

t "--report holds a valid outcome"
"$CORRAL" exec --report "$ws/report.json" -- sh -c 'exit 4'
expect_eq 4 $?
expect_eq application_failure "$(json_get kind < "$ws/report.json")"
expect_eq 4 "$(json_get exit.code < "$ws/report.json")"
expect_eq linux "$(json_get enforcement.backend < "$ws/report.json")"

t "a --report that cannot be opened stops corral before the program runs"
"$CORRAL" exec --report "$ws/no-such-dir/report.json" -- touch "$ws/ran" 2>/dev/null
expect_eq 2 $?
expect_absent "$ws/ran"

t "bash -i under a PTY: job control works, the terminal is restored"
out=$(python3 - "$CORRAL" <<'PY'
import os, sys, termios, subprocess, time, select
master, slave = os.openpty()
before = termios.tcgetattr(slave)
def run(args, script, sig=None):
    p = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                         preexec_fn=lambda: __import__("fcntl").ioctl(0, termios.TIOCSCTTY, 0))
    buf = b""
    for line, wait_for in script:
        if line is not None:
            os.write(master, line)
        end = time.time() + 10
        while wait_for and wait_for not in buf and time.time() < end:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                buf += os.read(master, 65536)
    if sig:
        time.sleep(0.3)
        p.send_signal(sig)
    p.wait(timeout=10)
    # drain
    while select.select([master], [], [], 0.2)[0]:
        try:
            buf += os.read(master, 65536)
        except OSError:
            break
    return p.returncode, buf
rc, buf = run([sys.argv[1], "exec", "--", "bash", "--norc", "--noprofile", "-i"], [
    (None, b"bash-"),
    (b"sleep 0.5 &\n", b"[1]"),
    (b"fg\n", b"sleep 0.5"),
    (b"echo fg-done:$?\n", b"fg-done:0"),
    (b"exit\n", None)])
same1 = termios.tcgetattr(slave) == before
rc2, _ = run([sys.argv[1], "exec", "--", "sleep", "30"], [], sig=15)
same2 = termios.tcgetattr(slave) == before
print(rc, b"fg-done:0" in buf, same1, rc2, same2)
PY
)
expect_eq "0 True True 143 True" "$out"

finish
