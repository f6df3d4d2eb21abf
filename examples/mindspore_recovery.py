# SPDX-License-Identifier: MIT
"""A MindSpore callback that follows ascendfs's recovery protocol.

ascendfs writes its requests into ``$ASCEND_JOB_DIR/recovery`` and the job's processes
answer into ``$ASCEND_JOB_DIR/ctl`` (ascendfs-spec(5), RECOVERY). Add this callback to
``model.train(..., callbacks=[AscendfsRecovery()])``: at the end of each step it looks
at the file (when it changed, and at most every ``poll_sec``) and acts on a request that
lists this process, once:

- ``"action": "save"`` (``recovery: [dump, ...]``, the dying-gasp save): it saves the
  network with ``mindspore.save_checkpoint`` into ``$ASCEND_CHECKPOINT_DIR`` as
  ``<prefix>-1_<step>.ckpt`` if it is the first process listed (written under a
  temporary name and renamed, so a reader sees a whole file or none), answers
  ``saved <request> <server> <rank|-> <step> [<path>]`` (``save-failed ...`` when the
  save raised), and waits at the step boundary until the restart stops the process
  (SIGTERM), so no step is computed that the restart would throw away.
- ``"action": "pause"`` with ``"role": "pause"`` (``recovery: [in-place, ...]``:
  another process crashed and starts again in place): it answers
  ``paused <request> <server> <rank|-> <step>`` and waits at the step boundary until
  the file says ``"action": "resume"``, then training goes on. A newer request while
  it waits replaces the pause: a ``save`` (the step fell back to a dump) is done as
  above, a new ``pause`` is answered with the same step.

- ``"action": "retry"`` (``recovery: [retry, ...]``: a transient NPU fault): it answers
  ``paused <request> <server> <rank|-> <step>`` and waits for the resume, as for a
  pause. At the end of a step there is no step in flight to drop: recomputing the
  step the fault hit, inside that step, is the framework's (MindIO TTP's step retry
  for MindSpore); this callback keeps the others at the boundary meanwhile.
- ``"action": "rebuild"`` with ``"role": "rebuild"`` (``recovery: [process, ...]``: a
  failed server was replaced as a new generation, this process's server was kept): it
  calls ``on_rebuild(rank_table_file, generation)``, which rebuilds the communicator
  from the new rank table (MindSpore has no public call to re-initialize HCCL in a
  running process; MindIO TFT does it for MindSpore, so the script passes the function),
  takes the new generation as its own, answers ``paused <request> <server> <rank|->
  <step>`` and waits for the resume. Without ``on_rebuild`` it does not answer: the
  step times out and the ladder falls back (a later request of the new generation is
  not for a process still of the older one, so a dump then times out too).

A process started again in place (``ASCEND_JOB_ATTEMPT`` > 0) waits, before its first
step, until the file lists it with ``"role": "restart"``; one started on a replacement
server finds itself listed with ``"role": "join"`` by a ``rebuild`` of its own
generation. Either answers ``joined <request> <server> <rank|->``, and at ``"resume"``
calls ``on_join(step)``:
the step the others paused at, whose state it must take from them. MindSpore has no
public call for that transfer (MindIO TFT's replica recovery does it for MindSpore);
a script passes the function that does it, for example one that loads the state a
data-parallel replica wrote. Without ``on_join`` it resumes from the checkpoint it
started from, and says so.

Which process it is comes from the environment ascend-agent gives: ``MS_NODE_RANK``
(msrun, one process per server) or ``RANK_ID`` (one process per NPU),
``ASCEND_JOB_GENERATION`` and ``ASCEND_JOB_ATTEMPT``. Without ``ASCEND_JOB_DIR`` the
callback does nothing.
"""
import json
import os
import time

import mindspore
from mindspore.train import Callback


