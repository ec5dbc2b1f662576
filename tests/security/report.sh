# The report suite: `corral exec --report PATH` writes PATH with the
# caller's rights after the command ran, so each case is the command (or an
# earlier one) trying to make that write land somewhere else, asserting the
# attempt failed AND the file outside is unchanged.  Run as root and as an
# unprivileged user (SANDBOX_AS=user).  One line above each case says what
# the attack is.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked report.sh

ws=$(mktemp -d "$HOME/corral-report-ws-XXXXXX")
outside=$(mktemp -d "$HOME/corral-report-out-XXXXXX")
trap 'rm -rf "$ws" "$outside"' EXIT
cd "$ws"
echo original > "$outside/target"
sum() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }
orig=$(sum "$outside/target")
# ex REPORT CMD...: corral exec with the report at REPORT; stderr in $err,
# the exit code in $rc.
ex() {
  local report=$1
  shift
  err=$("$CORRAL" exec --report "$report" -- "$@" 2>&1 >/dev/null </dev/null)
  rc=$?
}
unchanged() { expect_eq "$orig" "$(sum "$outside/target")" "the file outside"; }
cases=0
case_() { t "$1"; cases=$((cases + 1)); rm -rf "${ws:?}"/* "${ws:?}"/.[!.]* 2>/dev/null; }

# Replace the report with a symlink to a file outside while running.
case_ "the report replaced by a symlink to a file outside"
ex "$ws/report.json" sh -c "ln -sf '$outside/target' '$ws/report.json'"
expect_eq 125 "$rc" "exit code"
expect_contains "$err" "was replaced while the command ran"
unchanged

# The same through rm and a fresh symlink, and through rename.
case_ "the report removed, then a symlink to outside renamed into its place"
ex "$ws/report.json" sh -c "rm '$ws/report.json'; ln -s '$outside/target' '$ws/l'; mv '$ws/l' '$ws/report.json'"
expect_eq 125 "$rc" "exit code"
expect_contains "$err" "was replaced"
unchanged

# Forge the report: rename a file of the command's over it and exit 0.
case_ "a forged report renamed into place"
ex "$ws/report.json" sh -c "echo '{\"kind\":\"success\"}' > '$ws/forged'; mv '$ws/forged' '$ws/report.json'"
expect_eq 125 "$rc" "exit code: a forged report must not pass as corral's"
expect_contains "$err" "was replaced"

# Move the report's directory away and put a symlink to a directory outside
# in its place: the report named `target` would overwrite the file outside.
case_ "the report's directory swapped for a symlink to outside"
mkdir "$ws/out"
ex "$ws/out/target" sh -c "mv '$ws/out' '$ws/gone' && ln -s '$outside' '$ws/out'"
expect_eq 125 "$rc" "exit code"
expect_contains "$err" "was replaced"
unchanged
expect_eq "target" "$(ls "$outside")" "files outside"

# The same one level up, with the report given by a relative path.
case_ "a parent two levels up swapped, relative report path"
mkdir -p "$ws/a/b" "$outside/b"
echo original > "$outside/b/target"
ex a/b/target sh -c "mv '$ws/a' '$ws/gone' && ln -s '$outside' '$ws/a'"
expect_eq 125 "$rc" "exit code"
expect_eq original "$(cat "$outside/b/target")" "the file outside"
rm -rf "$outside/b"

# A symlink left at the report path before the run (by an earlier run).
case_ "a symlink already at the report path"
"$CORRAL" run -- ln -s "$outside/target" "$ws/report.json"
ex "$ws/report.json" touch "$ws/ran"
expect_eq 2 "$rc" "exit code"
expect_contains "$err" "is a symbolic link: refused"
expect_absent "$ws/ran"
unchanged

# A dangling symlink there (O_CREAT would follow it and create the file).
case_ "a dangling symlink at the report path"
"$CORRAL" run -- ln -s "$outside/new" "$ws/report.json"
ex "$ws/report.json" touch "$ws/ran"
expect_eq 2 "$rc" "exit code"
expect_absent "$ws/ran"
expect_absent "$outside/new"

# An earlier run plants a symlink to a directory outside on the report's way.
case_ "a symlink to outside planted on the report's way"
"$CORRAL" run -- ln -s "$outside" "$ws/out"
ex "$ws/out/target" touch "$ws/ran"
expect_eq 2 "$rc" "exit code"
expect_contains "$err" "leads out of the write roots"
expect_absent "$ws/ran"
unchanged

# The same, reached through a symlink of the caller's own outside the write
# roots, and through a hop in /tmp.
case_ "a planted symlink reached through the caller's own and through /tmp"
"$CORRAL" run -- sh -c "ln -s '$outside' /tmp/corral-report-hop-$$; ln -s /tmp/corral-report-hop-$$ '$ws/out'"
ln -s "$ws" "$outside/to-ws"
ex "$outside/to-ws/out/target" touch "$ws/ran"
expect_eq 2 "$rc" "exit code"
expect_contains "$err" "leads out of the write roots"
ex "$ws/out/target" touch "$ws/ran"
expect_eq 2 "$rc" "exit code"
expect_absent "$ws/ran"
unchanged
rm -f "/tmp/corral-report-hop-$$" "$outside/to-ws"

# A FIFO left at the report path: corral must not hang before the run.
case_ "a FIFO at the report path"
"$CORRAL" run -- mkfifo "$ws/report.json"
err=$(timeout 10 "$CORRAL" exec --report "$ws/report.json" -- touch "$ws/ran" 2>&1 </dev/null)
expect_eq 2 "$?" "exit code"
expect_contains "$err" "FIFO"
expect_absent "$ws/ran"

# Replace the report by a hard link to the file outside: links cannot cross
# into the sandbox's mounts, so the report stays corral's.
case_ "the report replaced by a hard link to a file outside"
ex "$ws/report.json" ln -f "$outside/target" "$ws/report.json"
expect_eq 1 "$rc" "exit code of the failed ln"
expect_eq application_failure "$(json_get kind < "$ws/report.json")"
unchanged

# Replace the report by a hard link to another file of the workspace.
case_ "the report replaced by a hard link to a workspace file"
echo keep > "$ws/keep"
ex "$ws/report.json" ln -f "$ws/keep" "$ws/report.json"
expect_eq 125 "$rc" "exit code"
expect_contains "$err" "was replaced"
expect_eq keep "$(cat "$ws/keep")"

# Write junk into the report and make it writable to everyone, to forge it
# after corral wrote it.
case_ "junk written into the report, its mode opened to all"
echo old > "$ws/report.json"; chmod 600 "$ws/report.json"
ex "$ws/report.json" sh -c "head -c 100000 /dev/zero | tr '\\0' x > '$ws/report.json'; chmod 666 '$ws/report.json'"
expect_eq 0 "$rc" "exit code"
expect_eq success "$(json_get kind < "$ws/report.json")"
expect_eq 600 "$(stat -c %a "$ws/report.json")" "mode"

# Look for the report's descriptor among the command's.
case_ "the command holds no descriptor of the report"
ex "$ws/report.json" sh -c "ls -l /proc/self/fd/ > '$ws/fds'"
expect_eq 0 "$rc" "exit code"
expect_not_contains "$(cat "$ws/fds")" report.json

# The ordinary case: a fresh report holds the outcome.
case_ "an ordinary report"
ex "$ws/sub-report.json" true
expect_eq 0 "$rc" "exit code"
expect_eq "" "$err" "stderr"
expect_eq success "$(json_get kind < "$ws/sub-report.json")"
expect_eq 0 "$(json_get exit.code < "$ws/sub-report.json")"
expect_eq "$(printf '%o' $((0644 & ~0$(umask))))" "$(stat -c %a "$ws/sub-report.json")" \
  "mode of a new report: 0644 less the umask"

# A report outside the write roots, through symlinks of the caller's own.
case_ "a report outside the write roots through the caller's symlinks"
mkdir "$outside/reports"; ln -s "$outside/reports" "$outside/link"
ex "$outside/link/r.json" true
expect_eq 0 "$rc" "exit code"
expect_eq success "$(json_get kind < "$outside/reports/r.json")"
rm -rf "$outside/reports" "$outside/link"

echo "report cases: $cases"
finish
