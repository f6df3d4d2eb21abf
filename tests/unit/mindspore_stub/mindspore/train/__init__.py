# SPDX-License-Identifier: MIT
"""mindspore.train.Callback's shape, for the test of examples/mindspore_recovery.py."""


class Callback:
    """Base class: every hook does nothing."""

    def on_train_step_end(self, run_context):
        pass
