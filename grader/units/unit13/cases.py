"""The generated cases of unit 13's two exercises: small seeded models for 13.per-sample-grads (torch.func, with
backward passes switched off) and 13.per-sample-by-hooks (one backward pass, with torch.func switched off), with
how each case is handed to the learner's function and what the call may use."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import torch

from grader.engine.cases import Case
from grader.engine.kinds import BadAnswer
from grader.units.switches import switched_off
from grader.units.unit13.support import loop_grads

# =====================================================================================================
# Exercise 13.per-sample-grads: generated models
# =====================================================================================================


def loop_drawing(ns: dict[str, Any]) -> str:
    """The per-sample gradients of a loop, one backward per sample, as a failing case shows them."""
    grads = loop_grads(ns["model"], ns["x"], ns["y"])
    lines = ["per-sample gradients from a loop, one backward per sample:"]
    for name, g in grads.items():
        lines.append(
            f"  {name}: shape {tuple(g.shape)}, sample 0 starts {[round(v, 4) for v in g[0].reshape(-1)[:3].tolist()]}"
        )
    return "\n".join(lines)


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
        return loop_drawing(self.fresh())

    def __repr__(self):
        return f"<{self.label}>"


def per_sample_cases() -> list[PerSampleCase]:
    rng = random.Random(1313)
    cases = [PerSampleCase(1, 2, 3, 1, 3), PerSampleCase(2, 3, 2, 2, 3)]
    for seed in range(3, 9):
        cases.append(
            PerSampleCase(
                seed,
                rng.randint(2, 5),
                rng.randint(2, 6),
                rng.randint(1, 3),
                rng.randint(3, 7),
                bias=rng.random() < 0.7,
            )
        )
    return sorted(cases, key=lambda c: c.size)


NO_BACKWARD = (
    "per-sample gradients come from torch.func here: vmap over grad, with the model made a function of its "
    "parameters by functional_call"
)
# torch.autograd.functional's tools would loop over backward passes too; they raise through the switch anyway
_FUNCTIONAL = tuple(f"torch.autograd.functional.{n}" for n in ("vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"))


class ModelCalls:
    """Counts the calls of a model (a forward pre-hook): vmap runs it once for a batch, a loop once a sample."""

    def __init__(self, model: torch.nn.Module):
        self.count = 0
        self.handle = model.register_forward_pre_hook(self._seen)

    def _seen(self, module, args):
        self.count += 1


def call_per_sample(fn, case, ns):
    """The learner's function with backward passes switched off (torch.func.grad's own still run), and the
    model's calls counted: a loop over the samples, even of torch.func.grad, is refused."""
    calls = ModelCalls(ns["model"])
    try:
        with switched_off(NO_BACKWARD, attributes=_FUNCTIONAL, backward=True):
            return fn(ns["model"], ns["x"], ns["y"])
    finally:
        calls.handle.remove()
        ns["model calls"] = calls.count


def per_sample_result(raw, case, ns) -> list[float]:
    """The learner's gradients (:func:`flatten_grads`), once the model is shown to have run fewer times than
    there are samples."""
    calls = ns.get("model calls", 0)
    if calls >= case.batch:
        raise BadAnswer(
            f"your function ran the model {calls} times for {case.batch} samples, once a sample: vmap runs it "
            "once for the whole batch (vmap(grad(loss), in_dims=(None, 0, 0)))"
        )
    return flatten_grads(raw, case, ns)


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
# Exercise 13.per-sample-by-hooks: deeper generated models, one backward pass
# =====================================================================================================

ACTS = {"tanh": "torch.nn.Tanh()", "relu": "torch.nn.ReLU()", "sigmoid": "torch.nn.Sigmoid()"}


