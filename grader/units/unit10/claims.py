"""Unit 10's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim

# the branch torch.where does not pick at x <= 0; some have a finite backward there, some do not
_BRANCHES = (
    ("sqrt", torch.sqrt),
    ("log", torch.log),
    ("rsqrt", torch.rsqrt),
    ("reciprocal", torch.reciprocal),
    ("pow(0.5)", lambda t: t.pow(0.5)),
    ("exp", torch.exp),
    ("sin", torch.sin),
)


@claim(
    "10.where-masked-nan",
    sentence="`torch.where` sends a zero gradient to the branch it did not pick, and that branch's backward "
    "still runs on every entry: where its local derivative is not finite, the zero becomes NaN",
    not_swept="about a program around torch.where whose other branch's derivative is not finite at some entry; op_db's samples are finite",
)
def where_masked_nan():
    for seed in range(14):
        rng = random.Random(seed)
        name, branch = _BRANCHES[seed % len(_BRANCHES)]
        values = [rng.choice([-4.0, -1.0, 0.0]) if rng.random() < 0.5 else rng.uniform(0.5, 4) for _ in range(6)]
        values[0], values[1] = -2.0, 0.0  # every program has a negative entry and a zero not picked
        x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        out = torch.where(x > 0, branch(x), torch.zeros_like(x))
        out.sum().backward()
        probe = x.detach().clone().requires_grad_()
        (local,) = torch.autograd.grad(branch(probe).sum(), probe)  # the branch's own slope, entry by entry
        masked = x.detach() <= 0
        predicted = masked & ~torch.isfinite(local)
        holds = bool(torch.isfinite(out).all()) and torch.equal(torch.isnan(x.grad), predicted)
        yield Trial(f"seed {seed}: where(x > 0, x.{name}(), 0) on {values}", condition=True, holds=holds)


_OPTIMIZERS = (
    ("SGD", lambda ps: torch.optim.SGD(ps, lr=0.1)),
    ("Adam", lambda ps: torch.optim.Adam(ps, lr=0.01)),
    ("SGD with momentum", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
)


@claim(
    "10.zero-grad-clears-only-its-own",
    sentence="`opt.zero_grad()` clears only `opt`'s own tensors",
    not_swept="about an optimizer's zero_grad",
)
def zero_grad_clears_only_its_own():
    from torch import nn

    for seed in range(8):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        width = rng.randint(2, 5)
        model = nn.Sequential(nn.Linear(3, width), nn.Tanh(), nn.Linear(width, 1))
        name, make = _OPTIMIZERS[seed % len(_OPTIMIZERS)]
        opt = make(model.parameters())
        if seed % 2:
            model[2] = nn.Linear(width, 1)  # a fresh head the optimizer never saw
        else:
            model[0] = nn.Linear(3, width)  # or a fresh first layer
        set_to_none = seed % 4 < 2
        model(torch.randn(4, 3)).pow(2).mean().backward()
        opt.zero_grad(set_to_none=set_to_none)
        held = {id(p) for group in opt.param_groups for p in group["params"]}
        ok = True
        for p in model.parameters():
            if id(p) in held:
                ok &= p.grad is None or not bool(p.grad.any())
            else:
                ok &= p.grad is not None and bool(p.grad.any())
        label = f"seed {seed}: {name}, {'head' if seed % 2 else 'first layer'} replaced, set_to_none={set_to_none}"
        yield Trial(label, condition=True, holds=ok)
