# The secret stores: each case is a real attempt from inside `corral run`
# to read a credential, asserting that the attempt failed AND that nothing
# of the secret leaked.  Fake stores live in a temporary HOME; the few that
# must be in the real home or in /etc are made only where none exists, and
# removed on exit.  Run as root and as an unprivileged user
# (SANDBOX_AS=user).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked secrets.sh

realhome=$HOME
ws=$(mktemp -d "$HOME/corral-sec-ws-XXXXXX")
fh=$(mktemp -d "$HOME/corral-sec-home-XXXXXX")
other=$(mktemp -d /tmp/corral-sec-other-XXXXXX)
made=()
trap 'rm -rf "$ws" "$fh" "$other"; for f in "${made[@]}"; do rm -f "$f"; done' EXIT
cd "$ws"
cr() { "$CORRAL" run "$@"; }
cases=0
case_() { t "$1"; cases=$((cases + 1)); }
# Every variable that moves a store: the defaults are tested, and the few
# variables on their own below.
unset XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME GNUPGHOME PASSWORD_STORE_DIR \
  BITWARDENCLI_APPDATA_DIR SOPS_AGE_KEY_FILE NETRC CODEX_HOME CLAUDE_CONFIG_DIR LLM_USER_PATH \
  HF_TOKEN_PATH HF_HOME KAGGLE_CONFIG_DIR AWS_SHARED_CREDENTIALS_FILE AZURE_CONFIG_DIR \
  CLOUDSDK_CONFIG GOOGLE_APPLICATION_CREDENTIALS BOTO_CONFIG RCLONE_CONFIG TF_CLI_CONFIG_FILE \
  PULUMI_HOME DATABRICKS_CONFIG_FILE SNOWFLAKE_HOME DBT_PROFILES_DIR JFROG_CLI_HOME_DIR KUBECONFIG \
  DOCKER_CONFIG DOCKER_CERT_PATH REGISTRY_AUTH_FILE HELM_REGISTRY_CONFIG HELM_REPOSITORY_CONFIG \
  TALOSCONFIG GH_CONFIG_DIR HUB_CONFIG GLAB_CONFIG_DIR NPM_CONFIG_USERCONFIG npm_config_userconfig \
  PIP_CONFIG_FILE CARGO_HOME BUNDLE_USER_CONFIG GRADLE_USER_HOME COMPOSER_HOME HEX_HOME PGPASSFILE \
  PGSERVICEFILE MYSQL_TEST_LOGIN_FILE HISTFILE ZDOTDIR PYTHON_HISTORY PSQL_HISTORY MYSQL_HISTFILE \
  SQLITE_HISTORY REDISCLI_HISTFILE NODE_REPL_HISTORY KRB5CCNAME

