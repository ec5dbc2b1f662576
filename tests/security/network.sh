# Network mode filter, attacked from inside: the command reaches allowed
# names through corral's proxies (curl, git's smart HTTP, npm, python's
# urllib), and everything else fails — an unlisted name, a denied one, a
# direct IP, a name resolving to a private or link-local address, a port
# not allowed, a raw connect past the proxy, malformed requests — each
# with its structured denial, and none reaching the upstream server (its
# log is checked).  Upstream is a server on the host's loopback; names are
# mapped to it through CORRAL_PROXY_HOSTS, never the machine's resolver.
# Run as root and as an unprivileged user (SANDBOX_AS=user).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/as_user.sh"
run_as_user_if_asked network.sh

command -v curl >/dev/null || { echo "curl is not installed: skipped"; exit 77; }
ws=$(mktemp -d "$HOME/corral-net-ws-XXXXXX")
up=$(mktemp -d "$HOME/corral-net-up-XXXXXX")
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$ws" "$up"' EXIT
echo "hello through the proxy" > "$up/hello.txt"
log="$up/requests.log"
: > "$log"
python3 -u "$here/net_upstream.py" "$up" "$log" > "$up/port" 2>"$up/server.err" &
server=$!
for _ in $(seq 50); do [ -s "$up/port" ] && break; sleep 0.1; done
port=$(head -1 "$up/port")
[ -n "$port" ] || { echo "the upstream server did not start: $(cat "$up/server.err")"; exit 1; }

# A bare repository served by git's smart HTTP, with one commit.
git init -q --bare "$up/repo.git"
git -C "$up/repo.git" config http.receivepack false
tmp=$(mktemp -d)
git -C "$tmp" init -q && echo "from the repo" > "$tmp/README" &&
  git -C "$tmp" -c user.name=t -c user.email=t@t add README &&
  git -C "$tmp" -c user.name=t -c user.email=t@t commit -qm one &&
  git -C "$tmp" push -q "$up/repo.git" HEAD:refs/heads/main
git -C "$up/repo.git" symbolic-ref HEAD refs/heads/main
rm -rf "$tmp"

# An npm registry stub with one package.
mkdir -p "$up/npm" "$up/pkg"
python3 - "$up" "$port" <<'EOF'
import base64, hashlib, io, json, sys, tarfile
up, port = sys.argv[1], sys.argv[2]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    for name, text in (("package/package.json", '{"name":"corral-demo","version":"1.0.0"}'),
                       ("package/index.js", "module.exports = 42;\n")):
        data = text.encode()
        info = tarfile.TarInfo(name); info.size = len(data); info.mode = 0o644
        t.addfile(info, io.BytesIO(data))
tgz = buf.getvalue()
open(up + "/pkg/corral-demo-1.0.0.tgz", "wb").write(tgz)
meta = {"name": "corral-demo", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
    "name": "corral-demo", "version": "1.0.0", "dist": {
        "tarball": "http://good.test:%s/pkg/corral-demo-1.0.0.tgz" % port,
        "shasum": hashlib.sha1(tgz).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}}}}
open(up + "/npm/corral-demo.json", "w").write(json.dumps(meta))
EOF

hosts="$up/hosts"
cat > "$hosts" <<EOF
127.0.0.1 good.test other.test
10.0.0.1 private.test
169.254.169.254 meta.test
::ffff:10.0.0.1 mapped.test
EOF
export CORRAL_PROXY_HOSTS="$hosts"
cd "$ws"
policy=(--allow-domain "good.test:$port" --allow-domain "private.test:$port"
        --allow-domain meta.test --allow-domain "mapped.test:$port"
        --deny-domain "good.test:22=SSH to good.test is blocked; use https"
        --allow-address 127.0.0.1)
# run CMD: corral run --json under the policy; $out the whole result,
# $o the outcome, $so the command's stdout.
run() {
  out=$("$CORRAL" run --json "${policy[@]}" -- sh -c "$1" 2>/dev/null)
  o=$(printf '%s' "$out" | json_get outcome)
  so=$(printf '%s' "$out" | json_get stdout)
}
reached() { grep -c -- "$1" "$log"; }

t "an allowed name through HTTP_PROXY (curl)"
run "curl -fsS -m 10 http://good.test:$port/hello.txt"
expect_eq "hello through the proxy" "$so"
expect_not_contains "$o" '"denials"'
expect_eq 1 "$(reached 'GET /hello.txt good.test')" "requests upstream"

