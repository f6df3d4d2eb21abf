# SPDX-License-Identifier: MIT
"""examples/gateway.py against instances that fail in each way an instance of a service
fails while a gateway sends it a request: one that resets the connection after taking
it (stopped with the request in its queue: a fault or a drain), one that answers
garbage, one that takes the request and never answers, one that refuses the
connection (already gone). A GET goes on to the next instance until one answers; a
POST is sent once (502 with the reason) unless --retry-non-idempotent; when no
instance answers the reason names each. Usage: test_gateway.py SRCDIR"""
import http.client
import http.server
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

src = sys.argv[1]
failures = 0


def check(what, ok, detail=""):
    global failures
    print(("ok - " if ok else "not ok - ") + what + ("" if ok else f": {detail}"))
    failures += not ok


def listener():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


def serve_raw(sock, behave):
    """Each connection to sock is given to behave(conn), in a thread of its own."""
    def loop():
        while True:
            try:
                c, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=behave, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


taken = {"reset": 0, "garbage": 0, "silent": 0}


def reset(c):
    """Takes the request, then the process is gone: the kernel resets the connection."""
    taken["reset"] += 1
    c.recv(65536)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def garbage(c):
    taken["garbage"] += 1
    c.recv(65536)
    c.sendall(b"this is not HTTP\r\n\r\n")
    c.close()


def silent(c):
    taken["silent"] += 1
    c.recv(65536)
    time.sleep(3)  # longer than the gateway's --timeout
    c.close()


good_posts = []


class Good(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.command == "POST":
            good_posts.append(body)
        data = b"good " + body
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()

    do_GET = do_POST = do_PATCH = answer


socks = {name: listener() for name in ("reset", "garbage", "silent")}
serve_raw(socks["reset"], reset)
serve_raw(socks["garbage"], garbage)
serve_raw(socks["silent"], silent)
good = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Good)
threading.Thread(target=good.serve_forever, daemon=True).start()
gone = listener()
gone_port = gone.getsockname()[1]
gone.close()  # nothing listens there: refused

tmp = tempfile.mkdtemp(prefix="gateway-test.")
gateways = []


def endpoints(name, lines):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        for inst, port in lines:
            f.write("%s 127.0.0.1:%d\n" % (inst, port))
    return path


def port_of(name):
    return socks[name].getsockname()[1]


def start_gateway(path, *extra):
    s = listener()
    port = s.getsockname()[1]
    s.close()
    log = open(path + ".log", "w+")
    p = subprocess.Popen([sys.executable, os.path.join(src, "examples", "gateway.py"),
                          "--listen", "127.0.0.1:%d" % port, "--timeout", "1",
                          "--connect-timeout", "1", *extra, path], stderr=log)
    gateways.append(p)
    url = "http://127.0.0.1:%d" % port
    for _ in range(100):
        try:
            with urllib.request.urlopen(url + "/gateway/backends", timeout=1) as r:
                r.read()
            return url, log
        except OSError:
            time.sleep(0.05)
    raise SystemExit("gateway on port %d did not start" % port)


def call(url, method="GET", body=None):
    """(status, body, instance) of one request through the gateway."""
    req = urllib.request.Request(url + "/generate", data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read(), r.headers.get("X-Ascend-Instance")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), None
    except (OSError, http.client.HTTPException) as e:  # the gateway itself failed
        return None, str(e).encode(), None


try:
    # every way to fail, then one that answers; round robin starts each request at the next
    all4 = endpoints("all", [("inst.reset", port_of("reset")), ("inst.garbage", port_of("garbage")),
                             ("inst.silent", port_of("silent")), ("inst.gone", gone_port),
                             ("inst.good", good.server_address[1])])
    url, log = start_gateway(all4)
    got = [call(url) for _ in range(5)]
    check("every GET is answered although 4 of 5 instances fail it",
          all(s == 200 for s, _, _ in got), got)
    check("each by the instance that answers", all(i == "inst.good" for _, _, i in got), got)
    check("the instances that took the connection were tried",
          taken["reset"] >= 1 and taken["garbage"] >= 1 and taken["silent"] >= 1, taken)
    log.seek(0)
    text = log.read()
    check("the gateway's log says which failed and that it tried the next",
          "inst.reset failed during a GET" in text and "inst.garbage failed during a GET" in text
          and "inst.gone unreachable" in text, text)

    before = dict(taken)
    got = [call(url, "POST", b"p%d" % i) for i in range(5)]
    codes = sorted(s or 0 for s, _, _ in got)  # 0: the gateway gave no answer
    # starting at reset, garbage or silent: 502; at gone: refused, then good; at good: good
    check("a POST that an instance took and did not answer gets 502, once per such start",
          codes == [200, 200, 502, 502, 502], got)
    check("and is not sent to a second instance",
          len(good_posts) == 2 and sum(taken[k] - before[k] for k in taken) == 3,
          (good_posts, taken, before))
    bad = [json.loads(b) for s, b, _ in got if s == 502]
    check("its reason names the instance and the option",
          all("failed during the request" in d["error"] and "--retry-non-idempotent" in d["error"]
              for d in bad), bad)

    # HEAD goes on like GET, and its answer has no body; PATCH is sent once like POST
    got = [call(url, "HEAD") for _ in range(5)]
    check("every HEAD is answered, without a body",
          all(s == 200 and b == b"" for s, b, _ in got), got)
    got = [call(url, "PATCH", b"x") for _ in range(5)]
    check("a PATCH that an instance took and did not answer gets 502, like a POST",
          sorted(s or 0 for s, _, _ in got) == [200, 200, 502, 502, 502], got)

    url2, _ = start_gateway(all4, "--retry-non-idempotent")
    del good_posts[:]
    got = [call(url2, "POST", b"q%d" % i) for i in range(5)]
    check("with --retry-non-idempotent every POST is answered",
          all(s == 200 for s, _, _ in got) and sorted(good_posts) == [b"q%d" % i for i in range(5)],
          (got, good_posts))
    check("with its body", all(b.startswith(b"good q") for _, b, _ in got), got)

    # nobody answers: 502 if one took it, 503 if none could be reached
    url3, _ = start_gateway(endpoints("failing", [("inst.reset", port_of("reset")),
                                                  ("inst.gone", gone_port)]))
    s, b, _ = call(url3)
    d = json.loads(b)
    check("no instance answers a GET: 502 naming each instance tried",
          s == 502 and "inst.reset" in d["error"] and "inst.gone" in d["error"], (s, d))
    url4, _ = start_gateway(endpoints("gone", [("inst.gone", gone_port)]))
    s, b, _ = call(url4)
    check("none can be reached: 503", s == 503 and "inst.gone" in json.loads(b)["error"], (s, b))
    url5, _ = start_gateway(endpoints("empty", []))
    s, b, _ = call(url5)
    check("none is ready: 503 that says the endpoints file is empty",
          s == 503 and "is empty" in json.loads(b)["error"], (s, b))
finally:
    for p in gateways:
        p.terminate()
        p.wait()
    shutil.rmtree(tmp, ignore_errors=True)

print("%d failed" % failures)
sys.exit(1 if failures else 0)
