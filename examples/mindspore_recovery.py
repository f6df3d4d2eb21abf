# SPDX-License-Identifier: MIT
"""A MindSpore callback that follows ascendfs's recovery protocol (the dying-gasp save).

A job whose spec says ``recovery: [dump, job]`` is asked, after a fault, to save the
step it finished: ascendfs writes the request into ``$ASCEND_JOB_DIR/recovery`` and
the surviving processes answer into ``$ASCEND_JOB_DIR/ctl`` (ascendfs-spec(5),
RECOVERY). Add this callback to ``model.train(..., callbacks=[AscendfsRecovery()])``:
at the end of each step it looks at the file (when it changed, and at most every
``poll_sec``), and when it lists this process it

1. saves the network with ``mindspore.save_checkpoint`` into ``$ASCEND_CHECKPOINT_DIR``
   as ``<prefix>-1_<step>.ckpt`` if it is the first process listed (written under a
   temporary name and renamed, so a reader sees a whole file or none),
2. answers ``saved <request> <server> <rank|-> <step> [<path>]`` (``save-failed ...``
   when the save raised), and
3. waits at the step boundary until the restart stops the process (SIGTERM), so no
   step is computed that the restart would throw away.

Which process it is comes from the environment ascend-agent gives: ``MS_NODE_RANK``
(msrun, one process per server) or ``RANK_ID`` (one process per NPU), and
``ASCEND_JOB_GENERATION``. Without ``ASCEND_JOB_DIR`` the callback does nothing.
"""
import json
import os
import time

import mindspore
from mindspore.train import Callback


class AscendfsRecovery(Callback):
    """Answer ascendfs's dying-gasp save requests at the end of a training step."""

    def __init__(self, prefix="model", poll_sec=1.0, wait_for_restart=True):
        super().__init__()
        self.job_dir = os.environ.get("ASCEND_JOB_DIR") or None
        self.ckpt_dir = os.environ.get("ASCEND_CHECKPOINT_DIR") or None
        self.generation = int(os.environ.get("ASCEND_JOB_GENERATION", "1"))
        rank = os.environ.get("RANK_ID")
        self.rank = int(rank) if rank not in (None, "") else None
        self.node_rank = int(os.environ.get("MS_NODE_RANK", "0") or 0)
        self.prefix = prefix
        self.poll_sec = poll_sec
        self.wait_for_restart = wait_for_restart
        self.handled = 0
        self._seen = None
        self._read_at = 0.0

    def _request(self):
        """The open save request that lists this process: (request, entry, first) or None."""
        path = os.path.join(self.job_dir, "recovery")
        try:
            st = os.stat(path)
        except OSError:
            return None
        now = time.monotonic()
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self._seen and now - self._read_at < self.poll_sec:
            return None
        self._seen, self._read_at = stamp, now
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return None
        if (doc.get("action") != "save" or doc.get("generation") != self.generation or
                not isinstance(doc.get("request"), int) or doc["request"] <= self.handled):
            return None
        for i, entry in enumerate(doc.get("processes") or []):
            mine = (entry.get("rank") == self.rank if self.rank is not None
                    else entry.get("node_rank") == self.node_rank)
            if mine and isinstance(entry.get("server"), str):
                return doc["request"], entry, i == 0
        return None

    def _answer(self, line):
        with open(os.path.join(self.job_dir, "ctl"), "w", encoding="utf-8") as f:
            f.write(line + "\n")

    def on_train_step_end(self, run_context):
        if not self.job_dir:
            return
        asked = self._request()
        if not asked:
            return
        request, entry, first = asked
        self.handled = request
        cb = run_context.original_args()
        step = int(cb.cur_step_num)
        rank = "-" if self.rank is None else str(self.rank)
        who = f"{request} {entry['server']} {rank}"
        try:
            path = ""
            if first:
                if not self.ckpt_dir:
                    raise OSError("no ASCEND_CHECKPOINT_DIR to save into")
                final = os.path.join(self.ckpt_dir, f"{self.prefix}-1_{step}.ckpt")
                tmp = os.path.join(self.ckpt_dir, f".{self.prefix}-1_{step}.{os.getpid()}.tmp")
                mindspore.save_checkpoint(cb.train_network, tmp)
                os.replace(tmp, final)
                path = " " + final
            self._answer(f"saved {who} {step}{path}")
        except OSError:
            self._answer(f"save-failed {who}")
        while self.wait_for_restart:
            time.sleep(1)  # the restart ends this process (SIGTERM)
