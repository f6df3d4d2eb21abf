#!/usr/bin/env python3
# views_agree.py MOUNT: every view of a mounted ascendfs tells the same story.
# NPU by NPU: topology.json (health, isolation, job, rank, state), nodes/<s>/npus,
# nodes/<s>/health and the metrics; server by server: topology.json, nodes/<s>/info,
# the health file's node line; the totals in cluster/status and the metrics
# (total = allocated + free + isolated + unavailable); jobs by state in status,
# status.json, cluster/status, the metrics and queues/<q>/status; and every event
# whose reason names one server carries it in "server".
# Prints one line per disagreement and exits 1 when there is any.
import json
import os
import re
import sys

M = sys.argv[1]
errors = []


def err(msg):
    errors.append(msg)


def load(path):
    with open(os.path.join(M, path)) as f:
        return json.load(f)


def text(path):
    with open(os.path.join(M, path)) as f:
        return f.read()


metrics = text("cluster/metrics")


def metric(series):
    m = re.search("^" + re.escape(series) + r" (\S+)$", metrics, re.M)
    return float(m.group(1)) if m else None


topo = load("cluster/topology.json")
status = load("cluster/status")
USES = ("allocated", "free", "isolated", "unavailable")
STATES = ("unknown", "ready", "cordoned", "draining", "unreachable")
uses = dict.fromkeys(USES, 0)
servers = dict.fromkeys(STATES, 0)
names = [s["name"] for s in topo["servers"]]

for s in topo["servers"]:
    name = s["name"]
    info = load(f"nodes/{name}/info")
    npus = [l.split() for l in text(f"nodes/{name}/npus").splitlines() if not l.startswith("#")]
    health = text(f"nodes/{name}/health").splitlines()
    if info["state"] != s["state"]:
        err(f"{name}: info says {info['state']}, topology {s['state']}")
    node = health[0].split()
    if node[2:] != [s["state"]]:
        err(f"{name}: health says '{health[0]}', topology {s['state']}")
    if s["state"] not in servers:
        err(f"{name}: unknown state {s['state']}")
    else:
        servers[s["state"]] += 1
    free = 0
    for n in s["npus"]:
        d, h, iso = n["device_id"], n["health"], n["isolation"]
        if n["isolated"] != (iso != "none"):
            err(f"{name} NPU {d}: isolated {n['isolated']} but isolation {iso}")
        want = h + (",isolated:" + iso if iso != "none" else "")
        line = npus[d]
        job = n["job"] if n["job"] is not None else "-"
        rank = str(n["rank"]) if n["rank"] is not None else "-"
        if line[0] != str(d) or line[2] != want or line[3:5] != [job, rank]:
            err(f"{name} NPU {d}: npus says '{' '.join(line)}', topology {want} {job} {rank}")
        hl = health[1 + d].split()
        want_h = ["npu", str(d), h] + (["isolated:" + iso] if iso != "none" else [])
        if hl[: len(want_h)] != want_h or (iso == "none" and len(hl) != 3):
            err(f"{name} NPU {d}: health says '{health[1 + d]}', topology {' '.join(want_h)}")
        code = -1 if h == "UNKNOWN" else 1 if h in ("OK", "Warning") else 0
        got = metric('npu_chip_info_health_status{id="%s",node="%s"}' % (d, name))
        if got != code:
            err(f"{name} NPU {d}: npu_chip_info_health_status {got}, topology {h}")
        series = 'ascendfs_npu_state{id="%s",node="%s",state="%s",isolation="%s"}' % (
            d, name, n["state"], iso)
        if metric(series) != 1:
            err(f"{name} NPU {d}: metrics lack {series}")
        if (n["state"] == "allocated") != (n["job"] is not None):
            err(f"{name} NPU {d}: state {n['state']} but job {n['job']}")
        uses[n["state"]] += 1
        free += n["state"] == "free"
    if s["npus_free"] != free or info["npus_free"] != free:
        err(f"{name}: npus_free topology {s['npus_free']} info {info['npus_free']}, NPUs free {free}")

total = sum(uses.values())
for u in ("total",) + USES:
    have = total if u == "total" else uses[u]
    m = metric('ascendfs_npus{state="%s"}' % u)
    if status["npus"][u] != have or m != have:
        err(f"NPUs {u}: status {status['npus'][u]}, metrics {m}, the NPUs say {have}")
for k in STATES:
    m = metric('ascendfs_servers{state="%s"}' % k)
    if status["servers"][k] != servers[k] or m != servers[k]:
        err(f"servers {k}: status {status['servers'][k]}, metrics {m}, topology {servers[k]}")
if status["servers"]["total"] != len(names):
    err(f"servers total {status['servers']['total']} != {len(names)}")

by_state = {}
for j in sorted(os.listdir(os.path.join(M, "jobs"))):
    if not os.path.isdir(os.path.join(M, "jobs", j)):
        continue
    word = text(f"jobs/{j}/status").strip()
    js = load(f"jobs/{j}/status.json")
    if js["state"] != word:
        err(f"job {j}: status says {word}, status.json {js['state']}")
    by_state[word] = by_state.get(word, 0) + 1
    # the newest of its events that says a state says this one
    said = [json.loads(l)["state"] for l in text(f"jobs/{j}/events").splitlines()]
    said = [x for x in said if x]
    if said and said[-1] != word:
        err(f"job {j}: status says {word}, its newest event says {said[-1]}")
for st, n in status["jobs"].items():
    m = metric('ascendfs_jobs{state="%s"}' % st)
    if n != by_state.get(st, 0) or m != n:
        err(f"jobs {st}: status {n}, metrics {m}, job files {by_state.get(st, 0)}")
q = {"pending": 0, "running": 0, "stopping": 0, "used_npus": 0}
for name in os.listdir(os.path.join(M, "queues")):
    qs = load(f"queues/{name}/status")
    for k in q:
        q[k] += qs[k]
want = {"pending": status["jobs"]["pending"],
        "running": status["jobs"]["running"] + status["jobs"]["recovering"],
        "stopping": status["jobs"]["stopping"], "used_npus": uses["allocated"]}
if q != want:
    err(f"queues add up to {q}, cluster/status says {want}")

word = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])")
for line in text("cluster/events").splitlines():
    e = json.loads(line)
    named = set(word.findall(e["reason"]))
    # a refusal at one server may name another (a device IP that is that server's
    # host_ip): its server is where the refused write went
    if e["kind"] == "refused" and e["server"] is not None:
        continue
    if len(named) == 1 and e["server"] != next(iter(named)):
        err(f"event {e['seq']} ({e['kind']}) names {named.pop()} but server is {e['server']}")

for e in errors:
    print(e)
print(f"# {total} NPUs: " + ", ".join(f"{uses[u]} {u}" for u in USES) +
      "; servers: " + ", ".join(f"{servers[k]} {k}" for k in STATES if servers[k]))
sys.exit(1 if errors else 0)
