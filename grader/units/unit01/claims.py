"""Unit 01's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim

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
