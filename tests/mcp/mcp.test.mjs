// Drives the real `corral mcp` with the official MCP TypeScript SDK client.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execSync } from "node:child_process";
import { mkdtempSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const CORRAL = process.env.CORRAL;
assert.ok(CORRAL, "CORRAL must point at the corral binary");
// Outside /tmp, which is a write root: writes there must be the sandbox's to refuse.
const ws = mkdtempSync(join(process.env.HOME || "/root", "corral-mcp-ws-"));
let client;

const call = async (name, args, options) =>
  client.callTool({ name, arguments: args }, undefined, options);
const alive = (pattern) => {
  try {
    execSync(`pgrep -f '${pattern}'`, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};

before(async () => {
  client = new Client({ name: "corral-tests", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command: CORRAL,
    args: ["mcp", "--workspace", ws, "--memory", "512M"],
    cwd: ws,
    stderr: "inherit",
  });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  rmSync(ws, { recursive: true, force: true });
});

test("initialize negotiated a version and the server names itself", () => {
  assert.equal(client.getServerVersion().name, "corral");
  assert.ok(client.getServerCapabilities().tools);
});

test("tools/list has the four tools with schemas", async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["exec_command", "list_sessions", "stop_session", "write_stdin"]);
  const exec = tools.find((t) => t.name === "exec_command");
  assert.deepEqual(exec.inputSchema.required, ["cmd"]);
  assert.equal(exec.outputSchema.type, "object");
});

test("exec_command runs echo hi", async () => {
  const r = await call("exec_command", { cmd: "echo hi" });
  assert.equal(r.isError, false);
  assert.match(r.content[0].text, /Wall time: [0-9.]+ seconds\nProcess exited with code 0\n/);
  assert.equal(r.structuredContent.output, "hi\n");
  assert.equal(r.structuredContent.exitCode, 0);
  assert.equal(r.structuredContent.outcome.kind, "success");
  assert.equal(r.structuredContent.outcome.enforcement.level, "native");
});

test("past 2 MiB unread, the head and the newest output are kept, the middle dropped", async () => {
  const r = await call("exec_command", { cmd: "seq 1 2000000", max_output_tokens: 100,
                                         yield_time_ms: 30000 });
  const out = r.structuredContent.output;
  assert.equal(r.structuredContent.exitCode, 0);
  assert.match(out, /^\[corral\] output was dropped in the middle[^\n]*\n1\n2\n3\n/);
  assert.match(out, /\n2000000\n$/);
  assert.equal(r.structuredContent.outputDropped, true);
});

test("a slow command becomes a session that can be polled", async () => {
  const r = await call("exec_command", { cmd: "sleep 0.5; echo ready", yield_time_ms: 10 });
  const id = r.structuredContent.sessionId;
  assert.ok(id >= 1000, "a live session id");
  assert.match(r.content[0].text, new RegExp(`Process running with session ID ${id}`));
  const p = await call("write_stdin", { session_id: id, chars: "", yield_time_ms: 3000 });
  assert.equal(p.structuredContent.output, "ready\n");
  assert.equal(p.structuredContent.exitCode, 0);
  assert.equal(p.structuredContent.sessionId, null);
});

test("Ctrl-C in a pipe session is SIGINT to its process group, and leaves no process", async () => {
  const r = await call("exec_command", { cmd: "sleep 3044 & sleep 3045; wait", yield_time_ms: 250 });
  const id = r.structuredContent.sessionId;
  assert.ok(id);
  const t0 = Date.now();
  const i = await call("write_stdin", { session_id: id, chars: "\u0003", yield_time_ms: 2000 });
  assert.ok(Date.now() - t0 < 2500);
  assert.equal(i.structuredContent.sessionId, null);
  assert.equal(alive("^sleep 304[45]$"), false);
});

test("a pipe session that handles SIGINT goes on after Ctrl-C (written as text)", async () => {
  const r = await call("exec_command", {
    cmd: "trap 'echo caught' INT; while :; do sleep 0.1; done", yield_time_ms: 250 });
  const id = r.structuredContent.sessionId;
  const i = await call("write_stdin", { session_id: id, chars: "ctrl-c", yield_time_ms: 800 });
  assert.match(i.structuredContent.output, /caught/);
  assert.equal(i.structuredContent.sessionId, id);
  await call("stop_session", { session_id: id });
});

test("Ctrl-C in a tty session is a keystroke: the shell survives", async () => {
  const r = await call("exec_command", { cmd: "bash --norc -i", tty: true, yield_time_ms: 500 });
  const id = r.structuredContent.sessionId;
  await call("write_stdin", { session_id: id, chars: "sleep 30\n", yield_time_ms: 300 });
  const c = await call("write_stdin", { session_id: id, chars: "^c", yield_time_ms: 500 });
  assert.equal(c.structuredContent.sessionId, id, "bash ended on ^C");
  const e = await call("write_stdin", { session_id: id, chars: "echo still-$((40+2))\n",
                                        yield_time_ms: 1000 });
  assert.match(e.structuredContent.output, /still-42/);
  const x = await call("write_stdin", { session_id: id, chars: "exit 3\n", yield_time_ms: 2000 });
  assert.equal(x.structuredContent.exitCode, 3);
});

test("a cancelled exec_command ends its command, and the session is gone", async () => {
  const ac = new AbortController();
  const pending = call("exec_command", { cmd: "exec sleep 3055", yield_time_ms: 30000 },
                       { signal: ac.signal });
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(alive("^sleep 3055$"), true);
  ac.abort(); // the SDK sends notifications/cancelled
  await assert.rejects(pending);
  let gone = false;
  for (let i = 0; i < 40 && !gone; i++) {
    await new Promise((r) => setTimeout(r, 100));
    gone = !alive("^sleep 3055$");
  }
  assert.equal(gone, true, "the command outlived its cancelled call");
  const l = await call("list_sessions", {});
  assert.equal(JSON.stringify(l.structuredContent ?? l.content).includes("sleep 3055"), false);
});

test("close_stdin ends a pipe session's input: cat sees EOF", async () => {
  const r = await call("exec_command", { cmd: "cat; echo after-eof", yield_time_ms: 250 });
  const id = r.structuredContent.sessionId;
  const w = await call("write_stdin", { session_id: id, chars: "line\n", close_stdin: true,
                                        yield_time_ms: 2000 });
  assert.match(w.structuredContent.output, /line\nafter-eof/);
  assert.equal(w.structuredContent.exitCode, 0);
});

test("a tty session's terminal has its /dev/pts name inside, and no other of the host's is there", async () => {
  const r = await call("exec_command", {
    cmd: "tty; python3 -c 'import os; print(os.ttyname(0))'; ls /dev/pts",
    tty: true,
    yield_time_ms: 5000,
  });
  const lines = r.structuredContent.output.split(/\r?\n/).filter((l) => l);
  assert.match(lines[0], /^\/dev\/pts\/\d+$/);
  assert.equal(lines[1], lines[0]);
  const names = lines.slice(2).join(" ").split(/\s+/).sort();
  assert.deepEqual(names, [lines[0].split("/").pop(), "ptmx"].sort());
});

test("cat in a PTY echoes what is typed and ends on ^D", async () => {
  const r = await call("exec_command", { cmd: "cat", tty: true, yield_time_ms: 250 });
  const id = r.structuredContent.sessionId;
  const w = await call("write_stdin", { session_id: id, chars: "hello\n", yield_time_ms: 500 });
  assert.match(w.structuredContent.output, /hello\r?\n.*hello/s);
  const d = await call("write_stdin", { session_id: id, chars: "\u0004", yield_time_ms: 2000 });
  assert.equal(d.structuredContent.exitCode, 0);
});

test("a write outside the workspace fails inside the sandbox", async () => {
  const probe = "/etc/corral-mcp-probe";
  const r = await call("exec_command", { cmd: `touch ${probe}` });
  assert.notEqual(r.structuredContent.exitCode, 0);
  assert.match(r.structuredContent.output, /Read-only file system/);
  assert.equal(existsSync(probe), false);
  const w = await call("exec_command", { cmd: "echo ok > inside.txt && cat inside.txt" });
  assert.equal(w.structuredContent.output, "ok\n");
  assert.ok(existsSync(join(ws, "inside.txt")));
});

test("a sandbox denial is structured, not text", async () => {
  const r = await call("exec_command", { cmd: "mkdir .agents; sleep 5" });
  const o = r.structuredContent.outcome;
  assert.equal(o.state, "denied");
  assert.equal(o.denial.capability.kind, "protected_metadata");
  assert.equal(o.denial.capability.scope, join(ws, ".agents"));
  assert.equal(existsSync(join(ws, ".agents")), false);
});

test("a run ended at a limit says so in plain words, and structured", async () => {
  const hog = "python3 -c 'b = b\"x\" * (1 << 30); import time; time.sleep(30)'";
  const r = await call("exec_command", { cmd: hog, yield_time_ms: 10000 });
  const o = r.structuredContent.outcome;
  assert.equal(o.state, "denied");
  assert.equal(o.kind, "enforcement_denied");
  assert.equal(o.limit.name, "memory");
  assert.equal(o.limit.value, 512 * 1024 * 1024);
  assert.ok(o.limit.observed > o.limit.value);
  assert.equal(o.denial.capability.kind, "process_spawn");
  assert.match(r.content[0].text, /Denied by the sandbox: the memory limit \(512\.0 MiB\) was crossed/);
  assert.equal(r.structuredContent.exitCode, 125);
});

test("output over the budget keeps head and tail", async () => {
  const r = await call("exec_command", { cmd: "seq 1 100000", max_output_tokens: 100 });
  const out = r.structuredContent.output;
  assert.match(out, /^1\n2\n3\n/);
  assert.match(out, /99999\n100000\n$/);
  assert.match(out, /\[corral\] output truncated/);
  assert.ok(out.length < 400 + 60, `output is ${out.length} long`);
});

test("binary output stays valid JSON", async () => {
  const r = await call("exec_command", { cmd: "head -c 4000 /dev/urandom; echo; echo end" });
  assert.match(r.structuredContent.output, /\uFFFD/);
  assert.match(r.structuredContent.output, /end\n$/);
});

test("workdir outside every root is refused; an unknown session is named", async () => {
  const r = await call("exec_command", { cmd: "pwd", workdir: "/etc" });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /outside every workspace root/);
  const u = await call("write_stdin", { session_id: 987654 });
  assert.equal(u.isError, true);
  assert.match(u.content[0].text, /987654/);
});

