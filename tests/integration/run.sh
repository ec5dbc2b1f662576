# corral run: the real binary, its exit codes, its JSON and its failures.
. "$(dirname "$0")/../lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

t "success passes output through"
out=$("$CORRAL" run --unsandboxed -- sh -c 'echo out; echo err >&2' 2>"$work/err")
expect_eq 0 $? "exit"
expect_eq out "$out"
expect_contains "$(cat "$work/err")" err

t "exit code of the command"
"$CORRAL" run --unsandboxed -- sh -c 'exit 7'; expect_eq 7 $?

t "128+N after signal N"
"$CORRAL" run --unsandboxed -- sh -c 'kill -TERM $$'; expect_eq 143 $?

t "not found is 127 and says so"
err=$("$CORRAL" run --unsandboxed -- corral-no-such-command 2>&1); rc=$?
expect_eq 127 $rc
expect_contains "$err" "command not found"

t "not executable is 126"
printf '#!/bin/sh\necho hi\n' > "$work/script"; chmod 644 "$work/script"
"$CORRAL" run --unsandboxed -- "$work/script" 2>/dev/null; expect_eq 126 $?

t "a script without #! runs with the shell, as execvp runs it"
printf 'echo no-shebang "$@"\n' > "$work/plain-script"; chmod 755 "$work/plain-script"
expect_eq "no-shebang a b" "$("$CORRAL" run -- "$work/plain-script" a b)"

t "timeout is 124 and ends the tree"
start=$(date +%s%N)
"$CORRAL" run --unsandboxed --timeout 0.2 -- sh -c 'sleep 30 & sleep 30' 2>/dev/null; rc=$?
end=$(date +%s%N)
expect_eq 124 $rc
[ $(( (end - start) / 1000000 )) -lt 3000 ] && pass || fail "took $(( (end - start) / 1000000 )) ms"

t "stdin from a pipe reaches the command"
out=$(printf 'a\nb\n' | "$CORRAL" run --unsandboxed -- wc -l)
expect_eq 2 "$out"

t "--json: the whole result, valid UTF-8 with binary output"
json=$("$CORRAL" run --unsandboxed --json -- sh -c 'printf "ok\377\000z"; echo e >&2; exit 3'); rc=$?
expect_eq 3 $rc
expect_eq application_failure "$(printf '%s' "$json" | json_get outcome.kind)"
expect_eq failed "$(printf '%s' "$json" | json_get outcome.state)"
expect_eq 3 "$(printf '%s' "$json" | json_get outcome.exit.code)"
expect_eq "e" "$(printf '%s' "$json" | json_get stderr)"
expect_eq b2v/AHo= "$(printf '%s' "$json" | json_get stdoutBase64)"
expect_eq true "$(printf '%s' "$json" | json_get outcome.enforcement.degraded)"
expect_eq direct "$(printf '%s' "$json" | json_get outcome.enforcement.backend)"
expect_eq true "$(printf '%s' "$json" | json_get outcome.launched)"
printf '%s' "$json" | iconv -f UTF-8 -t UTF-8 >/dev/null && pass || fail "not valid UTF-8"

t "--json: truncation flags"
json=$("$CORRAL" run --unsandboxed --json -- head -c 1048577 /dev/zero)
expect_eq true "$(printf '%s' "$json" | json_get truncated.stdout)"
expect_eq false "$(printf '%s' "$json" | json_get truncated.stderr)"

t "without --json all of the output goes through, in order, as it is written"
expect_eq 2000000 "$("$CORRAL" run -- seq 1 2000000 | tail -1)"
expect_eq 3000000 "$("$CORRAL" run -- sh -c 'head -c 3000000 /dev/zero' | wc -c)"
expect_eq "$(seq 1 300000 | md5sum)" "$("$CORRAL" run -- seq 1 300000 | md5sum)"
start=$(date +%s%N)
first=$("$CORRAL" run -- seq 1 100000000 | head -1)
expect_eq 1 "$first"
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 5000 ] && pass || fail "a closed reader did not end the command"
# streamed: the first line is there before the command ends
( "$CORRAL" run -- sh -c 'echo early; sleep 2; echo late' > "$work/stream.out" & )
sleep 1; expect_eq early "$(cat "$work/stream.out")"
sleep 1.5

