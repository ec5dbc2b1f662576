# Protected metadata, secrets, runtime directories, environment, nesting and
# the landlock-only adapter, from the inside, host checked afterwards.
# SANDBOX_AS=user re-runs this file as an unprivileged user (see sandbox.sh).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked protect.sh

# A temporary HOME with fake secret stores, so the real ones are never read.
fakehome=$(mktemp -d "$HOME/corral-home-XXXXXX")
ws=$(mktemp -d "$HOME/corral-ws-XXXXXX")
trap 'rm -rf "$fakehome" "$ws"' EXIT
export HOME=$fakehome XDG_CACHE_HOME=$fakehome/.cache
unset XDG_CONFIG_HOME CLOUDSDK_CONFIG GOOGLE_APPLICATION_CREDENTIALS NETRC NPM_CONFIG_USERCONFIG \
  DOCKER_CONFIG GH_CONFIG_DIR KUBECONFIG
cd "$ws"
cr() { "$CORRAL" run "$@"; }
git_id=(-c user.email=t@example.invalid -c user.name=t)

t "git init inside is stopped like a protected name: its config is code git runs on the host"
out=$(cr --json -- sh -c "git init -q; sleep 5"); expect_eq 125 $?
expect_eq "$ws/.git" "$(printf '%s' "$out" | json_get outcome.denial.capability.scope)"
expect_absent "$ws/.git"

t "git add, commit work inside a repository made outside"
git init -q
out=$(cr -- sh -c "echo a > f && git add f && git ${git_id[*]} commit -qm one && git log --oneline | wc -l" 2>&1)
expect_eq 1 "$out"

t ".git/hooks and .git/config are read-only; the rest of .git is not"
cp .git/config "$fakehome/config.before"
cr -- sh -c "echo evil > .git/hooks/pre-commit; echo '[x]' >> .git/config" 2>/dev/null
expect_absent .git/hooks/pre-commit
cmp -s .git/config "$fakehome/config.before" && pass || fail ".git/config changed"
out=$(cr -- sh -c "git ${git_id[*]} commit -q --allow-empty -m two && git branch b2 && echo x > g && git add g && git stash -q && git stash list | wc -l && git log --oneline | wc -l" 2>&1)
expect_eq "1
2" "$out"

for attempt in "mkdir .agents" "touch .corral" "mv f .agents" "mkdir .agents && rmdir .agents" "ln -s /etc .agents"; do
  t "protected metadata: \`$attempt\` is stopped and reported"
  git checkout -q -- f 2>/dev/null; echo a > f
  json=$(cr --json -- sh -c "$attempt; sleep 5; echo survived"); rc=$?
  expect_eq 125 $rc
  expect_eq denied "$(printf '%s' "$json" | json_get outcome.state)"
  expect_eq enforcement_denied "$(printf '%s' "$json" | json_get outcome.kind)"
  name=$(case "$attempt" in *corral*) echo .corral ;; *) echo .agents ;; esac)
  expect_eq "$ws/$name" "$(printf '%s' "$json" | json_get outcome.denial.capability.scope)"
  expect_eq protected_metadata "$(printf '%s' "$json" | json_get outcome.denial.capability.kind)"
  expect_eq configured_policy "$(printf '%s' "$json" | json_get outcome.denial.source)"
  expect_eq true "$(printf '%s' "$json" | json_get outcome.denial.recoverable)"
  expect_eq request_approval "$(printf '%s' "$json" | json_get outcome.denial.nextAction)"
  expect_contains "$(printf '%s' "$json" | json_get stderr)" "blocked creation of protected path $ws/$name"
  expect_not_contains "$(printf '%s' "$json" | json_get stdout)" survived
  expect_absent "$ws/$name"
done

t ".git cannot be moved aside to plant hooks in a new one"
cr -- sh -c "mv .git .git-aside; mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit" 2>/dev/null
expect_absent "$ws/.git-aside"
expect_absent "$ws/.git/hooks/pre-commit"
[ -f "$ws/.git/HEAD" ] && pass || fail ".git was replaced"