test("malformed lines get JSON-RPC errors and the server keeps serving", async () => {
  const child = spawn(CORRAL, ["mcp", "--workspace", ws], { cwd: ws });
  const lines = [];
  let buf = "";
  child.stdout.on("data", (d) => {
    buf += d;
    let k;
    while ((k = buf.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(buf.slice(0, k))); // every line must be JSON
      buf = buf.slice(k + 1);
    }
  });
  const send = (s) => child.stdin.write(s + "\n");
  send("{not json");
  send('{"jsonrpc":"2.0","id":1}');
  send('{"jsonrpc":"2.0","id":2,"method":"no/such"}');
  send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{}}}');
  send('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":-1}}}');
  send('{"jsonrpc":"2.0","id":5,"method":"ping"}');
  send('{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"exec sleep 3066","yield_time_ms":250}}}');
  await new Promise((r) => setTimeout(r, 1000));
  child.stdin.end(); // EOF: every session stopped, exit 0
  const code = await new Promise((r) => child.on("exit", r));
  assert.equal(code, 0);
  const byId = Object.fromEntries(lines.map((l) => [l.id, l]));
  assert.equal(lines.find((l) => l.id === null && l.error.code === -32700) !== undefined, true);
  assert.equal(byId[1].error.code, -32600);
  assert.equal(byId[2].error.code, -32601);
  // Bad arguments are the tool's errors (isError), for the model to correct.
  assert.equal(byId[3].result.isError, true);
  assert.equal(byId[4].result.isError, true);
  assert.deepEqual(byId[5].result, {});
  assert.ok(byId[6].result.structuredContent.sessionId);
  assert.equal(alive("^sleep 3066$"), false);
});

