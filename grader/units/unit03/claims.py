"""Unit 03's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim
from grader.units.programs import programs

_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


@claim(
    "03.to-records-a-copy-when-it-changes",
    sentence="`.to(...)` is an operation too when it changes the dtype or the device: it records a "
    "`ToCopyBackward0` node, and the copy is not a leaf",
    holds_when="the dtype changes (or copy=True); `.to()` to the tensor's own dtype and device returns the "
    "tensor itself, still a leaf (checked on dtypes and the CPU device: this machine may have no other)",
)
def to_records_a_copy():
    for seed in range(24):
        rng = random.Random(seed)
        start, target = rng.choice(_DTYPES[:2]), rng.choice(_DTYPES)
        copy = rng.random() < 0.2
        w = torch.randn([rng.randint(1, 5)] * rng.randint(1, 2), dtype=start, requires_grad=True)
        y = w.to(target, copy=True) if copy else (w.to("cpu") if rng.random() < 0.3 else w.to(target))
        changes = y.dtype != start or copy
        recorded = type(y.grad_fn).__name__ == "ToCopyBackward0" and not y.is_leaf
        yield Trial(f"seed {seed}: {start} -> {y.dtype}{', copy=True' if copy else ''}", changes, recorded)


@claim(
    "03.backward-writes-every-reachable-leaf",
    sentence="`backward()` writes every reachable leaf's `.grad`",
    holds_when="backward() is called without `inputs=`; with `inputs=` it writes only the leaves named there",
)
def backward_writes_every_reachable_leaf():
    rng = random.Random(3)
    for case in programs(16, seed=3, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        leaves = [t for t in ns.values() if isinstance(t, torch.Tensor) and t.is_leaf and t.requires_grad]
        reachable = [t for t in leaves if _reaches(out, t)]
        if not reachable:
            continue
        named = None
        if len(reachable) > 1 and rng.random() < 0.5:
            named = reachable[: rng.randint(1, len(reachable) - 1)]
        out.sum().backward(inputs=named) if named else out.sum().backward()
        written = all(t.grad is not None for t in reachable)
        yield Trial(
            f"{case.label}{' with inputs= ' + str(len(named)) + ' leaf(s)' if named else ''}", named is None, written
        )


def _reaches(out: torch.Tensor, leaf: torch.Tensor) -> bool:
    seen, stack = set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "variable", None) is leaf:
            return True
        stack.extend(n for n, _ in node.next_functions)
    return False