t "an allowed name through SOCKS5, names resolved by corral"
run "curl -fsS -m 10 --socks5-hostname 127.0.0.1:1080 http://good.test:$port/hello.txt?socks"
expect_eq "hello through the proxy" "$so"

t "an allowed name through a CONNECT tunnel, upper case and a trailing dot"
run "curl -fsS -m 10 -p -x http://127.0.0.1:3128 http://GOOD.test.:$port/hello.txt?tunnel"
expect_eq "hello through the proxy" "$so"

t "python's urllib"
run "python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://good.test:$port/hello.txt?py\").read().decode().strip())'"
expect_eq "hello through the proxy" "$so"

t "git clone over smart HTTP"
run "git clone -q http://good.test:$port/git/repo.git clone && cat clone/README"
expect_eq "from the repo" "$so"
expect_contains "$(cat "$log")" "git-upload-pack"

t "npm install from a registry stub"
if command -v npm >/dev/null; then
  run "npm install --no-audit --no-fund --loglevel=error --registry http://good.test:$port/npm/ corral-demo >/dev/null && node -p 'require(\"corral-demo\")'"
  expect_eq 42 "$so"
  expect_not_contains "$o" '"denials"'
fi

t "an unlisted name: 403 on the wire, a denial, nothing upstream"
run "curl -fsS -m 10 http://other.test:$port/unlisted"
expect_eq denied "$(printf '%s' "$o" | json_get state)"
expect_eq enforcement_denied "$(printf '%s' "$o" | json_get kind)"
expect_eq external_network "$(printf '%s' "$o" | json_get denial.capability.kind)"
expect_eq "other.test:$port" "$(printf '%s' "$o" | json_get denial.capability.scope)"
expect_eq platform_sandbox "$(printf '%s' "$o" | json_get denial.source)"
expect_eq request_approval "$(printf '%s' "$o" | json_get denial.nextAction)"
expect_contains "$(printf '%s' "$o" | json_get denial.reason)" "not in the policy's allowed domains"
run "curl -sS -m 10 -o /dev/null -w '%{http_code}' http://other.test:$port/unlisted"
expect_eq 403 "$so"
expect_eq 0 "$(reached /unlisted)" "requests upstream"

t "a denied entry wins, with its reason on the wire and in the outcome"
run "curl -sS -m 10 -p -x http://127.0.0.1:3128 http://good.test:22/ 2>&1; curl -sS -m 10 -x http://127.0.0.1:3128 http://good.test:22/x"
expect_contains "$so" "SSH to good.test is blocked; use https"
expect_contains "$(printf '%s' "$o" | json_get denials.0.reason)" "SSH to good.test is blocked"
expect_eq 2 "$(printf '%s' "$o" | json_get denials.0.count)" "the same refusal counted"

t "a direct IP, through either proxy"
run "curl -fsS -m 10 --noproxy '' --proxy http://127.0.0.1:3128 http://127.0.0.1:$port/by-ip; curl -fsS -m 10 --noproxy '' --socks5 127.0.0.1:1080 http://127.0.0.1:$port/by-ip-socks"
expect_eq 0 "$(reached /by-ip)" "requests upstream"
expect_eq "127.0.0.1:$port" "$(printf '%s' "$o" | json_get denials.0.capability.scope)"
expect_eq 2 "$(printf '%s' "$o" | json_get denials.0.count)" "HTTP and SOCKS: one refusal, counted"

t "allowed names that resolve to a private, link-local or mapped address"
run "curl -fsS -m 10 http://private.test:$port/; curl -fsS -m 10 http://meta.test/latest/meta-data/; curl -fsS -m 10 http://mapped.test:$port/mapped"
expect_contains "$o" "private.test resolves to 10.0.0.1, a private address"
expect_contains "$o" "meta.test resolves to 169.254.169.254, a link-local address"
expect_contains "$o" "mapped.test resolves to ::ffff:10.0.0.1, a private address"

t "a port the entry does not allow"
run "curl -fsS -m 10 http://good.test:1/port"
expect_contains "$(printf '%s' "$o" | json_get denial.reason)" "good.test:1"