t "git cannot be pointed at planted hooks through .git/commondir or config.worktree"
for f in commondir config.worktree; do
  json=$(cr --json -- sh -c "mkdir -p evil/hooks; echo ../evil > .git/$f; sleep 5"); expect_eq 125 $?
  expect_eq "$ws/.git/$f" "$(printf '%s' "$json" | json_get outcome.denial.capability.scope)"
  expect_absent "$ws/.git/$f"
  rm -rf "$ws/evil"
done

t "submodule and worktree git directories are read-only; a missing one is made so"
mkdir -p "$ws/.git/modules/sub/hooks"
cr -- sh -c "echo evil > .git/modules/sub/hooks/post-checkout" 2>/dev/null
expect_absent "$ws/.git/modules/sub/hooks/post-checkout"
rm -rf "$ws/.git/modules" "$ws/.git/worktrees"
# git worktree add fails with git's own error and the command goes on.
json=$(cr --json -- sh -c "git worktree add -q wt 2>&1; mkdir -p .git/worktrees/w .git/modules/m; echo went-on")
expect_eq 0 $? "exit"
expect_contains "$(printf '%s' "$json" | json_get stdout)" "Read-only file system"
expect_contains "$(printf '%s' "$json" | json_get stdout)" went-on
expect_eq 0 "$(ls -A "$ws/.git/worktrees" "$ws/.git/modules" | grep -vc ':$\|^$')" "entries planted"
rm -rf "$ws/wt"

t "a .git that is a symlink: hooks and config stay read-only, a directory put in its place is stopped"
lws=$(mktemp -d "$HOME/corral-lws-XXXXXX")
git init -q "$lws/repo" && mv "$lws/repo/.git" "$lws/real.git" && rmdir "$lws/repo"
ln -s "$lws/real.git" "$lws/.git"
cp "$lws/real.git/config" "$fakehome/lconfig.before"
(cd "$lws" && cr -- sh -c "echo evil > .git/hooks/pre-commit; echo '[x]' >> .git/config") 2>/dev/null
expect_absent "$lws/real.git/hooks/pre-commit"
cmp -s "$lws/real.git/config" "$fakehome/lconfig.before" && pass || fail "config changed"
json=$(cd "$lws" && cr --json -- sh -c "rm .git; mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit; sleep 5"); expect_eq 125 $?
expect_eq "$lws/.git" "$(printf '%s' "$json" | json_get outcome.denial.capability.scope)"
expect_absent "$lws/.git/hooks/pre-commit"
rm -rf "$lws"

