# The change report suite: the report is made outside the sandbox, about a
# tree the command shapes as it likes.  Each case is the command trying to
# make corral look outside the workspace, or to change a file the report
# does not list, asserting the report says nothing of outside and the files
# outside are unchanged.  Run as root and as an unprivileged user
# (SANDBOX_AS=user).  One line above each case says what the attack is.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked changes.sh

ws=$(mktemp -d "$HOME/corral-changes-ws-XXXXXX")
outside=$(mktemp -d "$HOME/corral-changes-out-XXXXXX")
trap 'chmod -R u+rwx "$ws" 2>/dev/null; rm -rf "$ws" "$outside"' EXIT
mkdir "$outside/sub"
for i in 1 2 3; do echo secret > "$outside/outside-secret-$i"; done
echo secret > "$outside/sub/outside-deep"
listing() { (cd "$outside" && find . -printf '%p %s %T@ %C@\n' | sort | sha256sum); }
before=$(listing)
cd "$ws"
# run CMD: corral run --changes --json; the outcome in $out.
run() { out=$("$CORRAL" run --json --changes -- sh -c "$1" 2>/dev/null | json_get outcome); }
case_() { t "$1"; rm -rf "${ws:?}"/* 2>/dev/null; mkdir -p "$ws/src"; echo hi > "$ws/src/a"; }
# mcp_changes YIELD_MS CMD ...: one corral mcp server on $ws, each CMD an
# exec_command after the one before has answered (a session that outlasts
# its yield goes on beside the next); prints each call's changes, a line each.
mcp_changes() {
  python3 - "$CORRAL" "$ws" "$@" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--workspace", sys.argv[2]], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i:
            return m
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}})
args = sys.argv[3:]
for i in range(0, len(args), 2):
    m = call(i + 2, "tools/call", {"name": "exec_command",
                                   "arguments": {"yield_time_ms": int(args[i]), "cmd": args[i + 1]}})
    print(json.dumps(m["result"]["structuredContent"]["outcome"].get("changes")))
p.stdin.close()
p.wait()
PY
}

# A directory swapped for a symlink to a directory outside, over and over,
# while corral scans what is new: it must never list (or watch) outside.
case_ "a directory swapped for a symlink to outside while it is scanned"
run "for i in \$(seq 300); do mkdir -p d/e && touch d/e/f && rm -rf d && ln -s '$outside' d && rm d; done; ln -s '$outside' d"
expect_not_contains "$out" "outside-secret"
expect_not_contains "$out" "outside-deep"
expect_contains "$out" '"path": "d", "kind": "created"'
expect_eq "$before" "$(listing)" "the directory outside"

# An intermediate directory swapped for a symlink while the files under it
# are written: the lstat at the end must not follow it.
case_ "files under a directory that becomes a symlink to outside"
run "mkdir -p x/y && echo 1 > x/y/outside-secret-1 && mv x x.real && ln -s '$outside' x"
expect_not_contains "$out" '"x/'
expect_contains "$out" '"path": "x.real/y/outside-secret-1", "kind": "created"'
expect_eq "$before" "$(listing)" "the directory outside"

# A hard link to a workspace file made in a generated tree (never indexed),
# written through and removed: the file it is another name of shows.
case_ "a write through a hard link in a generated tree, removed after"
sleep 0.05
run "mkdir -p t/.cache && ln src/a t/.cache/y && echo evil >> t/.cache/y && rm -r t"
expect_contains "$out" '"path": "src/a", "kind": "modified"'

# Links made, written through and removed in new directories faster than
# corral can watch them (the directories stay, empty): every file shows.
case_ "writes through hard links in new directories, before their watches"
for round in 1 2 3; do # the race is lost only now and then without the filter
  rm -rf n*
  for i in $(seq 20); do echo "$i $round" > "src/f$i"; done
  sleep 0.05
  run "python3 -c 'import os
for i in range(1, 21):
    d = \"n%d\" % i
    os.mkdir(d); os.link(\"src/f%d\" % i, d + \"/y\")
    fd = os.open(d + \"/y\", os.O_WRONLY | os.O_APPEND); os.write(fd, b\"evil\"); os.close(fd)
    os.unlink(d + \"/y\")'"
  for i in $(seq 20); do
    expect_contains "$out" "\"path\": \"src/f$i\", \"kind\": \"modified\""
  done
done

# The same with the link removed before the write (an open descriptor).
case_ "a write through a hard link already removed"
sleep 0.05
run "python3 -c 'import os
os.link(\"src/a\", \"t\"); fd = os.open(\"t\", os.O_WRONLY); os.unlink(\"t\"); os.write(fd, b\"x\")'"
expect_contains "$out" '"path": "src/a", "kind": "modified"'

# Paths longer than the index holds: no report, and it says why (never a
# report that leaves the deep change out in silence).
case_ "a tree deeper in bytes than the index holds"
run "python3 -c 'import os
for i in range(17): os.mkdir(\"n\" * 250); os.chdir(\"n\" * 250)
open(\"payload\", \"w\").write(\"x\")'"
expect_contains "$out" '"changesSkipped": "the workspace has paths longer than'
expect_not_contains "$out" '"changes":'

# A directory made unreadable to corral (0300: the command can still make
# a link in it): the run compares every file, so the write shows.
case_ "a hard link in a directory corral cannot read"
mkdir -m 0300 locked
sleep 0.05
run "ln src/a locked/x && echo evil >> locked/x"
expect_contains "$out" '"path": "src/a", "kind": "modified"'
chmod 755 locked

# Protected-name and nested .git directories (never reported) made in one
# run, then used in the next for a link to a workspace file.
case_ "hard links in a .agents and a deep .git made by an earlier run"
run "mkdir -p p/.agents a/b/c/.git"
sleep 0.05
run "ln src/a p/.agents/l && echo evil > p/.agents/l && rm p/.agents/l"
expect_contains "$out" '"path": "src/a", "kind": "modified"'
sleep 0.05
run "ln src/a a/b/c/.git/l && echo evil >> a/b/c/.git/l"
expect_contains "$out" '"path": "src/a", "kind": "modified"'

# A second name made by an earlier run deep in a generated tree and in a
# `.git` (corral watches neither), written through in a later run: the
# file's ctime tells, and the report must say so.
case_ "writes through hard links an earlier run made where corral does not watch"
run "mkdir -p dist/x/y a/.git/x && ln src/a dist/x/y/b && ln src/a a/.git/x/l"
sleep 0.05
run "echo evil >> dist/x/y/b"
expect_contains "$out" '"path": "src/a", "kind": "modified"'
sleep 0.05
run "echo evil >> a/.git/x/l"
expect_contains "$out" '"path": "src/a", "kind": "modified"'

# The same within one corral mcp server, whose index outlives each call:
# the link in one call, the write in the next (and in the one after).
case_ "writes through a hard link an earlier call made, in corral mcp"
calls=$(mcp_changes 10000 "mkdir -p dist/x/y && ln src/a dist/x/y/b" \
  10000 "echo evil >> dist/x/y/b" 10000 "echo more >> dist/x/y/b")
expect_contains "$(sed -n 2p <<<"$calls")" '"path": "src/a", "kind": "modified"'
expect_contains "$(sed -n 3p <<<"$calls")" '"path": "src/a", "kind": "modified"'

# Two calls at once in one corral mcp: a link the first one's command
# makes, writes through and removes while the second runs is in the
# second's report too (whoever changed the workspace during a run).
case_ "a write through a hard link made beside a call, in corral mcp"
mkdir -p node_modules/pkg
sleep 0.05
calls=$(mcp_changes 250 \
  "sleep 1; ln src/a node_modules/pkg/h; echo evil >> node_modules/pkg/h; rm node_modules/pkg/h; sleep 2" \
  10000 "sleep 2.5" | sed -n 2p)
expect_contains "$calls" '"path": "src/a", "kind": "modified"'

# A second name outside the workspace, in another place the sandbox may
# write (/tmp, the same filesystem here), made on the host before the run:
# the sandbox cannot make such a link (each write root is its own mount),
# but it can write through one that exists.
case_ "a write through a hard link in /tmp, made before the run"
other=$(mktemp -d /tmp/corral-changes-link-XXXXXX)
if ln "$ws/src/a" "$other/a" 2>/dev/null; then
  sleep 0.05
  run "echo evil >> $other/a"
  expect_contains "$out" '"path": "src/a", "kind": "modified"'
else
  pass # /tmp is another filesystem here: no such link can exist
fi
rm -rf "$other"

# A name made of terminal controls, to rewrite the summary a person reads
# on stderr (without --json): its bytes are shown escaped.
case_ "a file name that erases the summary's lines"
summary=$("$CORRAL" run --changes -- sh -c "touch \"\$(printf 'x\033[2K\rC fake\nC other')\"" 2>&1)
expect_contains "$summary" '1 created'
expect_contains "$summary" 'x\x1b[2K\x0dC fake\x0aC other'
expect_eq 2 "$(printf '%s\n' "$summary" | wc -l)" "lines in the summary"

# A name that is not UTF-8: JSON cannot hold it, so it must not come out
# nameless (or as "", the root): U+FFFD in path, its bytes in pathBase64.
case_ "a file name that is not UTF-8"
run "touch \"\$(printf 'bad\377')\""
expect_contains "$out" '"path": "bad\ufffd", "pathBase64": "YmFk/w==", "kind": "created"'

expect_eq "$before" "$(listing)" "the directory outside, at the end"
finish
