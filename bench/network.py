# network.py — the pieces of bench/network.sh.
#   server PORTFILE        a loopback upstream: "bulk N" sends N bytes and
#                          closes; "ping" sends one byte and closes; "hold"
#                          keeps the connection open until the peer closes
#   client MODE HOST PORT  runs one measurement, directly (HOST:PORT) or,
#                          with PROXY=host:port set, through CONNECT there;
#                          prints seconds
import os
import socket
import sys
import threading
import time


def server(portfile):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(2048)
    with open(portfile, "w") as f:
        f.write(str(s.getsockname()[1]))
    chunk = b"\0" * (1 << 20)

    def serve(c):
        try:
            line = b""
            while not line.endswith(b"\n"):
                b = c.recv(64)
                if not b:
                    return
                line += b
            words = line.split()
            if words[0] == b"bulk":
                left = int(words[1])
                while left > 0:
                    n = c.send(chunk[: min(left, len(chunk))])
                    left -= n
            elif words[0] == b"ping":
                c.sendall(b"p")
            else:
                c.recv(1)
        except OSError:
            pass
        finally:
            c.close()

    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def connect(host, port):
    proxy = os.environ.get("PROXY")
    if not proxy:
        s = socket.create_connection((host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s
    ph, pp = proxy.split(":")
    s = socket.create_connection((ph, int(pp)))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\n\r\n" % (host.encode(), port))
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        b = s.recv(1)
        if not b:
            raise SystemExit("proxy closed: %r" % head)
        head += b
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise SystemExit("proxy refused: %r" % head)
    return s


def client(mode, host, port):
    port = int(port)
    if mode.startswith("bulk"):
        n = int(mode[4:])
        s = connect(host, port)
        buf = bytearray(1 << 20)
        t = time.monotonic()
        s.sendall(b"bulk %d\n" % n)
        got = 0
        while True:
            r = s.recv_into(buf)
            if not r:
                break
            got += r
        t = time.monotonic() - t
        if got != n:
            raise SystemExit("got %d of %d bytes" % (got, n))
        print("%.6f" % t)
    elif mode.startswith("ping"):
        n = int(mode[4:])
        t = time.monotonic()
        for _ in range(n):
            s = connect(host, port)
            s.sendall(b"ping\n")
            if s.recv(1) != b"p":
                raise SystemExit("no answer")
            s.close()
        print("%.6f" % ((time.monotonic() - t) / n))
    elif mode.startswith("hold"):
        # Writes "ready 0", opens N tunnels, writes "ready N", waits for
        # the file named by $DONE.
        n = int(mode[4:])
        mark = os.environ["MARK"]
        open(mark, "w").write("0")
        time.sleep(1)
        held = [connect(host, port) for _ in range(n)]
        for s in held:
            s.sendall(b"hold\n")
        open(mark, "w").write(str(len(held)))
        while not os.path.exists(os.environ["DONE"]):
            time.sleep(0.05)
        print("0")


if sys.argv[1] == "server":
    server(sys.argv[2])
else:
    client(*sys.argv[2:5])
