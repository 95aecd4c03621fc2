"""Exercise 12.diagnose's generated cases: small training setups with one planted fault among four kinds, or none.

Each setup is a model of four named modules (an encoder Linear, an activation, one special module, a head
Linear), a loss and a few batches. The special module is one of the classes below, planted for its fault
(:data:`PLANTS`) or a healthy look-alike; the planted label stays on the :class:`SetupCase` and never reaches
what the learner's function is given. A setup is kept only if :func:`~grader.units.unit12.support.find_fault`,
reading torch's record, finds its fault.
"""

from __future__ import annotations

import inspect
import random
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch import nn

from grader.engine import torch_state
from grader.engine.cases import Case
from grader.units.unit12.support import FROZEN, LEAK, NO_FAULT, NONFINITE, STALE, VERDICTS, find_fault, readings

STEPS = 3


class RootGate(nn.Module):
    """sqrt where positive, 0 elsewhere."""

    def forward(self, x):
        return torch.where(x > 0, x.sqrt(), 0.0)


class LogGate(nn.Module):
    """log where positive, 0 elsewhere."""

    def forward(self, x):
        return torch.where(x > 0, (x + 1).log() + x.log() * 0.1, 0.0)


class InvGate(nn.Module):
    """1/x where nonzero, 0 elsewhere."""

    def forward(self, x):
        return torch.where(x != 0, 1 / (1 + x.abs()) + 0.1 / x, 0.0)


class SafeRoot(nn.Module):
    """sqrt where positive, 0 elsewhere; the input masked first."""

    def forward(self, x):
        safe = torch.where(x > 0, x, 1.0)
        return torch.where(x > 0, safe.sqrt(), 0.0)


class Smoother(nn.Module):
    """Subtracts a running mean of its inputs."""

    def __init__(self, width):
        super().__init__()
        self.avg = torch.zeros(width)

    def forward(self, x):
        self.avg = 0.9 * self.avg + 0.1 * x.mean(0)
        return x - self.avg


class DetachedSmoother(nn.Module):
    """Subtracts a running mean of its inputs."""

    def __init__(self, width):
        super().__init__()
        self.avg = torch.zeros(width)

    def forward(self, x):
        self.avg = (0.9 * self.avg + 0.1 * x.mean(0)).detach()
        return x - self.avg


class Recorder(nn.Module):
    """Keeps what passed through, for a plot later."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(x)
        return x


class Tally(nn.Module):
    """Keeps a running total of how active its input was, for a log."""

    def __init__(self):
        super().__init__()
        self.total = 0.0

    def forward(self, x):
        self.total = self.total + x.abs().mean()
        return x


class ItemTally(nn.Module):
    """Keeps a running total of how active its input was, for a log."""

    def __init__(self):
        super().__init__()
        self.total = 0.0

    def forward(self, x):
        self.total = self.total + x.abs().mean().item()
        return x


class CopyRecorder(nn.Module):
    """Keeps what passed through, for a plot later."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(x.detach())
        return x


class Probe(nn.Module):
    """A side branch whose output is returned as is."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x).detach()


class StopInput(nn.Module):
    """A linear layer that does not send gradients back to its input."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x.detach())


class NoGradMix(nn.Module):
    """Mixes in a linear map of its input, computed without recording."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        with torch.no_grad():
            mixed = self.lin(x)
        return x + mixed


class LoggedMix(nn.Module):
    """Mixes in a linear map of its input, and keeps its norm for a log."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.norms = []

    def forward(self, x):
        out = x + self.lin(x)
        with torch.no_grad():
            self.norms.append(out.norm())
        return out


class CachedShift(nn.Module):
    """Adds a learned shift, computed from a fixed seed vector the first time."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.register_buffer("seed_vec", torch.linspace(-1, 1, width))
        self.shift = None

    def forward(self, x):
        if self.shift is None:
            self.shift = torch.tanh(self.lin(self.seed_vec))
        return x + self.shift


class FreshShift(nn.Module):
    """Adds a learned shift, computed from a fixed seed vector."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.register_buffer("seed_vec", torch.linspace(-1, 1, width))

    def forward(self, x):
        shift = torch.tanh(self.lin(self.seed_vec))
        return x + shift


class CachedScale(nn.Module):
    """Scales by a learned factor, squashed once and reused."""

    def __init__(self, width):
        super().__init__()
        self.raw = nn.Parameter(torch.linspace(0.5, 1.5, width))
        self.scale = None

    def forward(self, x):
        if self.scale is None:
            self.scale = torch.sigmoid(self.raw) * 2
        return x * self.scale


# kind -> (class, takes a width, where it may sit: "act" after an activation, "lin" right after a Linear)
PLANTS = {
    NONFINITE: [(RootGate, False, "lin"), (LogGate, False, "relu"), (InvGate, False, "relu")],
    LEAK: [(Recorder, False, "any"), (Tally, False, "any")],
    FROZEN: [(Probe, True, "any"), (StopInput, True, "any"), (NoGradMix, True, "any")],
    STALE: [(CachedShift, True, "any"), (CachedScale, True, "any"), (Smoother, True, "any")],
    NO_FAULT: [
        (SafeRoot, False, "lin"),
        (DetachedSmoother, True, "any"),
        (CopyRecorder, False, "any"),
        (LoggedMix, True, "any"),
        (FreshShift, True, "any"),
        (ItemTally, False, "any"),
    ],
}
SPECIAL_NAMES = ("mid", "block", "extra", "layer")


