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
