"""Exercise 09b.checkpoint-by-hand's generated cases: chains of small functions, each run through a checkpoint the
learner writes, and the three things torch's own checkpoint does that the learner's must do too.

A case is a chain of one to three functions over an input ``x`` (with or without grad) and parameters the
functions read from outside (as a block reads its weights): a matmul and tanh, a product then sin then exp
(exp keeps its output), a matmul then dropout (a random draw), a function of two inputs (the block's input and
``x`` again). :func:`run` runs the chain with a given checkpoint (the learner's, or torch's), seeds the random
generator as a run without checkpoint does, and reports three facts:

* the gradients of the parameters (and of ``x``) against a run without checkpoint;
* how often each function ran in the forward pass, and how often more in one backward pass;
* the memory the forward pass holds (unit 09's :class:`~grader.units.unit09.support.MemoryWatch`), against what
  ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`` holds on the same chain.

torch's answer is the same report of torch's checkpoint. While the learner's function runs, torch's checkpoint is
switched off where every call of it arrives (:data:`CHECKPOINT_INTERNALS`).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from grader.engine import torch_state
from grader.engine.cases import Case
from grader.engine.kinds import short
from grader.units.switches import switched_off
from grader.units.unit09.support import MemoryWatch, watching_packs

# name -> (the function's text, with {name} and {p} its parameter; the parameter's shape: "square" or "row";
# does it take a second input?)
BLOCKS = {
    "tanh": ("def {name}(h):\n    return torch.tanh(h @ {p})", "square", False),
    "sin_exp": ("def {name}(h):\n    return (h * {p}).sin().exp() * 0.5", "row", False),
    "dropout": ("def {name}(h):\n    return F.dropout(h @ {p}, p=0.5, training=True).relu()", "square", False),
    "skip": ("def {name}(h, skip):\n    return torch.tanh(h * skip) @ {p}", "square", True),
}
SEED = 4509


@dataclass(eq=False)
class CheckpointCase(Case):
    """One chain: its seed, width and batch, whether x requires grad, and the kinds of its functions in order."""

    seed: int
    width: int
    batch: int
    x_grad: bool
    kinds: tuple
    output = None  # the exercise's call runs the chain with the learner's checkpoint
    drawing_label = "torch's checkpoint and yours on this chain"

    @property
    def size(self) -> int:
        return len(self.kinds) * 100 + self.width * self.batch

    @property
    def label(self) -> str:
        return f"chain #{self.seed} ({', '.join(self.kinds)}{', x requires grad' if self.x_grad else ''})"

    def _names(self) -> list[tuple[str, str]]:
        """(function name, parameter name) for each function of the chain."""
        return [(f"f{i}", f"p{i}") for i in range(len(self.kinds))]

    def _definitions(self) -> list[str]:
        return [BLOCKS[kind][0].format(name=f, p=p) for kind, (f, p) in zip(self.kinds, self._names())]

    @property
    def source(self) -> str:
        lines = [
            f"# x and the parameters drawn from torch.Generator().manual_seed({self.seed})",
            f"x = torch.randn({self.batch}, {self.width}){'.requires_grad_()' if self.x_grad else ''}",
        ]
        for kind, (_, p) in zip(self.kinds, self._names()):
            shape = f"{self.width}, {self.width}" if BLOCKS[kind][1] == "square" else f"{self.width}"
            lines.append(f"{p} = (torch.randn({shape}) * 0.5).requires_grad_()")
        lines.append("")
        for text in self._definitions():
            lines += [text, ""]
        lines.append(f"torch.manual_seed({SEED})    # the same draws as a run without checkpoint")
        h = "x"
        for i, (kind, (f, _)) in enumerate(zip(self.kinds, self._names())):
            extra = ", x" if BLOCKS[kind][2] else ""
            lines.append(f"h{i + 1} = checkpoint_by_hand({f}, {h}{extra})")
            h = f"h{i + 1}"
        lines.append(f"{h}.sum().backward()")
        return "\n".join(lines)

    def fresh(self) -> dict[str, Any]:
        """x, the parameters, and each function wrapped to count its calls (``calls``: one list per function)."""
        gen = torch.Generator().manual_seed(self.seed)
        ns: dict[str, Any] = {"torch": torch, "F": F}
        x = torch.randn(self.batch, self.width, generator=gen)
        ns["x"] = x.requires_grad_() if self.x_grad else x
        for kind, (_, p) in zip(self.kinds, self._names()):
            shape = (self.width, self.width) if BLOCKS[kind][1] == "square" else (self.width,)
            ns[p] = (torch.randn(shape, generator=gen) * 0.5).requires_grad_()
        for text in self._definitions():
            exec(compile(text, f"<chain #{self.seed}>", "exec"), ns)
        calls = [0] * len(self.kinds)
        functions = [_counted(ns[f], calls, i) for i, (f, _) in enumerate(self._names())]
        # the functions' globals are ns itself, builtins included; what is handed out is a copy without them
        return {**{k: v for k, v in ns.items() if k != "__builtins__"}, "functions": functions, "calls": calls}

    def drawing(self, ns=None) -> str:
        theirs = report(self, torch_checkpoint)
        return "torch's checkpoint: " + "; ".join(theirs)

    def __repr__(self):
        return f"<{self.label}>"


def _counted(fn, calls: list, i: int):
    @functools.wraps(fn)
    def counted(*args):
        calls[i] += 1
        return fn(*args)

    return counted


def torch_checkpoint(fn, *args):
    return checkpoint(fn, *args, use_reentrant=False)


def _plain(fn, *args):
    return fn(*args)


def _forward(case: CheckpointCase, ns: dict, ckpt) -> torch.Tensor:
    torch.manual_seed(SEED)
    h = ns["x"]
    for kind, fn in zip(case.kinds, ns["functions"]):
        h = ckpt(fn, h, ns["x"]) if BLOCKS[kind][2] else ckpt(fn, h)
    return h.sum()


def _grads(case: CheckpointCase, ns: dict) -> dict[str, torch.Tensor | None]:
    names = [p for _, p in case._names()] + (["x"] if case.x_grad else [])
    return {n: None if ns[n].grad is None else ns[n].grad.clone() for n in names}


@functools.cache
def plain_grads(case: CheckpointCase) -> dict[str, torch.Tensor | None]:
    with torch_state.clean_room():
        ns = case.fresh()
        _forward(case, ns, _plain).backward()
        return _grads(case, ns)


@functools.cache
def torch_held(case: CheckpointCase) -> int:
    with torch_state.clean_room():
        return _measure(case, torch_checkpoint)[1]


def _measure(case: CheckpointCase, ckpt) -> tuple[dict, int, list, list]:
    """(gradients, bytes held after the forward pass with only the loss kept, calls in forward, calls after one
    backward), running the chain with ``ckpt``."""
    ns = case.fresh()
    with MemoryWatch() as watch:
        loss = _forward(case, ns, ckpt)
        if not isinstance(loss, torch.Tensor):
            raise TypeError(f"the chain's output is {short(loss)}, not a tensor")
        held = watch.held(collect=False)
    forward_calls = list(ns["calls"])
    loss.backward()
    return _grads(case, ns), held, forward_calls, list(ns["calls"])


GRADS_OK = "gradients: equal to a run without checkpoint"
CALLS_OK = "each function: one run in the forward pass, one more in backward"
HELD_OK = "memory after the forward pass: no more than torch's checkpoint holds"


def report(case: CheckpointCase, ckpt) -> list[str]:
    """The three facts of a run of the chain with ``ckpt``, each worded as torch's checkpoint makes it true."""
    with torch_state.clean_room():
        return facts(case, _measure(case, ckpt), ckpt is torch_checkpoint)


