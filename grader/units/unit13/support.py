"""Unit 13's instruments: what a compiled function keeps for backward, how many graphs Dynamo made, and the
generated cases of the two exercises (small models for per-sample gradients, small programs whose eager and
compiled bills are compared).

torch._dynamo is imported inside the functions: importing it costs about a second and a half, and every unit
module is imported whenever the grader loads its questions.
"""
from __future__ import annotations

import contextlib
import logging
import random
from dataclasses import dataclass
from typing import Any

import torch

from grader import probes
from grader.engine.kinds import BadAnswer

# =====================================================================================================
# Compiling quietly and counting
# =====================================================================================================

@contextlib.contextmanager
def quiet_dynamo():
    """Graph-break warnings go to the 'torch._dynamo' logger (stderr, which nbval compares): hold them back."""
    loggers = [logging.getLogger(name) for name in ("torch._dynamo", "torch._inductor", "torch._functorch")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def counting_backend(graphs: list):
    """A torch.compile backend that records each graph Dynamo hands it and runs it as it is (no AOTAutograd)."""
    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return backend


def graphs_made(f, *args) -> int:
    """How many graphs torch.compile makes for one call of f (a graph break makes more than one)."""
    import torch._dynamo
    graphs: list = []
    torch._dynamo.reset()
    with quiet_dynamo():
        out = torch.compile(f, backend=counting_backend(graphs))(*args)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.sum().backward()
    torch._dynamo.reset()
    return len(graphs)


def compiled_forward_graph(f, *args):
    """Compile f with AOTAutograd (no code generation), call it once, and return the partitioned forward graph:
    its outputs are f's outputs followed by what it keeps for backward."""
    import torch._dynamo
    from functorch.compile import make_boxed_func, min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd

    kept: dict = {}

    def fw_compiler(gm, example_inputs):
        kept["graph"] = gm
        return make_boxed_func(gm.forward)

    backend = aot_autograd(fw_compiler=fw_compiler, partition_fn=min_cut_rematerialization_partition)
    torch._dynamo.reset()
    with quiet_dynamo():
        torch.compile(f, backend=backend, fullgraph=True)(*args)
    torch._dynamo.reset()
    return kept["graph"]


VIEW_OPS = {"t", "transpose", "view", "reshape", "permute", "expand", "detach", "alias", "_unsafe_view"}


def kept_by_compile(f, *args, names: dict[int, str] | None = None) -> list[str]:
    """The ops whose results the compiled forward keeps for backward, one name each: 'mm', 'sin', 'tanh'...,
    or 'input' for an input of f (or a view of one). A view kept (a transpose, a detach) is traced back to
    the op that made its storage."""
    gm = compiled_forward_graph(f, *args)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outputs = out_node.args[0]
    user_outputs = 1
    kept = []
    for node in outputs[user_outputs:]:
        while node.op == "call_function" and _op_name(node) in VIEW_OPS:
            node = node.args[0]
        kept.append("input" if node.op == "placeholder" else _op_name(node))
    return sorted(kept)


def _op_name(node) -> str:
    target = node.target
    name = getattr(target, "__name__", str(target))
    return name.split(".")[0]


def bill_pair(f, args) -> list[int]:
    """[eager bytes, compiled bytes]: what one call of f keeps for backward, by distinct storage (the course's
    bill), run eagerly and through torch.compile(backend='aot_eager')."""
    import torch._dynamo
    eager = probes.bill(lambda: f(*args)).total
    torch._dynamo.reset()
    with quiet_dynamo():
        compiled = torch.compile(f, backend="aot_eager")
        compiled(*args)                                   # the first call compiles
        kept = probes.bill(lambda: compiled(*args)).total
    torch._dynamo.reset()
    return [eager, kept]


# =====================================================================================================
# Exercise 13.per-sample-grads: generated models
# =====================================================================================================

@dataclass(eq=False)
class ModelCase:
    """A small seeded MLP, a batch (x, y), and the per-sample loss ((model(x_i) - y_i) ** 2).sum()."""

    seed: int
    d_in: int
    hidden: int
    d_out: int
    batch: int
    bias: bool = True
    output = "model"

    @property
    def size(self) -> int:
        return self.batch * 100 + self.d_in * self.hidden + self.hidden * self.d_out

    @property
    def label(self) -> str:
        return f"model #{self.seed} ({self.d_in}->{self.hidden}->{self.d_out}, batch of {self.batch})"

    @property
    def source(self) -> str:
        b = "" if self.bias else ", bias=False"
        return (f"# weights, x and y drawn from torch.Generator().manual_seed({self.seed})\n"
                f"model = torch.nn.Sequential(torch.nn.Linear({self.d_in}, {self.hidden}{b}), torch.nn.Tanh(),\n"
                f"                            torch.nn.Linear({self.hidden}, {self.d_out}{b}))\n"
                f"x = torch.randn({self.batch}, {self.d_in})\ny = torch.randn({self.batch}, {self.d_out})\n"
                "grads = per_sample_grads(model, x, y)   # {name: tensor of shape (batch, *param.shape)}")

    def fresh(self) -> dict[str, Any]:
        gen = torch.Generator().manual_seed(self.seed)
        model = torch.nn.Sequential(torch.nn.Linear(self.d_in, self.hidden, bias=self.bias), torch.nn.Tanh(),
                                    torch.nn.Linear(self.hidden, self.d_out, bias=self.bias))
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
            lines.append(f"  {name}: shape {tuple(g.shape)}, sample 0 starts {[round(v, 4) for v in g[0].reshape(-1)[:3].tolist()]}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<{self.label}>"


def sample_loss(model, xi, yi):
    return ((model(xi) - yi) ** 2).sum()


def loop_grads(model, x, y) -> dict[str, torch.Tensor]:
    """The plain way: one autograd.grad per sample, stacked."""
    params = dict(model.named_parameters())
    rows = []
    for i in range(x.shape[0]):
        loss = sample_loss(model, x[i], y[i])
        rows.append(torch.autograd.grad(loss, list(params.values())))
    return {name: torch.stack([r[k] for r in rows]) for k, name in enumerate(params)}


def model_cases() -> list[ModelCase]:
    rng = random.Random(1313)
    cases = [ModelCase(1, 2, 3, 1, 2), ModelCase(2, 3, 2, 2, 2)]
    for seed in range(3, 9):
        cases.append(ModelCase(seed, rng.randint(2, 5), rng.randint(2, 6), rng.randint(1, 3), rng.randint(2, 7),
                               bias=rng.random() < 0.7))
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
class ChainCase:
    """f(x, w1, w2): x @ w1, a few pointwise ops, maybe @ w2 and more ops, then .sum()."""

    seed: int
    steps: tuple
    rows: int
    width: int
    output = "f"

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
        return (f"def f(x, w1, w2):\n{inner}\n\n"
                f"# x, w1, w2 drawn in this order from torch.Generator().manual_seed({self.seed})\n"
                f"x = torch.randn({self.rows}, {self.width})\n"
                f"w1 = torch.randn({self.width}, {self.width}, requires_grad=True)\n"
                f"w2 = torch.randn({self.width}, {self.width}, requires_grad=True)\n"
                "kept_bytes(f, (x, w1, w2))   # [eager bytes, compiled bytes]")

    def fresh(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch}
        # a new code object each time: Dynamo's cache, keyed on code, never mixes two cases
        exec(compile("def f(x, w1, w2):\n" + "\n".join("    " + ln for ln in self.body),
                     f"<program {self.seed}>", "exec"), ns)
        gen = torch.Generator().manual_seed(self.seed)
        ns["args"] = (torch.randn(self.rows, self.width, generator=gen),
                      torch.randn(self.width, self.width, generator=gen).requires_grad_(),
                      torch.randn(self.width, self.width, generator=gen).requires_grad_())
        return ns

    def drawing(self, ns=None) -> str:
        ns = self.fresh()
        kept = kept_by_compile(ns["f"], *ns["args"])
        eager = probes.bill(lambda: ns["f"](*ns["args"]))
        return (f"eager keeps {len(eager.entries)} storages; the compiled forward keeps the results of: "
                f"{', '.join(kept)}")

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
