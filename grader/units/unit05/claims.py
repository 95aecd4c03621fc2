"""Unit 05's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch
from torch import nn

from grader import probes
from grader.engine.claims import Trial, claim

# activations that keep their own output for backward, and ones that keep only their input
_KEEP_OUTPUT = {"ReLU": nn.ReLU, "Tanh": nn.Tanh, "Sigmoid": nn.Sigmoid}
_KEEP_INPUT = {"GELU": nn.GELU, "SiLU": nn.SiLU}


@claim(
    "05.freeze-saves-nothing-when-kept",
    sentence="Freezing a layer whose input needs a gradient saves nothing when the node before it keeps that "
    "input anyway, as a ReLU keeps its output",
    holds_when="the activation before the frozen layer keeps its own output (ReLU, Tanh, Sigmoid); after one "
    "that keeps only its input (GELU, SiLU) freezing the layer drops that input from the bill",
)
def freeze_saves_nothing_when_kept():
    for seed in range(10):
        rng = random.Random(seed)
        kept = seed % 2 == 0
        acts = _KEEP_OUTPUT if kept else _KEEP_INPUT
        name = rng.choice(sorted(acts))
        width, batch = rng.choice([8, 16, 32]), rng.randint(2, 8)
        torch.manual_seed(seed)
        model = nn.Sequential(
            nn.Linear(width, width), acts[name](), nn.Linear(width, width), acts[name](), nn.Linear(width, 1)
        )
        x = torch.randn(batch, width)
        plain = probes.bill(lambda model=model, x=x: model(x).sum()).total
        model[2].requires_grad_(False)
        frozen = probes.bill(lambda model=model, x=x: model(x).sum()).total
        yield Trial(f"seed {seed}: Linear({width}) -> {name} -> frozen Linear({width})", kept, frozen == plain)


_WITH_A_NUMBER = {
    "v * k": lambda v, k: v * k,
    "k * v": lambda v, k: k * v,
    "v / k": lambda v, k: v / k,
    "v.mul(k)": lambda v, k: v.mul(k),
}


@claim(
    "05.wrapped-numbers-skip-pack-hooks",
    sentence="torch does not send wrapped numbers through saved-tensor hooks.",
)
def wrapped_numbers_skip_pack_hooks():
    for seed in range(16):
        rng = random.Random(seed)
        name = sorted(_WITH_A_NUMBER)[seed % len(_WITH_A_NUMBER)]
        number = rng.choice([2, 3, -4]) if seed % 2 else rng.choice([0.5, 2.5, -1.5])
        v = torch.randn(rng.randint(1, 6), requires_grad=True)
        counts = []
        for k in (number, torch.tensor(number)):
            calls: list = []
            with torch.autograd.graph.saved_tensors_hooks(lambda t, calls=calls: calls.append(t) or t, lambda t: t):
                out = _WITH_A_NUMBER[name](v, k)
            kept = any(isinstance(getattr(out.grad_fn, a, None), torch.Tensor) for a in ("_saved_self", "_saved_other"))
            counts.append((len(calls), kept))
        # the number is kept by the node (a wrapped 0-dim tensor) yet never packed; the same value as a tensor is
        yield Trial(
            f"seed {seed}: {name.replace('k', repr(number))}", True, counts[0] == (0, True) and counts[1] == (1, True)
        )
