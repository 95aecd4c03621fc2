"""Unit 09b's helpers: the Block chain run under ``torch.utils.checkpoint``, block by block, and the self-test's
plan. The chain, its blocks and the memory instrument are unit 09's (:mod:`grader.units.unit09.support`): 09b
measures checkpointing with the tools 09 measured offloading and compression with.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from grader.units.unit09.support import block_chain, held_after


def checkpointed(model: nn.Sequential, x: torch.Tensor, which=None, use_reentrant: bool = False):
    """Run the blocks in order, each one in ``which`` (all by default) under torch.utils.checkpoint."""
    h = x
    for i, block in enumerate(model):
        if which is None or i in which:
            h = checkpoint(block, h, use_reentrant=use_reentrant)
        else:
            h = block(h)
    return h


# --- the self-test's canonical checkpoint plan (its drawn plans: grader.units.unit09b.generators) ---------

PLAN_HIDDEN = (256, 1024, 512, 2048)


def plan_held(which) -> int:
    model, x = block_chain(batch=64, hidden=PLAN_HIDDEN)
    return held_after(lambda: checkpointed(model, x, which=set(which)).sum())