// ---------------------------------------------------------------- approvals
// A client that can ask its user (elicitation): a refused command becomes a
// question, and what the user allows is added, exactly, for a run again.
// The upstream is an HTTP server on this machine's loopback; the proxy finds
// good.test and other.test there through CORRAL_PROXY_HOSTS.
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createServer } from "node:http";
import { writeFileSync, readFileSync, mkdirSync } from "node:fs";

let upstream, port, hosts;
const hits = [];
before(async () => {
  upstream = createServer((req, res) => {
    hits.push(req.url);
    res.end(`hello from ${req.headers.host}\n`);
  });
  await new Promise((r) => upstream.listen(0, "127.0.0.1", r));
  port = upstream.address().port;
  hosts = join(ws, "..", `corral-mcp-hosts-${process.pid}`);
  writeFileSync(hosts, "127.0.0.1 good.test other.test\n");
});
after(() => {
  upstream?.close();
  rmSync(hosts, { force: true });
});

// A server of its own, in a workspace of its own, whose client answers each
// question with answer(request, extra) (asked: every question it got).
const approver = async (answer, extraArgs = [], { elicit = true } = {}) => {
  const dir = mkdtempSync(join(process.env.HOME || "/root", "corral-mcp-ap-"));
  const c = new Client({ name: "corral-approver", version: "1.0.0" },
                       { capabilities: elicit ? { elicitation: {} } : {} });
  const asked = [];
  if (elicit)
    c.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
      asked.push(req.params);
      return answer(req.params, extra);
    });
  const transport = new StdioClientTransport({
    command: CORRAL,
    args: ["mcp", "--workspace", dir, "--network", "filter", "--allow-address", "127.0.0.1",
           ...extraArgs],
    cwd: dir,
    env: { CORRAL_PROXY_HOSTS: hosts },
    stderr: "inherit",
  });
  await c.connect(transport);
  const exec = (args, options) => c.callTool({ name: "exec_command", arguments: args },
                                             undefined, options);
  const done = async () => {
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { c, dir, asked, exec, done };
};
const fetchCmd = (host, path) => `curl -sS -f http://${host}:${port}/${path}`;
const runs = (dir) => readFileSync(join(dir, "runs.txt"), "utf8").split("\n").filter(Boolean).length;

