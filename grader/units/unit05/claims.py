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
