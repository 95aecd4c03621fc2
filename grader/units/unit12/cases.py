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
import re
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


class HeadStop(nn.Module):
    """The head's wrapper: a Linear to one output that reads its input detached."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, 1)

    def forward(self, x):
        return self.lin(x.detach())


class HeadGain(nn.Module):
    """The head's wrapper: a Linear to one output, scaled by a learned gain squashed once."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, 1)
        self.raw = nn.Parameter(torch.tensor(0.5))
        self.gain = None

    def forward(self, x):
        if self.gain is None:
            self.gain = torch.sigmoid(self.raw) * 2
        return self.lin(x) * self.gain


class EncNorm(nn.Module):
    """The encoder's wrapper: a Linear whose output is divided by its weight's norm, taken once."""

    def __init__(self, inputs, width):
        super().__init__()
        self.lin = nn.Linear(inputs, width)
        self.norm = None

    def forward(self, x):
        if self.norm is None:
            self.norm = self.lin.weight.norm()
        return self.lin(x) / self.norm


# kind -> (class, takes a width, where it may sit: "act" after an activation, "lin" right after a Linear)
PLANTS = {
    NONFINITE: [(RootGate, False, "lin"), (LogGate, False, "relu"), (InvGate, False, "relu")],
    LEAK: [(Recorder, False, "any"), (Tally, False, "any")],
    FROZEN: [(Probe, True, "any"), (StopInput, True, "any"), (NoGradMix, True, "any"), (HeadStop, True, "head")],
    STALE: [
        (CachedShift, True, "any"),
        (CachedScale, True, "any"),
        (Smoother, True, "any"),
        (HeadGain, True, "head"),
        (EncNorm, True, "enc"),
    ],
    NO_FAULT: [
        (SafeRoot, False, "lin"),
        (DetachedSmoother, True, "any"),
        (CopyRecorder, False, "any"),
        (LoggedMix, True, "any"),
        (FreshShift, True, "any"),
        (ItemTally, False, "any"),
    ],
}
# The same class with no fault, by where it sits or what is frozen on purpose (issue 45: the fault always lived in
# the one module that was not enc, act or head, and a lookup on its class name passed every case):
# "first": before the encoder, on the input, which needs no gradient; "sigmoid": after a Sigmoid, whose output is
# positive; "freeze": its parameters frozen on purpose (requires_grad_(False)), which is no fault.
TWINS = {
    RootGate: "sigmoid",
    LogGate: "sigmoid",
    InvGate: "sigmoid",
    Recorder: "first",
    Tally: "first",
    Smoother: "first",
    StopInput: "first",
    CachedShift: "freeze",
    CachedScale: "freeze",
    NoGradMix: "freeze",
    HeadGain: "freeze",
    EncNorm: "freeze",
}
SPECIAL_NAMES = ("mid", "block", "extra", "layer", "stage", "adapter", "norm", "gate")
CLASS_NAMES = (
    "Block",
    "Stage",
    "Adapter",
    "Mixer",
    "Unit",
    "Cell",
    "Filter",
    "Module7",
    "Part",
    "Step",
    "Core",
    "Piece",
)


def mse(out, y):
    return ((out - y) ** 2).mean()


def mae(out, y):
    return (out - y).abs().mean()


class Model(nn.Sequential):
    """nn.Sequential with named children, flattening the last output to one number per row."""

    def forward(self, x):
        return super().forward(x).squeeze(-1)


def class_source(cls: type, name: str) -> str:
    """``cls``'s source under the drawn ``name``, without its docstring: what a case shows and runs, so that
    neither the class's name nor its description tells which plant it is."""
    text = inspect.getsource(cls).rstrip()
    text = re.sub(rf"^class {cls.__name__}\(", f"class {name}(", text)
    return re.sub(r'\n    """[^"]*"""\n', "\n", text, count=1)


@dataclass
class SetupCase(Case):
    """One generated training setup. ``planted`` and the plant's class stay here, never in what fresh() returns.

    ``modules`` lists (attribute name, plant class or None, constructor text) in order; a plant's class is shown
    and built under its drawn name (``names``); ``frozen`` lists the modules frozen on purpose."""

    seed: int
    planted: str
    cls: type
    special: str
    modules: list
    names: dict
    frozen: list
    loss_name: str
    rows: int
    inputs: int
    output: str = "model"

    @property
    def size(self) -> int:
        return len(self.modules) * 100 + self.inputs * 10 + self.rows

    @property
    def label(self) -> str:
        return f"setup #{self.seed} ({len(self.modules)} modules, {self.names.get(self.cls, 'no plant')} as {self.special!r})"

    def _class_texts(self) -> list[str]:
        seen, out = [], []
        for _, cls, _code in self.modules:
            if cls is not None and cls not in seen:
                seen.append(cls)
                out.append(class_source(cls, self.names[cls]))
        return out

    @property
    def source(self) -> str:
        lines = []
        for text in self._class_texts():
            lines += [text, ""]
        lines += [f"torch.manual_seed({self.seed})", "model = Model(OrderedDict(["]
        lines += [f"    ({name!r}, {code})," for name, _, code in self.modules]
        lines.append("]))")
        lines += [f"model.{m}.requires_grad_(False)    # frozen on purpose" for m in self.frozen]
        lines += [
            f"loss_fn = {self.loss_name}",
            f"batches = [(torch.randn({self.rows}, {self.inputs}), torch.randn({self.rows})) for _ in range({STEPS})]",
            "diagnose(model, loss_fn, batches)",
        ]
        return "\n".join(lines)

    def fresh(self) -> dict:
        ns: dict = {"nn": nn, "torch": torch, "OrderedDict": OrderedDict, "Model": Model}
        for text in self._class_texts():
            exec(compile(text, f"<setup #{self.seed}>", "exec"), ns)
        torch.manual_seed(self.seed)
        model = Model(OrderedDict((name, eval(code, ns)) for name, _, code in self.modules))
        for m in self.frozen:
            model.get_submodule(m).requires_grad_(False)
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
    HeadStop,
    HeadGain,
}
_ACTS = {"relu": "nn.ReLU()", "tanh": "nn.Tanh()", "sigmoid": "nn.Sigmoid()"}