t "a raw connect that ignores the proxy reaches nothing"
run "python3 -c '
import socket
s = socket.socket()
s.settimeout(5)
try:
    s.connect((\"127.0.0.1\", $port)); print(\"connected\")
except OSError as e:
    print(\"refused\")'"
expect_eq refused "$so"

t "malformed requests are answered and kept off upstream"
run "python3 -c '
import socket
def ask(data):
    s = socket.create_connection((\"127.0.0.1\", 3128)); s.settimeout(15)
    s.sendall(data)
    r = b\"\"
    while True:
        b = s.recv(4096)
        if not b: break
        r += b
    return r.split(b\"\\r\\n\")[0].decode()
print(ask(b\"garbage\\r\\n\\r\\n\"))
print(ask(b\"GET http://good.test:$port/nul\\0 HTTP/1.1\\r\\n\\r\\n\"))
print(ask(b\"GET http://good.test:$port/big HTTP/1.1\\r\\n\" + b\"X: \" + b\"a\" * 20000))
print(ask(b\"GET http://u:p@good.test:$port/cred HTTP/1.1\\r\\n\\r\\n\"))
print(ask(b\"GET https://good.test:$port/ HTTP/1.1\\r\\n\\r\\n\"))
s = socket.create_connection((\"127.0.0.1\", 1080)); s.sendall(b\"\\x05\\x01\\x02\"); print(s.recv(2).hex())
'"
expect_eq "HTTP/1.1 400 Bad Request
HTTP/1.1 400 Bad Request
HTTP/1.1 431 Request Header Fields Too Large
HTTP/1.1 400 Bad Request
HTTP/1.1 400 Bad Request
05ff" "$so"
expect_eq 0 "$(($(reached /nul) + $(reached /big) + $(reached /cred)))" "requests upstream"

t "many connections at once, then an allowed request still works"
run "python3 -c '
import socket
held = [socket.create_connection((\"127.0.0.1\", 3128)) for _ in range(300)]
import urllib.request
print(urllib.request.urlopen(\"http://good.test:$port/hello.txt?busy\").read().decode().strip())'"
expect_eq "hello through the proxy" "$so"

t "a client that half-closes its side of a tunnel still gets the whole answer"
run "python3 -c '
import socket
s = socket.create_connection((\"127.0.0.1\", 3128))
s.sendall(b\"CONNECT good.test:$port HTTP/1.1\\r\\n\\r\\nGET /hello.txt?half HTTP/1.0\\r\\n\\r\\n\")
s.shutdown(socket.SHUT_WR)
r = b\"\"
while True:
    b = s.recv(65536)
    if not b: break
    r += b
print(r.split(b\"\\r\\n\\r\\n\")[-1].decode().strip())'"
expect_eq "hello through the proxy" "$so"

t "a deny entry without a port covers every port"
out=$("$CORRAL" run --json --allow-domain "good.test:$port" --allow-address 127.0.0.1 \
  --deny-domain good.test -- curl -fsS -m 10 "http://good.test:$port/denied-any-port" 2>/dev/null)
expect_contains "$(printf '%s' "$out" | json_get outcome.denial.reason)" "denied by the policy's denied domains"
expect_eq 0 "$(reached /denied-any-port)" "requests upstream"

t "the origin is told the host that was checked, not the client's Host"
run "curl -fsS -m 10 -H 'Host: secret.internal' http://good.test:$port/hosthdr"
expect_eq 1 "$(reached "GET /hosthdr good.test:$port")" "requests upstream with the checked Host"
expect_eq 0 "$(reached secret.internal)" "requests naming the client's Host"

t "a malformed SOCKS name leaves nothing of its bytes in the outcome or on stderr"
err=$("$CORRAL" run --json "${policy[@]}" -- python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", 1080))
name = b"[\x1b[1mcorral: done\n\x1b[8m]"
s.sendall(b"\x05\x01\x00\x05\x01\x00\x03" + bytes([len(name)]) + name + b"\x01\xbb")
s.recv(2); print(s.recv(10).hex()); sys.exit(1)' 2>&1)
expect_contains "$err" '"stdout":"0501'
expect_not_contains "$err" '"denials"'
expect_not_contains "$err" "done"

t "tunnels left half-closed, either way, do not make the supervisor spin"
cpu=$(python3 - "$CORRAL" "${policy[@]}" <<PY
import resource, subprocess, sys
code = r"""
import socket, time
def tunnel():
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT good.test:$port HTTP/1.1\\r\\n\\r\\n")
    s.recv(39)
    return s
a = tunnel()  # the upstream answers and closes; the client keeps its end open
a.sendall(b"GET /hello.txt?halfopen HTTP/1.0\\r\\n\\r\\n")
while a.recv(65536): pass
b = tunnel()  # the client shuts its sending side and waits
b.shutdown(socket.SHUT_WR)
time.sleep(4)
print("held")
"""
r = subprocess.run(sys.argv[1:2] + ["run"] + sys.argv[2:] + ["--", "python3", "-c", code],
                   capture_output=True, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.stdout.strip(), "spins" if u.ru_utime + u.ru_stime > 2 else "idle")
PY
)
expect_eq "held idle" "$cpu"

t "past the descriptors it has, the proxy answers 503 at once, does not spin, and serves again"
cpu=$(python3 - "$CORRAL" "${policy[@]}" <<PY
import resource, subprocess, sys
code = """
import socket, time, urllib.request
held = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(900)]
busy = 0
for s in held[-100:]:
    s.settimeout(5)
    busy += s.recv(12) == b"HTTP/1.1 503"
time.sleep(3)
for s in held: s.close()
time.sleep(0.5)
print(busy, urllib.request.urlopen("http://good.test:$port/hello.txt?flood", timeout=20).read().decode().strip())
"""
r = subprocess.run(["prlimit", "--nofile=1024:1024"] + sys.argv[1:2] + ["run"] + sys.argv[2:] +
                   ["--", "python3", "-c", code], capture_output=True, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.stdout.strip())
print("spins" if u.ru_utime + u.ru_stime > 2.5 else "idle")
PY
)
expect_eq "100 hello through the proxy
idle" "$cpu"

if [ "$(id -u)" -eq 0 ]; then
  t "a lookup still running when its connection times out (root: a resolver of the test's own)"
  # In a network namespace of the test's own: a resolver on its loopback
  # that answers after 21 s, past the proxy's 20 s for lookup and connect.
  cat > "$up/slowdns.py" <<'PY'
import socket, threading, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
def answer(q, a):
    time.sleep(21)
    r = bytearray(q); r[2] |= 0x80; r[3] = (r[3] & 0xf0) | 3
    s.sendto(bytes(r), a)
while True:
    q, a = s.recvfrom(512)
    threading.Thread(target=answer, args=(q, a), daemon=True).start()
PY
  printf 'nameserver 127.0.0.1\noptions timeout:30 attempts:1\n' > "$up/resolv.conf"
  out=$(unshare -m -n sh -c "ip link set lo up && mount --bind '$up/resolv.conf' /etc/resolv.conf &&
    { python3 '$up/slowdns.py' >/dev/null 2>&1 & dns=\$!; sleep 0.3; '$CORRAL' run --json --allow-domain slow.test -- python3 -c '
import socket, time
s = socket.create_connection((\"127.0.0.1\", 3128)); s.settimeout(40)
s.sendall(b\"CONNECT slow.test:443 HTTP/1.1\\r\\n\\r\\n\")
print(s.recv(100).split(b\"\\r\\n\")[0].decode()); time.sleep(3)'; kill \$dns; }" 2>&1)
  expect_eq "HTTP/1.1 504 Gateway Timeout" "$(printf '%s' "$out" | json_get stdout | head -1)"
  expect_eq completed "$(printf '%s' "$out" | json_get outcome.state)"
fi

t "corral run's stderr says each refusal in one line"
err=$("$CORRAL" run "${policy[@]}" -- sh -c "curl -fsS -m 10 http://other.test:$port/a; curl -fsS -m 10 http://other.test:1/b" 2>&1 >/dev/null)
expect_contains "$err" "corral: connection to other.test:$port refused: not in the policy's allowed domains; allow with --allow-domain other.test:$port"
expect_contains "$err" "corral: connection to other.test:1 refused"

t "corral exec and corral mcp use the same proxies"
"$CORRAL" exec "${policy[@]}" --report "$ws/rep.json" -- curl -fsS -m 10 "http://other.test:$port/exec" >/dev/null 2>&1
expect_eq "other.test:$port" "$(json_get denial.capability.scope < "$ws/rep.json")"
mcp=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"exec_command\",\"arguments\":{\"cmd\":\"curl -fsS -m 10 http://good.test:$port/hello.txt?mcp; curl -fsS -m 10 http://other.test:$port/mcp\"}}}" \
  | timeout 60 "$CORRAL" mcp --workspace "$ws" "${policy[@]}")
expect_contains "$mcp" "hello through the proxy"
expect_contains "$mcp" "Denied by the sandbox: connection to other.test:$port refused"

t "the landlock-only adapter refuses filter mode, saying why"
err=$("$CORRAL" run --backend landlock $(socket_allows) "${policy[@]}" -- true 2>&1)
expect_contains "$err" "needs the linux adapter"
finish
