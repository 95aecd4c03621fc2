"""Unit 09b, checkpointing: keep less, compute again, measured as unit 09 measured offloading and compression.

Memory is measured with unit 09's :class:`~grader.units.unit09.support.MemoryWatch` (bytes created and still
alive) and recomputation is counted in forward calls (each :class:`~grader.units.unit09.support.Block` counts its
own), so nothing graded depends on a GPU or on timing. The chain run block by block under checkpoint, and the
self-test's plan, live in :mod:`grader.units.unit09b.support`.
"""

from __future__ import annotations

import itertools

import torch
from torch.utils.checkpoint import checkpoint

from grader.engine.kinds import Choice, Error, Names, Number
from grader.engine.question import predict_then_run, self_test
from grader.units.causes import FREED, NO_GRAD_FN, STALE
from grader.units.unit09.support import block_chain, held_after
from grader.units.unit09b.support import PLAN_HIDDEN, checkpointed, plan_held

_CHAIN = (
    "four Blocks (Linear(128, 512), GELU, Linear(512, 128)) in an nn.Sequential, torch.manual_seed(0), "
    "input x = torch.randn(64, 128) without grad"
)

# =====================================================================================================
# 1. Keep less, compute again
# =====================================================================================================

_CHAIN256 = _CHAIN.replace("torch.randn(64, 128)", "torch.randn(256, 128)")


@predict_then_run(
    "09b.checkpoint-recompute-reached",
    Number(tol=0),
    prompt=f"{_CHAIN}; each Block counts its forward calls. h0 = checkpoint(model[0], x, use_reentrant=False), "
    "h1, h2 and h3 likewise from the block before; then torch.autograd.grad(h3.sum(), h1), the gradient "
    "with respect to block 1's output only. How many forward calls has each block made? Answer "
    "[block 0, block 1, block 2, block 3].",
    explain="A checkpointed block is rerun when backward unpacks one of the tensors it would have saved, that is "
    "when backward reaches the block's nodes. The gradient with respect to h1 runs backward through blocks 3 "
    "and 2 only: they are rerun, blocks 0 and 1 are not.",
    misconceptions=[
        (
            lambda truth: [2, 2, 2, 2],
            "backward stops at h1: blocks 0 and 1 lie behind it, their nodes never run and nothing of theirs is "
            "recomputed",
        ),
        (
            lambda truth: [1, 1, 1, 1],
            "checkpoint kept only each block's input: backward must rerun a block to get what its nodes read",
        ),
    ],
)
def checkpoint_recompute_reached():
    model, x = block_chain(batch=64)
    h = [x]
    for block in model:
        h.append(checkpoint(block, h[-1], use_reentrant=False))
    torch.autograd.grad(h[4].sum(), h[2])
    return [b.calls for b in model]


_FRACTIONS = (
    "under a fifth of the plain run",
    "between a fifth and a half",
    "between half and all of it",
    "as much as the plain run or more",
)


def _fraction(ratio: float) -> str:
    return (
        _FRACTIONS[0]
        if ratio < 0.2
        else _FRACTIONS[1]
        if ratio <= 0.5
        else _FRACTIONS[2]
        if ratio < 1
        else _FRACTIONS[3]
    )


@predict_then_run(
    "09b.checkpoint-held-fraction",
    Choice(*_FRACTIONS),
    prompt=f"{_CHAIN256}. Memory held after the forward pass (MemoryWatch, the 4-byte loss included) with every "
    "block run as checkpoint(block, h, use_reentrant=False), compared with the plain run: "
    + ", ".join(repr(s) for s in _FRACTIONS)
    + ".",
    explain="Plain, each block keeps its 256 x 512 Linear output (for GELU) and GELU output (for the second "
    "Linear), and blocks 1 to 3 keep their 256 x 128 input. Checkpointed, a block keeps only its input: x "
    "existed already, so three 256 x 128 inputs and the loss remain, about a twelfth of the plain run.",
    misconceptions=[
        (
            _FRACTIONS[1],
            "checkpoint keeps neither of a block's two 256 x 512 activations, only its 256 x 128 input: a twelfth",
        ),
        (
            _FRACTIONS[2],
            "checkpoint keeps only each block's input and recomputes everything else during backward",
        ),
    ],
)
def checkpoint_held_fraction():
    model, x = block_chain(batch=256)
    plain = held_after(lambda: model(x).sum())
    model, x = block_chain(batch=256)
    return _fraction(held_after(lambda: checkpointed(model, x).sum()) / plain)


