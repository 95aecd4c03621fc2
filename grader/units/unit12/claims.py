"""Unit 12's general rules, each checked on generated programs (see grader.engine.claims)."""

import random
import warnings

import torch

from grader.engine.claims import Trial, claim

# a unary op and an input where its backward returns a NaN, an inf or a finite number (float64)
_ENTRIES = (
    ("sqrt at -1", torch.sqrt, -1.0, "nan"),
    ("rsqrt at -1", torch.rsqrt, -1.0, "nan"),
    ("acos at 2", torch.acos, 2.0, "nan"),
    ("sqrt at 0", torch.sqrt, 0.0, "inf"),
    ("log at 0", torch.log, 0.0, "inf"),
    ("reciprocal at 0", torch.reciprocal, 0.0, "inf"),
    ("exp at 1", torch.exp, 1.0, "finite"),
    ("log at -1, a NaN in the forward only", torch.log, -1.0, "finite"),
)


def _run(op, bad: float, rng: random.Random, check_nan: bool = True) -> tuple[bool, str, torch.Tensor]:
    """(raised, the warnings' text, x.grad) for (op(x) * scale).sum().backward() under detect_anomaly."""
    values = [rng.uniform(0.5, 3.0) for _ in range(rng.randint(1, 4))]
    values.insert(rng.randint(0, len(values)), bad)
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    scale = rng.uniform(0.5, 2.0)
    raised = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly(check_nan=check_nan):
            try:
                (op(x) * scale).sum().backward()
            except RuntimeError:
                raised = True
    return raised, " ".join(str(w.message) for w in caught), x.grad


@claim(
    "12.anomaly-nan-only",
    sentence="It says nothing about inf",
    not_swept="about anomaly mode's checks on a whole backward pass",
)
def anomaly_nan_only():
    for seed in range(len(_ENTRIES) * 2):
        rng = random.Random(seed)
        label, op, bad, made = _ENTRIES[seed % len(_ENTRIES)]
        raised, _, _ = _run(op, bad, rng)
        yield Trial(f"seed {seed}: {label} ({made} in backward)", condition=True, holds=raised == (made == "nan"))


def _overwritten(rng: random.Random) -> tuple[bool, str]:
    """An in-place write on a tensor a node saved (exp keeps its output), under detect_anomaly(check_nan=False)."""
    a = torch.rand(rng.randint(1, 4), requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly(check_nan=False):
            b = a.exp()
            b.add_(rng.uniform(0.5, 2.0))
            try:
                (b * 2).sum().backward()
                raised = False
            except RuntimeError:
                raised = True
    return raised, " ".join(str(w.message) for w in caught)


@claim(
    "12.check-nan-false",
    sentence="`check_nan=False` keeps the forward tracebacks and drops the NaN check: a NaN passes silently again, "
    "but any error backward raises still comes with the forward line.",
    not_swept="about anomaly mode's checks on a whole backward pass",
)
def check_nan_false():
    for seed in range(8):
        rng = random.Random(seed)
        if seed % 2:
            raised, said = _overwritten(rng)
            yield Trial(
                f"seed {seed}: an in-place write on exp's output", True, raised and "Traceback of forward" in said
            )
        else:
            label, op, bad, _ = _ENTRIES[(seed // 2) % 3]  # the three that make a NaN
            raised, _, grad = _run(op, bad, rng, check_nan=False)
            yield Trial(f"seed {seed}: {label}", True, not raised and bool(torch.isnan(grad).any()))


_MODULES = (
    ("Linear(3, 4)", lambda: torch.nn.Linear(3, 4)),
    ("Sequential(Linear, Tanh)", lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh())),
    ("Linear(3, 2, bias=False)", lambda: torch.nn.Linear(3, 2, bias=False)),
    ("Linear-ReLU-Linear", lambda: torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))),
)


@claim(
    "12.data-input-grad-none",
    sentence="A module whose input is data reports `grad_input` as `(None,)`",
    holds_when="the module's input does not require grad (a batch of data); an input that requires grad (the "
    "output of an earlier layer) gets its gradient in grad_input",
    not_swept="about a module's backward hook",
)
def data_input_grad_none():
    for seed in range(8):
        rng = random.Random(seed)
        label, make = _MODULES[seed % len(_MODULES)]
        module = make()  # every one has parameters, so backward runs through it either way
        data = seed < len(_MODULES)
        x = torch.randn(rng.randint(1, 4), 3)
        if not data:
            x = (x * 1).requires_grad_()
        seen: list = []
        handle = module.register_full_backward_hook(lambda m, gin, gout, seen=seen: seen.append(gin))
        module(x).sum().backward()
        handle.remove()
        holds = len(seen) == 1 and seen[0] == (None,)
        yield Trial(f"seed {seed}: {label} on {'data' if data else 'a tensor that requires grad'}", data, holds)