def facts(case: CheckpointCase, measured: tuple, own: bool = False) -> list[str]:
    """The report of a measured run (:func:`_measure`); ``own``: the run was torch's checkpoint itself."""
    grads, held, forward_calls, after = measured
    plain = plain_grads(case)
    wrong = [
        n
        for n, g in plain.items()
        if (g is None) != (grads.get(n) is None)
        or (g is not None and not torch.allclose(grads[n], g, rtol=1e-5, atol=1e-6))
    ]
    facts = [GRADS_OK if not wrong else f"gradients: differ from a run without checkpoint for {', '.join(wrong)}"]
    backward_calls = [b - f for f, b in zip(forward_calls, after)]
    if all(c == 1 for c in forward_calls) and all(c == 1 for c in backward_calls):
        facts.append(CALLS_OK)
    else:
        facts.append(f"each function's runs: {forward_calls} in the forward pass, {backward_calls} more in backward")
    allowed = held if own else torch_held(case)
    facts.append(
        HELD_OK
        if held <= allowed
        else f"memory after the forward pass: {held:,} bytes held, where torch's checkpoint holds {allowed:,}"
    )
    return facts


# torch.utils.checkpoint where every call of it arrives: checkpoint() reaches its two implementations through these
# module attributes, and checkpoint_sequential calls checkpoint()
CHECKPOINT_INTERNALS = {
    "torch.utils.checkpoint.checkpoint": "torch.utils.checkpoint.checkpoint",
    "torch.utils.checkpoint.checkpoint_sequential": "torch.utils.checkpoint.checkpoint_sequential",
    "torch.utils.checkpoint._checkpoint_without_reentrant_generator": "torch.utils.checkpoint.checkpoint",
    "torch.utils.checkpoint.CheckpointFunction.apply": "torch.utils.checkpoint.checkpoint (use_reentrant=True)",
}
BY_HAND = "write it with a pair of saved-tensor hooks: pack keeps almost nothing, unpack runs the function again"


def call_checkpoint(fn, case: CheckpointCase, ns):
    """The chain run with the learner's checkpoint, torch's switched off while it runs (forward and backward);
    what it is compared with is measured first, with torch's checkpoint on."""
    torch_held(case), plain_grads(case)
    kept: list[str] = []
    with switched_off(BY_HAND, CHECKPOINT_INTERNALS), watching_packs(kept):
        measured = _measure(case, fn)
    found = facts(case, measured)
    if kept:  # memory outside torch's storages, which the measure does not count, is held all the same
        found[-1] = f"memory after the forward pass: {kept[0]}; keep what pack returns as tensors"
    return found


def checkpoint_cases(count: int = 16, seed: int = 909_2) -> list[CheckpointCase]:
    """One, two and three functions of every kind, x with and without grad; dropout in a third of them."""
    rng = random.Random(seed)
    kinds = list(BLOCKS)
    found = [
        CheckpointCase(seed * 100 + 1, 3, 2, False, ("tanh",)),
        CheckpointCase(seed * 100 + 2, 3, 2, True, ("sin_exp",)),
        CheckpointCase(seed * 100 + 3, 3, 2, False, ("dropout",)),
        CheckpointCase(seed * 100 + 4, 3, 2, True, ("skip",)),
    ]
    while len(found) < count:
        n = len(found)
        chain = tuple(rng.choice(kinds) for _ in range(1 + n % 3))
        if n % 3 == 0 and "dropout" not in chain:
            chain = chain[:-1] + ("dropout",)
        found.append(
            CheckpointCase(seed * 100 + n + 1, rng.choice([3, 4, 6]), rng.choice([2, 3, 5]), n % 2 == 0, chain)
        )
    return sorted(found, key=lambda c: (c.size, c.seed))
