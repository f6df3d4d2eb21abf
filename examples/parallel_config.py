#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn a job's topology.json into what a launcher hands its framework.

Usage: parallel_config.py [TOPOLOGY_JSON] [--format mindformers|mindspore|check]

TOPOLOGY_JSON defaults to $ASCEND_TOPOLOGY_FILE (set in the job's env files).

  mindformers  the `parallel_config:` block of a MindFormers YAML
  mindspore    the ms.set_auto_parallel_context(...) call for semi-auto parallel
  check        one line per parallel dimension: its groups' links, slowest last,
               and exit 1 when a tensor- or expert-parallel group whose size divides
               a server's NPUs spans two servers (the placement to complain about);
               HCCS rings inside a server are not checked

ascendfs numbers ranks tp innermost, then cp, dp (ep groups are runs of ep
consecutive dp indices) and pp outermost, the order both MindSpore's device
matrix and MindFormers' parallel_config assume; so the sizes are all a launcher
passes, and topology.json tells it which links each group got.
"""
import json
import os
import sys

DIMS = ("tp", "cp", "ep", "dp", "pp")


def load(path):
    with open(path, encoding="utf-8") as f:
        topo = json.load(f)
    if topo.get("rank_order") != "tp-cp-ep-dp-pp":
        raise SystemExit(f"{path}: rank_order {topo.get('rank_order')!r} is not "
                         "'tp-cp-ep-dp-pp'; this script knows only that order")
    return topo


def mindformers(topo):
    p = topo["parallel"]
    return ("parallel_config:\n"
            f"  data_parallel: {p['dp']}\n"
            f"  model_parallel: {p['tp']}\n"
            f"  context_parallel: {p['cp']}\n"
            f"  expert_parallel: {p['ep']}\n"
            f"  pipeline_stage: {p['pp']}\n"
            + (f"  # micro_batch_num: at least {p['pp']} (MindFormers needs >= pipeline_stage)\n"
               if p['pp'] > 1 else ""))


def mindspore(topo):
    p = topo["parallel"]
    return ("ms.set_auto_parallel_context(\n"
            "    parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL,\n"
            f"    device_num={topo['npus']},  # MindSpore accepts 1-4096\n"
            f"    pipeline_stages={p['pp']})\n"
            f"# tensor parallel {p['tp']}: the model's shard strategies split by {p['tp']};\n"
            f"# data parallel {p['dp']} (expert parallel {p['ep']} inside it), "
            f"context parallel {p['cp']}\n")


def check(topo):
    """Lines of 'dim size groups link', and whether every tp/ep group that fits a
    server is inside one."""
    per_server = topo["npus"] // max(1, topo["server_count"])
    lines, ok = [], True
    slowest = {}
    order = [c["name"] for c in topo["link_classes"]]
    for dim in DIMS:
        groups = topo["groups"][dim]
        size = topo["parallel"][dim]
        if not groups:
            lines.append(f"{dim} {size} -")
            continue
        links = sorted({g["link"] for g in groups},
                       key=lambda n: order.index(n) if n in order else len(order))
        slowest[dim] = links[-1]
        lines.append(f"{dim} {size} {len(groups)} {'/'.join(links)}")
        if dim in ("tp", "ep"):
            span = size * (topo["parallel"]["tp"] if dim == "ep" else 1) * \
                (topo["parallel"]["cp"] if dim == "ep" else 1)
            # a group that could sit in one server: it divides the server's NPUs
            # (consecutive ranks placed server by server then never straddle one)
            if span <= per_server and per_server % span == 0:
                for g in groups:
                    if len(g["servers"]) > 1:
                        ok = False
                        lines.append(f"  {dim} group {g['ranks']} spans {g['servers']}: "
                                     "it fits one server")
                        break
    for b in topo["pp_boundaries"]:
        lines.append(f"pp boundary {b['from_stage']}->{b['to_stage']} {b['link']}")
    return "\n".join(lines) + "\n", ok


def main(argv):
    fmt, path = "mindformers", os.environ.get("ASCEND_TOPOLOGY_FILE")
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--format" and args:
            fmt = args.pop(0)
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            path = a
    if not path:
        print("parallel_config.py: give topology.json or set ASCEND_TOPOLOGY_FILE",
              file=sys.stderr)
        return 2
    try:
        topo = load(path)
    except (OSError, ValueError, KeyError) as e:
        print(f"parallel_config.py: {path}: {e}", file=sys.stderr)
        return 2
    if fmt == "mindformers":
        sys.stdout.write(mindformers(topo))
    elif fmt == "mindspore":
        sys.stdout.write(mindspore(topo))
    elif fmt == "check":
        text, ok = check(topo)
        sys.stdout.write(text)
        return 0 if ok else 1
    else:
        print(f"parallel_config.py: --format {fmt!r}: use mindformers, mindspore or check",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
