# Nothing planted, nothing lost: what a command leaves in its write roots
# must not run or leak later outside the sandbox, and corral itself must
# neither destroy the user's data nor fall over on what the command made.
# Each case attacks from inside, then checks the host.  Run as root and,
# with SANDBOX_AS=user, as an unprivileged user.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked planted.sh

fakehome=$(mktemp -d "$HOME/corral-planted-home-XXXXXX")
ws=$(mktemp -d "$HOME/corral-planted-ws-XXXXXX")
trap 'chmod -R u+rwx "$ws" "$fakehome" 2>/dev/null; rm -rf "$fakehome" "$ws"' EXIT
export HOME=$fakehome XDG_CACHE_HOME=$fakehome/.cache
cd "$ws"
cr() { "$CORRAL" run "$@"; }

# --- a protected name planted in any shape is gone afterwards ----------
# The payload is built elsewhere and renamed into place at once, in shapes
# that defeat a naive cleanup: directories without write or search
# permission, and trees deeper than any recursion limit.
shapes=(
  "mkdir -p b/skills/evil; echo PAYLOAD > b/skills/evil/SKILL.md; chmod 555 b/skills/evil; mv b .agents"
  "mkdir -p b/x/y; echo PAYLOAD > b/x/y/f; chmod 000 b/x/y; chmod 100 b/x; mv b .agents"
  "python3 -c 'import os
os.mkdir(\"b\"); os.chdir(\"b\")
for i in range(3000): os.mkdir(\"d\"); os.chdir(\"d\")
open(\"PAYLOAD\", \"w\").write(\"PAYLOAD\")'; mv b .agents"
)
for shape in "${shapes[@]}"; do
  t "protected name planted as: ${shape:0:60}"
  json=$(cr --json -- sh -c "$shape; sleep 5; echo survived"); rc=$?
  expect_eq 125 $rc
  expect_eq enforcement_denied "$(printf '%s' "$json" | json_get outcome.kind)"
  expect_not_contains "$(printf '%s' "$json" | json_get stdout)" survived
  expect_absent "$ws/.agents"
  expect_absent "$ws/b"
  rm -rf "$ws/b" "$ws/.agents" 2>/dev/null
done

# --- git code planted where the user's git would run it ----------------
# Each plants a command for git on the host to run (core.fsmonitor runs on
# `git status`, a pre-commit hook on `git commit`), then the host's git is
# run as the user would, and the planted command must not have run.
gitc() { git -c user.email=t@example.invalid -c user.name=t -c protocol.file.allow=always "$@"; }
mark="$fakehome/PWNED"
fsmon="git config core.fsmonitor 'touch $mark; false'"

t "git init in a workspace that is no repository"
mkdir -p "$ws/plain"; (cd "$ws/plain" && cr -- sh -c "git init -q . && $fsmon") >/dev/null 2>&1
(cd "$ws/plain" && git status >/dev/null 2>&1); expect_absent "$mark"; expect_absent "$ws/plain/.git"

t "git init in a workspace below a repository's top"
mkdir -p "$ws/repo/sub"; gitc -C "$ws/repo" init -q
(cd "$ws/repo/sub" && cr -- sh -c "git init -q . && $fsmon") >/dev/null 2>&1
(cd "$ws/repo/sub" && git status >/dev/null 2>&1); expect_absent "$mark"; expect_absent "$ws/repo/sub/.git"

t "git init in a directory between /tmp and a workspace below it"
tw=$(mktemp -d /tmp/corral-planted-up-XXXXXX); mkdir -p "$tw/ws"
(cd "$tw/ws" && cr -- sh -c "git init -q $tw && cd $tw && $fsmon") >/dev/null 2>&1
(cd "$tw/ws" && git status >/dev/null 2>&1); expect_absent "$mark"; expect_absent "$tw/.git"
rm -rf "$tw"

t "a work tree root turned into a bare repository (.git/HEAD moved away)"
gitc init -q "$ws/bare" && gitc -C "$ws/bare" commit -q --allow-empty -m x
(cd "$ws/bare" && cr -- sh -c "mv .git/HEAD .git/HEAD.away; echo 'ref: refs/heads/master' > HEAD; mkdir -p objects refs; printf '[core]\n bare = false\n worktree = %s\n fsmonitor = \"touch $mark; false\"\n' \"\$PWD\" > config") >/dev/null 2>&1
(cd "$ws/bare" && git status >/dev/null 2>&1); expect_absent "$mark"; expect_absent "$ws/bare/HEAD"
rm -rf "$ws/bare"

t "a submodule's .git swapped for a planted repository"
gitc init -q "$fakehome/libsrc" && gitc -C "$fakehome/libsrc" commit -q --allow-empty -m l
gitc init -q "$ws/super" && gitc -C "$ws/super" submodule add -q "$fakehome/libsrc" lib >/dev/null 2>&1 &&
  gitc -C "$ws/super" commit -qm sub
(cd "$ws/super" && cr -- sh -c "rm -f lib/.git && git init -q lib && cd lib && $fsmon") >/dev/null 2>&1
(cd "$ws/super" && git status >/dev/null 2>&1); expect_absent "$mark"
[ -f "$ws/super/lib/.git" ] && pass || fail "the submodule's .git was replaced"

t "a symlinked .git/hooks replaced by a real directory"
gitc init -q "$ws/hl" && mkdir -p "$fakehome/realhooks" && rm -rf "$ws/hl/.git/hooks" &&
  ln -s "$fakehome/realhooks" "$ws/hl/.git/hooks"
(cd "$ws/hl" && cr -- sh -c "rm .git/hooks && mkdir .git/hooks && printf '#!/bin/sh\ntouch $mark\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit") >/dev/null 2>&1
(cd "$ws/hl" && gitc commit -q --allow-empty -m x >/dev/null 2>&1); expect_absent "$mark"
[ -d "$ws/hl/.git/hooks" ] && [ ! -L "$ws/hl/.git/hooks" ] && fail "a hooks directory was planted" || pass

t "core.hooksPath in the work tree (husky) is read-only"
gitc init -q "$ws/hp" && mkdir -p "$ws/hp/.husky" && gitc -C "$ws/hp" config core.hooksPath .husky
(cd "$ws/hp" && cr -- sh -c "printf '#!/bin/sh\ntouch $mark\n' > .husky/pre-commit && chmod +x .husky/pre-commit") >/dev/null 2>&1
(cd "$ws/hp" && gitc commit -q --allow-empty -m x >/dev/null 2>&1); expect_absent "$mark"
expect_absent "$ws/hp/.husky/pre-commit"
t "repositories nested in the work tree (not submodules) are protected like the top one"
gitc init -q "$ws/nest" && mkdir -p "$ws/nest/vendor" && gitc init -q "$ws/nest/sub" &&
  gitc init -q "$ws/nest/vendor/lib"
json=$(cd "$ws/nest" && cr --json -- sh -c "for r in sub vendor/lib; do (cd \$r && $fsmon; rm -rf .git/hooks; mkdir -p .git/hooks; printf '#!/bin/sh\ntouch $mark\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; cd .. && mv \$r/.git \$r/.git-away); done; echo went-on"); rc=$?
expect_eq 0 $rc "exit"
expect_contains "$(printf '%s' "$json" | json_get stdout)" went-on
for r in sub vendor/lib; do
  (cd "$ws/nest/$r" && git status >/dev/null 2>&1 && gitc commit -q --allow-empty -m x >/dev/null 2>&1)
  expect_absent "$mark"; expect_absent "$ws/nest/$r/.git-away"
done
t "a nested repository's directories cannot be renamed away and a planted one put in their place"
gitc init -q "$ws/nest2" && mkdir -p "$ws/nest2/vendor" && gitc init -q "$ws/nest2/sub" &&
  gitc init -q "$ws/nest2/vendor/lib"
(cd "$ws/nest2" && cr -- sh -c "mv sub .sub-old; mv vendor .v; mv vendor/lib vendor/lib2
  for r in sub vendor/lib; do rm -rf \$r; mkdir -p \$r; (cd \$r && git init -q . && $fsmon); done; echo went-on") >/dev/null 2>&1
for r in sub vendor/lib; do
  (cd "$ws/nest2/$r" && git status >/dev/null 2>&1); expect_absent "$mark"
done
expect_absent "$ws/nest2/.sub-old"; expect_absent "$ws/nest2/.v"

t "what a repository's .git file, config includes and hooksPath name is protected too; a bare one's hooks"
gitc init -q "$ws/more" && gitc -C "$ws/more" init -q --separate-git-dir="$ws/more/.sep" sep &&
  gitc init -q --bare "$ws/more/mirror.git" && gitc init -q "$ws/more/inc" &&
  printf '[include]\n\tpath = ../shared.gitconfig\n[core] hooksPath = .githooks ; a comment\n' >> "$ws/more/inc/.git/config" &&
  touch "$ws/more/inc/shared.gitconfig" && mkdir -p "$ws/more/inc/.githooks"
(cd "$ws/more" && cr -- sh -c "(cd sep && $fsmon)
  printf '#!/bin/sh\ntouch $mark\n' > mirror.git/hooks/pre-receive; chmod +x mirror.git/hooks/pre-receive
  printf '[core]\n\tfsmonitor = \"touch $mark; false\"\n' > inc/shared.gitconfig
  printf '#!/bin/sh\ntouch $mark\n' > inc/.githooks/pre-commit; chmod +x inc/.githooks/pre-commit") >/dev/null 2>&1
(cd "$ws/more/sep" && git status >/dev/null 2>&1)
(cd "$ws/more/inc" && git status >/dev/null 2>&1 && gitc commit -q --allow-empty -m x >/dev/null 2>&1)
expect_absent "$mark"; expect_absent "$ws/more/mirror.git/hooks/pre-receive"

t "the directories above a workspace in /tmp, a git directory a .git file names, an included file: none can be moved away; nested includes are read-only"
tb=$(mktemp -d /tmp/corral-planted-above-XXXXXX); mkdir -p "$tb/p/ws" "$tb/gd" "$tb/inc" "$tb/ws2"
gitc init -q "$tb/p/ws" && echo '[user]' > "$tb/inc/i.cfg" && gitc -C "$tb/p/ws" config include.path "$tb/inc/i.cfg" &&
  printf '[include]\n\tpath = b.cfg\n' > "$tb/p/ws/a.cfg" && touch "$tb/p/ws/b.cfg" &&
  gitc -C "$tb/p/ws" config --add include.path ../a.cfg && gitc -C "$tb/ws2" init -q --separate-git-dir="$tb/gd/x.git"
(cd "$tb/p/ws" && cr -- sh -c "cd /; mv $tb/p $tb/q && mkdir -p $tb/p/ws && cd $tb/p/ws && git init -q && $fsmon
  mv $tb/inc $tb/inc2; mkdir -p $tb/inc; printf '[core]\n\tfsmonitor = \"touch $mark; false\"\n' > $tb/inc/i.cfg
  printf '[core]\n\tfsmonitor = \"touch $mark; false\"\n' > $tb/p/ws/b.cfg") >/dev/null 2>&1
(cd "$tb/ws2" && cr -- sh -c "mv $tb/gd $tb/gd2 && mkdir -p $tb/gd && git init -q --bare $tb/gd/x.git &&
  git --git-dir=$tb/gd/x.git config core.bare false && git --git-dir=$tb/gd/x.git config core.fsmonitor 'touch $mark; false'") >/dev/null 2>&1
(cd "$tb/p/ws" && git status >/dev/null 2>&1); (cd "$tb/ws2" && git status >/dev/null 2>&1)
expect_absent "$mark"; expect_absent "$tb/q"; expect_absent "$tb/inc2"; expect_absent "$tb/gd2"
rm -rf "$tb"

t "a planted config that is /dev/zero, a FIFO or a dangling hooks link cannot stop later runs"
gitc init -q "$ws/dos"
(cd "$ws/dos" && cr -- sh -c 'mkdir -p z/.git y/.git d/.git && ln -s /dev/zero z/.git/config &&
  mkfifo y/.git/config && ln -s /nonexistent d/.git/hooks && ln -sf /dev/zero .gitmodules') >/dev/null 2>&1
(cd "$ws/dos" && timeout -s KILL 20 "$CORRAL" run -- true); expect_eq 0 $? "a later run"
rm -rf "$ws/plain" "$ws/repo" "$ws/super" "$ws/hl" "$ws/hp" "$ws/nest" "$ws/nest2" "$ws/more" "$ws/dos" \
  "$fakehome/libsrc" "$fakehome/realhooks"

# --- a protected name another user makes in a shared write root ---------
if [ "$(id -u)" -eq 0 ] && id corraltest >/dev/null 2>&1 && [ ! -e /tmp/.agents ]; then
  t "another user's .agents in /tmp neither ends the command nor is removed"
  ( sleep 0.5; setpriv --reuid=corraltest --regid=corraltest --init-groups \
      sh -c 'mkdir /tmp/.agents && echo theirs > /tmp/.agents/notes' ) &
  json=$(cr --json -- sh -c 'sleep 1.5; echo finished'); rc=$?
  wait
  expect_eq 0 $rc "exit"
  expect_eq success "$(printf '%s' "$json" | json_get outcome.kind)"
  expect_eq theirs "$(cat /tmp/.agents/notes 2>/dev/null)"
  rm -rf /tmp/.agents
fi

# --- a read-only host mount below a write root (WSL2's /tmp/.X11-unix) --
if [ "$(id -u)" -eq 0 ]; then
  t "a read-only host mount below a write root stays read-only, and the run goes ahead"
  mkdir -p "$ws/romnt" && echo keep > "$ws/romnt/f"
  mount --bind "$ws/romnt" "$ws/romnt" && mount -o remount,bind,ro "$ws/romnt"
  out=$(cr -- sh -c "echo x > $ws/romnt/f; echo x > $ws/rw-ok && echo wrote-rw" 2>&1); rc=$?
  umount "$ws/romnt"
  expect_eq 0 $rc "exit"; expect_contains "$out" wrote-rw; expect_contains "$out" "Read-only"
  expect_eq keep "$(cat "$ws/romnt/f")"
  rm -rf "$ws/romnt" "$ws/rw-ok"
fi

# --- the views' masks, poisoned between runs -----------------------------
# A run that could write the masks' cache (or anything else of the user's)
# removes the whiteout that hides a store and adds a file of its own; the
# next run must neither show the store created while it runs nor the file.
t "a poisoned mask in the cache is not used"
# The mask of this test's own HOME (other tests share the cache).
read -r mask in_mask < <(cr -- cat /proc/self/mountinfo | home_mask)
wo=$in_mask/.vault-token
[ -n "$mask" ] && [ -c "$wo" ] && pass || fail "no cached mask with a whiteout for .vault-token"
if [ -n "$mask" ] && [ -c "$wo" ]; then
  rm -f "$wo"; echo PLANTED > "$mask/planted-by-run"
  (sleep 0.5; echo TOPSECRET > "$HOME/.vault-token") &
  out=$(cr -- sh -c "sleep 1.5; cat $HOME/.vault-token $HOME/planted-by-run" 2>&1)
  wait
  expect_not_contains "$out" TOPSECRET; expect_not_contains "$out" PLANTED
  rm -f "$HOME/.vault-token"
fi

# --- trees deeper than any walk could recurse --------------------------
t "a tree 3,000 levels deep: change reports say so, corral survives"
cr -- python3 -c 'import os
os.mkdir("deep"); os.chdir("deep")
for i in range(3000): os.mkdir("d"); os.chdir("d")'
json=$(cr --changes --json -- touch made); expect_eq 0 $?
expect_eq success "$(printf '%s' "$json" | json_get outcome.kind)"
expect_contains "$(printf '%s' "$json" | json_get outcome.changesSkipped)" "levels deep"
rm -rf "$ws/deep" "$ws/made"

finish