t "usage errors exit 2 with a hint"
err=$("$CORRAL" run --bogus -- true 2>&1); expect_eq 2 $?
expect_contains "$err" "--help"
"$CORRAL" run --timeout abc -- true 2>/dev/null; expect_eq 2 $?
"$CORRAL" run 2>/dev/null; expect_eq 2 $?
"$CORRAL" frobnicate 2>/dev/null; expect_eq 2 $?
"$CORRAL" 2>/dev/null; expect_eq 2 $?

t "--changes: what the command created, modified, deleted (from before launch)"
mkdir -p "$work/chg/d" && cd "$work/chg" && echo a > keep && echo b > gone
json=$("$CORRAL" run --json --changes -- sh -c 'echo x > d/new; echo y > keep; rm gone')
expect_eq '[{"path": "d/new", "kind": "created"}, {"path": "gone", "kind": "deleted"}, {"path": "keep", "kind": "modified"}]' \
  "$(printf '%s' "$json" | json_get outcome.changes)"
err=$("$CORRAL" run --changes -- touch made-at-once 2>&1 >/dev/null)
expect_contains "$err" "1 created"
expect_contains "$err" "C made-at-once"
cd "$work"

t "SIGTERM to corral run cancels and leaves nothing"
"$CORRAL" run --unsandboxed -- sh -c "echo \$\$ > $work/pid; exec sleep 30" & cpid=$!
for _ in $(seq 100); do [ -s "$work/pid" ] && break; sleep 0.02; done
kill -TERM $cpid; wait $cpid; rc=$?
expect_eq 130 $rc
sleep 0.1
kill -0 "$(cat "$work/pid")" 2>/dev/null && fail "sleep survived" || pass

t "hundreds of write roots: each writable, each top watched for protected names"
mkdir -p "$work/many" && cd "$work/many"
roots=(); for i in $(seq 1 400); do mkdir -p "r$i"; roots+=(--allow-write "$work/many/r$i"); done
out=$("$CORRAL" run "${roots[@]}" -- sh -c 'touch r1/a r400/b && echo wrote'); expect_eq 0 $? "exit"
expect_eq wrote "$out"
"$CORRAL" run "${roots[@]}" -- mkdir r399/.agents 2>/dev/null; expect_eq 125 $? "protected name in the 399th"
expect_absent "$work/many/r399/.agents"
cd "$work"

# --- --request: a request in the contract's JSON ---------------------------
mkdir -p "$work/rq" && cd "$work/rq"
req() { # NAME ARGS-JSON CAPABILITIES-JSON
  printf '{"origin":"hook","mode":"captured","command":{"name":"%s","args":%s},"workingDirectory":"%s","workspaceRoots":["%s"],"capabilities":%s,"approval":{"policyVersion":1}}' \
    "$1" "$2" "$work/rq" "$work/rq" "${3:-[]}"
}
t "--request runs what the file says, from a file or stdin"
req sh '["-c","echo from-request; pwd"]' > "$work/rq.json"
out=$("$CORRAL" run --request "$work/rq.json"); expect_eq 0 $? "exit"
expect_eq "from-request
$work/rq" "$out"
out=$(req sh '["-c","echo stdin-request"]' | "$CORRAL" run --request -); expect_eq stdin-request "$out"

t "--request: bad JSON, a failed rule, a mode run cannot do, or a command as well: exit 2"
err=$(printf '{"origin":' | "$CORRAL" run --request - 2>&1); expect_eq 2 $?; expect_contains "$err" "byte"
err=$(printf '{"origin":"hook","mode":"captured","command":{"name":" "},"workingDirectory":"/","workspaceRoots":["/tmp"],"approval":{"policyVersion":1}}' |
  "$CORRAL" run --request - 2>&1); expect_eq 2 $?; expect_contains "$err" "command.name"
