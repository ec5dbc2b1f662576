# Limits, from the inside: a fork bomb, a thread bomb, memory hogs, a CPU
# spinner and a runaway writer each try to take the host down; each must be
# ended by its limit within seconds (no timeout given), with the outcome
# naming the limit, and leave nothing running and the host's process count
# and memory where they were.  Ordinary work (a parallel build of a real C
# project, a program with 300 threads) must not notice the defaults.  Run
# as root and as an unprivileged user (SANDBOX_AS=user).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked limits.sh

ws=$(mktemp -d "$HOME/corral-lim-ws-XXXXXX")
trap 'pkill -KILL -f "corral-lim-$$" 2>/dev/null; rm -rf "$ws"' EXIT
cd "$ws"
mark="corral-lim-$$"
nprocs() { ls /proc | grep -c '^[0-9]'; }
available() { awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo; }
# What the host's processes hold resident, MiB (4 KiB pages).
held() { cat /proc/[0-9]*/statm 2>/dev/null | awk '{s += $2} END {print int(s * 4 / 1024)}'; }
# state kind limit-name limit-value, from a --json result on stdin.
summary() {
  python3 -c 'import json,sys
d=json.load(sys.stdin)["outcome"]; l=d.get("limit") or {}
print(d["state"], d["kind"], l.get("name", "-"), (d.get("denial") or {}).get("capability", {}).get("scope", "-"))'
}
# limited SECONDS EXPECTED-LIMIT corral-run-args...: runs, checks the outcome
# names the limit (or one of "a|b"), that it took less than SECONDS, and the
# host after it.
limited() {
  local within=$1 want=$2; shift 2
  local before_procs before_mem before_held start out took
  before_procs=$(nprocs); before_mem=$(available); before_held=$(held); start=$(date +%s%N)
  out=$(timeout 120 "$CORRAL" run --json "$@" 2>/dev/null | summary)
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  local name=${out##* }
  case "|$want|" in
    *"|$name|"*) expect_eq "denied enforcement_denied $name $name" "$out" "outcome" ;;
    *) fail "outcome: want a denial by $want, got [$out]" ;;
  esac
  [ "$took" -lt $((within * 1000)) ] && pass || fail "took ${took} ms (want < ${within} s)"
  # What the kernel frees as the last processes go takes a moment: after
  # a fork bomb of thousands, this machine's free memory comes back over
  # tens of seconds, though no process holds any of it.  So: what the
  # host's processes hold is back at once (100 MiB of slack), and the
  # machine's available memory within 1 GiB, given 20 s.
  for _ in $(seq 200); do
    ! pgrep -f "$mark" >/dev/null && [ "$(nprocs)" -le $((before_procs + 20)) ] &&
      [ "$(held)" -le $((before_held + 100)) ] && [ "$(available)" -ge $((before_mem - 1024)) ] &&
      break
    sleep 0.1
  done
  pgrep -f "$mark" >/dev/null && fail "processes left running" || pass
  [ "$(nprocs)" -le $((before_procs + 20)) ] && pass || fail "host processes $before_procs -> $(nprocs)"
  [ "$(held)" -le $((before_held + 100)) ] && pass ||
    fail "host processes hold $before_held MiB -> $(held) MiB"
  [ "$(available)" -ge $((before_mem - 1024)) ] && pass ||
    fail "host memory available $before_mem MiB -> $(available) MiB"
}

t "the classic fork bomb"
limited 20 processes -- bash -c ": $mark; :(){ :|:& };:; sleep 120"

# Thousands of copies of one interpreter: the process count, or the memory
# they hold (their exact share is slow to read while they fork), ends it.
t "a fork bomb that keeps its children"
limited 20 "processes|memory" -- python3 -c "
import os  # $mark
while True:
    try: os.fork()
    except OSError: pass"

t "a thread bomb"
limited 20 processes -- python3 -c "
import threading, time  # $mark
threading.stack_size(64 * 1024)
while True:
    try: threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
    except RuntimeError: pass"

t "a fork bomb below a lower --max-procs"
limited 20 processes --max-procs 64 -- bash -c ": $mark; :(){ :|:& };:; sleep 120"