test("approve once: the rerun has exactly that host:port, nothing else, and only this once", async () => {
  const a = await approver(() => ({ action: "accept", content: { allow: "once" } }));
  try {
    // Two hosts in one command: only the refused one is asked for and granted.
    const r = await a.exec({ cmd: `echo run >> runs.txt; ${fetchCmd("good.test", "one")} && ${fetchCmd("other.test", "two")}` });
    assert.equal(a.asked.length, 1);
    assert.match(a.asked[0].message, new RegExp(`^Allow \`echo run >> runs.txt; curl .*\` to connect to good\\.test:${port} `));
    assert.deepEqual(a.asked[0].requestedSchema.required, ["allow"]);
    assert.equal(runs(a.dir), 2, "it ran again");
    const sc = r.structuredContent;
    assert.match(sc.output, /hello from good\.test/);
    assert.equal(sc.approval.answer, "once");
    assert.deepEqual(sc.approval.granted, [{ kind: "external_network", scope: `good.test:${port}` }]);
    assert.match(sc.approval.sessionId, /^corral-mcp-/);
    assert.match(r.content[0].text, new RegExp(`^Ran again with external_network good\\.test:${port} allowed: the user approved it once\\.`));
    // The other host stays refused in the rerun, and no second question came.
    assert.equal(sc.outcome.state, "denied");
    assert.equal(sc.outcome.denial.capability.scope, `other.test:${port}`);
    assert.deepEqual(sc.approvalNeeded.capabilities, [{ kind: "external_network", scope: `other.test:${port}` }]);
    assert.deepEqual(hits.filter((h) => h === "/two"), []);
    // Once is once: a later call is refused, and asked about, again.
    const later = await a.exec({ cmd: fetchCmd("good.test", "three") });
    assert.equal(a.asked.length, 2);
    assert.equal(later.structuredContent.exitCode, 0);
  } finally {
    await a.done();
  }
});

