"""The generated inputs of unit 11's three exercises: a float64 input and an output gradient per case."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any

import torch

from grader.engine.cases import Case
from grader.units.unit11.support import format_value, live_apply

OPS = ("softplus", "sigmoid_", "ste")
CLASS_NAMES = {"softplus": "StableSoftplus", "sigmoid_": "SigmoidInPlace", "ste": "RoundSTE"}


@dataclass(eq=False)
class OpCase(Case):
    """One generated float64 input (and output gradient) for one of the three Functions."""

    op: str
    seed: int
    values: tuple
    grads: tuple
    step: float = 0.5
    drawing_label = "the live op"
    output = None  # the exercise's call hands the learner's Function the case, not an entry of fresh()

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def label(self) -> str:
        return f"input #{self.seed} ({self.size} values)"

    @property
    def source(self) -> str:
        x = f"torch.tensor([{', '.join(format_value(v) for v in self.values)}], dtype=torch.float64, requires_grad=True)"
        g = f"g = torch.tensor([{', '.join(format_value(v) for v in self.grads)}], dtype=torch.float64)"
        name = CLASS_NAMES[self.op]
        if self.op == "sigmoid_":
            return (
                f"a = {x}\n{g}\nh = a * 1\nout = {name}.apply(h)    # h itself must become sigmoid(a)\n"
                "torch.autograd.grad(h, a, g)"
            )
        call = f"{name}.apply(x, {self.step})" if self.op == "ste" else f"{name}.apply(x)"
        return f"x = {x}\n{g}\ny = {call}\ntorch.autograd.grad(y, x, g)"

    def fresh(self) -> dict[str, Any]:
        return {
            "x": torch.tensor(self.values, dtype=torch.float64, requires_grad=True),
            "g": torch.tensor(self.grads, dtype=torch.float64),
        }

    def drawing(self, ns=None) -> str:
        ns = self.fresh()
        x, g = ns["x"], ns["g"]
        y = live_apply(self.op, self.step)(x * 1 if self.op == "sigmoid_" else x)
        (gx,) = torch.autograd.grad(y, x, g)
        ref = {
            "softplus": "torch.nn.functional.softplus(x)",
            "sigmoid_": "h.sigmoid_()",
            "ste": f"x + (torch.round(x / {self.step}) * {self.step} - x).detach()",
        }[self.op]
        return (
            f"{ref}\n  value:    {[round(v, 4) for v in y.tolist()]}\n  gradient: {[round(v, 4) for v in gx.tolist()]}"
        )

    def __repr__(self):
        return f"<{self.op} {self.label}>"


_HANDMADE = {
    "softplus": [
        ((0.5, -1.25), (1.5, -0.5)),
        ((2.0, -0.5, 1.5), (0.5, -2.0, 1.0)),
        ((750.0, 1.0), (1.0, 1.0)),
        ((-900.0, 3.0), (1.0, 0.5)),
    ],
    "sigmoid_": [((0.5, -1.25), (1.5, -0.5)), ((2.0, -0.5, 1.5), (0.5, -2.0, 1.0))],
    "ste": [((0.3, 1.1), (1.5, -0.5)), ((1.6, -0.45, 2.2), (0.5, -2.0, 1.0))],
}


@functools.cache
def op_cases(op: str, count: int = 10, seed: int = 11) -> tuple[OpCase, ...]:
    rng = random.Random(seed * 100 + OPS.index(op))
    found = [OpCase(op, i + 1, v, g) for i, (v, g) in enumerate(_HANDMADE[op])]
    while len(found) < count:
        n = 2 + len(found) % 5
        if op == "softplus" and len(found) % 2:
            values = [rng.choice([-1, 1]) * rng.uniform(5, 40) for _ in range(n - 1)] + [rng.uniform(715, 950)]
            rng.shuffle(values)
        elif op == "ste":
            step = rng.choice([0.5, 0.25])
            # keep clear of the rounding boundaries, where forward-mode and finite differences jump
            values = [(rng.randint(-12, 12) + rng.choice([0.2, 0.3, 0.7, 0.8])) * step for _ in range(n)]
        else:
            values = [rng.uniform(-6, 6) for _ in range(n)]
        grads = [rng.choice([-1, 1]) * rng.uniform(0.25, 2) for _ in range(n)]
        case = OpCase(op, len(found) + 1, tuple(round(v, 2) for v in values), tuple(round(v, 2) for v in grads))
        if op == "ste":
            case.step = step
        found.append(case)
    found.sort(key=lambda c: (c.size, c.seed))
    return tuple(found)
