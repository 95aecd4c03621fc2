"""Unit 09b, checkpointing: keep less, compute again, measured as unit 09 measured offloading and compression.

Memory is measured with unit 09's :class:`~grader.units.unit09.support.MemoryWatch` (bytes created and still
alive) and recomputation is counted in forward calls (each :class:`~grader.units.unit09.support.Block` counts its
own), so nothing graded depends on a GPU or on timing. The chain run block by block under checkpoint lives in
:mod:`grader.units.unit09b.support`; the self-tests' program generators in :mod:`grader.units.unit09b.generators`.
"""

from __future__ import annotations

import itertools

import torch
from torch.utils.checkpoint import checkpoint

from grader.engine.kinds import Choice, Error, Function, Names, Number, Sequence
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.causes import FREED, NO_GRAD_FN, STALE
from grader.units.unit09.support import MemoryWatch, block_chain, held_after
from grader.units.unit09b.cases import call_checkpoint, checkpoint_cases, report, torch_checkpoint
from grader.units.unit09b.generators import input_write_program, pair_program, plan_program
from grader.units.unit09b.support import checkpointed

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
    Names(
        pool=tuple(f"{i}.{layer}.{kind}" for i in range(4) for layer in ("up", "down") for kind in ("weight", "bias"))
    ),
    prompt=f"{_CHAIN}. h = checkpoint(model[0], x, use_reentrant=True); loss = model[1:](h).sum(); "
    "loss.backward(). Which parameters' .grad is still None? Answer a set of their names as "
    "model.named_parameters() gives them (set() for none).",
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
# Exercise: checkpoint by hand
# =====================================================================================================


@exercise(
    "09b.checkpoint-by-hand",
    Function(returns=Sequence(), cases=checkpoint_cases, call=call_checkpoint, per_case_s=6.0, budget_s=60.0),
    prompt="Write checkpoint_by_hand(fn, *args): what torch.utils.checkpoint.checkpoint(fn, *args, "
    "use_reentrant=False) does, with a pair of saved-tensor hooks (section 4: checkpointing is itself a pair). "
    "Return fn(*args), run so that the forward pass keeps nothing fn's operations save (pack returns something "
    "small), and so that backward runs fn once more, on the inputs you kept, with the random generator as it "
    "was when the forward pass began, and hands each node what that run saved. It is checked on generated "
    "chains of functions (matmuls with parameters read from outside, exp, sin, dropout, a second input, x with "
    "and without grad) against torch's checkpoint: gradients equal to a run without checkpoint, each function "
    "run once in the forward pass and once more in backward, and no more memory held after the forward pass "
    "than torch's checkpoint holds. torch.utils.checkpoint is switched off while your function runs.",
    explain="A checkpoint is a pair: pack hands back a number instead of the tensor, so the forward pass keeps "
    "nothing but what the closure holds (fn's inputs and the generator's state); the first unpack of a backward "
    "runs fn again under enable_grad on detached copies of the inputs, with the generator put back so dropout "
    "draws the same mask, records what that run saves in the same order, and serves each node its tensor. The "
    "nodes of the forward pass do the backward; the rerun only rebuilds what they read. Run it once per "
    "backward, not once per saved tensor.",
    hints=(
        "What does pack return, if not the tensor? Something small that unpack can turn back into a tensor: its "
        "place in the order fn's operations saved things.",
        "In unpack, the first time: rerun fn on [a.detach().requires_grad_(a.requires_grad) for a in args] "
        "inside torch.enable_grad() and a saved_tensors_hooks pair of your own that appends each saved tensor to a "
        "list; then return the list's entry at the number pack gave. Later unpacks read the same list.",
        "Keep torch.get_rng_state() before calling fn, and rerun inside torch.random.fork_rng(devices=[]) after "
        "torch.set_rng_state(state): dropout then draws the forward pass's mask again, and the generator outside "
        "is left as it was.",
    ),
)
def checkpoint_by_hand(case):
    return report(case, torch_checkpoint)


# =====================================================================================================
# Self-test
# =====================================================================================================


def _widest(p, size: int) -> set[str] | None:
    """The ``size`` blocks of the drawn chain with the widest hidden layers (None where there are not that many)."""
    hidden = p.facts["hidden"]
    if not 0 <= size <= len(hidden):
        return None
    return {str(i) for i in sorted(range(len(hidden)), key=lambda i: -hidden[i])[:size]}


def _held(forward) -> int:
    """held_after(forward) without a garbage collection per plan (the search runs up to 26 plans): a checkpointed
    forward pass makes no reference cycle that would keep its memory alive, so the count is the same."""
    with MemoryWatch() as watch:
        out = forward()  # noqa: F841  (kept alive while the watch counts: the graph it holds is the point)
    return watch.held(collect=False)


