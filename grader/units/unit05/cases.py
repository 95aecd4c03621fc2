"""Unit 05's exercise cases: generated models, described by an :class:`MLPSpec` (what the learner's function
reads) and built and billed by an :class:`MLPCase`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from grader import probes
from grader.engine import torch_state
from grader.engine.cases import Case
from grader.units.switches import EVERY_OP, switched_off


@dataclass(frozen=True)
class Layer:
    """One nn.Linear of a generated model. Its parameters are f'{index}.weight' and f'{index}.bias'."""

    index: int  # its position in the nn.Sequential (0, 2, 4, ...: a ReLU sits between two Linears)
    in_features: int
    out_features: int
    frozen: bool  # model[index].requires_grad_(False) was called


@dataclass(frozen=True)
class MLPSpec:
    """A model described without building it: Linear layers with a ReLU between each pair, none after the
    last; an input of shape (batch, layers[0].in_features); the loss is model(x).sum()."""

    layers: tuple
    batch: int
    input_requires_grad: bool
    dtype: Any = torch.float32

    @classmethod
    def from_widths(cls, widths, batch, frozen=(), input_requires_grad=False, dtype=torch.float32):
        """widths [d0, d1, ..., dL] give L layers; frozen lists module indices such as (0, 4)."""
        layers = tuple(Layer(2 * k, widths[k], widths[k + 1], 2 * k in set(frozen)) for k in range(len(widths) - 1))
        return cls(layers, batch, input_requires_grad, dtype)

    def source(self) -> str:
        dt = "" if self.dtype == torch.float32 else f", dtype={self.dtype}"
        parts = []
        for i, layer in enumerate(self.layers):
            parts.append(f"nn.Linear({layer.in_features}, {layer.out_features}{dt})")
            if i < len(self.layers) - 1:
                parts.append("nn.ReLU()")
        lines = ["model = nn.Sequential(" + ", ".join(parts) + ")"]
        lines += [f"model[{layer.index}].requires_grad_(False)" for layer in self.layers if layer.frozen]
        grad = ", requires_grad=True" if self.input_requires_grad else ""
        lines.append(f"x = torch.randn({self.batch}, {self.layers[0].in_features}{dt}{grad})")
        lines.append("loss = model(x).sum()")
        return "\n".join(lines)


@dataclass
class MLPCase(Case):
    """One generated case: the spec the learner sees, and the real model the grader measures."""

    seed: int
    spec: MLPSpec
    output: str = "loss"
    features: set = field(default_factory=set)
    drawing_label = None  # a verdict heads drawing() "its graph"

    @property
    def size(self) -> int:
        return len(self.spec.layers)

    @property
    def source(self) -> str:
        return self.spec.source()

    @property
    def label(self) -> str:
        n = len(self.spec.layers)
        return f"model #{self.seed} ({n} layer{'s' if n > 1 else ''})"

    def fresh(self) -> dict:
        ns: dict = {"torch": torch, "nn": nn}
        with torch_state.clean_room(seed=self.seed):
            exec(compile(self.source, f"<generated model #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        ns["spec"] = self.spec
        return ns

    def bill(self, ns: dict | None = None) -> probes.Bill:
        ns = ns if ns is not None else self.fresh()
        model, x = ns["model"], ns["x"]
        with torch_state.clean_room(seed=self.seed):
            return probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})

    def drawing(self, ns: dict | None = None) -> str:
        ns = ns if ns is not None else self.fresh()
        tree = probes.text_tree(ns["loss"], names=[ns["model"], {"input": ns["x"]}], saved=True)
        return tree + "\n\nwhat autograd kept, storage by storage:\n" + self.bill(ns).table()

    def __repr__(self):
        return f"<{self.label}>"


def _spec(rng: random.Random) -> MLPSpec:
    depth = rng.choice([1, 2, 2, 3, 3, 4])
    widths = [rng.choice([1, 2, 3, 4, 5, 6, 8, 12, 16]) for _ in range(depth + 1)]
    frozen = [2 * k for k in range(depth) if rng.random() < 0.35]
    dtype = torch.float64 if rng.random() < 0.25 else torch.float32
    input_requires_grad = rng.random() < 0.4
    if len(frozen) == depth and not input_requires_grad and rng.random() < 0.7:
        frozen.pop()  # keep models where nothing needs a gradient (and nothing is saved) rare
    return MLPSpec.from_widths(
        widths, batch=rng.choice([1, 2, 3, 4, 8]), frozen=frozen, input_requires_grad=input_requires_grad, dtype=dtype
    )


def mlp_cases(count: int = 40, seed: int = 505) -> list[MLPCase]:
    """``count`` distinct generated models, smallest first (fewest layers, then fewest values)."""
    rng = random.Random(seed)
    found, seen = [], set()
    tries = 0
    while len(found) < count and tries < count * 50:
        tries += 1
        spec = _spec(rng)
        if spec in seen:
            continue
        seen.add(spec)
        found.append(MLPCase(seed=seed * 1000 + tries, spec=spec))

    def weight(case):
        s = case.spec
        return (len(s.layers), sum(l.in_features * l.out_features for l in s.layers) + s.batch, case.seed)

    found.sort(key=weight)
    return found


REASON = "reason from the spec: spec.dtype.itemsize gives the bytes of one value"


def call_with_spec(fn, case, ns):
    """The learner's function on the spec, with every tensor operation switched off: building the model and
    measuring what it keeps (the course's bill, a pack hook, the saved attributes) would answer without the rule."""
    with switched_off(REASON, ops=EVERY_OP):
        return fn(ns["spec"])