t "flooding the watched directory first does not hide a protected name's creation"
json=$(cr --json -- python3 -c '
import os
for i in range(20000): open("flood-%d" % i, "w").close()
os.mkdir(".agents")
import time; time.sleep(5)'); expect_eq 125 $?
expect_eq "$ws/.agents" "$(printf '%s' "$json" | json_get outcome.denial.capability.scope)"
expect_absent "$ws/.agents"
rm -f "$ws"/flood-*

t "an existing protected directory is read-only"
mkdir "$ws/.agents"
cr -- sh -c "echo x > $ws/.agents/planted" 2>/dev/null
expect_absent "$ws/.agents/planted"
rmdir "$ws/.agents"

t "no file appears on the host from setting this up"
before=$(cd "$ws" && find . -path ./.git -prune -o -print | sort)
cr -- true
after=$(cd "$ws" && find . -path ./.git -prune -o -print | sort)
expect_eq "$before" "$after"

# Fake secret stores.
mkdir -p "$HOME/.aws" "$HOME/.azure" "$HOME/.config/gcloud" "$HOME/.ssh" "$HOME/.gnupg" \
  "$HOME/.config/git" "$HOME/.docker" "$HOME/.kube" "$HOME/.config/gh" "$HOME/.cargo" \
  "$HOME/.config/corral"
stores=(.aws/credentials .azure/accessTokens.json .config/gcloud/credentials.db .ssh/id_ed25519
  .gnupg/secring.gpg .netrc .git-credentials .config/git/credentials .npmrc .pypirc
  .docker/config.json .kube/config .config/gh/hosts.yml .cargo/credentials.toml
  .cargo/credentials .config/corral/token)
for s in "${stores[@]}"; do echo "SECRET-$s" > "$HOME/$s"; done
echo "[user]" > "$HOME/.gitconfig"; echo "name = t" >> "$HOME/.gitconfig"
for s in "${stores[@]}"; do
  t "secret store ~/$s is unreadable"
  out=$(cr -- cat "$HOME/$s" 2>&1)
  expect_not_contains "$out" SECRET
done
t "~/.gitconfig stays readable"
expect_contains "$(cr -- cat "$HOME/.gitconfig")" "[user]"

t "a store created while the command runs stays unreadable"
rm -rf "$HOME/.aws"
( sleep 0.3; mkdir -p "$HOME/.aws"; echo SECRET-late > "$HOME/.aws/credentials" ) &
out=$(cr -- sh -c "sleep 0.8; cat $HOME/.aws/credentials" 2>&1); wait
expect_not_contains "$out" SECRET

t "a store created deeper down, under an existing ~/.config, stays unreadable too"
mkdir -p "$HOME/.config"; rm -rf "$HOME/.config/gh"
( sleep 0.3; mkdir -p "$HOME/.config/gh"; echo SECRET-gh > "$HOME/.config/gh/hosts.yml" ) &
out=$(cr -- sh -c "sleep 0.8; cat $HOME/.config/gh/hosts.yml 2>&1; echo listing:; ls -A $HOME/.config" 2>&1); wait
expect_not_contains "$out" SECRET
expect_not_contains "${out#*listing:}" gh

t "the rest of HOME stays readable, and a file added to it while the command runs shows"
echo early > "$HOME/early.txt"
( sleep 0.3; echo late > "$HOME/late.txt" ) &
out=$(cr -- sh -c "cat $HOME/early.txt; sleep 0.8; cat $HOME/late.txt" 2>&1); wait
expect_eq "early
late" "$out"

if [ "$(id -u)" -eq 0 ]; then
  t "a filesystem mounted inside HOME stays visible under the view"
  mkdir -p "$HOME/mnt" && mount -t tmpfs tmpfs "$HOME/mnt" && echo inside-mount > "$HOME/mnt/f"
  expect_eq inside-mount "$(cr -- cat "$HOME/mnt/f" 2>&1)"
  umount "$HOME/mnt"
fi

t "a HOME overlayfs cannot name (a colon in it) gets the other view, just as tight"
colon="$fakehome/odd:home"
mkdir -p "$colon"; echo visible > "$colon/plain"
( sleep 0.3; mkdir -p "$colon/.aws"; echo SECRET-colon > "$colon/.aws/credentials" ) &
out=$(HOME=$colon cr -- sh -c "cat $colon/plain; sleep 0.8; cat $colon/.aws/credentials" 2>&1); wait
expect_contains "$out" visible
expect_not_contains "$out" SECRET

t "with HOME reached through a symlink, a late store stays unreadable by its real path too"
ln -s "$fakehome" "$fakehome-link"
rm -rf "$HOME/.kube"
( sleep 0.3; mkdir -p "$HOME/.kube"; echo SECRET-kube > "$HOME/.kube/config" ) &
out=$(HOME=$fakehome-link cr -- sh -c "sleep 0.8; cat $fakehome/.kube/config $fakehome-link/.kube/config" 2>&1); wait
expect_not_contains "$out" SECRET
rm -f "$fakehome-link"

t "an atomic rename over a masked file does not unmask it"
( sleep 0.3; echo SECRET-renamed > "$HOME/.netrc.new"; mv "$HOME/.netrc.new" "$HOME/.netrc" ) &
out=$(cr -- sh -c "sleep 0.8; cat $HOME/.netrc" 2>&1); wait
expect_not_contains "$out" SECRET

t "--allow-read re-includes a store on purpose"
expect_eq SECRET-late "$(cr --allow-read "$HOME/.aws" -- cat "$HOME/.aws/credentials")"

# The masks' cache is one place for all of the user's runs, whatever their
# environment; other tests share it meanwhile, so these look at the mask
# of this test's own HOME (its key is that view's).
masks=/var/tmp/corral-masks-$(id -u)
t "the views' masks are made once, kept outside HOME, and found again"
cr -- true
read -r mask _ < <(cr -- cat /proc/self/mountinfo | home_mask)
[ -n "$mask" ] && [ -d "$mask" ] && pass || fail "no mask of $HOME in $masks"
elsewhere=$(mktemp -d /var/tmp/corral-elsewhere-XXXXXX) # a runtime directory of the user's
read -r again _ < <(XDG_RUNTIME_DIR=$elsewhere cr -- cat /proc/self/mountinfo | home_mask)
expect_eq "$mask" "$again" "the mask another environment's run uses"
expect_eq "" "$(ls -A "$elsewhere")" "what a run leaves in its runtime directory"
rm -rf "$elsewhere"
t "a mask from the cache keeps hiding a store created while the command runs"
rm -rf "$HOME/.aws"
cr -- true
( sleep 0.3; mkdir -p "$HOME/.aws"; echo SECRET-cached > "$HOME/.aws/credentials" ) &
out=$(cr -- sh -c "sleep 0.8; cat $HOME/.aws/credentials" 2>&1); wait
expect_not_contains "$out" SECRET

t "a run whose write roots hold the masks, or lie in them, cannot change them, and leaves them"
# They are layers of the views of every sandbox running meanwhile.
rm -rf "$HOME/.aws"
read -r mask in_mask < <(cr -- cat /proc/self/mountinfo | home_mask)
n1=$(find "$mask" | wc -l)
for root in "$masks" "$mask"; do
  cr --allow-write "$root" -- sh -c "echo planted > $mask/planted.txt; rm -f $in_mask/.aws" 2>/dev/null
  expect_absent "$mask/planted.txt"
  expect_eq "$n1" "$(find "$mask" | wc -l)" "entries of the mask after a run writing $root"
done
out=$(cr -- sh -c "cat $HOME/planted.txt 2>/dev/null; ls -a $HOME" 2>&1)
expect_not_contains "$out" planted

if [ "$(id -u)" -eq 0 ]; then
  t "a masks directory another user made first is not used, and nothing is written to it"
  # For a uid of no account's, whose cache no other test uses.
  uid=54000
  squat=/var/tmp/corral-masks-$uid
  uhome=$(mktemp -d /var/tmp/corral-squat-home-XXXXXX) # not in a write root
  uws=$(mktemp -d /var/tmp/corral-squat-ws-XXXXXX); chown "$uid:$uid" "$uhome" "$uws"
  rm -rf "$squat"
  setpriv --reuid=nobody --regid=nogroup --clear-groups mkdir -m 0777 "$squat"
  ( sleep 0.3; mkdir -p "$uhome/.aws"; echo SECRET-squat > "$uhome/.aws/credentials" ) &
  out=$(cd "$uws" && setpriv --reuid=$uid --regid=$uid --clear-groups env HOME="$uhome" \
    "$CORRAL" run -- sh -c "grep -o 'lowerdir=[^:]*' /proc/self/mountinfo; sleep 0.8; cat $uhome/.aws/credentials" 2>&1); wait
  expect_not_contains "$out" "$squat"
  expect_not_contains "$out" SECRET
  expect_eq "" "$(ls -A "$squat")"
  rm -rf "$squat" "$uhome" "$uws"
fi

t "daemons' and terminals' sockets (ssh-agent, docker, the session bus, tmux) cannot be reached; other sockets can"
# Not under HOME: a socket seen through its overlay view cannot be connected to.
sockdir=$(mktemp -d /var/tmp/corral-sock-XXXXXX)
listen() {  # a Unix socket answering "hello" to each connection
  python3 -c 'import socket,sys,os
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
while True:
    c,_=s.accept(); c.sendall(b"hello"); c.close()' "$1" &
  hostpids+=($!)
}
hostpids=()
mkdir "$sockdir/tmux-$(id -u)"
socks=(agent.sock docker.sock bus.sock tmux.sock "tmux-$(id -u)/default" other.sock)
for n in "${socks[@]}"; do listen "$sockdir/$n"; done
for n in "${socks[@]}"; do for _ in $(seq 50); do [ -S "$sockdir/$n" ] && break; sleep 0.05; done; done
probe='import socket,sys
for p in sys.argv[1:]:
    s=socket.socket(socket.AF_UNIX)
    try: s.connect(p); print(p.rsplit("/",1)[1], s.recv(5).decode())
    except OSError as e: print(p.rsplit("/",1)[1], "refused")'
out=$(SSH_AUTH_SOCK=$sockdir/agent.sock DOCKER_HOST=unix://$sockdir/docker.sock \
  DBUS_SESSION_BUS_ADDRESS=unix:path=$sockdir/bus.sock,guid=x \
  TMUX=$sockdir/tmux.sock,4242,0 TMUX_TMPDIR=$sockdir \
  cr -- python3 -c "$probe" "${socks[@]/#/$sockdir/}")
expect_eq "agent.sock refused
docker.sock refused
bus.sock refused
tmux.sock refused
default refused
other.sock hello" "$out"
out=$(SSH_AUTH_SOCK=$sockdir/agent.sock cr --allow-read "$sockdir/agent.sock" -- python3 -c "$probe" "$sockdir/agent.sock")
expect_eq "agent.sock hello" "$out" "--allow-read re-includes a socket"
mapfile -t llsock < <(socket_allows)
err=$(cd "$sockdir" && SSH_AUTH_SOCK=$sockdir/agent.sock cr --backend landlock "${llsock[@]}" -- true 2>&1)
expect_eq 125 $? "the landlock-only adapter cannot hide a socket: it refuses"
expect_contains "$err" "$sockdir/agent.sock"
for p in "${hostpids[@]}"; do kill "$p" 2>/dev/null; done
rm -rf "$sockdir"

t "secret environment variables are removed, ordinary ones kept"
out=$(OPENAI_API_KEY=k1 Anthropic_Api_Key=k2 GITHUB_TOKEN=k3 AWS_SECRET_ACCESS_KEY=k4 \
  ORDINARY_SETTING=kept cr -- env)
expect_not_contains "$out" =k1; expect_not_contains "$out" =k2
expect_not_contains "$out" =k3; expect_not_contains "$out" =k4
expect_contains "$out" ORDINARY_SETTING=kept
expect_contains "$out" "HOME=$HOME"
expect_contains "$out" "PATH="
printf '{"sensitiveEnv": ["MY_PRIVATE_THING"]}' > "$fakehome/p.json"
out=$(MY_PRIVATE_THING=k5 cr --policy "$fakehome/p.json" -- env)
expect_not_contains "$out" =k5

t "tool caches point into the runtime directory"
rt="$XDG_CACHE_HOME/corral/runtime/v1"
out=$(cr -- env)
for v in npm_config_cache YARN_CACHE_FOLDER PIP_CACHE_DIR GOCACHE GOMODCACHE CARGO_HOME TMPDIR XDG_CACHE_HOME COREPACK_HOME; do
  expect_contains "$out" "$v=$rt/"
done
out=$(cr -- sh -c 'mkdir -p "$PIP_CACHE_DIR" && echo x > "$PIP_CACHE_DIR/f" && echo ok')
expect_eq ok "$out"
ls -d "$rt"/*/ >/dev/null 2>&1 && pass || fail "no runtime directory"
perm=$(stat -c %a "$(ls -d "$rt"/*/ | head -1)cache")
expect_eq 700 "$perm" "runtime cache mode"