# --- generation ---------------------------------------------------------------------------------


def _plant_code(cls: type, names: dict, width: int) -> str:
    return f"{names[cls]}({width if cls in _TAKES_WIDTH else ''})"


def generate_setup_case(
    seed: int, kind: str, cls: type | None = None, variant: int | None = None, twin: bool = False
) -> SetupCase:
    """A setup planting ``cls`` (drawn from ``kind``'s plants), or with ``twin`` the same class where it does
    no harm (TWINS), and sometimes a healthy look-alike beside it; every name is drawn."""
    rng = random.Random(seed)
    options = [p for p in PLANTS[kind] if cls is None or p[0] is cls]
    cls, _, place = rng.choice(options)
    width, inputs = rng.choice([3, 4, 5]), rng.choice([2, 3])
    pool = list(CLASS_NAMES)
    rng.shuffle(pool)
    names: dict = {cls: pool.pop()}
    special = rng.choice(SPECIAL_NAMES)
    act = rng.choice(["relu", "tanh"])
    how = TWINS.get(cls) if twin else None
    if place == "relu":
        act = "relu"
    elif place == "lin" and not twin:
        act = "tanh" if (variant if variant is not None else rng.randrange(2)) % 2 else act
    if how == "sigmoid":
        act = "sigmoid"
    enc: tuple = ("enc", None, f"nn.Linear({inputs}, {width})")
    head: tuple = ("head", None, f"nn.Linear({width}, 1)")
    frozen: list[str] = []
    if place == "enc":
        enc, special = ("enc", cls, f"{names[cls]}({inputs}, {width})"), "enc"
    elif place == "head":
        head, special = ("head", cls, _plant_code(cls, names, width)), "head"
    body = [("act", None, _ACTS[act])]
    if place not in ("enc", "head"):
        plant = (special, cls, _plant_code(cls, names, inputs if how == "first" else width))
        if how == "first":
            layers = [plant, enc] + body
        elif (
            how == "sigmoid" or (place == "lin" and (variant or 0) % 2 == 0) or (place == "any" and rng.random() < 0.5)
        ):
            layers = [enc, plant] + body if how != "sigmoid" else [enc] + body + [plant]
        else:
            layers = [enc] + body + [plant]
    else:
        layers = [enc] + body
    layers.append(head)
    if how == "freeze":
        frozen = [special]
    if rng.random() < 0.5:  # a second module, healthy, elsewhere: which one holds the fault is not its place
        look = rng.choice([c for c, _, where in PLANTS[NO_FAULT] if where == "any"])
        names[look] = pool.pop()
        other = rng.choice([n for n in SPECIAL_NAMES if n != special])
        at = rng.randrange(1, len(layers))
        layers.insert(at, (other, look, _plant_code(look, names, width)))
    return SetupCase(
        seed=seed,
        planted=NO_FAULT if twin else kind,
        cls=cls,
        special=special,
        modules=layers,
        names=names,
        frozen=frozen,
        loss_name=rng.choice(["mse", "mae"]),
        rows=rng.choice([4, 6]),
        inputs=inputs,
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


def setup_cases(per_kind: int = 4, decoys: int = 6, twins: int = 12, seed: int = 1212) -> list[SetupCase]:
    """``per_kind`` setups for each fault (the classes of each kind in turn, at least one each), ``decoys``
    healthy look-alikes, and ``twins``: faulty classes where they do no harm; smallest first. A setup is kept
    only if torch's record shows what it was made for."""
    out, seen = [], set()
    attempt = 0
    plan = []
    for kind in VERDICTS:
        classes = [c for c, _, _ in PLANTS[kind]]
        count = max(per_kind, len(classes)) if kind != NO_FAULT else decoys
        plan += [(kind, classes[i % len(classes)], i // len(classes), False) for i in range(count)]
    twinned = list(TWINS)
    plan += [(next(k for k, ps in PLANTS.items() if any(p[0] is c for p in ps)), c, 0, True) for c in twinned[:twins]]
    for kind, cls, variant, twin in plan:
        while True:
            attempt += 1
            case = generate_setup_case(seed * 1000 + attempt, kind, cls, variant, twin)
            key = case.source.split("torch.manual_seed")[1]
            if key not in seen and _shows(case):
                break
        seen.add(key)
        out.append(case)
    return sorted(out, key=lambda c: (c.size, c.seed))
