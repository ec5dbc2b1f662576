# corral mcp without Node.js: raw JSON-RPC lines in, one JSON answer per
# request out, checked with python3.
. "$(dirname "$0")/../lib.sh"
ws=$(mktemp -d "$HOME/corral-mcpsh-XXXXXX")
trap 'rm -rf "$ws"' EXIT
cd "$ws"

out=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo hi; exit 3"}}}' \
  'this is not json' \
  '{"jsonrpc":"2.0","id":4,"method":"missing"}' \
  '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":""}}}' \
  '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"stop_session","arguments":{"session_id":4242}}}' \
  '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}' \
  '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"touch /etc/corral-mcpsh"}}}' \
  '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo whole","yield_time_ms":2000.0,"max_output_tokens":1e3}}}' \
  '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"true","yield_time_ms":250.5}}}' \
  '{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"corral-no-such-command --flag"}}}' \
  '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo one two && echo three"}}}' \
  '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"touch made-unreported","changes":false}}}' \
  '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"stop_session","arguments":{"session_id":4242.0}}}' \
  | timeout 30 "$CORRAL" mcp --workspace "$ws")
rc=$?
t "the server exits 0 on stdin EOF"
expect_eq 0 $rc
t "every line of stdout is a JSON-RPC answer"
check() { printf '%s\n' "$out" | python3 -c "$1"; }
check 'import sys,json
lines=[json.loads(l) for l in sys.stdin if l.strip()]
assert all(l["jsonrpc"]=="2.0" for l in lines), lines
print(len(lines))' >/dev/null && pass || fail "non-JSON output: $out"
get() { printf '%s\n' "$out" | python3 -c "
import sys,json
for l in sys.stdin:
    m=json.loads(l)
    if m.get('id')==$1:
        v=m
        for k in '$2'.split('.'):
            v=v[int(k)] if isinstance(v,list) else v.get(k) if isinstance(v,dict) else None
        print(json.dumps(v) if isinstance(v,(dict,list,bool)) or v is None else v)"; }
t "initialize"
expect_eq 2025-06-18 "$(get 1 result.protocolVersion)"
expect_eq corral "$(get 1 result.serverInfo.name)"
expect_eq 2025-11-25 "$(get 7 result.protocolVersion)" "unsupported version gets the newest"
t "tools/list"
expect_contains "$(get 2 result.tools)" exec_command
expect_contains "$(get 2 result.tools)" write_stdin
t "exec_command"
expect_eq 3 "$(get 3 result.structuredContent.exitCode)"
expect_eq "hi" "$(get 3 result.structuredContent.output)"
expect_contains "$(get 3 result.content.0.text)" "Process exited with code 3"
t "errors"
expect_eq -32700 "$(printf '%s\n' "$out" | python3 -c '
import sys,json
print([json.loads(l) for l in sys.stdin if "-32700" in l][0]["error"]["code"])')"
expect_eq -32601 "$(get 4 error.code)"
expect_eq true "$(get 5 result.isError)" "a bad argument is the tool's error"
expect_eq true "$(get 6 result.isError)"
expect_contains "$(get 6 result.content.0.text)" 4242
t "numbers with an integral value are integers; others are the tool's error"
expect_eq whole "$(get 9 result.structuredContent.output)"
expect_eq true "$(get 10 result.isError)"
expect_contains "$(get 11 result.content.0.text)" 4242
t "batches: one array of answers under 2025-03-26 (a slow call's too), refused under later versions"
bout=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
  '[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 0.3; echo late"}}},{"jsonrpc":"2.0","id":4,"method":"nope"}]' \
  '[{"jsonrpc":"2.0","method":"notifications/initialized"}]' \
  | timeout 30 "$CORRAL" mcp --workspace "$ws")
expect_eq "2 3 4" "$(printf '%s\n' "$bout" | python3 -c '
import sys, json
lines = [json.loads(l) for l in sys.stdin if l.strip()]
arrays = [l for l in lines if isinstance(l, list)]
assert len(lines) == 2 and len(arrays) == 1, lines
print(" ".join(str(a["id"]) for a in sorted(arrays[0], key=lambda a: a["id"])))')"
expect_contains "$bout" late
t "batches: a reply for an id another batch waits on, a cancelled call in a batch, initialize in one"
cout=$( { printf '%s\n' \
  '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
  '[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 1","yield_time_ms":30000}}}]'
  sleep 0.3
  printf '%s\n' '[{"jsonrpc":"2.0","id":"a"},{"jsonrpc":"2.0","id":"b","method":"ping"}]' \
    '[{"jsonrpc":"2.0","id":"X","method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 60","yield_time_ms":30000}}},{"jsonrpc":"2.0","id":"Y","method":"ping"}]'
  sleep 0.3
  printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"X"}}' \
    '[{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}]'
  sleep 1.5; } | timeout -s KILL 30 "$CORRAL" mcp --workspace "$ws"); rc=$?
expect_eq 0 $rc "the server lived"
expect_eq 'a,b|Y|9|a' "$(printf '%s\n' "$cout" | python3 -c '
import sys, json
arrays = [json.loads(l) for l in sys.stdin if l.startswith("[")]
print("|".join(",".join(str(m["id"]) for m in a) for a in arrays))')"
bout=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
  '[{"jsonrpc":"2.0","id":2,"method":"ping"}]' | timeout 30 "$CORRAL" mcp --workspace "$ws")
