"""Unit 01's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim
from grader.units.programs import programs

# (label, the operation, how many of its operands are tensors, whether any operand is a Python number)
_BINARY = {
    "*": lambda a, b: a * b,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "/": lambda a, b: a / b,
    "maximum": lambda a, b: torch.maximum(a, b) if isinstance(b, torch.Tensor) else a.clamp(min=b),
}
_UNARY = {
    "**": lambda a, n: a**n,
    "clamp": lambda a, n: a.clamp(min=n),
    "1 - a": lambda a, n: n - a,
}


@claim(
    "01.one-pair-per-input",
    sentence="a tuple of pairs `(node, number)`, one per tensor input of the operation, in the operation's input order",
    holds_when="every operand is a tensor; a Python number is an input of some operations (`w * 3` and `w + 1` "
    "have two pairs) and not of others (`w ** 2`, `1 - w` and `w.clamp(min=0)` have one)",
)
def one_pair_per_input():
    for seed in range(40):
        rng = random.Random(seed)
        shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(0, 2)))
        w = torch.randn(shape, requires_grad=True)
        other_is_number = rng.random() < 0.5
        if other_is_number or rng.random() < 0.3:
            name = rng.choice(sorted(_BINARY | _UNARY))
        else:
            name = rng.choice(sorted(_BINARY))
        if name in _UNARY:
            number = rng.choice([2, 3, 0.5])
            y, tensors, with_number = _UNARY[name](w, number), 1, True
        elif other_is_number:
            y, tensors, with_number = _BINARY[name](w, rng.choice([2.0, 3, -1.5])), 1, True
        else:
            other = torch.randn(shape, requires_grad=rng.random() < 0.5)
            y, tensors, with_number = _BINARY[name](w, other), 2, False
        pairs = len(y.grad_fn.next_functions)
        yield Trial(f"seed {seed}: {name} on shape {shape}", condition=not with_number, holds=pairs == tensors)


@claim(
    "01.leaf-means-nothing-recorded",
    sentence='For a tensor that requires grad it means "no recorded operation produced it"; a tensor that does '
    "not require grad counts as a leaf whatever produced it, because nothing was recorded.",
)
def leaf_means_nothing_recorded():
    for case in programs(14, seed=1, cuts=("detach", "no_grad", "inference", "item", "tolist", "rebuilt")):
        for name, t in sorted(case.fresh().items()):
            if not isinstance(t, torch.Tensor):
                continue
            rule = t.is_leaf == (t.grad_fn is None) if t.requires_grad else t.is_leaf
            yield Trial(f"{case.label}: {name}", True, rule)


@claim(
    "01.split-makes-one-node",
    sentence="`split` cuts a tensor into pieces, and one node, `SplitBackward0`, produces them all",
    holds_when="split is given one size (an int); given a list of sizes, the one node is a `SplitWithSizesBackward0`",
)
def split_makes_one_node():
    for seed in range(16):
        rng = random.Random(seed)
        shape = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
        dim = rng.randrange(len(shape))
        x = torch.randn(shape, requires_grad=True)
        by_size = seed % 2 == 0
        if by_size:
            arg = rng.randint(1, shape[dim])
        else:
            cut = rng.randint(0, shape[dim])
            arg = [cut, shape[dim] - cut]
        pieces = x.split(arg, dim=dim)
        nodes = {id(p.grad_fn) for p in pieces}
        one_split = len(nodes) == 1 and type(pieces[0].grad_fn).__name__ == "SplitBackward0"
        yield Trial(f"seed {seed}: shape {shape}, split({arg}, dim={dim})", by_size, one_split)
