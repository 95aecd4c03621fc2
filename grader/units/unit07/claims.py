"""Unit 07's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim


def _saved_tensors(root) -> int:
    """How many tensors the nodes of ``root``'s graph keep in their ``_saved_*`` attributes."""
    count, seen, stack = 0, set(), [root]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        stack.extend(child for child, _ in fn.next_functions)
        for name in dir(fn):
            if name.startswith("_saved_"):
                value = getattr(fn, name)
                count += isinstance(value, torch.Tensor)
                count += sum(isinstance(v, torch.Tensor) for v in value) if isinstance(value, (tuple, list)) else 0
    return count


# (program, whether every tensor the node keeps is a real tensor rather than a wrapped Python number)
_PROGRAMS = (
    ("x * x", lambda x, w: x * x, True),
    ("x * w", lambda x, w: x * w, True),
    ("x.exp()", lambda x, w: x.exp(), True),
    ("x.sigmoid()", lambda x, w: x.sigmoid(), True),
    ("x.pow(2)", lambda x, w: x.pow(2), True),
    ("torch.atan2(x, w)", lambda x, w: torch.atan2(x, w), True),
    ("x * 2", lambda x, w: x * 2, False),
    ("x / 3.0", lambda x, w: x / 3.0, False),
    ("x ** 2 * 1.5", lambda x, w: (x**2) * 1.5, False),
)


@claim(
    "07.pack-once-per-save",
    sentence="`pack` runs once per *save*, so a tensor kept twice is packed twice",
    holds_when="every saved value is a tensor; a Python number an op keeps as a 0-dim tensor (`x * 2` keeps "
    "the 2 as `_saved_other`) is saved without calling pack",
)
def pack_once_per_save():
    for seed, (label, program, all_tensors) in enumerate(_PROGRAMS * 2):
        rng = random.Random(seed)
        shape = (rng.randint(1, 5),)
        x = torch.randn(shape, requires_grad=True)
        w = torch.rand(shape, requires_grad=seed % 2 == 0) + 0.5
        packs: list = []

        def pack(t, packs=packs):
            packs.append(t)
            return t.detach()

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = program(x, w)
        yield Trial(
            f"seed {seed}: {label}, w requires grad {w.requires_grad}",
            condition=all_tensors,
            holds=len(packs) == _saved_tensors(out.grad_fn),
        )