# Each allocates and touches twice the limit, then waits.
hog='import sys, time
blocks = []
for i in range(int(sys.argv[1]) // (8 << 20)):
    b = bytearray(8 << 20)
    for j in range(0, len(b), 4096): b[j] = 1
    blocks.append(b)
    time.sleep(float(sys.argv[2]))
time.sleep(120)'
t "a memory hog: one process, twice the limit"
limited 20 memory --memory 256M -- python3 -c "$hog" $((512 << 20)) 0 "$mark"
t "a memory hog: three processes, each below the limit, together over it"
limited 20 memory --memory 256M -- sh -c "for i in 1 2 3; do python3 -c '$hog' $((240 << 20)) 0 $mark & done; wait"
t "a memory hog whose main thread has exited (its stat shows no memory)"
limited 20 memory --memory 256M -- python3 -c "
import ctypes, threading, time  # $mark
def hold():
    time.sleep(0.5); b = bytearray(600 << 20)
    for j in range(0, len(b), 4096): b[j] = 1
    time.sleep(120)
threading.Thread(target=hold).start()
time.sleep(0.2)
ctypes.CDLL(None).syscall(60, 0)  # exit: this thread alone"
t "a slow leak"
limited 20 memory --memory 200M -- python3 -c "$hog" $((400 << 20)) 0.05 "$mark"
t "a memory hog in the sandbox's /dev/shm"
limited 20 memory --memory 128M -- sh -c "head -c 400M /dev/zero > /dev/shm/fill; sleep 120 # $mark"

t "a CPU spinner with --cpu-time"
limited 10 cpu_time --cpu-time 1 -- sh -c "while :; do :; done # $mark"
t "two spinners share one --cpu-time"
limited 10 cpu_time --cpu-time 2 -- sh -c "(while :; do :; done) & while :; do :; done # $mark"

t "a writer past --max-file-size"
out=$(timeout 60 "$CORRAL" run --json --max-file-size 10M -- dd if=/dev/zero of="$ws/big" bs=1M count=100 status=none |
  python3 -c 'import json,sys; o=json.load(sys.stdin)["outcome"]; print(o["kind"], o["exit"].get("signal"), "file size limit (10.0 MiB)" in o["message"])')
expect_eq "application_failure SIGXFSZ True" "$out"
size=$(stat -c %s "$ws/big")
[ "$size" -le $((10 << 20)) ] && pass || fail "the file grew to $size bytes"
rm -f "$ws/big"
err=$("$CORRAL" run --max-file-size 10M -- dd if=/dev/zero of="$ws/big" bs=1M count=100 status=none 2>&1)
expect_contains "$err" "corral: \`dd\` was ended by SIGXFSZ"
rm -f "$ws/big"

# A limit's signal sent by the command to itself is no crossing of it.
t "a forged SIGXFSZ or SIGXCPU is no limit"
out=$("$CORRAL" run --json -- sh -c 'kill -XFSZ $$' | summary)
expect_eq "failed application_failure - -" "$out"
out=$("$CORRAL" run --json --cpu-time 100 -- sh -c 'kill -XCPU $$' | summary)
expect_eq "failed application_failure - -" "$out"
t "a process may not change corral's init's scheduling"
out=$("$CORRAL" run -- sh -c 'chrt -i -p 0 1 2>&1 >/dev/null && echo idle; taskset -p 1 1 >/dev/null 2>&1 && echo pinned; renice -u "$(id -u)" -n 19 >/dev/null 2>&1 && echo reniced; chrt -p 1')
expect_not_contains "$out" "idle"
expect_not_contains "$out" "pinned"
expect_not_contains "$out" "reniced"
expect_contains "$out" "SCHED_OTHER"
# The kernel takes a pid's low 32 bits: (1 << 32) | 1 is init too.
out=$("$CORRAL" run -- python3 -c '
import ctypes; libc = ctypes.CDLL(None, use_errno=True); init = (1 << 32) | 1
r = [libc.syscall(141, 0, ctypes.c_long(init), 19), libc.syscall(144, ctypes.c_long(init), 5, ctypes.byref(ctypes.c_int(0))),
     libc.syscall(203, ctypes.c_long(init), 8, ctypes.byref(ctypes.c_ulong(1)))]
print(r)' 2>&1)
expect_eq "[-1, -1, -1]" "$out"
out=$("$CORRAL" run -- sh -c 'sleep 0.2; awk "{print \$19}" /proc/1/stat')
expect_eq 0 "$out" "init's nice"
t "--max-file-size refuses a write a program survives"
out=$("$CORRAL" run --max-file-size 1M -- python3 -c '
import signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
try: open("f", "wb").write(bytes(2 << 20))
except OSError as e: print(e.strerror)' 2>&1)
expect_contains "$out" "File too large"

t "the run's memory and CPU time are in every outcome"
out=$("$CORRAL" run --json -- python3 -c 'x = bytearray(64 << 20); sum(range(3000000))' | python3 -c '
import json,sys; u=json.load(sys.stdin)["outcome"]["usage"]
print(u["peakMemoryBytes"] >= 64 << 20, u["cpuTimeMs"] > 0, u["peakProcesses"] >= 1)')
expect_eq "True True True" "$out"

t "--max-open-files"
out=$("$CORRAL" run --max-open-files 64 -- sh -c 'ulimit -n; ulimit -Hn' 2>&1)
expect_eq "64
64" "$out"

t "no limits: none of the watch's or the kernel's"
out=$("$CORRAL" run --max-procs none --memory none --max-file-size none -- sh -c 'ulimit -f; cat /proc/sys/kernel/pid_max' 2>&1)
expect_contains "$out" "unlimited"
expect_not_contains "$out" "4099"

t "ordinary work under the defaults: 300 threads"
out=$("$CORRAL" run -- python3 -c '
import threading, time
ts = [threading.Thread(target=time.sleep, args=(1,)) for _ in range(300)]
[t.start() for t in ts]; [t.join() for t in ts]; print("joined", len(ts))' 2>&1)
expect_eq "joined 300" "$out"

t "ordinary work under the defaults: make -j8 of a real C project"
src=${SOURCE_ROOT:-}
if [ -d "$src/src" ]; then
  mkdir -p "$ws/proj" && cp -r "$src/src" "$src/include" "$ws/proj/"
  objs=$(cd "$ws/proj" && ls src/*.c src/linux/*.c src/adapters/*.c src/mcp/*.c | sed 's/\.c$/.o/' | tr '\n' ' ')
  printf 'all: %s\n%%.o: %%.c\n\tcc -O2 -D_GNU_SOURCE -Iinclude -Isrc -c $< -o $@\n' "$objs" > "$ws/proj/Makefile"
  out=$(cd "$ws/proj" && "$CORRAL" run --json -- make -j8 -s 2>&1 | summary)
  expect_eq "completed success - -" "$out"
  [ "$(ls "$ws"/proj/src/*.o | wc -l)" -gt 10 ] && pass || fail "no objects were built"
else
  fail "SOURCE_ROOT does not hold the sources"
fi

t "corral policy and doctor name the limits and what enforces them"
out=$("$CORRAL" policy --max-procs 100 --memory 1G --cpu-time 30 | python3 -c '
import json,sys; l=json.load(sys.stdin)["limits"]; print(l["processes"], l["memory"], l["cpuTime"], l["openFiles"])')
expect_eq "100 1073741824 30.0 none" "$out"
out=$("$CORRAL" doctor 2>&1)
expect_contains "$out" "limit processes"
expect_contains "$out" "limit memory"

t "limits in a policy file, flags over them"
printf '{"limits": {"processes": 300, "memory": "1G", "cpuTime": 1.5, "fileSize": "none"}}' > "$ws/p.json"
out=$("$CORRAL" policy --policy "$ws/p.json" --max-procs 200 | python3 -c '
import json,sys; l=json.load(sys.stdin)["limits"]; print(l["processes"], l["memory"], l["cpuTime"], l["fileSize"])')
expect_eq "200 1073741824 1.5 none" "$out"
printf '{"limits": {"disk": 5}}' > "$ws/bad.json"
err=$("$CORRAL" policy --policy "$ws/bad.json" 2>&1); expect_eq 2 $? "exit"
expect_contains "$err" "limits.disk"
printf '{"limits": {"memory": -1}}' > "$ws/bad.json"
err=$("$CORRAL" policy --policy "$ws/bad.json" 2>&1); expect_eq 2 $? "exit"
expect_contains "$err" "limits.memory"

t "a bad limit is a usage error"
"$CORRAL" run --memory lots -- true 2>/dev/null; expect_eq 2 $? "exit"
"$CORRAL" run --max-procs 0 -- true 2>/dev/null; expect_eq 2 $? "exit"

t "the landlock-only adapter: the watch alone ends a fork bomb"
allows=$(socket_allows)
# shellcheck disable=SC2086
limited 30 processes --backend landlock $allows --max-procs 300 -- bash -c ": $mark; :(){ :|:& };:; sleep 120"
t "the landlock-only adapter: a memory hog"
# shellcheck disable=SC2086
limited 20 memory --backend landlock $allows --memory 256M -- python3 -c "$hog" $((512 << 20)) 0 "$mark"
t "the landlock-only adapter: no other process's priority or scheduling"
# shellcheck disable=SC2086
out=$("$CORRAL" run --backend landlock $allows -- sh -c 'renice -n 5 -p $PPID >/dev/null 2>&1 && echo reniced; chrt -i -p 0 $PPID >/dev/null 2>&1 && echo idle; prlimit --pid $PPID --nofile=10 2>/dev/null && echo limited; echo done')
expect_eq "done" "$out"
t "the landlock-only adapter: one parent of thousands is seen whole"
# shellcheck disable=SC2086
limited 30 processes --backend landlock $allows --max-procs 1000 -- python3 -c "
import os, time  # $mark
for i in range(3000):
    if os.fork() == 0: time.sleep(120); os._exit(0)
time.sleep(120)"

finish