err=$(req true '[]' | sed 's/"captured"/"durable"/' | "$CORRAL" run --request - 2>&1); expect_eq 2 $?
expect_contains "$err" 'mode `durable`'
"$CORRAL" run --request "$work/rq.json" -- true 2>/dev/null; expect_eq 2 $?
"$CORRAL" run --request "$work/no-such.json" 2>/dev/null; expect_eq 2 $?

t "--request: external_network opens the network, unless the command line says deny"
links='["-c","tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d \" \""]' # this network namespace's links
out=$(req sh "$links" '[{"kind":"external_network"}]' | "$CORRAL" run --request -)
[ "$(printf '%s\n' "$out" | wc -l)" -gt 1 ] && pass || fail "only loopback with external_network: $out"
out=$(req sh "$links" '[{"kind":"external_network"}]' | "$CORRAL" run --network deny --request -)
expect_eq lo "$out"

t "--request: protected_metadata scoped to a path makes that path writable, and only it"
req mkdir "[\"$work/rq/.agents\"]" "[{\"kind\":\"protected_metadata\",\"scope\":\"$work/rq/.agents\"}]" |
  "$CORRAL" run --request -; expect_eq 0 $? "exit"
[ -d "$work/rq/.agents" ] && pass || fail ".agents was not made"
req mkdir "[\"$work/rq/.corral\"]" "[{\"kind\":\"protected_metadata\",\"scope\":\"$work/rq/.agents\"}]" |
  "$CORRAL" run --request - 2>/dev/null; expect_eq 125 $? "another protected name stays protected"
t "--request: the command line wins over unrestricted; scopes name real, narrow paths; relative ones are the request's"
out=$(req sh '["-c","tail -n +3 /proc/net/dev | wc -l"]' '[{"kind":"unrestricted"}]' | "$CORRAL" run --network deny --request -)
expect_eq 1 "$out" "only loopback: the sandbox stayed"
ln -sfn /etc "$work/rq/link"
req true '[]' | sed "s|\"capabilities\":\[\]|\"capabilities\":[{\"kind\":\"filesystem_read\",\"scope\":\"$work/rq/link\"}]|" |
  "$CORRAL" run --request - 2>/dev/null; expect_eq 2 $? "a symlinked scope"
req true '[{"kind":"filesystem_read","scope":"/"}]' | "$CORRAL" run --request - 2>/dev/null; expect_eq 2 $? "scope /"
req true "[{\"kind\":\"protected_metadata\",\"scope\":\"$work/rq\"}]" | "$CORRAL" run --request - 2>/dev/null
expect_eq 2 $? "protected_metadata over a whole workspace"
mkdir -p "$work/elsewhere" && cd "$work/elsewhere"
req touch '["made-here"]' '[]' | sed 's|"workspaceRoots":\["[^"]*"\]|"workspaceRoots":["."]|' | "$CORRAL" run --request -
expect_absent "$work/elsewhere/made-here"; [ -e "$work/rq/made-here" ] && pass || fail "not made in the request's directory"
cd "$work"

t "a user with no password entry (and no HOME) runs commands"
if [ "$(id -u)" -eq 0 ] && ! getent passwd 54001 >/dev/null; then
  bin=$(mktemp -d /tmp/corral-nopw-XXXXXX)
  cp "$CORRAL" "$bin/corral" && chmod -R a+rx "$bin" && mkdir "$bin/ws" && chown 54001 "$bin/ws"
  out=$(cd "$bin/ws" && setpriv --reuid=54001 --regid=54001 --clear-groups \
    env -i PATH=/usr/bin:/bin "$bin/corral" run -- sh -c 'echo ran as $(id -u)' 2>&1)
  expect_eq "ran as 54001" "$out"
  rm -rf "$bin"
fi

finish
