#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A client of a service during a fault, for test_services.sh: what a user sees.

    avail_client.py URL ENDPOINTS STOP_FILE OUT_JSON

Until STOP_FILE exists: GET URL (through examples/gateway.py) every 20 ms, each with a
2 s timeout, and read ENDPOINTS (the service's ready instances) at each turn. Writes to
OUT_JSON: requests, failed (not 200) with the first few errors, answered_by (instance
-> count, from X-Ascend-Instance), min_ready (fewest lines ENDPOINTS had), ms_none_ready
and ms_below_2 (how long it listed none, fewer than 2), seconds (how long it ran), and
ready_log (each change of the count: seconds from the start, count).
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

url, endpoints, stop_file, out = sys.argv[1:5]
start = time.monotonic()
requests = failed = 0
errors, answered_by, ready_log = [], {}, []
min_ready, last_count, last_t = None, None, start
none_s = below2_s = 0.0

while not os.path.exists(stop_file):
    now = time.monotonic()
    try:
        with open(endpoints) as f:
            count = sum(1 for line in f if line.strip())
    except OSError:
        count = 0
    # the time since the last turn counts at the count seen then
    if last_count is not None:
        none_s += (now - last_t) if last_count == 0 else 0
        below2_s += (now - last_t) if last_count < 2 else 0
    if count != last_count:
        ready_log.append([round(now - start, 3), count])
    last_count, last_t = count, now
    min_ready = count if min_ready is None else min(min_ready, count)
    requests += 1
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            r.read()
            who = r.headers.get("X-Ascend-Instance", "?")
            answered_by[who] = answered_by.get(who, 0) + 1
    except (urllib.error.URLError, OSError) as e:
        failed += 1
        if len(errors) < 5:
            errors.append("%.3f s: %s" % (now - start, e))
    time.sleep(0.02)

with open(out, "w") as f:
    json.dump({"requests": requests, "failed": failed, "errors": errors,
               "answered_by": answered_by, "min_ready": min_ready,
               "ms_none_ready": round(none_s * 1000), "ms_below_2": round(below2_s * 1000),
               "seconds": round(time.monotonic() - start, 3), "ready_log": ready_log}, f)
