#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gateway.py: an example gateway for an ascendfs service (kind: service).

    gateway.py [--listen HOST:PORT] /ascend/jobs/<service>/endpoints

It sends each HTTP request it receives to one of the service's ready instances, round
robin, as a Kubernetes Service or an nginx upstream would in front of MindIE Server
instances. The list is the service's `endpoints` file: one "<instance> <host>:<port>"
line per running, ready instance, kept by ascendfs. The gateway follows it with
inotifywait (inotify-tools; ascendfs pokes the file with IN_MODIFY whenever an instance
becomes ready, stops being ready, moves or ends) and reads it again every few seconds
in case a change was missed (a restart of the daemon, a remount).

A request that cannot reach its instance (refused, or no connection within
--connect-timeout, 2 s by default) goes to the next one: an instance that died between two reads of the file costs a
client nothing while another is ready. Only a request that no ready instance answers
gets 503 with a JSON reason. A request that reached an instance is never sent twice.

GET /gateway/backends answers the list the gateway uses now (JSON), for people and
tests. Python 3 standard library and inotifywait only; for demos and tests, not a
production proxy (no TLS, no keep-alive towards instances, no request bodies over 1 MiB).
"""
import argparse
import http.client
import http.server
import json
import os
import subprocess
import sys
import signal
import threading
import time

BODY_MAX = 1 << 20
RELOAD_SEC = 3.0


class Backends:
    """The ready instances as the endpoints file lists them, and a round-robin cursor."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.list = []  # [(instance, host, port)]
        self.next = 0
        self.changed = threading.Event()
        self.watcher = None  # the inotifywait process

    def load(self):
        try:
            with open(self.path) as f:
                text = f.read()
        except OSError as e:
            print("gateway: cannot read %s: %s" % (self.path, e), file=sys.stderr)
            return
        found = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) != 2:
                continue
            host, _, port = parts[1].rpartition(":")
            if host.startswith("[") and host.endswith("]"):
                host = host[1:-1]  # IPv6, as the file brackets it
            if host and port.isdigit():
                found.append((parts[0], host, int(port)))
        with self.lock:
            if found != self.list:
                print("gateway: backends %s" % (" ".join(n for n, _, _ in found) or "none"),
                      file=sys.stderr, flush=True)
            self.list = found

    def order(self):
        """Every backend, starting at the next one in turn."""
        with self.lock:
            n = len(self.list)
            if not n:
                return []
            start = self.next % n
            self.next += 1
            return self.list[start:] + self.list[:start]

    def follow(self):
        """Read the file again on every inotify event, and every RELOAD_SEC anyway."""
        def watch():
            while True:
                try:
                    p = subprocess.Popen(["inotifywait", "-q", "-m", "-e",
                                          "modify,attrib,close_write", self.path],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True)
                except OSError:
                    return  # no inotifywait: the periodic read alone
                self.watcher = p
                for _ in p.stdout:
                    self.changed.set()
                p.wait()
                time.sleep(RELOAD_SEC)  # the file went (a remount): watch it again

        threading.Thread(target=watch, daemon=True).start()
        while True:
            self.changed.wait(RELOAD_SEC)
            self.changed.clear()
            self.load()


def make_handler(backends, timeout, connect_timeout):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, fmt, *args):
            pass

        def reply(self, code, body, ctype="application/json"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def forward(self):
            if self.path == "/gateway/backends":
                with backends.lock:
                    doc = [{"instance": n, "address": "%s:%d" % (h, p)}
                           for n, h, p in backends.list]
                self.reply(200, (json.dumps(doc) + "\n").encode())
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > BODY_MAX:
                self.reply(413, b'{"error": "request body over 1 MiB"}\n')
                return
            body = self.rfile.read(length) if length else None
            tried = []
            for name, host, port in backends.order():
                conn = http.client.HTTPConnection(host, port, timeout=connect_timeout)
                try:
                    conn.connect()
                    conn.sock.settimeout(timeout)  # the answer may take longer
                except OSError as e:
                    tried.append("%s: %s" % (name, e))
                    print("gateway: %s unreachable (%s): trying the next" % (name, e),
                          file=sys.stderr, flush=True)
                    conn.close()
                    continue  # never reached it: the next one may answer
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in ("host", "connection")}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    r = conn.getresponse()
                    data = r.read()
                except OSError as e:
                    # it took the request: sending it again could do it twice
                    self.reply(502, (json.dumps({"error": "instance %s failed during the "
                                                 "request: %s" % (name, e)}) + "\n").encode())
                    return
                finally:
                    conn.close()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Ascend-Instance", name)
                self.end_headers()
                self.wfile.write(data)
                return
            why = "; ".join(tried) if tried else "no instance is ready (%s is empty)" % backends.path
            self.reply(503, (json.dumps({"error": why}) + "\n").encode())

        do_GET = do_POST = do_PUT = do_DELETE = forward

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoints", help="jobs/<service>/endpoints in the ascendfs mount")
    ap.add_argument("--listen", default="127.0.0.1:8080", help="HOST:PORT (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds to wait for an instance's answer (default %(default)s)")
    ap.add_argument("--connect-timeout", type=float, default=2.0,
                    help="seconds to wait for a connection before trying the next instance "
                         "(default %(default)s)")
    a = ap.parse_args()
    host, _, port = a.listen.rpartition(":")
    if not os.path.exists(a.endpoints):
        ap.error("%s does not exist: is the service serving and the mount there?" % a.endpoints)
    backends = Backends(a.endpoints)
    backends.load()
    threading.Thread(target=backends.follow, daemon=True).start()
    server = http.server.ThreadingHTTPServer((host or "127.0.0.1", int(port)),
                                             make_handler(backends, a.timeout, a.connect_timeout))
    print("gateway: listening on %s, following %s" % (a.listen, a.endpoints),
          file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if backends.watcher:
            backends.watcher.terminate()


if __name__ == "__main__":
    main()
