#!/usr/bin/env python3
"""What change reports cost, alternating in one run (bench/changes.sh).
Usage: changes.py CORRAL EMPTY WS20K WS100K [WS500K] ROUNDS.
Prints one line per figure: name value."""
import json, statistics, subprocess, sys, time

corral, empty, ws20k, ws100k = sys.argv[1:5]
ws500k = sys.argv[5] if len(sys.argv) > 6 else None
rounds = int(sys.argv[-1])


class Server:
    def __init__(self, ws):
        self.p = subprocess.Popen([corral, "mcp", "--workspace", ws], cwd=ws,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.i = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "b", "version": "1"}})

    def rpc(self, method, params):
        self.i += 1
        msg = {"jsonrpc": "2.0", "id": self.i, "method": method, "params": params}
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        return json.loads(self.p.stdout.readline())

    def call(self, cmd, changes=True):
        t0 = time.perf_counter()
        r = self.rpc("tools/call", {"name": "exec_command",
                                    "arguments": {"cmd": cmd, "changes": changes}})
        ms = (time.perf_counter() - t0) * 1000
        sc = r["result"]["structuredContent"]
        assert sc["exitCode"] == 0, r
        return ms, sc

    def rss_kib(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            return int([l for l in f if l.startswith("VmRSS:")][0].split()[1])

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def timed(argv, cwd, quiet=False):
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL if quiet else None, check=True)
    return (time.perf_counter() - t0) * 1000


def med(xs):
    return statistics.median(xs)


def changes_of(sc):
    return sc.get("outcome", sc).get("changes")


TOUCH = ("sh -c 'for d in $(seq 1000 10 1990); do echo x >> d$d/f00.txt; done'")
servers = {"empty": Server(empty), "20k": Server(ws20k), "100k": Server(ws100k)}
if ws500k:
    servers["500k"] = Server(ws500k)
# The first call of each builds its index: not a figure of a call.
for s in servers.values():
    s.call("true")
rss100k = servers["100k"].rss_kib()

t = {k: [] for k in ["empty", "20k", "100k", "500k", "20k_off", "100k_off", "touch_on",
                     "touch_off", "git",
                     "run_changes", "run_plain"]}
reported = None
for _ in range(rounds):
    for k, s in servers.items():
        t[k].append(s.call("true")[0])
    t["20k_off"].append(servers["20k"].call("true", False)[0])
    t["100k_off"].append(servers["100k"].call("true", False)[0])
    ms, sc = servers["20k"].call(TOUCH, True)
    t["touch_on"].append(ms)
    reported = changes_of(sc)
    t["touch_off"].append(servers["20k"].call(TOUCH, False)[0])
    t["git"].append(timed(["git", "status", "--porcelain"], ws20k))
    t["run_changes"].append(timed([corral, "run", "--changes", "--", "true"], ws20k, True))
    t["run_plain"].append(timed([corral, "run", "--", "true"], ws20k))

for s in servers.values():
    s.close()
for k, v in t.items():
    if v:
        print(k, f"{med(v):.3f}")
print("rss100k_kib", rss100k)
print("reported", len(reported) if reported is not None else -1)
