# SPDX-License-Identifier: MIT
"""examples/mindspore_recovery.py against a MindSpore stub: it answers a save request
that lists it once, writes the checkpoint when it is listed first, and ignores requests
for another generation or other processes. Usage: test_mindspore_callback.py SRCDIR"""
import json
import os
import sys
import tempfile

src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "tests", "unit", "mindspore_stub"))
sys.path.insert(0, os.path.join(src, "examples"))
failures = 0


def check(what, ok, detail=""):
    global failures
    print(("ok - " if ok else "not ok - ") + what + ("" if ok else f": {detail}"))
    failures += not ok


class Params:
    def __init__(self, step):
        self.cur_step_num = step
        self.train_network = "net"


class Context:
    def __init__(self, step):
        self.params = Params(step)

    def original_args(self):
        return self.params


with tempfile.TemporaryDirectory() as d:
    ckpt = os.path.join(d, "ckpt")
    os.mkdir(ckpt)
    os.environ.update(ASCEND_JOB_DIR=d, ASCEND_CHECKPOINT_DIR=ckpt,
                      ASCEND_JOB_GENERATION="2", MS_NODE_RANK="1")
    os.environ.pop("RANK_ID", None)
    import mindspore_recovery

    def request(req, gen, procs):
        with open(os.path.join(d, "recovery"), "w", encoding="utf-8") as f:
            json.dump({"job": "x", "generation": gen, "request": req, "action": "save",
                       "processes": procs}, f)

    def ctl():
        try:
            with open(os.path.join(d, "ctl"), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return ""

    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0, wait_for_restart=False)
    cb.on_train_step_end(Context(10))
    check("no recovery file: nothing answered", ctl() == "")
    request(1, 1, [{"server": "n2", "node_rank": 1, "rank": None}])
    cb.on_train_step_end(Context(11))
    check("a request for another generation is ignored", ctl() == "", ctl())
    request(2, 2, [{"server": "n0", "node_rank": 0, "rank": None}])
    cb.on_train_step_end(Context(12))
    check("a request that does not list it is ignored", ctl() == "", ctl())
    request(3, 2, [{"server": "n2", "node_rank": 1, "rank": None}])
    cb.on_train_step_end(Context(13))
    path = os.path.join(ckpt, "model-1_13.ckpt")
    check("listed first: it saves and answers with the checkpoint",
          ctl() == f"saved 3 n2 - 13 {path}\n", ctl())
    check("the checkpoint is there, whole", os.path.exists(path) and
          open(path, encoding="utf-8").read() == "'net'\n" and
          not [f for f in os.listdir(ckpt) if f.endswith(".tmp")])
    os.remove(os.path.join(d, "ctl"))
    cb.on_train_step_end(Context(14))
    check("the same request is answered once", ctl() == "", ctl())
    request(4, 2, [{"server": "n0", "node_rank": 0, "rank": None},
                   {"server": "n2", "node_rank": 1, "rank": None}])
    cb.on_train_step_end(Context(20))
    check("listed second: it answers without a checkpoint", ctl() == "saved 4 n2 - 20\n",
          ctl())
    os.environ["ASCEND_CHECKPOINT_DIR"] = ""
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0, wait_for_restart=False)
    request(5, 2, [{"server": "n2", "node_rank": 1, "rank": None}])
    cb.on_train_step_end(Context(21))
    check("no checkpoint dir: save-failed", ctl() == "save-failed 5 n2 -\n", ctl())

print(f"# {failures} failed")
sys.exit(1 if failures else 0)