t "a leased runtime directory survives cleanup, an old unleased one does not"
mkdir -p "$rt/00000000000000aa/cache" "$rt/00000000000000bb/cache"
touch "$rt/00000000000000aa.lease" "$rt/00000000000000bb.lease"
touch -d '40 days ago' "$rt/00000000000000aa" "$rt/00000000000000bb"
touch -d '2 hours ago' "$rt/.cleaned" # the hourly look is due
flock -s "$rt/00000000000000bb.lease" sleep 3 & holder=$!
sleep 0.2
cr -- true
[ -d "$rt/00000000000000aa" ] && fail "old unleased directory kept" || pass
[ -d "$rt/00000000000000bb" ] && pass || fail "leased directory removed"
kill $holder 2>/dev/null; wait $holder 2>/dev/null

t "nested corral works and cannot write where the outer forbids"
out=$(cr -- "$CORRAL" run --json -- sh -c "echo inner > $ws/inner-ok; cat $ws/inner-ok")
expect_eq inner "$(printf '%s' "$out" | json_get stdout)"
expect_eq landlock "$(printf '%s' "$out" | json_get outcome.enforcement.backend)"
cr --read-only -- "$CORRAL" run -- sh -c "echo x > $ws/widened" 2>/dev/null
expect_absent "$ws/widened"
cr --deny-read "$ws/f" -- "$CORRAL" run --allow-read "$ws/f" -- cat "$ws/f" 2>/dev/null
[ $? -ne 0 ] && pass || fail "inner re-included what the outer hid"