expect_contains "$bout" '"code":-32600'
t "a program that does not exist is executable_not_found, as corral run says; shell lines still work"
expect_eq executable_not_found "$(get 13 result.structuredContent.outcome.kind)"
expect_eq 127 "$(get 13 result.structuredContent.exitCode)"
expect_eq "one two
three" "$(get 14 result.structuredContent.output)"
t "changes: false makes no change report (and no workspace scan)"
expect_eq null "$(get 15 result.structuredContent.outcome.changes)"
[ -e "$ws/made-unreported" ] && pass || fail "the command did not run"
t "sandboxed"
expect_contains "$(get 8 result.structuredContent.output)" "Read-only file system"
expect_absent /etc/corral-mcpsh

t "approvals, raw: a client's error, an id never asked, an accept naming no choice, EOF while asked"
init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"sh","version":"1"}}}'
mk() { printf '{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"mkdir %s"}}}\n' "$1" "$2"; }
aout=$( { printf '%s\n' "$init"; mk a .agents; sleep 1
  printf '%s\n' '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}' \
    '{"jsonrpc":"2.0","id":77,"result":{"action":"accept","content":{"allow":"session"}}}' \
    '{"jsonrpc":"2.0","id":"1","result":{"action":"accept","content":{"allow":"session"}}}' \
    '{"jsonrpc":"2.0","id":5,"method":"ping"}'
  mk b .corral; sleep 1
  printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"action":"accept"}}'
  mk c .agents; sleep 1; } | timeout 30 "$CORRAL" mcp --workspace "$ws"); rc=$?
expect_eq 0 $rc "the server lived"
aget() { printf '%s\n' "$aout" | python3 -c "
import sys, json
for l in sys.stdin:
    m = json.loads(l)
    if m.get('id') == $1 and ('method' in m) == $2:
        v = m
        for k in '$3'.split('.'):
            v = v[int(k)] if isinstance(v, list) else v.get(k) if isinstance(v, dict) else None
        print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)"; }
expect_eq elicitation/create "$(aget 1 True method)"
expect_contains "$(aget 1 True params.message)" "Allow \`mkdir .agents\` to write $ws/.agents, which corral protects"
expect_eq '["once", "session", "no"]' "$(aget 1 True params.requestedSchema.properties.allow.enum)"
expect_eq error "$(aget '"a"' False result.structuredContent.approval.answer)"
expect_contains "$(aget '"a"' False result.content.0.text)" "the client could not ask the user (error -32601: Method not found)"
expect_eq denied "$(aget '"a"' False result.structuredContent.outcome.state)"
expect_eq '{}' "$(aget 5 False result)" "answers to ids never asked change nothing"
expect_eq declined "$(aget '"b"' False result.structuredContent.approval.answer)"
expect_contains "$(aget '"b"' False result.content.0.text)" "with no choice of once or session"
expect_absent "$ws/.agents"
expect_absent "$ws/.corral"
# "c" was asked (id 3) and stdin ended: answered, as no, before the exit.
expect_eq "no answer" "$(aget '"c"' False result.structuredContent.approval.answer)"
expect_contains "$(aget '"c"' False result.content.0.text)" "the client went away before the user answered"
expect_eq notifications/cancelled "$(printf '%s\n' "$aout" | python3 -c '
import sys, json
print([m for m in map(json.loads, sys.stdin) if m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == 3][0]["method"])')"

t "approvals, raw: 2025-11-25 titles the choices with oneOf; 2025-03-26 has no elicitation"
nout=$( { printf '%s\n' "${init/2025-06-18/2025-11-25}"; mk a .agents; sleep 1
  printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"action":"decline"}}'; sleep 0.3; } |
  timeout 30 "$CORRAL" mcp --workspace "$ws")
expect_contains "$nout" '"oneOf":[{"const":"once","title":"Yes, this once"}'
expect_contains "$nout" '"answer":"declined"'
oout=$(printf '%s\n' "${init/2025-06-18/2025-03-26}" "$(mk a .agents)" | timeout 30 "$CORRAL" mcp --workspace "$ws")
expect_not_contains "$oout" elicitation/create
expect_contains "$oout" "This client cannot ask the user"

t "SIGTERM stops every session and exits 0"
fifo=$(mktemp -u); mkfifo "$fifo"
"$CORRAL" mcp --workspace "$ws" < "$fifo" > "$ws/out.jsonl" & sp=$!
exec 9>"$fifo"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"exec sleep 3077","yield_time_ms":250}}}' >&9
for _ in $(seq 100); do grep -q '"id":1' "$ws/out.jsonl" 2>/dev/null && break; sleep 0.05; done
pgrep -f '^sleep 3077$' >/dev/null && pass || fail "the session did not start"
kill -TERM $sp; wait $sp; rc=$?
exec 9>&-; rm -f "$fifo"
expect_eq 0 $rc "exit status after SIGTERM"
pgrep -f '^sleep 3077$' >/dev/null && fail "a session survived" || pass

finish
