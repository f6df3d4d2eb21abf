# SPDX-License-Identifier: MIT
"""examples/mindspore_recovery.py against a MindSpore stub: it answers a save request
that lists it once, writes the checkpoint when it is listed first, and ignores requests
for another generation or other processes; asked to pause for an in-place restart it
answers and waits for the resume; started again in place it joins and is given the
step to go on from; kept into a new generation (process-level) it rebuilds through
on_rebuild, and on a replacement server it joins. Usage: test_mindspore_callback.py SRCDIR"""
import json
import os
import sys
import tempfile
import threading
import time

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

    # in-place: a survivor pauses at the step boundary and waits for the resume
    def write(doc):
        tmp = os.path.join(d, "recovery.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, os.path.join(d, "recovery"))

    os.remove(os.path.join(d, "ctl"))
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0.01, wait_for_restart=False)
    write({"job": "x", "generation": 2, "request": 6, "action": "pause",
           "processes": [{"server": "n2", "node_rank": 1, "rank": None, "role": "pause"},
                         {"server": "n0", "node_rank": 0, "rank": None, "role": "restart"}]})
    resume = threading.Timer(0.3, write, [{"job": "x", "generation": 2, "request": 7,
                                           "action": "resume", "step": 30,
                                           "processes": []}])
    resume.start()
    t0 = time.monotonic()
    cb.on_train_step_end(Context(30))
    waited = time.monotonic() - t0
    resume.join()
    check("asked to pause: it answers paused with its step", ctl() == "paused 6 n2 - 30\n",
          ctl())
    check("and goes on only after the resume", waited >= 0.25, f"{waited:.2f} s")
    os.remove(os.path.join(d, "ctl"))
    cb.on_train_step_end(Context(31))
    check("the resume is not answered", ctl() == "", ctl())

    # paused, the step falls back to a dump: it saves the step it paused at
    os.environ["ASCEND_CHECKPOINT_DIR"] = ckpt
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0.01, wait_for_restart=False)
    write({"job": "x", "generation": 2, "request": 10, "action": "pause",
           "processes": [{"server": "n2", "node_rank": 1, "rank": None, "role": "pause"}]})

    def fall_back_to_dump():
        while ctl() == "":
            time.sleep(0.01)
        write({"job": "x", "generation": 2, "request": 11, "action": "save",
               "processes": [{"server": "n2", "node_rank": 1, "rank": None, "role": "save"}]})

    t = threading.Thread(target=fall_back_to_dump)
    t.start()
    cb.on_train_step_end(Context(50))
    t.join()
    path = os.path.join(ckpt, "model-1_50.ckpt")
    # (the pause's answer came first; the save's replaced the file)
    check("paused, then asked to save: it saves the step it paused at",
          ctl() == f"saved 11 n2 - 50 {path}\n", ctl())

    os.remove(os.path.join(d, "ctl"))
    # started again in place: it joins, and on_join gets the step
    os.environ["ASCEND_JOB_ATTEMPT"] = "1"
    os.environ["MS_NODE_RANK"] = "0"
    joined_at = []
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0.01, wait_for_restart=False,
                                             on_join=joined_at.append)
    write({"job": "x", "generation": 2, "request": 8, "action": "pause",
           "processes": [{"server": "n2", "node_rank": 1, "rank": None, "role": "pause"},
                         {"server": "n0", "node_rank": 0, "rank": None, "role": "restart"}]})

    def resume_after_join():
        while ctl() == "":
            time.sleep(0.01)
        write({"job": "x", "generation": 2, "request": 9, "action": "resume", "step": 44,
               "processes": []})

    t = threading.Thread(target=resume_after_join)
    t.start()
    cb.on_train_begin(Context(0))
    t.join()
    check("restarted in place: it answers joined", ctl() == "joined 8 n0 -\n", ctl())
    check("and on_join gets the step the others paused at", joined_at == [44], joined_at)

    # process-level: a kept process rebuilds its communicator and takes the generation
    os.remove(os.path.join(d, "ctl"))
    os.environ["ASCEND_JOB_ATTEMPT"] = "0"
    os.environ["MS_NODE_RANK"] = "1"
    os.environ["RANK_TABLE_FILE"] = "/ascend/jobs/x/ranktable.json"
    rebuilt = []
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0.01, wait_for_restart=False,
                                             on_rebuild=lambda *a: rebuilt.append(a))
    write({"job": "x", "generation": 3, "request": 12, "action": "rebuild",
           "master_addr": "10.0.1.6",
           "processes": [{"server": "n6", "node_rank": 0, "rank": None, "role": "join"},
                         {"server": "n2", "node_rank": 1, "rank": None, "role": "rebuild"}]})

    def resume_after_pause():
        while ctl() == "":
            time.sleep(0.01)
        write({"job": "x", "generation": 3, "request": 13, "action": "resume", "step": 60,
               "processes": []})

    t = threading.Thread(target=resume_after_pause)
    t.start()
    cb.on_train_step_end(Context(60))
    t.join()
    check("kept into generation 3: on_rebuild gets the rank table and the generation",
          rebuilt == [("/ascend/jobs/x/ranktable.json", 3)], rebuilt)
    check("then it answers paused with its step", ctl() == "paused 12 n2 - 60\n", ctl())
    check("and takes generation 3 as its own", cb.generation == 3, cb.generation)

    os.remove(os.path.join(d, "ctl"))
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0.01, wait_for_restart=False,
                                             log=lambda m: None)
    write({"job": "x", "generation": 3, "request": 14, "action": "rebuild",
           "processes": [{"server": "n2", "node_rank": 1, "rank": None, "role": "rebuild"}]})
    cb.on_train_step_end(Context(61))
    check("without on_rebuild nothing is answered (the step falls back)", ctl() == "", ctl())

    # started on the replacement server: it joins before its first step
    os.environ["ASCEND_JOB_GENERATION"] = "3"
    os.environ["MS_NODE_RANK"] = "0"
    joined_at = []
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0.01, wait_for_restart=False,
                                             on_join=joined_at.append)
    write({"job": "x", "generation": 3, "request": 15, "action": "rebuild",
           "processes": [{"server": "n6", "node_rank": 0, "rank": None, "role": "join"},
                         {"server": "n2", "node_rank": 1, "rank": None, "role": "rebuild"}]})

    def resume_after_joined():
        while ctl() == "":
            time.sleep(0.01)
        write({"job": "x", "generation": 3, "request": 16, "action": "resume", "step": 61,
               "processes": []})

    t = threading.Thread(target=resume_after_joined)
    t.start()
    cb.on_train_begin(Context(0))
    t.join()
    check("on a replacement server: it answers joined", ctl() == "joined 15 n6 -\n", ctl())
    check("and on_join gets the step the kept ones paused at", joined_at == [61], joined_at)

    # retry: it answers paused at the step boundary and waits for the resume
    os.remove(os.path.join(d, "ctl"))
    os.environ["ASCEND_JOB_GENERATION"] = "3"
    os.environ["MS_NODE_RANK"] = "1"
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0.01, wait_for_restart=False)
    write({"job": "x", "generation": 3, "request": 17, "action": "retry",
           "processes": [{"server": "n2", "node_rank": 1, "rank": None, "role": "retry"}]})
    resume = threading.Timer(0.3, write, [{"job": "x", "generation": 3, "request": 18,
                                           "action": "resume", "step": 70,
                                           "processes": []}])
    resume.start()
    t0 = time.monotonic()
    cb.on_train_step_end(Context(70))
    waited = time.monotonic() - t0
    resume.join()
    check("asked to retry: it answers paused with its step", ctl() == "paused 17 n2 - 70\n",
          ctl())
    check("and goes on only after the resume", waited >= 0.25, f"{waited:.2f} s")

    # a first start with nothing to join does not wait
    os.remove(os.path.join(d, "ctl"))
    os.environ["ASCEND_JOB_GENERATION"] = "4"
    cb = mindspore_recovery.AscendfsRecovery(poll_sec=0.01, wait_for_restart=False)
    t0 = time.monotonic()
    cb.on_train_begin(Context(0))
    check("a first start returns at once", time.monotonic() - t0 < 0.5 and ctl() == "")

print(f"# {failures} failed")
sys.exit(1 if failures else 0)