# A workspace without .git: the landlock-only adapter cannot make .git/hooks
# read-only, so in a repository it refuses (tested below).
llws=$(mktemp -d "$HOME/ll-ws-XXXXXX"); cd "$llws"
t "landlock-only adapter: writes enforced"
json=$(cr --json --backend landlock "${llsock[@]}" -- sh -c "echo ok > $llws/ll; echo x > $fakehome/outside")
expect_eq landlock "$(printf '%s' "$json" | json_get outcome.enforcement.backend)"
expect_eq native "$(printf '%s' "$json" | json_get outcome.enforcement.level)"
expect_eq ok "$(cat "$llws/ll")"
expect_absent "$fakehome/outside"
t "landlock-only adapter: network denied, Unix sockets and loopback refused"
out=$(cr --backend landlock "${llsock[@]}" -- python3 -c '
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM); print("created")
except OSError as e: print("refused", e.errno)')
expect_contains "$out" "refused 1"
t "landlock-only adapter: secrets stay unreadable (Landlock read rules)"
out=$(cr --backend landlock "${llsock[@]}" -- cat "$HOME/.netrc" 2>&1)
expect_not_contains "$out" SECRET
t "landlock-only adapter: host processes cannot be signalled"
sleep 30 & hp=$!
cr --backend landlock "${llsock[@]}" -- kill "$hp" 2>/dev/null
kill -0 $hp 2>/dev/null && pass || fail "host process killed"
kill $hp
t "landlock-only adapter refuses what it cannot express, with the part named"
cd "$ws"
err=$(cr --backend landlock "${llsock[@]}" -- true 2>&1); expect_eq 125 $?
expect_contains "$err" ".git/hooks"
cd "$llws"; echo a > f
err=$(cr --backend landlock "${llsock[@]}" --deny-write "$llws/f" -- true 2>&1); expect_eq 125 $?
expect_contains "$err" "a read-only path in or around a write root"
json=$(cr --json --backend landlock "${llsock[@]}" --allow-degraded --deny-write "$llws/f" -- true)
expect_eq degraded "$(printf '%s' "$json" | json_get outcome.enforcement.level)"
expect_contains "$(printf '%s' "$json" | json_get outcome.enforcement.downgradeReason)" "read-only path"
# The views' masks, layers of every running sandbox's views: a write root
# holding them or inside them.
masks=/var/tmp/corral-masks-$(id -u)
mkdir -p "$masks/corral-test-inside"
for root in /var/tmp "$masks/corral-test-inside"; do
  err=$(cr --backend landlock "${llsock[@]}" --allow-write "$root" -- true 2>&1); expect_eq 125 $?
  expect_contains "$err" "$masks"
done
rmdir "$masks/corral-test-inside"

t "corral doctor --json is valid JSON and says what enforces"
json=$("$CORRAL" doctor --json); rc=$?
expect_eq 0 $rc "doctor's exit ($(printf '%s' "$json" | json_get defaultPolicy))"
expect_eq true "$(printf '%s' "$json" | json_get defaultPolicy.enforced)"
expect_contains "$(printf '%s' "$json" | json_get kernel)" landlockAbi

finish
