#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write a plain ascend-sim trace: the first N jobs of the Philly trace (as `--slice :N`
takes them: by submit time) with a Llama 2 70B job (TP8 x PP4, 32 NPUs) and a
Mixtral-shaped MoE job (EP8 x PP4, 32 NPUs) arriving every PERIOD hours into it, so
that they land in a cluster the replay has fragmented (issue 20's figures).

Usage: philly_llm_trace.py PHILLY_CSV OUT_CSV [N=20000] [PERIOD_H=72] [RUN_H=10]
"""
import csv
import sys
from datetime import datetime


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    src, out = argv[0], argv[1]
    n = int(argv[2]) if len(argv) > 2 else 20000
    period = float(argv[3]) if len(argv) > 3 else 72.0
    run = float(argv[4]) if len(argv) > 4 else 10.0
    with open(src, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    stamp = lambda r: datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S")
    rows = [(stamp(r), i, r) for i, r in enumerate(rows)]
    rows.sort(key=lambda x: (x[0], x[1]))
    rows = rows[:n]
    t0 = rows[0][0]
    jobs = []
    for t, _, r in rows:
        jobs.append((int((t - t0).total_seconds()), max(1, round(float(r["duration"]))),
                     int(r["num_gpus"]), "vc-" + r["cluster"], "", "", "", "", ""))
    end = jobs[-1][0]
    at, k = period * 3600, 0
    while at < end:
        jobs.append((int(at), int(run * 3600), 32, "llm", "", "llama70b", 8, 4, ""))
        jobs.append((int(at) + 60, int(run * 3600), 32, "llm", "", "moe", 1, 4, 8))
        at += period * 3600
        k += 1
    jobs.sort(key=lambda j: j[0])
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["submit_sec", "duration_sec", "npus", "queue", "priority", "model",
                    "tp", "pp", "ep"])
        w.writerows(jobs)
    print(f"{out}: {len(rows)} Philly jobs and {2 * k} LLM jobs (every {period:g} h)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
