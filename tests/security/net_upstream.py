# net_upstream.py DIR LOG — the "internet" of network.sh, on the host's
# loopback: static files from DIR, git's smart HTTP under /git/ (through
# git http-backend), and an npm registry stub under /npm/.  Every request
# line is appended to LOG, so a test can say a refused one never arrived.
# Prints the port it listens on.
import http.server
import json
import os
import subprocess
import sys

root, log = sys.argv[1], sys.argv[2]


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)

    def log_message(self, *a):
        pass

    def note(self):
        with open(log, "a") as f:
            f.write("%s %s %s\n" % (self.command, self.path, self.headers.get("Host", "")))

    def do_GET(self):
        self.note()
        if self.path.startswith("/git/"):
            return self.git()
        if self.path.startswith("/npm/"):
            return self.npm()
        return super().do_GET()

    def do_POST(self):
        self.note()
        if self.path.startswith("/git/"):
            return self.git()
        self.send_error(405)

    def npm(self):
        name = self.path[len("/npm/"):]
        meta = os.path.join(root, "npm", name.replace("/", "_") + ".json")
        if not os.path.exists(meta):
            return self.send_error(404)
        body = open(meta, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def git(self):
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1",
                   PATH_INFO=path[len("/git"):], QUERY_STRING=query,
                   REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   CONTENT_LENGTH=str(len(body)), REMOTE_ADDR="127.0.0.1")
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