@self_test(
    "09b.self-checkpoint-plan",
    Names(pool=("0", "1", "2", "3", "4")),
    program=plan_program,
    explain="Plain, a block holds its two (batch, hidden) activations, the first Linear's output (kept by GELU) and "
    "GELU's output (kept by the second Linear): 8 x batch x hidden bytes in float32. Checkpointing it leaves only its "
    "input, which is held either way: plain, the block's first Linear keeps it; checkpointed, checkpoint keeps it "
    "(and the first block's input existed before). So each "
    "checkpointed block takes its own two activations off the total: the fewest blocks that reach the budget are "
    "the widest ones, and the budget is set so that one plan of that size fits and no smaller plan does.",
    hints=(
        "Work out what each block holds on its own: which of its activations does it keep, and how big are they "
        "at this batch?",
        "Checkpointing a block leaves only its input, which is held either way (by its first Linear when plain, by "
        "checkpoint when checkpointed). Take off the widest blocks' activations first and add up until you are under "
        "the budget.",
    ),
    misconceptions=[
        (
            lambda truth, p: _widest(p, len(truth) - 1),
            "that is not enough: each checkpointed block takes only its own two activations off the total, and the "
            "inputs stay held",
        ),
        (
            lambda truth, p: _widest(p, len(truth) + 1),
            "that fits, but so do fewer blocks: checkpoint as few as you can",
        ),
    ],
)
def self_checkpoint_plan(p):
    ns = p.run()
    chain, x, budget = ns["chain"], ns["x"], ns["budget"]
    blocks = range(len(chain))
    for size in range(len(chain) + 1):
        fits = [
            set(c)
            for c in itertools.combinations(blocks, size)
            if _held(lambda c=c: checkpointed(chain, x, which=set(c)).sum()) <= budget
        ]
        if fits:
            if len(fits) != 1:
                raise RuntimeError(f"the budget does not single out one plan: {fits}")
            return {str(i) for i in fits[0]}
    raise RuntimeError("no plan fits the budget")


@self_test(
    "09b.self-checkpoint-input-write",
    Error("at the write", "at backward", causes=(FREED, STALE, NO_GRAD_FN)),
    program=input_write_program,
    explain="checkpoint keeps its tensor inputs as ordinary saved tensors, with the version each had at the call, "
    "and backward unpacks them to rerun the block: a later write through a name that shares the input's version "
    "counter (the input itself, a view of it, its detach()) is refused there. A write through .data (same memory, "
    "another counter), into a clone, into the checkpoint's output (backward reads the block's saved values from "
    "the rerun, never that output, even where the block's last operation keeps its output), or before the call is "
    "not seen. A reentrant checkpoint whose inputs need no gradient makes an output without history, so backward "
    "refuses before reading anything.",
    hints=(
        "checkpoint must keep something to recompute from. What, and is it kept like any other saved tensor?",
        "A saved tensor carries the version it was saved at (unit 07). Does the write move the counter of what "
        "checkpoint kept, and did it come after the call?",
    ),
    misconceptions=[
        (
            lambda truth, p: "no error" if p.facts["trap"] == "input" else None,
            "checkpoint's input is a saved tensor like any other, with its version: the write after the save is "
            "caught when backward unpacks it",
        ),
        (
            lambda truth, p: ("at backward", "stale") if p.facts["trap"] == "data" else None,
            ".data shares the memory but not the version counter: the check of checkpoint's saved input sees no write "
            "(and the rerun silently reads the written values)",
        ),
        (
            lambda truth, p: ("at backward", "stale") if p.facts["trap"] == "before" else None,
            "checkpoint saves its input when it is called, at the version it has then: a write before the call is "
            "not a write after the save",
        ),
        (
            lambda truth, p: ("at backward", "stale") if p.facts["trap"] in ("output", "clone") else None,
            "no saved tensor shares that memory's counter: checkpoint keeps its inputs, not its output, a clone is a "
            "copy with a counter of its own, and sum keeps nothing",
        ),
        (
            lambda truth, p: ("at backward", "stale") if p.facts["trap"] == "reentrant" else None,
            "the reentrant checkpoint's output requires grad only if a tensor input does: x does not, so y has no "
            "grad_fn and backward refuses before any saved tensor is read",
        ),
    ],
)
def self_checkpoint_input_write(p):
    yield from p.stepped()


@self_test(
    "09b.self-pair-around-checkpoint",
    Number(tol=0),
    program=pair_program,
    explain="checkpoint installs a pair of its own while the function runs, so the saves of the function's ops go to "
    "it, never to yours. What reaches your pack is what checkpoint keeps, each tensor input, with grad or without, "
    "since the rerun needs its value (a Python number is kept as it is, not as a saved tensor), and whatever the "
    "ops after checkpoint save. Each backward over the retained graph reruns the function, and the rerun unpacks "
    "every input again; the ops after checkpoint unpack theirs once per backward too.",
    hints=(
        "Which pair is the innermost while the function runs, and which after it returns? What does checkpoint "
        "itself keep, and does an input without grad count?",
        "How many backward passes run, and what does each read from what your pack was handed?",
    ),
    misconceptions=[
        (
            lambda truth, p: (
                [truth[0] - p.facts["plain"], truth[1] - p.facts["plain"] * p.facts["passes"]]
                if p.facts["plain"]
                else None
            ),
            "an input without grad still needs its value in the rerun: checkpoint keeps every tensor input, and each "
            "rerun unpacks it",
        ),
        (
            lambda truth, p: [truth[0], truth[1] // p.facts["passes"]] if p.facts["passes"] > 1 else None,
            "the recomputed tensors are dropped after use: every backward reruns the function and unpacks the inputs "
            "again",
        ),
        (
            lambda truth, p: [truth[0] + 1, truth[1] + p.facts["passes"]] if p.facts["number"] else None,
            "a Python number passed to checkpoint is kept as it is, not as a saved tensor: your pack never sees it",
        ),
        (
            lambda truth, p: (
                [truth[0] - p.facts["outside"], truth[1] - p.facts["outside"] * p.facts["passes"]]
                if p.facts["outside"] and p.facts["outside"] != p.facts["plain"]
                else None
            ),
            "after checkpoint returns, your pair is the innermost again: what the ops on its output save reaches your "
            "pack, and each backward unpacks it",
        ),
    ],
)
def self_pair_around_checkpoint(p):
    return list(p.run()["counts"])
