# What the sandbox refused: each case attempts a write or a connection the
# sandbox stops, and asserts the outcome lists exactly the expected record
# (kind, scope, reason) and nothing else, and that nothing changed on the
# host.  The records come from init's observer (refusals.c); the walls
# stay the kernel's.  Run as root and as an unprivileged user.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked refusals.sh

ws=$(mktemp -d "$HOME/corral-refusals-XXXXXX")
# Outside every write root, yet the user's own: a write a grant would
# allow (one to /etc the user's own permissions refuse: not the sandbox's).
od=$(mktemp -d "$HOME/corral-refusals-out-XXXXXX")
trap 'rm -rf "$ws" "$od"' EXIT
cd "$ws"
# records ARGS... -- CMD: runs `corral run --json ARGS -- sh -c CMD`; prints
# the state, then one line per record: "kind scope count|reason".
records() {
  local args=()
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  "$CORRAL" run --json "${args[@]}" -- sh -c "$1" 2>/dev/null | python3 -c 'import json, sys
o = json.load(sys.stdin)["outcome"]
print(o["state"], o.get("denialsDropped", 0))
for d in o.get("denials", []):
    print("%s %s %d|%s" % (d["capability"]["kind"], d["capability"]["scope"], d.get("count", 1),
                           d["reason"]))'
}
probe_path=$od/probe
expect_absent "$probe_path"

t "a write outside the write roots: one record, and the command denied"
out=$(records -- "echo x > $probe_path")
expect_eq "denied 0
workspace_write $od 1|denied write to $probe_path (outside the write roots; allow with --allow-write $od)" "$out"
expect_absent "$probe_path"

t "the same refusal three times is one record, counted; exit 0 stays completed"
out=$(records -- "for i in 1 2 3; do echo x > $probe_path; done 2>/dev/null; true")
expect_eq "completed 0
workspace_write $od 3|denied write to $probe_path (outside the write roots; allow with --allow-write $od)" "$out"

t "a write under a --deny-write path inside the workspace"
mkdir -p locked
out=$(records --deny-write "$ws/locked" -- "echo x > locked/f")
expect_eq "denied 0
workspace_write $ws/locked 1|denied write to $ws/locked/f (read-only inside the write roots)" "$out"
expect_absent "$ws/locked/f"

t "a write to .git/hooks: protected metadata"
mkdir -p .git/hooks && touch .git/config .git/HEAD
out=$(records -- "echo evil > .git/hooks/pre-commit")
expect_eq "denied 0
protected_metadata $ws/.git/hooks 1|denied write to $ws/.git/hooks/pre-commit (protected metadata; allow with --allow-protected $ws/.git/hooks)" "$out"
expect_absent "$ws/.git/hooks/pre-commit"

t "a rename out of the workspace"
echo data > moved
out=$(records -- "python3 -c 'import os; os.rename(\"moved\", \"$od/moved\")'")
expect_eq "denied 0
workspace_write $od 1|denied rename $od/moved (outside the write roots; allow with --allow-write $od)" "$out"
expect_eq data "$(cat moved)" "the file left in place"
expect_absent "$od/moved"

t "a path through a chain of symlinks: the resolved target is reported"
ln -sfn l2 l1 && ln -sfn "$od" l2
out=$(records -- "echo x > l1/corral-chain-$$")
expect_eq "denied 0
workspace_write $od 1|denied write to $od/corral-chain-$$ (outside the write roots; allow with --allow-write $od)" "$out"
expect_absent "$od/corral-chain-$$"

