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
--connect-timeout, 2 s by default) goes to the next one: an instance that died between
two reads of the file costs a client nothing while another is ready. A request whose
instance took the connection but gave no whole answer (it was stopped with the request
in its queue, reset the connection, timed out, answered garbage) goes to the next one
too if its method is idempotent (GET, HEAD, OPTIONS, PUT, DELETE: RFC 9110 9.2.2),
as nginx's proxy_next_upstream does; a POST or PATCH is sent once unless
--retry-non-idempotent says the service's POSTs have no side effects (an inference
request, such as MindIE's /generate or /v1/chat/completions, only computes an answer),
and gets 502 with a JSON reason otherwise. Nothing of a failed answer reaches the
client: the gateway reads each answer whole before it replies. A request that no ready
instance answers gets 503 (none reachable) or 502 (some took it and failed), with a
JSON reason naming each instance tried.

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
# methods that may be sent again after a failed attempt (RFC 9110 9.2.2)
IDEMPOTENT = frozenset(("GET", "HEAD", "OPTIONS", "PUT", "DELETE"))


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


class _Failed(Exception):
    """An instance took the connection and then gave no whole answer."""

    def cause(self):
        e = self.__cause__
        return str(e) or type(e).__name__


def make_handler(backends, timeout, connect_timeout, retry_non_idempotent):
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

        def attempt(self, host, port, body):
            """One instance's whole answer (response, data); raises OSError before the
            instance took the connection, _Failed after it did."""
            conn = http.client.HTTPConnection(host, port, timeout=connect_timeout)
            try:
                conn.connect()
                conn.sock.settimeout(timeout)  # the answer may take longer
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in ("host", "connection")}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    r = conn.getresponse()
                    return r, r.read()
                except (OSError, http.client.HTTPException) as e:
                    raise _Failed(e) from e
            finally:
                conn.close()

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
            again = self.command in IDEMPOTENT or retry_non_idempotent
            tried, took_it = [], False
            for name, host, port in backends.order():
                try:
                    r, data = self.attempt(host, port, body)
                except _Failed as f:
                    took_it = True
                    tried.append("%s failed during the request: %s" % (name, f.cause()))
                    if not again:
                        break  # it may have done the work: sending it again could do it twice
                    print("gateway: %s failed during a %s (%s): trying the next" %
                          (name, self.command, f.cause()), file=sys.stderr, flush=True)
                    continue
                except OSError as e:
                    tried.append("%s: %s" % (name, e))
                    print("gateway: %s unreachable (%s): trying the next" % (name, e),
                          file=sys.stderr, flush=True)
                    continue  # never reached it: the next one may answer
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Ascend-Instance", name)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                return
            if took_it and not again:
                tried.append("a %s is sent to one instance only (start the gateway with "
                             "--retry-non-idempotent if the service's %ss have no side "
                             "effects)" % (self.command, self.command))
            why = "; ".join(tried) if tried else "no instance is ready (%s is empty)" % backends.path
            self.reply(502 if took_it else 503, (json.dumps({"error": why}) + "\n").encode())

        do_GET = do_HEAD = do_OPTIONS = do_POST = do_PUT = do_PATCH = do_DELETE = forward

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
    ap.add_argument("--retry-non-idempotent", action="store_true",
                    help="send a POST (or PATCH) that an instance took and did not answer "
                         "to the next instance, as for GET: only for services whose "
                         "requests have no side effects, such as inference")
    a = ap.parse_args()
    host, _, port = a.listen.rpartition(":")
    if not os.path.exists(a.endpoints):
        ap.error("%s does not exist: is the service serving and the mount there?" % a.endpoints)
    backends = Backends(a.endpoints)
    backends.load()
    threading.Thread(target=backends.follow, daemon=True).start()
    server = http.server.ThreadingHTTPServer((host or "127.0.0.1", int(port)),
                                             make_handler(backends, a.timeout, a.connect_timeout,
                                                          a.retry_non_idempotent))
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