test("approve for the session: later calls need no question; another host still does", async () => {
  let choice = "session";
  const a = await approver(() => ({ action: "accept", content: { allow: choice } }));
  try {
    const r = await a.exec({ cmd: fetchCmd("good.test", "s1") });
    assert.equal(r.structuredContent.exitCode, 0);
    assert.equal(r.structuredContent.approval.answer, "session");
    const later = await a.exec({ cmd: fetchCmd("good.test", "s2") });
    assert.equal(a.asked.length, 1, "a session grant was asked about again");
    assert.equal(later.structuredContent.exitCode, 0);
    assert.match(later.structuredContent.output, /hello from good\.test/);
    const again = await a.exec({ cmd: fetchCmd("good.test", "s4"), justification: "once more",
                                 request_capabilities: [{ kind: "external_network", scope: `good.test:${port}` }] });
    assert.equal(a.asked.length, 1, "what the session has was asked for again");
    assert.equal(again.structuredContent.approval.answer, "granted earlier");
    assert.equal(again.structuredContent.exitCode, 0);
    choice = "no";
    const other = await a.exec({ cmd: fetchCmd("other.test", "s3") });
    assert.equal(a.asked.length, 2);
    assert.equal(other.structuredContent.outcome.state, "denied");
    assert.equal(other.structuredContent.approval.answer, "declined");
  } finally {
    await a.done();
  }
});

test("decline: nothing runs again, the outcome stays denied", async () => {
  const a = await approver(() => ({ action: "decline" }));
  try {
    const r = await a.exec({ cmd: `echo run >> runs.txt; ${fetchCmd("good.test", "d1")}` });
    assert.equal(a.asked.length, 1);
    assert.equal(runs(a.dir), 1, "it ran again after a decline");
    const sc = r.structuredContent;
    assert.equal(sc.outcome.state, "denied");
    assert.equal(sc.outcome.denial.capability.kind, "external_network");
    assert.equal(sc.approval.answer, "declined");
    assert.match(r.content[0].text, /^Not run again: the user declined; external_network good\.test:\d+ stays refused\./);
    const cancel = await approver(() => ({ action: "cancel" }));
    try {
      const c = await cancel.exec({ cmd: fetchCmd("good.test", "d2") });
      assert.equal(c.structuredContent.approval.answer, "cancelled");
      assert.equal(c.structuredContent.outcome.state, "denied");
    } finally {
      await cancel.done();
    }
  } finally {
    await a.done();
  }
});

test("protected metadata is granted only by its exact path, named as protected", async () => {
  const a = await approver(() => ({ action: "accept", content: { allow: "once" } }));
  try {
    const r = await a.exec({ cmd: "mkdir .agents && echo made" });
    assert.equal(a.asked.length, 1);
    assert.match(a.asked[0].message, new RegExp(`to write ${join(a.dir, ".agents")}, which corral protects`));
    assert.equal(r.structuredContent.exitCode, 0);
    assert.ok(existsSync(join(a.dir, ".agents")));
    // The grant was that path: another protected name is refused (and asked) again.
    const n = await a.exec({ cmd: "mkdir .corral" });
    assert.equal(a.asked.length, 2);
    assert.match(a.asked[1].message, /\.corral, which corral protects/);
    assert.equal(n.structuredContent.exitCode, 0);
  } finally {
    await a.done();
  }
});

