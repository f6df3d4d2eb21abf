# SPDX-License-Identifier: MIT
"""The part of MindSpore's API examples/mindspore_recovery.py uses, for its test."""


def save_checkpoint(network, path):
    """As MindSpore's: write @network's parameters to @path (here: its repr)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(repr(network) + "\n")