t "a connection to an address of this machine with the network denied"
host_ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')
if [ -n "$host_ip" ]; then
  out=$(records -- "python3 -c '
import socket
s = socket.socket()
try: s.connect((\"$host_ip\", 9))
except OSError: raise SystemExit(1)'")
  expect_eq "denied 0
external_network $host_ip:9 1|denied connect $host_ip:9 (the network is closed; allow with --network allow)" "$out"
else
  pass # no global address here
fi

t "a 32-bit (i386) binary's write is heard too"
cat > m32.c <<EOF
/* No libc: open("$od/m32", O_WRONLY|O_CREAT) through int 0x80. */
static int sys3(int nr, int a, int b, int c) {
  int r;
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
  return r;
}
void _start(void) {
  int fd = sys3(5, (int)"$od/m32", 0101, 0644);
  sys3(1, fd < 0 ? 3 : 0, 0, 0);
  for (;;) {}
}
EOF
if [ "$(uname -m)" = x86_64 ] && gcc -m32 -nostdlib -static -ffreestanding -O1 -o m32 m32.c 2>/dev/null; then
  out=$(records -- ./m32)
  expect_eq "denied 0
workspace_write $od 1|denied write to $od/m32 (outside the write roots; allow with --allow-write $od)" "$out"
  expect_absent "$od/m32"
else
  pass # no 32-bit toolchain here
fi

t "loopback, binds to any address and writes in the write roots give no record"
out=$(records -- "python3 -c '
import socket
s = socket.socket(); s.bind((\"0.0.0.0\", 0)); s.listen()
c = socket.socket(); c.connect(s.getsockname())
open(\"/tmp/corral-refusals-$$\", \"w\").write(\"x\")'; rm -f /tmp/corral-refusals-$$")
expect_eq "completed 0" "$out"

t "a command that writes 10,000 files in the workspace gives no record"
out=$(records -- "python3 -c '
import os
os.mkdir(\"many\")
for i in range(10000):
    with open(\"many/f%d\" % i, \"w\") as f: f.write(\"x\")
os.system(\"rm -rf many\")'")
expect_eq "completed 0" "$out"

t "a flood of 100,000 refused writes: a bounded outcome"
for i in $(seq 100); do mkdir -p "$od/flood/d$i"; done
out=$(records -- "python3 -c '
import os
dirs = [\"$od/flood/d%d\" % i for i in range(1, 101)]
for i in range(100000):
    try: open(\"%s/corral-flood-$$\" % dirs[i % len(dirs)], \"w\")
    except OSError: pass'")
expect_eq 33 "$(printf '%s\n' "$out" | wc -l)" "lines: the state, then 32 records"
dropped=$(printf '%s\n' "$out" | head -1 | cut -d' ' -f2)
[ "$dropped" -gt 0 ] && pass || fail "no refusals said to be dropped: $out"
expect_contains "$(printf '%s\n' "$out" | sed -n 2p)" "workspace_write $od/flood/d"

t "a name of terminal controls and bytes that are not UTF-8 is shown escaped, everywhere"
out=$(records -- "mkdir \"$od/\$(printf 'x\nforged line\033[2K\377')\"")
expect_eq "denied 0
workspace_write $od 1|denied create $od/x\\x0aforged line\\x1b[2K\\xff (outside the write roots; allow with --allow-write $od)" "$out"

# corral's own configuration, missing in a place the command may write:
# a policy planted there would turn the sandbox off for every later run.
t "corral's own configuration cannot be planted where the command may write"
home=$(mktemp -d "$ws/home-XXXXXX")
mkdir "$home/.config"
HOME=$home XDG_CONFIG_HOME= "$CORRAL" run --allow-write "$home/.config" -- sh -c \
  'mkdir -p ~/.config/corral; echo "{\"mode\":\"disabled\"}" > ~/.config/corral/policy.json' 2>/dev/null
expect_absent "$home/.config/corral/policy.json"
expect_eq linux "$(cd "$home" && HOME=$home XDG_CONFIG_HOME= "$CORRAL" run --json -- true | json_get outcome.enforcement.backend)" \
  "the next run's sandbox"
# The same with HOME itself the workspace, and with XDG_CONFIG_HOME in it.
(cd "$home" && HOME=$home XDG_CONFIG_HOME= "$CORRAL" run -- sh -c \
  'mkdir -p .config/corral; echo "{\"mode\":\"disabled\"}" > .config/corral/policy.json') 2>/dev/null
expect_absent "$home/.config/corral/policy.json"
(cd "$home" && HOME=$home XDG_CONFIG_HOME=$home/cfg "$CORRAL" run -- sh -c \
  'mkdir -p cfg/corral; echo "{\"mode\":\"disabled\"}" > cfg/corral/policy.json') 2>/dev/null
expect_absent "$home/cfg/corral/policy.json"

t "a write the user's own permissions refuse is not the sandbox's: no record"
if [ "$(id -u)" -ne 0 ]; then
  out=$(records -- "echo x > /etc/corral-refusal-$$")
  expect_eq "failed 0" "$out"
else
  pass # root may write /etc on the host: the sandbox's refusal, tested above
fi

t "a name longer than the kernel takes is its refusal, not the sandbox's"
out=$(records -- "printf x > $od/\$(printf 'A%.0s' \$(seq 300))")
expect_eq "failed 0" "$out"

t "an open for reading that may create, of a file that is there, is no refusal"
echo data > "$od/there"
out=$(records -- "python3 -c 'import os; os.close(os.open(\"$od/there\", os.O_RDONLY | os.O_CREAT))'")
expect_eq "completed 0" "$out"

t "a line separator or a direction mark in a name is shown escaped"
out=$(records -- "mkdir \"$od/a\$(printf '\342\200\250')b\$(printf '\342\200\256')c\"")
expect_contains "$out" "denied create $od/a\\xe2\\x80\\xa8b\\xe2\\x80\\xaec ("

t "corral's own configuration reached through a symlink in a write root: the run is refused"
home2=$(mktemp -d "$ws/home-XXXXXX")
mkdir -p "$home2/dotfiles/config"
ln -s dotfiles/config "$home2/.config"
(cd "$home2" && HOME=$home2 XDG_CONFIG_HOME= "$CORRAL" run -- sh -c \
  'rm .config && mkdir -p .config/corral && echo "{\"mode\":\"disabled\"}" > .config/corral/policy.json') \
  2>/dev/null
expect_eq 125 $? "exit"
expect_absent "$home2/.config/corral/policy.json"
[ -L "$home2/.config" ] && pass || fail "the link was replaced"

t "corral run without --json says each refusal in one line on stderr, after the output"
err=$("$CORRAL" run -- sh -c "echo out; echo x > $probe_path" 2>&1 >/dev/null)
expect_contains "$err" "corral: denied write to $probe_path (outside the write roots; allow with --allow-write $od)"
expect_absent "$probe_path"

finish