test("request_capabilities asks before running, with the agent's justification", async () => {
  const a = await approver(() => ({ action: "accept", content: { allow: "once" } }));
  try {
    const r = await a.exec({ cmd: fetchCmd("good.test", "r1"),
                             request_capabilities: [{ kind: "external_network", scope: `good.test:${port}` }],
                             justification: "fetch the fixture" });
    assert.equal(a.asked.length, 1);
    assert.match(a.asked[0].message, /The agent says: "fetch the fixture"/);
    assert.equal(r.structuredContent.exitCode, 0);
    assert.match(r.content[0].text, /^Ran with external_network good\.test:\d+ allowed: the user approved it once\./);
    const no = await approver(() => ({ action: "decline" }));
    try {
      const d = await no.exec({ cmd: "echo ran > ran.txt",
                                request_capabilities: [{ kind: "workspace_write", scope: "/var/tmp" }],
                                justification: "x" });
      assert.equal(d.isError, true);
      assert.match(d.content[0].text, /not run, and nothing granted .*the user declined/);
      assert.equal(existsSync(join(no.dir, "ran.txt")), false);
    } finally {
      await no.done();
    }
  } finally {
    await a.done();
  }
});

test("bad request_capabilities are the tool's errors, each named", async () => {
  const cases = [
    [[{ kind: "unrestricted", scope: "/" }], /only workspace_write, external_network and protected_metadata/],
    [[{ kind: "bogus", scope: "/x" }], /none of the contract's capability kinds/],
    [[{ kind: "workspace_write" }], /must be \{"kind": \.\.\., "scope": \.\.\.\}/],
    [[{ kind: "workspace_write", scope: "relative/dir" }], /must be an absolute path/],
    [[{ kind: "workspace_write", scope: "/usr/../etc" }], /must be a normal path/],
    [[{ kind: "workspace_write", scope: "/" }], /whole file system/],
    [[{ kind: "workspace_write", scope: "/var/tmp/corral-mcp-no-such-dir" }], /does not exist/],
    [[{ kind: "workspace_write", scope: process.env.HOME || "/root" }], /home directory/],
    [[{ kind: "workspace_write", scope: join(ws, ".git", "hooks") }], /ask for protected_metadata/],
    // /etc/ssl holds a secret store (private): one missing in a granted
    // directory would be the command's to plant.
    [[{ kind: "workspace_write", scope: "/etc/ssl" }], /holds or lies in the secret store/],
    [[{ kind: "external_network", scope: "*.example.org:443" }], /host:port/],
    [[{ kind: "external_network", scope: "good.test" }], /host:port/],
    [[{ kind: "external_network", scope: "10.0.0.1:80" }], /private address, which the proxy refuses/],
    [Array.from({ length: 5 }, (_, i) => ({ kind: "workspace_write", scope: `/var/tmp/d${i}` })), /at most 4/],
    [[], /non-empty array/],
    ["workspace_write", /non-empty array/],
  ];
  for (const [asks, re] of cases) {
    const r = await call("exec_command", { cmd: "true", request_capabilities: asks, justification: "j" });
    assert.equal(r.isError, true, JSON.stringify(asks));
    assert.match(r.content[0].text, re, JSON.stringify(asks));
  }
  const nj = await call("exec_command", { cmd: "true", request_capabilities: [{ kind: "workspace_write", scope: "/var/tmp" }] });
  assert.match(nj.content[0].text, /needs a `justification`/);
  const only = await call("exec_command", { cmd: "true", justification: "why" });
  assert.match(only.content[0].text, /give both or neither/);
});

test("without elicitation: the result says what to ask for; request_capabilities is refused", async () => {
  const r = await call("exec_command", { cmd: "mkdir .agents" });
  const scope = join(ws, ".agents");
  const need = r.structuredContent.approvalNeeded;
  assert.deepEqual(need.capabilities, [{ kind: "protected_metadata", scope }]);
  assert.deepEqual(need.argument, { request_capabilities: [{ kind: "protected_metadata", scope }] });
  assert.equal(need.clientCanAsk, false);
  assert.deepEqual(need.serverOptions, ["--allow-protected", scope]);
  assert.match(r.content[0].text, new RegExp(`Needs approval: protected_metadata ${scope}\\. This client cannot ask the user`));
  const q = await call("exec_command", { cmd: "mkdir .agents",
                                         request_capabilities: [{ kind: "protected_metadata", scope }],
                                         justification: "the agent's notes" });
  assert.equal(q.isError, true);
  assert.match(q.content[0].text, /needs a client that can ask the user \(MCP elicitation\).*nothing was run, nothing granted/);
  assert.equal(existsSync(scope), false);
});

test("while the user decides the server serves; a cancelled call withdraws its question", async () => {
  let release, withdrawn = false;
  const a = await approver((_, extra) => new Promise((resolve) => {
    release = () => resolve({ action: "decline" });
    extra.signal.addEventListener("abort", () => { withdrawn = true; });
  }));
  try {
    const first = a.exec({ cmd: fetchCmd("good.test", "w1") });
    while (!release) await new Promise((r) => setTimeout(r, 20));
    await a.c.ping();
    const echo = await a.exec({ cmd: "echo meanwhile" });
    assert.equal(echo.structuredContent.output, "meanwhile\n");
    release();
    assert.equal((await first).structuredContent.approval.answer, "declined");
    // Now one that the client cancels while its question waits.
    release = undefined;
    const ac = new AbortController();
    const second = a.exec({ cmd: fetchCmd("good.test", "w2") }, { signal: ac.signal });
    while (!release) await new Promise((r) => setTimeout(r, 20));
    ac.abort();
    await assert.rejects(second);
    for (let i = 0; i < 50 && !withdrawn; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(withdrawn, true, "the server did not withdraw its question");
    await a.c.ping();
  } finally {
    await a.done();
  }
});

test("no answer in time is no; a client's error is no; both say so", async () => {
  let withdrawn = false;
  const slow = await approver((_, extra) => new Promise(() => {
    extra.signal.addEventListener("abort", () => { withdrawn = true; });
  }), ["--approval-timeout", "1"]);
  try {
    const t0 = Date.now();
    const r = await slow.exec({ cmd: fetchCmd("good.test", "t1") });
    assert.ok(Date.now() - t0 < 5000);
    assert.equal(r.structuredContent.outcome.state, "denied");
    assert.equal(r.structuredContent.approval.answer, "no answer");
    assert.match(r.content[0].text, /^Not run again: no answer from the user in 1 s, taken as no;/);
    assert.equal(withdrawn, true);
  } finally {
    await slow.done();
  }
  const broken = await approver(() => { throw new Error("no user here"); });
  try {
    const r = await broken.exec({ cmd: fetchCmd("good.test", "e1") });
    assert.equal(r.structuredContent.approval.answer, "error");
    assert.match(r.content[0].text, /^Not run again: the client could not ask the user \(error -?\d+: .*no user here/);
  } finally {
    await broken.done();
  }
});

test("approve a refused write once: exactly that directory becomes writable", async (t) => {
  const out = mkdtempSync(join(process.env.HOME || "/root", "corral-mcp-out-"));
  mkdirSync(join(out, "a"));
  mkdirSync(join(out, "b"));
  const a = await approver(() => ({ action: "accept", content: { allow: "once" } }));
  try {
    const r = await a.exec({ cmd: `echo x > ${out}/a/f && echo y > ${out}/b/g` });
    if (!a.asked.length && !(r.structuredContent.outcome.denials ?? []).some((d) => d.capability.kind === "workspace_write")) {
      t.skip("this corral records no refused writes");
      return;
    }
    assert.equal(a.asked.length, 1);
    assert.match(a.asked[0].message, new RegExp(`^Allow \`echo x > .*\` to write ${join(out, "a")}\\?`));
    assert.equal(readFileSync(join(out, "a", "f"), "utf8"), "x\n");
    assert.equal(existsSync(join(out, "b", "g")), false);
    const sc = r.structuredContent;
    assert.deepEqual(sc.approval.granted, [{ kind: "workspace_write", scope: join(out, "a") }]);
    assert.equal(sc.outcome.denial.capability.kind, "workspace_write");
    assert.equal(sc.outcome.denial.capability.scope, join(out, "b"));
    // Once: the directory is not writable to a later call.
    const later = await a.exec({ cmd: `echo z > ${out}/a/h`, });
    assert.equal(a.asked.length, 2);
    assert.equal(later.structuredContent.exitCode, 0);
  } finally {
    await a.done();
    rmSync(out, { recursive: true, force: true });
  }
});
