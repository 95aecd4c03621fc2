"""The generated cases of unit 13's two exercises: small seeded models for 13.per-sample-grads, and small
programs for 13.eager-vs-compiled, with how each case is handed to the learner's function."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import torch

from grader import probes
from grader.engine.cases import Case
from grader.engine.kinds import BadAnswer
from grader.units.unit13.support import kept_by_compile, loop_grads

# =====================================================================================================
# Exercise 13.per-sample-grads: generated models
# =====================================================================================================


@dataclass(eq=False)
class PerSampleCase(Case):
    """A small seeded MLP, a batch (x, y), and the per-sample loss ((model(x_i) - y_i) ** 2).sum()."""

    seed: int
    d_in: int
    hidden: int
    d_out: int
    batch: int
    bias: bool = True
    output = "model"
    drawing_label = None  # drawing() shows the loop's per-sample gradients under "its graph"

    @property
    def size(self) -> int:
        return self.batch * 100 + self.d_in * self.hidden + self.hidden * self.d_out

    @property
    def label(self) -> str:
        return f"model #{self.seed} ({self.d_in}->{self.hidden}->{self.d_out}, batch of {self.batch})"

    @property
    def source(self) -> str:
        b = "" if self.bias else ", bias=False"
        return (
            f"# weights, x and y drawn from torch.Generator().manual_seed({self.seed})\n"
            f"model = torch.nn.Sequential(torch.nn.Linear({self.d_in}, {self.hidden}{b}), torch.nn.Tanh(),\n"
            f"                            torch.nn.Linear({self.hidden}, {self.d_out}{b}))\n"
            f"x = torch.randn({self.batch}, {self.d_in})\ny = torch.randn({self.batch}, {self.d_out})\n"
            "grads = per_sample_grads(model, x, y)   # {name: tensor of shape (batch, *param.shape)}"
        )

    def fresh(self) -> dict[str, Any]:
        gen = torch.Generator().manual_seed(self.seed)
        model = torch.nn.Sequential(
            torch.nn.Linear(self.d_in, self.hidden, bias=self.bias),
            torch.nn.Tanh(),
            torch.nn.Linear(self.hidden, self.d_out, bias=self.bias),
        )
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.7)
        x = torch.randn(self.batch, self.d_in, generator=gen)
        y = torch.randn(self.batch, self.d_out, generator=gen)
        return {"model": model, "x": x, "y": y}

    def drawing(self, ns=None) -> str:
        ns = self.fresh()
        grads = loop_grads(ns["model"], ns["x"], ns["y"])
        lines = ["per-sample gradients from a loop, one backward per sample:"]
        for name, g in grads.items():
            lines.append(
                f"  {name}: shape {tuple(g.shape)}, sample 0 starts {[round(v, 4) for v in g[0].reshape(-1)[:3].tolist()]}"
            )
        return "\n".join(lines)

    def __repr__(self):
        return f"<{self.label}>"


def per_sample_cases() -> list[PerSampleCase]:
    rng = random.Random(1313)
    cases = [PerSampleCase(1, 2, 3, 1, 2), PerSampleCase(2, 3, 2, 2, 2)]
    for seed in range(3, 9):
        cases.append(
            PerSampleCase(
                seed,
                rng.randint(2, 5),
                rng.randint(2, 6),
                rng.randint(1, 3),
                rng.randint(2, 7),
                bias=rng.random() < 0.7,
            )
        )
    return sorted(cases, key=lambda c: c.size)


def call_per_sample(fn, case, ns):
    return fn(ns["model"], ns["x"], ns["y"])


def flatten_grads(raw, case, ns) -> list[float]:
    """The learner's {name: per-sample gradient} as one list of numbers, in the model's parameter order."""
    if not isinstance(raw, dict):
        raise BadAnswer(f"per_sample_grads must return a dict {{name: tensor}}, got {type(raw).__name__}")
    values = []
    for name, p in ns["model"].named_parameters():
        if name not in raw:
            raise BadAnswer(f"the dict has no entry {name!r}; its keys must be model.named_parameters()'s names")
        g = raw[name]
        if not isinstance(g, torch.Tensor):
            raise BadAnswer(f"{name!r} maps to {type(g).__name__}, not a tensor")
        want = (case.batch, *p.shape)
        if tuple(g.shape) != want:
            return [float("nan")] * (case.batch * sum(q.numel() for q in ns["model"].parameters()))
        values.extend(g.detach().reshape(-1).tolist())
    return values


# =====================================================================================================
# Exercise 13.eager-vs-compiled: generated programs
# =====================================================================================================

POINTWISE = ("sin", "cos", "tanh", "exp", "sigmoid", "relu")


@dataclass(eq=False)
class ChainCase(Case):
    """f(x, w1, w2): x @ w1, a few pointwise ops, maybe @ w2 and more ops, then .sum()."""

    seed: int
    steps: tuple
    rows: int
    width: int
    output = "f"
    drawing_label = None  # drawing() shows what each run keeps under "its graph"

    @property
    def size(self) -> int:
        return len(self.steps) * 1000 + self.rows * self.width

    @property
    def label(self) -> str:
        return f"program #{self.seed} ({len(self.steps)} steps, x of shape ({self.rows}, {self.width}))"

    @property
    def body(self) -> list[str]:
        lines = ["h = x @ w1"]
        for step in self.steps:
            lines.append("h = h @ w2" if step == "@" else f"h = h.{step}()")
        return lines + ["return h.sum()"]

    @property
    def source(self) -> str:
        inner = "\n".join("    " + line for line in self.body)
        return (
            f"def f(x, w1, w2):\n{inner}\n\n"
            f"# x, w1, w2 drawn in this order from torch.Generator().manual_seed({self.seed})\n"
            f"x = torch.randn({self.rows}, {self.width})\n"
            f"w1 = torch.randn({self.width}, {self.width}, requires_grad=True)\n"
            f"w2 = torch.randn({self.width}, {self.width}, requires_grad=True)\n"
            "kept_bytes(f, (x, w1, w2))   # [eager bytes, compiled bytes]"
        )

    def fresh(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch}
        # a new code object each time: Dynamo's cache, keyed on code, never mixes two cases
        exec(
            compile(
                "def f(x, w1, w2):\n" + "\n".join("    " + ln for ln in self.body), f"<program {self.seed}>", "exec"
            ),
            ns,
        )
        gen = torch.Generator().manual_seed(self.seed)
        ns["args"] = (
            torch.randn(self.rows, self.width, generator=gen),
            torch.randn(self.width, self.width, generator=gen).requires_grad_(),
            torch.randn(self.width, self.width, generator=gen).requires_grad_(),
        )
        return ns

    def drawing(self, ns=None) -> str:
        ns = self.fresh()
        kept = kept_by_compile(ns["f"], *ns["args"])
        eager = probes.bill(lambda: ns["f"](*ns["args"]))
        return (
            f"eager keeps {len(eager.entries)} storages; the compiled forward keeps the results of: {', '.join(kept)}"
        )

    def __repr__(self):
        return f"<{self.label}>"


def chain_cases() -> list[ChainCase]:
    rng = random.Random(1300)
    cases = [ChainCase(1, ("sin", "cos"), 2, 3), ChainCase(2, ("tanh", "@", "sin"), 2, 3)]
    for seed in range(3, 7):
        steps = [rng.choice(POINTWISE) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.6:
            steps += ["@"] + [rng.choice(POINTWISE) for _ in range(rng.randint(1, 2))]
        cases.append(ChainCase(seed, tuple(steps), rng.randint(2, 5), rng.randint(3, 6)))
    return sorted(cases, key=lambda c: c.size)


def call_kept_bytes(fn, case, ns):
    return fn(ns["f"], ns["args"])