class AscendfsRecovery(Callback):
    """Answer ascendfs's recovery requests at the end of a training step."""

    def __init__(self, prefix="model", poll_sec=1.0, wait_for_restart=True, on_join=None,
                 on_rebuild=None, log=print):
        super().__init__()
        self.job_dir = os.environ.get("ASCEND_JOB_DIR") or None
        self.ckpt_dir = os.environ.get("ASCEND_CHECKPOINT_DIR") or None
        self.generation = int(os.environ.get("ASCEND_JOB_GENERATION", "1"))
        self.attempt = int(os.environ.get("ASCEND_JOB_ATTEMPT", "0") or 0)
        rank = os.environ.get("RANK_ID")
        self.rank = int(rank) if rank not in (None, "") else None
        self.node_rank = int(os.environ.get("MS_NODE_RANK", "0") or 0)
        self.prefix = prefix
        self.poll_sec = poll_sec
        self.wait_for_restart = wait_for_restart
        self.on_join = on_join
        self.on_rebuild = on_rebuild
        self.rank_table = os.environ.get("RANK_TABLE_FILE") or None
        self.log = log
        self.handled = 0
        self._seen = None
        self._read_at = 0.0

    def _request(self, force=False):
        """A new request of this generation for this process: (doc, entry, first) or None.

        entry is this process's entry in "processes" (None for a resume, which lists
        nobody)."""
        path = os.path.join(self.job_dir, "recovery")
        try:
            st = os.stat(path)
        except OSError:
            return None
        now = time.monotonic()
        stamp = (st.st_mtime_ns, st.st_size)
        if not force and stamp == self._seen and now - self._read_at < self.poll_sec:
            return None
        self._seen, self._read_at = stamp, now
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return None
        gen = doc.get("generation")
        # a rebuild may be of a newer generation: this process's server was kept into it
        if (not isinstance(gen, int) or
                (gen != self.generation and
                 not (doc.get("action") == "rebuild" and gen > self.generation)) or
                not isinstance(doc.get("request"), int) or doc["request"] <= self.handled):
            return None
        if doc.get("action") == "resume":
            return doc, None, False
        if doc.get("action") not in ("save", "pause", "rebuild", "retry"):
            return None
        for i, entry in enumerate(doc.get("processes") or []):
            mine = (entry.get("rank") == self.rank if self.rank is not None
                    else entry.get("node_rank") == self.node_rank)
            if mine and isinstance(entry.get("server"), str):
                return doc, entry, i == 0
        return None

    def _answer(self, line):
        with open(os.path.join(self.job_dir, "ctl"), "w", encoding="utf-8") as f:
            f.write(line + "\n")

    def _who(self, doc, entry):
        rank = "-" if self.rank is None else str(self.rank)
        return f"{doc['request']} {entry['server']} {rank}"

    def _wait_for_resume(self):
        """Block until the file says resume; its step."""
        while True:
            asked = self._request(force=True)
            if asked and asked[0].get("action") == "resume":
                self.handled = asked[0]["request"]
                return asked[0].get("step")
            time.sleep(self.poll_sec or 0.05)

    @staticmethod
    def _joins(asked):
        """Is @asked a request for this process to join (restarted or new)?"""
        return asked and asked[1] is not None and (
            (asked[0].get("action") == "pause" and asked[1].get("role") == "restart") or
            (asked[0].get("action") == "rebuild" and asked[1].get("role") == "join"))

    def on_train_begin(self, run_context):
        if not self.job_dir:
            return
        asked = self._request(force=True)
        if self.attempt <= 0 and not (self._joins(asked) and
                                      asked[0].get("generation") == self.generation):
            return  # a first start (not on a replacement server): nothing to join
        # started again in place, or on a replacement: join the others first
        while not self._joins(asked):
            time.sleep(self.poll_sec or 0.05)
            asked = self._request(force=True)
        self.handled = asked[0]["request"]
        self._answer(f"joined {self._who(asked[0], asked[1])}")
        step = self._wait_for_resume()
        if self.on_join:
            self.on_join(step)
        else:
            self.log(f"ascendfs: joined; the others are at step {step}, and "
                     "without on_join this process goes on from the checkpoint it loaded")

    def _save(self, doc, entry, first, step, network):
        """Answer a save request (the dying-gasp save), then wait for the restart."""
        who = self._who(doc, entry)
        try:
            path = ""
            if first:
                if not self.ckpt_dir:
                    raise OSError("no ASCEND_CHECKPOINT_DIR to save into")
                final = os.path.join(self.ckpt_dir, f"{self.prefix}-1_{step}.ckpt")
                tmp = os.path.join(self.ckpt_dir, f".{self.prefix}-1_{step}.{os.getpid()}.tmp")
                mindspore.save_checkpoint(network, tmp)
                os.replace(tmp, final)
                path = " " + final
            self._answer(f"saved {who} {step}{path}")
        except OSError:
            self._answer(f"save-failed {who}")
        while self.wait_for_restart:
            time.sleep(1)  # the restart ends this process (SIGTERM)

    def _rebuild(self, doc, entry, step):
        """A kept process: rebuild the communicator, take the generation, answer paused.
        False when it cannot (no on_rebuild): nothing is answered."""
        if not self.on_rebuild:
            self.log(f"ascendfs: asked to rebuild the communicator for generation "
                     f"{doc['generation']}, but no on_rebuild was given: not answering "
                     "(the recovery falls back after its timeout)")
            return False
        self.on_rebuild(self.rank_table, doc["generation"])
        self.generation = doc["generation"]
        self._answer(f"paused {self._who(doc, entry)} {step}")
        return True

    def on_train_step_end(self, run_context):
        if not self.job_dir:
            return
        asked = self._request()
        if not asked or asked[1] is None:
            return
        doc, entry, first = asked
        self.handled = doc["request"]
        cb = run_context.original_args()
        step = int(cb.cur_step_num)
        if doc["action"] == "save":
            self._save(doc, entry, first, step, cb.train_network)
            return
        if entry.get("role") == "rebuild":
            if not self._rebuild(doc, entry, step):
                return
        elif entry.get("role") in ("pause", "retry"):
            self._answer(f"paused {self._who(doc, entry)} {step}")
        else:
            return
        # paused at the step boundary until the resume; a newer request replaces it
        while True:
            asked = self._request(force=True)
            if not asked:
                time.sleep(self.poll_sec or 0.05)
                continue
            doc, entry, first = asked
            self.handled = doc["request"]
            if doc["action"] == "resume":
                return
            if doc["action"] == "save":
                self._save(doc, entry, first, step, cb.train_network)
                return
            if entry.get("role") in ("pause", "retry"):
                self._answer(f"paused {self._who(doc, entry)} {step}")
            elif entry.get("role") == "rebuild" and not self._rebuild(doc, entry, step):
                return