# The default stores below HOME (the table in src/policy.c and README.md);
# a trailing / marks a directory, which gets a file inside.
stores=(
  .ssh/ .gnupg/ .password-store/ .local/share/gopass/ .local/share/keyrings/
  .local/share/kwalletd/ .config/op/ .op/ ".config/Bitwarden CLI/" .config/sops/age/keys.txt
  .minisign/minisign.key .vault-token .netrc .authinfo .authinfo.gpg .env
  .codex/auth.json .claude/.credentials.json .claude.json .gemini/oauth_creds.json
  .gemini/mcp-oauth-tokens.json .gemini/.env .config/github-copilot/ .copilot/config.json
  .aider/oauth-keys.env .aider.conf.yml .continue/.env .local/share/opencode/auth.json
  .config/goose/secrets.yaml .config/io.datasette.llm/keys.json .cache/huggingface/token
  .huggingface/token .kaggle/kaggle.json .config/kaggle/kaggle.json .ollama/id_ed25519
  .aws/ .azure/ .config/gcloud/ .boto .oci/ .config/doctl/ .fly/ .aliyun/ .bluemix/
  .config/linode-cli .config/hcloud/ .config/scw/ .config/openstack/ .s3cfg .mc/ .passwd-s3fs
  .config/rclone/rclone.conf .rclone.conf .terraform.d/credentials.tfrc.json .terraformrc
  .pulumi/credentials.json .databrickscfg .snowflake/ .dbt/profiles.yml .sf/ .sfdx/
  .cloudflared/ .wrangler/config/ .config/.wrangler/config/ .local/share/com.vercel.cli/auth.json
  .config/netlify/config.json .supabase/access-token .railway/config.json .config/configstore/
  .config/stripe/config.toml .config/ngrok/ngrok.yml .ngrok2/ngrok.yml .sentryclirc .jfrog/
  .kube/config .docker/config.json .docker/contexts/tls/ .docker/key.pem
  .config/containers/auth.json .config/helm/registry/config.json .config/helm/repositories.yaml
  .talos/config
  .git-credentials .config/git/credentials .config/gh/hosts.yml .config/hub .config/glab-cli/
  .config/tea/config.yml .subversion/auth/
  .npmrc .yarnrc.yml .bunfig.toml .config/.bunfig.toml .config/pnpm/rc .pypirc
  .config/pip/pip.conf .pip/pip.conf .config/pypoetry/auth.toml .local/share/uv/credentials/
  .cargo/credentials .cargo/credentials.toml .gem/credentials .local/share/gem/credentials
  .bundle/config .m2/settings.xml .m2/settings-security.xml .gradle/gradle.properties
  .nuget/NuGet/NuGet.Config .config/NuGet/NuGet.Config .composer/auth.json
  .config/composer/auth.json .config/dart/pub-credentials.json .config/dart/pub-tokens.json
  .hex/hex.config .julia/servers/ .Renviron
  .pgpass .pg_service.conf .my.cnf .mylogin.cnf .msmtprc .config/msmtp/config .fetchmailrc
  .bash_history .zsh_history .zhistory .histfile .sh_history .local/share/fish/fish_history
  .config/nushell/history.txt .config/nushell/history.sqlite3 .local/share/atuin/history.db
  .python_history .psql_history .mysql_history .sqlite_history .rediscli_history
  .node_repl_history .irb_history .local/share/irb/irb_history .mongodb/mongosh/ .dbshell
  .julia/logs/repl_history.jl
  .mozilla/ .thunderbird/ .config/google-chrome/ .config/chromium/ .config/BraveSoftware/
  .config/microsoft-edge/ .config/Slack/ .config/discord/ .config/Signal/
  .local/share/TelegramDesktop/
  .config/corral/
)
# Fills the stores below $1; prints the files made, one a line.
plant() {
  local s f
  for s in "${stores[@]}"; do
    case "$s" in */) f="$1/${s}key" ;; *) f="$1/$s" ;; esac
    mkdir -p "$(dirname "$f")" && echo TOPSECRET > "$f" && printf '%s\n' "$f"
  done
}
# A script for inside: tries each file named in $files, says which it read.
reader='for f in $files; do cat "$f" >/dev/null 2>&1 && echo "read: $f"; done; cat $files 2>/dev/null; grep -r TOPSECRET "$top" 2>/dev/null; exit 0'