@predict_then_run(
    "09b.reentrant-grads",
    Names(pool=("1.up.weight", "3.down.bias", "0.act")),
    prompt=f"{_CHAIN}. h = checkpoint(model[0], x, use_reentrant=True); loss = model[1:](h).sum(); "
    "loss.backward(). Which parameters' .grad is still None? Answer a set of names such as "
    "{'0.up.weight'} (set() for none).",
    explain="The reentrant version is an autograd Function whose output requires grad only if one of its "
    "tensor inputs does. x does not, so block 0's output is cut from the graph: its parameters get no "
    "gradient, with only a warning. use_reentrant=False records the block's parameters as usual.",
)
def reentrant_grads():
    model, x = block_chain(batch=64)
    h = checkpoint(model[0], x, use_reentrant=True)
    model[1:](h).sum().backward()
    return {n for n, p in model.named_parameters() if p.grad is None}


@predict_then_run(
    "09b.checkpoint-side-effect-count",
    Number(tol=0),
    prompt="log = []; def fn(t): log.append(len(log)); return t.sin().exp(). a = torch.randn(4, requires_grad=True); "
    "y = checkpoint(fn, a, use_reentrant=False).sum(); y.backward(retain_graph=True); y.backward(). What is "
    "len(log)?",
    explain="fn runs once in the forward pass, and checkpoint reruns it whenever a backward needs what its ops "
    "would have saved. The recomputed tensors are dropped once they have been used, so the second backward "
    "over the retained graph reruns fn again: three calls, and every side effect of fn (this append, a "
    "BatchNorm's running statistics) happens three times.",
    misconceptions=[
        (
            2,
            "the retained graph keeps checkpoint's input, not the recomputed tensors: the second backward reruns fn "
            "again",
        ),
        (1, "backward reruns fn to rebuild what it did not keep, and the rerun is an ordinary call of fn"),
    ],
)
def checkpoint_side_effect_count():
    log: list = []

    def fn(t):
        log.append(len(log))
        return t.sin().exp()

    a = torch.randn(4, requires_grad=True)
    y = checkpoint(fn, a, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    y.backward()
    return len(log)


# =====================================================================================================
# Self-test
# =====================================================================================================


_PLAN_BUDGET = 700_000


@self_test(
    "09b.self-checkpoint-plan",
    Names(pool=("0", "1", "2", "3")),
    prompt="Four Blocks with hidden widths 256, 1024, 512, 2048 (width 128, torch.manual_seed(0)), input "
    f"torch.randn(64, 128) without grad. Checkpoint as few blocks as you can (use_reentrant=False) so "
    f"that the memory held after the forward pass (MemoryWatch, loss included) is at most "
    f"{_PLAN_BUDGET:,} bytes. Which blocks? Answer a set of their indices as strings, such as {{'0'}}.",
    explain="A block's own saves are its two 64 x hidden activations, 512 x hidden bytes; checkpointing it "
    "leaves only its input, which the previous block's output already is. The widest block alone does "
    "not bring the total under the budget; the two widest together do, and no other pair does.",
    hints=(
        "Work out what each block holds on its own: which of its activations does it keep, and how big "
        "are they at batch 64?",
        "Checkpointing a block leaves only its input, which the previous block's output already is. Remove "
        "the biggest blocks' activations first and add up until you are under the budget.",
    ),
)
def self_checkpoint_plan():
    blocks = range(len(PLAN_HIDDEN))
    for size in range(len(PLAN_HIDDEN) + 1):
        fits = [set(c) for c in itertools.combinations(blocks, size) if plan_held(c) <= _PLAN_BUDGET]
        if fits:
            if len(fits) != 1:
                raise RuntimeError(f"the budget does not single out one plan: {fits}")
            return {str(i) for i in fits[0]}
    raise RuntimeError("no plan fits the budget")


@self_test(
    "09b.self-checkpoint-input-write",
    Error("at the write", "at backward", causes=(FREED, STALE, NO_GRAD_FN)),
    prompt=(
        f"{_CHAIN}. h = model[0](x); y = checkpoint(model[1], h, "
        "use_reentrant=False); h.add_(1); y.sum().backward(). Backward recomputes block 1 from h. Does "
        "anything raise, and where? For an error, answer a pair (place, cause), the cause chosen from the "
        "candidates listed with the answer's form; your own words may follow as a third item, a note shown "
        "beside torch's message and never graded."
    ),
    explain="checkpoint keeps its inputs as ordinary saved tensors, with their versions; the write moved h's "
    "counter, so backward refuses to recompute from the written value.",
    hints=(
        "checkpoint must keep something to recompute from. What, and is it kept like any other saved tensor?",
        "A saved tensor carries the version it was saved at (unit 07). What does h.add_(1) do to h's "
        "version, and when is it compared?",
    ),
    misconceptions=[
        (
            "no error",
            "checkpoint's input is a saved tensor like any other, with its version: the "
            "write after the save is caught when backward unpacks it.",
        )
    ],
)
def self_checkpoint_input_write():
    model, x = block_chain(batch=64)
    h = model[0](x)
    y = checkpoint(model[1], h, use_reentrant=False)
    yield "at the write"
    h.add_(1)
    yield "at backward"
    y.sum().backward()


@self_test(
    "09b.self-pair-around-checkpoint",
    Number(tol=0),
    prompt="a = torch.randn(6, requires_grad=True); s = torch.randn(6) (no grad). A pair whose pack counts its calls "
    "and returns t.detach(), and whose unpack counts its calls and returns what pack kept. Under it: "
    "y = checkpoint(lambda a, s: (a * s).tanh().exp(), a, s, use_reentrant=False).sum(). Then "
    "y.backward(retain_graph=True); y.backward(). How many times did pack run, and unpack? Answer [pack, unpack].",
    explain="checkpoint installs a pair of its own while the function runs, so the saves of *, tanh and exp go to "
    "it, never to yours; what reaches your pack is what checkpoint keeps: each tensor input, s as well as a, "
    "since the rerun needs both. Each backward reruns the function, and the rerun unpacks both inputs: two "
    "backward passes, four unpacks.",
    hints=(
        "Which pair is the innermost while the function runs? What does checkpoint itself keep, and does an input "
        "without grad count?",
        "How many times does the function run again over two backward passes over the retained graph, and what "
        "does each rerun read from what checkpoint kept?",
    ),
    misconceptions=[
        (
            lambda truth: [truth[0] - 1, truth[1] // 2],
            "s needs no gradient, but the rerun needs its value: checkpoint keeps every tensor input",
        ),
        (
            lambda truth: [truth[0], truth[1] // 2],
            "the recomputed tensors are dropped after use: the second backward reruns the function and unpacks the "
            "inputs again",
        ),
    ],
)
def self_pair_around_checkpoint():
    counts = [0, 0]

    def pack(t):
        counts[0] += 1
        return t.detach()

    def unpack(kept):
        counts[1] += 1
        return kept

    a = torch.randn(6, requires_grad=True)
    s = torch.randn(6)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = checkpoint(lambda a, s: (a * s).tanh().exp(), a, s, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    y.backward()
    return counts
