#!/usr/bin/env python3
"""Times exec_command of `true` through `corral mcp`, one client, calls in a
row, and reads the server's resident memory after 10 and after 1,000 calls.
Usage: mcp_client.py CORRAL WORKSPACE CALLS [COMMAND] (default: true).  Prints: median_ms rss10_kib rssN_kib"""
import json, subprocess, sys, time

corral, ws, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
cmd = sys.argv[4] if len(sys.argv) > 4 else "true"
p = subprocess.Popen([corral, "mcp", "--workspace", ws], cwd=ws, stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, bufsize=0)
def rpc(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
    line = p.stdout.readline()
    return json.loads(line)
def rss():
    with open(f"/proc/{p.pid}/status") as f:
        return int([l for l in f if l.startswith("VmRSS:")][0].split()[1])
rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}})
times, rss10 = [], 0
for i in range(1, calls + 1):
    t0 = time.perf_counter()
    r = rpc(i, "tools/call", {"name": "exec_command", "arguments": {"cmd": cmd}})
    times.append((time.perf_counter() - t0) * 1000)
    assert r["result"]["structuredContent"]["exitCode"] == 0, r
    if i == 10:
        rss10 = rss()
rssN = rss()
p.stdin.close(); p.wait()
times.sort()
print(f"{times[len(times)//2]:.4f} {rss10} {rssN}")