@dataclass(eq=False)
class HooksCase(Case):
    """A seeded stack of Linear layers with activations between them, a batch (x, y), and the batch's loss
    ((model(x) - y) ** 2).sum(), whose gradient is the sum of the samples' own."""

    seed: int
    widths: tuple  # d_in, hidden..., d_out
    acts: tuple  # one activation name (ACTS) between each pair of Linears
    batch: int
    bias: tuple  # per Linear: has a bias
    output = "model"
    drawing_label = None  # drawing() shows the loop's per-sample gradients under "its graph"

    @property
    def size(self) -> int:
        return self.batch * 100 + sum(a * b for a, b in zip(self.widths, self.widths[1:]))

    @property
    def label(self) -> str:
        shape = "->".join(map(str, self.widths))
        return f"model #{self.seed} ({shape}, batch of {self.batch})"

    def layers(self) -> list[str]:
        out = []
        for k, (a, b) in enumerate(zip(self.widths, self.widths[1:])):
            out.append(f"torch.nn.Linear({a}, {b}{'' if self.bias[k] else ', bias=False'})")
            if k < len(self.acts):
                out.append(ACTS[self.acts[k]])
        return out

    @property
    def source(self) -> str:
        inner = ",\n".join("    " + layer for layer in self.layers())
        return (
            f"# weights, x and y drawn from torch.Generator().manual_seed({self.seed})\n"
            f"model = torch.nn.Sequential(\n{inner},\n)\n"
            f"x = torch.randn({self.batch}, {self.widths[0]})\ny = torch.randn({self.batch}, {self.widths[-1]})\n"
            "grads = per_sample_by_hooks(model, x, y)   # one backward of ((model(x) - y) ** 2).sum()"
        )

    def fresh(self) -> dict[str, Any]:
        gen = torch.Generator().manual_seed(self.seed)
        model = torch.nn.Sequential(*(eval(layer, {"torch": torch}) for layer in self.layers()))
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.7)
        x = torch.randn(self.batch, self.widths[0], generator=gen)
        y = torch.randn(self.batch, self.widths[-1], generator=gen)
        return {"model": model, "x": x, "y": y}

    def drawing(self, ns=None) -> str:
        return loop_drawing(self.fresh())

    def __repr__(self):
        return f"<{self.label}>"


def hooks_cases() -> list[HooksCase]:
    """Two, three and four Linears, every activation, with and without biases; batches of 2 to 6."""
    rng = random.Random(1314)
    cases = [
        HooksCase(21, (2, 3, 1), ("tanh",), 2, (True, True)),
        HooksCase(22, (3, 2, 2), ("relu",), 3, (False, True)),
    ]
    for seed in range(23, 33):
        depth = rng.choice([2, 3, 3, 4])
        widths = tuple(rng.randint(2, 5) for _ in range(depth + 1))
        acts = tuple(rng.choice(sorted(ACTS)) for _ in range(depth - 1))
        cases.append(HooksCase(seed, widths, acts, rng.randint(2, 6), tuple(rng.random() < 0.75 for _ in range(depth))))
    return sorted(cases, key=lambda c: (c.size, c.seed))


NO_FUNC = (
    "the per-sample gradients come from one backward pass of the batch's summed loss, with hooks that catch each "
    "Linear's input and the gradient of its output"
)
# torch.func's transforms where every call of them arrives (an alias made before the check included), and the
# batching that autograd.grad(..., is_grads_batched=True) uses
_TRANSFORMS = {
    "torch._functorch.apis.vmap_impl": "torch.func.vmap",
    "torch._functorch.eager_transforms.grad_impl": "torch.func.grad",
    "torch._functorch.eager_transforms.grad_and_value_impl": "torch.func.grad_and_value",
    "torch._functorch.eager_transforms._vjp_with_argnums": "torch.func.vjp",
    "torch._functorch.eager_transforms._jvp_with_argnums": "torch.func.jvp",
    "torch._vmap_internals._vmap": "torch.autograd.grad(..., is_grads_batched=True)",
    **{path: path for path in _FUNCTIONAL},
}


def call_by_hooks(fn, case, ns):
    """The learner's function with torch.func switched off and its backward passes counted."""
    with switched_off(NO_FUNC, attributes=_TRANSFORMS) as watch:
        try:
            return fn(ns["model"], ns["x"], ns["y"])
        finally:
            ns["backward passes"] = watch.passes


def by_hooks_result(raw, case, ns) -> list[float]:
    """The learner's gradients, once one backward pass is shown to have made them."""
    passes = ns.get("backward passes", 0)
    if passes != 1:
        raise BadAnswer(
            f"your function ran {passes} backward passes for a batch of {case.batch}: run one, of the whole batch's "
            "loss, and take each sample's share from what the hooks saw"
            if passes
            else "your function ran no backward pass: run one, of the whole batch's loss"
        )
    return flatten_grads(raw, case, ns)