def mse(out, y):
    return ((out - y) ** 2).mean()


def mae(out, y):
    return (out - y).abs().mean()


class Model(nn.Sequential):
    """nn.Sequential with named children, flattening the last output to one number per row."""

    def forward(self, x):
        return super().forward(x).squeeze(-1)


@dataclass
class SetupCase(Case):
    """One generated training setup. ``planted`` and ``where`` stay here, never in what fresh() returns."""

    seed: int
    planted: str
    cls: type
    width: int
    inputs: int
    act: str
    after: str  # "lin" (right after the first Linear) or "act" (after the activation)
    special: str
    loss_name: str
    rows: int
    output: str = "model"

    @property
    def size(self) -> int:
        return len(self.layer_code())

    @property
    def label(self) -> str:
        return f"setup #{self.seed} ({self.cls.__name__} as {self.special!r})"

    def layer_code(self) -> list[str]:
        w = self.width
        arg = str(w) if self.cls in _TAKES_WIDTH else ""
        act = f"nn.{'ReLU' if self.act == 'relu' else 'Tanh'}()"
        layers = [("enc", f"nn.Linear({self.inputs}, {w})")]
        special = (self.special, f"{self.cls.__name__}({arg})")
        if self.after == "lin":
            layers += [special, ("act", act)]
        else:
            layers += [("act", act), special]
        layers.append(("head", f"nn.Linear({w}, 1)"))
        return layers

    @property
    def source(self) -> str:
        lines = [
            inspect.getsource(self.cls).rstrip(),
            "",
            f"torch.manual_seed({self.seed})",
            "model = Model(OrderedDict([",
        ]
        lines += [f"    ({name!r}, {code})," for name, code in self.layer_code()]
        lines += [
            "]))",
            f"loss_fn = {self.loss_name}",
            f"batches = [(torch.randn({self.rows}, {self.inputs}), torch.randn({self.rows})) for _ in range({STEPS})]",
            "diagnose(model, loss_fn, batches)",
        ]
        return "\n".join(lines)

    def fresh(self) -> dict:
        torch.manual_seed(self.seed)
        ns = {"nn": nn, "torch": torch, "OrderedDict": OrderedDict, "Model": Model, self.cls.__name__: self.cls}
        layers = OrderedDict((name, eval(code, ns)) for name, code in self.layer_code())
        model = Model(layers)
        batches = [(torch.randn(self.rows, self.inputs), torch.randn(self.rows)) for _ in range(STEPS)]
        return {"model": model, "loss_fn": {"mse": mse, "mae": mae}[self.loss_name], "batches": batches}

    def drawing(self, ns=None) -> str:
        try:
            with torch_state.clean_room():
                return readings(**self.fresh())
        except Exception as exc:  # a drawing never stops a verdict
            return f"(the readings could not be taken: {type(exc).__name__})"

    drawing_label = "the checklist's readings"

    def __repr__(self):
        return f"<{self.label}>"


_TAKES_WIDTH = {
    Smoother,
    DetachedSmoother,
    Probe,
    StopInput,
    NoGradMix,
    LoggedMix,
    CachedShift,
    FreshShift,
    CachedScale,
}


# --- generation ---------------------------------------------------------------------------------


def generate_setup_case(seed: int, kind: str, cls: type | None = None, variant: int | None = None) -> SetupCase:
    rng = random.Random(seed)
    options = [p for p in PLANTS[kind] if cls is None or p[0] is cls]
    cls, _, place = rng.choice(options)
    act = rng.choice(["relu", "tanh"])
    if place == "relu":
        act, after = "relu", "act"
    elif place == "lin":
        after = "lin" if (rng.random() < 0.5 if variant is None else variant % 2 == 0) else "act"
        if after == "act":
            act = "tanh"
    else:
        after = rng.choice(["lin", "act"])
    return SetupCase(
        seed=seed,
        planted=kind,
        cls=cls,
        width=rng.choice([3, 4, 5]),
        inputs=rng.choice([2, 3]),
        act=act,
        after=after,
        special=rng.choice(SPECIAL_NAMES),
        loss_name=rng.choice(["mse", "mae"]),
        rows=rng.choice([4, 6]),
    )


def _shows(case: SetupCase) -> bool:
    """The planted fault really shows (and a decoy really trains): checked by the grader's own diagnosis."""
    with torch_state.clean_room():
        found = find_fault(**case.fresh())
    if found.kind != case.planted:
        return False
    if case.planted == FROZEN:
        return bool(found.where)
    return case.planted == NO_FAULT or case.special in found.where


def setup_cases(per_kind: int = 4, decoys: int = 6, seed: int = 1212) -> list[SetupCase]:
    """``per_kind`` setups for each fault and ``decoys`` healthy ones (the module classes of each kind in
    turn), smallest first; a setup is kept only if its fault shows in torch's record."""
    out, seen = [], set()
    attempt = 0
    for kind in VERDICTS:
        classes = [c for c, _, _ in PLANTS[kind]]
        for i in range(per_kind if kind != NO_FAULT else decoys):
            while True:
                attempt += 1
                case = generate_setup_case(seed * 1000 + attempt, kind, classes[i % len(classes)], i // len(classes))
                key = (case.cls, case.width, case.inputs, case.act, case.after)
                if key not in seen and _shows(case):
                    break
            seen.add(key)
            out.append(case)
    return sorted(out, key=lambda c: (c.width, c.inputs, c.seed))
