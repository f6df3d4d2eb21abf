#!/usr/bin/env python3
"""Write week.csv: one synthetic week of work for examples/ascend_cluster.yaml
(16 Atlas 800T A2 servers, 128 NPUs; queues default, research, finetune), in
ascend-sim's plain trace format. Seeded, so the file is reproducible:
    python3 make_week.py > week.csv
The mix: many short evaluations and debug runs on 1-4 NPUs, fine-tunes on one
server, pretraining on 4-8 whole servers for a day or more, and a few urgent jobs.
Offered load is a little above the cluster's capacity, so a queue forms."""
import random

rng = random.Random(20261130)
# (share, npus choices, run time range in seconds, queue, priority)
KINDS = [
    (0.50, [1, 1, 2, 4], (600, 2 * 3600), "default", 500),
    (0.30, [8], (2 * 3600, 10 * 3600), "finetune", 500),
    (0.12, [16, 32], (4 * 3600, 20 * 3600), "research", 500),
    (0.05, [32, 64], (24 * 3600, 60 * 3600), "research", 300),
    (0.03, [8, 16], (1800, 4 * 3600), "default", 900),
]
rows = []
t = 0.0
while t < 7 * 86400:
    t += rng.expovariate(1 / 3000.0)  # a job every 50 minutes on average
    x, acc = rng.random(), 0.0
    for share, sizes, (lo, hi), queue, prio in KINDS:
        acc += share
        if x < acc:
            break
    rows.append((int(t), int(rng.uniform(lo, hi)), rng.choice(sizes), queue, prio))
print("submit_sec,duration_sec,npus,queue,priority")
for r in rows:
    print("%d,%d,%d,%s,%d" % r)