case_ "every default store in HOME (plain and XDG places) is unreadable"
files=$(plant "$fh")
expect_eq "${#stores[@]}" "$(printf '%s\n' "$files" | wc -l)" "stores made"
out=$(HOME=$fh files=$files top=$fh cr -- sh -c "IFS='
'; $reader" 2>&1)
expect_not_contains "$out" TOPSECRET
expect_not_contains "$out" "read: "
expect_eq "" "$(printf '%s' "$out" | head -c 300)" "output"
# Not too much: what is next to the stores stays readable.
echo PUBLIC > "$fh/.ssh-not"; mkdir -p "$fh/.config/other"; echo PUBLIC > "$fh/.config/other/f"
expect_eq "PUBLIC
PUBLIC" "$(HOME=$fh cr -- cat "$fh/.ssh-not" "$fh/.config/other/f" 2>&1)"

case_ "the same with the landlock-only adapter (read rules, no mounts)"
llsock=(); while IFS= read -r a; do llsock+=("$a"); done < <(HOME=$fh socket_allows)
out=$(HOME=$fh files=$files top=$fh cr --backend landlock "${llsock[@]}" -- sh -c "IFS='
'; $reader" 2>&1)
expect_not_contains "$out" TOPSECRET
expect_not_contains "$out" "read: "

case_ "stores in \$XDG_CONFIG_HOME, \$XDG_DATA_HOME, \$XDG_CACHE_HOME"
xh=$(mktemp -d "$other/xdg-XXXXXX")
mkdir -p "$xh/cfg/gh" "$xh/cfg/rclone" "$xh/cfg/github-copilot" "$xh/data/fish" "$xh/data/keyrings" \
  "$xh/cache/huggingface"
for f in cfg/gh/hosts.yml cfg/rclone/rclone.conf cfg/github-copilot/hosts.json \
  data/fish/fish_history data/keyrings/login.keyring cache/huggingface/token; do
  echo TOPSECRET > "$xh/$f"
done
out=$(HOME=$fh XDG_CONFIG_HOME=$xh/cfg XDG_DATA_HOME=$xh/data XDG_CACHE_HOME=$xh/cache \
  cr -- sh -c "cat $xh/cfg/gh/hosts.yml $xh/cfg/rclone/rclone.conf $xh/cfg/github-copilot/hosts.json \
  $xh/data/fish/fish_history $xh/data/keyrings/login.keyring $xh/cache/huggingface/token; grep -r TOPSECRET $xh" 2>&1)
expect_not_contains "$out" TOPSECRET
expect_contains "$out" "Permission denied"

case_ "stores that a tool's variable moves, and the default place with them"
vh=$(mktemp -d "$other/vars-XXXXXX")
mkdir -p "$vh/codex" "$vh/claude" "$vh/docker" "$vh/gradle"
for f in codex/auth.json claude/.credentials.json docker/config.json gradle/gradle.properties \
  pgpass vault; do echo TOPSECRET > "$vh/$f"; done
out=$(HOME=$fh CODEX_HOME=$vh/codex CLAUDE_CONFIG_DIR=$vh/claude DOCKER_CONFIG=$vh/docker \
  GRADLE_USER_HOME=$vh/gradle PGPASSFILE=$vh/pgpass KUBECONFIG=/nonexistent:$vh/vault \
  cr -- sh -c "cat $vh/codex/auth.json $vh/claude/.credentials.json $vh/docker/config.json \
  $vh/gradle/gradle.properties $vh/pgpass $vh/vault $fh/.codex/auth.json $fh/.pgpass; grep -r TOPSECRET $vh" 2>&1)
expect_not_contains "$out" TOPSECRET

case_ "a variable that turns a history off (HISTFILE=/dev/null) hides no device"
out=$(HOME=$fh HISTFILE=/dev/null MYSQL_HISTFILE=/dev/null KUBECONFIG=/dev/null \
  cr -- sh -c 'echo x > /dev/null && head -c 1 /dev/null && echo works' 2>&1)
expect_eq works "$out"

# HOME unset (env -i) or not absolute: the stores of the password entry's
# home.  One store that does not exist there yet is made for this, and
# removed on exit.
case_ "HOME unset or relative: the real home's stores stay unreadable"
planted=""
for s in .vault-token .rediscli_history .sqlite_history .pgpass .dbshell; do
  [ -e "$realhome/$s" ] || [ -L "$realhome/$s" ] || { planted=$realhome/$s; break; }
done
if [ -n "$planted" ]; then
  made+=("$planted"); echo TOPSECRET > "$planted"
  out=$(env -i PATH="$PATH" "$CORRAL" run -- cat "$planted" 2>&1); rc=$?
  [ $rc -ne 0 ] && pass || fail "cat exited 0"
  expect_not_contains "$out" TOPSECRET
  out=$(env -i PATH="$PATH" HOME=relative/home "$CORRAL" run -- cat "$planted" 2>&1)
  expect_not_contains "$out" TOPSECRET
  json=$(env -i PATH="$PATH" "$CORRAL" policy)
  expect_contains "$(printf '%s' "$json" | json_get denyRead)" "\"$planted\""
  # HOME someone else's (sudo -E, HOME=/tmp): the caller's own stores too.
  foreign=/tmp
  if [ "$(id -u)" -eq 0 ]; then foreign=$(mktemp -d "$other/foreign-XXXXXX"); chown 65534 "$foreign"; fi
  out=$(HOME=$foreign XDG_CACHE_HOME=$other/cache cr -- cat "$planted" 2>&1)
  expect_not_contains "$out" TOPSECRET
  rm -f "$planted"
else
  echo "no free store name in $realhome: skipped"
fi

case_ "a store created while the command runs stays unreadable"
rm -rf "$fh"/.vault-token "$fh/.codex" "$fh/.config/github-copilot" "$fh/.local/share/keyrings"
( sleep 0.4
  echo TOPSECRET > "$fh/.vault-token"
  mkdir -p "$fh/.codex" "$fh/.config/github-copilot" "$fh/.local/share/keyrings"
  echo TOPSECRET > "$fh/.codex/auth.json"; echo TOPSECRET > "$fh/.config/github-copilot/hosts.json"
  echo TOPSECRET > "$fh/.local/share/keyrings/login.keyring" ) &
out=$(HOME=$fh cr -- sh -c "sleep 1.2; cat $fh/.vault-token $fh/.codex/auth.json \
  $fh/.config/github-copilot/hosts.json $fh/.local/share/keyrings/login.keyring 2>&1; echo listing:; ls -A $fh" 2>&1); wait
expect_not_contains "$out" TOPSECRET
listing=${out#*listing:}
expect_not_contains "$listing" .vault-token
expect_not_contains "$listing" .codex

if [ "$(id -u)" -ne 0 ]; then
  case_ "an ordinary user pays nothing for the system's credential files"
  json=$("$CORRAL" policy)
  expect_not_contains "$(printf '%s' "$json" | json_get denyRead)" '"/etc/shadow"'
  out=$(cr -- cat /etc/shadow 2>&1)
  expect_not_contains "$out" "root:"
  echo "secrets cases: $cases"
  finish
  exit
fi

# Root reads what the permissions keep from everyone else.
case_ "root: /etc/shadow, /etc/gshadow and their backups are unreadable"
for f in /etc/shadow /etc/gshadow /etc/shadow- /etc/gshadow- /var/backups/shadow.bak; do
  [ -f "$f" ] || continue
  first=$(head -1 "$f")
  out=$(cr -- cat "$f" 2>&1); rc=$?
  [ $rc -ne 0 ] && pass || fail "cat $f exited 0"
  expect_not_contains "$out" "$first"
  out=$(cr -- sh -c "grep -h '^root:' $f; cat /proc/self/root$f /proc/1/root$f" 2>&1)
  expect_not_contains "$out" "$first"
done
expect_contains "$(cr -- head -1 /etc/passwd)" "root:"

case_ "root: SSH host private keys are unreadable, the public ones are not"
key=/etc/ssh/ssh_host_corraltest_key
mkdir -p /etc/ssh
made+=("$key" "$key.pub")
echo TOPSECRET > "$key"; chmod 600 "$key"; echo PUBLICKEY > "$key.pub"
out=$(cr -- sh -c "cat /etc/ssh/ssh_host_*_key; cat $key.pub" 2>&1)
expect_not_contains "$out" TOPSECRET
expect_contains "$out" PUBLICKEY
for k in /etc/ssh/ssh_host_*_key; do
  [ "$k" = "$key" ] && continue
  first=$(head -1 "$k"); second=$(sed -n 2p "$k")
  out=$(cr -- cat "$k" 2>&1)
  expect_not_contains "$out" "${second:-$first}"
done
rm -f "$key" "$key.pub"

case_ "root: /etc/sudoers, /etc/sudoers.d, /etc/ssl/private"
for f in /etc/sudoers /etc/sudoers.d /etc/ssl/private; do
  [ -e "$f" ] || { echo "$f: none here"; continue; }
  if [ -d "$f" ]; then
    expect_eq "" "$(cr -- sh -c "ls -A $f; cat $f/* 2>/dev/null" 2>&1)"
  else
    out=$(cr -- cat "$f" 2>&1); rc=$?
    [ $rc -ne 0 ] && pass || fail "cat $f exited 0"
    expect_not_contains "$out" "$(grep -m1 -v '^#' "$f" | grep -v '^$' | head -1)"
  fi
done
if [ -d /etc/ssl/private ]; then
  pk=/etc/ssl/private/corraltest.key; made+=("$pk")
  echo TOPSECRET > "$pk"; chmod 600 "$pk"
  out=$(cr -- cat "$pk" 2>&1)
  expect_not_contains "$out" TOPSECRET
  rm -f "$pk"
fi

case_ "root: the policy lists the readable system credential files"
json=$("$CORRAL" policy)
deny=$(printf '%s' "$json" | json_get denyRead)
for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/ssl/private; do
  [ -e "$f" ] && expect_contains "$deny" "\"$(realpath "$f")\""
done

case_ "a store in a write root cannot be renamed away for a later run to read"
# The workspace is the home itself: the directories above a store are the
# command's to write, but renamed, the store would be on the host under a
# name no later run hides.
wh=$(mktemp -d "$HOME/corral-sec-wshome-XXXXXX")
mkdir -p "$wh/.config/gh" "$wh/.config/unrelated" "$wh/.aws"
echo TOPSECRET-GH > "$wh/.config/gh/hosts.yml"; echo TOPSECRET-AWS > "$wh/.aws/credentials"
out=$(cd "$wh" && HOME="$wh" "$CORRAL" run -- sh -c '
  mv .config/gh .config/gh-x && echo MOVED-STORE-DIR; mv .config .cfg && echo MOVED-CONFIG
  mv .aws .aws-x && echo MOVED-AWS; mv .config/unrelated .config/u2 && echo MOVED-OTHER
  cat .config/gh/hosts.yml .aws/credentials' 2>&1)
for what in MOVED-STORE-DIR MOVED-CONFIG MOVED-AWS TOPSECRET; do expect_not_contains "$out" "$what"; done
expect_contains "$out" MOVED-OTHER
expect_eq TOPSECRET-GH "$(cat "$wh/.config/gh/hosts.yml")" "the store where it was"
expect_eq TOPSECRET-AWS "$(cat "$wh/.aws/credentials")" "the store where it was"
out=$(cd "$wh" && HOME="$wh" "$CORRAL" run -- sh -c 'cat .config/gh/hosts.yml .aws/credentials' 2>&1)
expect_not_contains "$out" TOPSECRET
rm -rf "$wh"

case_ "a store reached through a symlink in a write root keeps its link"
# ~/.ssh -> dotfiles/ssh: the target is hidden; were the link removed or
# replaced, later runs would not know the target is a store.
wh=$(mktemp -d "$HOME/corral-sec-wshome-XXXXXX")
mkdir -p "$wh/dotfiles/ssh"; echo TOPSECRET-KEY > "$wh/dotfiles/ssh/id_ed25519"
ln -s dotfiles/ssh "$wh/.ssh"
out=$(cd "$wh" && HOME="$wh" "$CORRAL" run -- sh -c '
  rm .ssh && echo REMOVED-LINK; mv .ssh x && echo MOVED-LINK; ln -sfn /tmp .ssh && echo REPLACED-LINK
  cat .ssh/id_ed25519 dotfiles/ssh/id_ed25519' 2>&1)
for what in REMOVED-LINK MOVED-LINK REPLACED-LINK TOPSECRET; do expect_not_contains "$out" "$what"; done
expect_eq dotfiles/ssh "$(readlink "$wh/.ssh")" "the link on the host"
out=$(cd "$wh" && HOME="$wh" "$CORRAL" run -- cat dotfiles/ssh/id_ed25519 2>&1)
expect_not_contains "$out" TOPSECRET
expect_eq TOPSECRET-KEY "$(cd "$wh" && HOME="$wh" "$CORRAL" run --allow-read "$wh/.ssh" -- cat .ssh/id_ed25519)" \
  "an --allow-read of it"
rm -rf "$wh"

case_ "an agent's socket in a write root cannot be renamed away for a later run to reach"
# ssh-agent's own place is /tmp/ssh-XXXX/agent.N, and /tmp is writable.
mkdir -p "$other/agentdir"
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(20)' \
  "$other/agentdir/agent.sock" & agent=$!
for _ in $(seq 50); do [ -S "$other/agentdir/agent.sock" ] && break; sleep 0.1; done
out=$(SSH_AUTH_SOCK="$other/agentdir/agent.sock" "$CORRAL" run --allow-write "$other" -- sh -c \
  "mv $other/agentdir $other/moved && echo MOVED-AGENT-DIR" 2>&1)
expect_not_contains "$out" MOVED-AGENT-DIR
[ -S "$other/agentdir/agent.sock" ] && pass || fail "the agent's socket moved: $(ls "$other")"
kill "$agent" 2>/dev/null; wait "$agent" 2>/dev/null

echo "secrets cases: $cases"
finish
