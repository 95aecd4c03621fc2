"""Unit 09's general rules, each checked on generated programs (see grader.engine.claims)."""

import gc
import random
import weakref

import torch
from torch.autograd.graph import save_on_cpu

from grader.engine.claims import Trial, claim

_SAVE_THEIR_OUTPUT = ("exp", "sigmoid", "tanh")


@claim(
    "09.save-on-cpu-keeps-the-tensor-itself",
    sentence="on a machine without a GPU the default `save_on_cpu()` keeps the very tensor it is handed, not a "
    "detached alias: an output it saves (`exp`'s) survives `del` and `gc.collect()`, the cycle of section 1, "
    "while `pin_memory=True` copies",
    holds_when="pin_memory=False on a CPU tensor; with pin_memory=True the pack keeps a copy and the output is freed",
)
def save_on_cpu_keeps_the_tensor_itself():
    made = []
    for seed in range(8):
        rng = random.Random(seed)
        op, pin = _SAVE_THEIR_OUTPUT[seed % 3], seed % 2 == 1
        p = torch.randn(rng.randint(1, 64), requires_grad=True)
        with save_on_cpu(pin_memory=pin):
            out = getattr(p, op)()
        made.append((f"seed {seed}: p.{op}() under save_on_cpu(pin_memory={pin})", not pin, weakref.ref(out)))
        del out
    gc.collect()  # once for all of them: a collection takes a while in a process that imported torch
    for label, aliased, gone in made:
        kept = gone()
        if kept is not None:  # leave nothing behind: backward frees what the node saved, and so the cycle
            kept.sum().backward()
        yield Trial(label, condition=aliased, holds=kept is not None)
