"""Unit 08's exercise cases: seeded sequences (the unit's loop, then generated linear and tanh recurrences) with a
chunk length k, and how the learner's gradients are read.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from grader.engine import torch_state
from grader.engine.cases import Case
from grader.engine.kinds import BadAnswer, Number, short, type_words
from grader.units.unit08.support import STEPS, Recurrence, chunked_grads, chunks

# --- the exercise's cases ---------------------------------------------------------------------------


@dataclass
class TBPTTCase(Case):
    """One seeded sequence and a chunk length k; ``fresh()`` builds it anew (fresh leaves, no .grad)."""

    seed: int
    lines: list[str]
    steps: int
    width: int
    k: int
    names: list[str]
    shapes: list[tuple]
    output: str = "seq"
    note: str = ""
    features: set = field(default_factory=set)
    drawing_label = None  # a verdict heads drawing() "its graph"

    @property
    def size(self) -> int:
        return self.steps * self.width

    @property
    def label(self) -> str:
        steps = f"{self.steps} step" + ("s" if self.steps > 1 else "")
        return f"case #{self.seed} ({steps}, state of {self.width}, k = {self.k})"

    @property
    def source(self) -> str:
        head = [f"# {self.note}"] if self.note else []
        return "\n".join(head + self.lines)

    def fresh(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch, "Recurrence": Recurrence}
        with torch_state.clean_room():
            exec(compile("\n".join(self.lines), f"<tbptt case #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        return ns

    def answer(self, k: int | None = None) -> list[float]:
        ns = self.fresh()
        with torch_state.clean_room():
            grads = chunked_grads(ns["seq"], self.k if k is None else k)
        return [x for g in grads for x in g.reshape(-1).tolist()]

    def drawing(self, ns=None) -> str:
        parts = chunks(self.steps, self.k)
        spans = " | ".join(f"{c.start + 1}-{c.stop}" if len(c) > 1 else f"{c.start + 1}" for c in parts)
        cuts = [str(c.start + 1) for c in parts[1:]]
        lines = [
            f"{self.steps} step{'s' if self.steps > 1 else ''}, k = {self.k}: chunks of steps "
            + spans
            + (
                f"; the state enters step{'s' if len(cuts) > 1 else ''} {', '.join(cuts)} detached"
                if cuts
                else "; one chunk, nothing detached"
            ),
            f"gradients in the order {', '.join(self.names)}, flattened",
            "torch's answer on this sequence for the two extremes:",
        ]
        number = Number()
        for k, words in ((1, "detach every step"), (self.steps, "full history")):
            lines.append(f"  k = {k} ({words}): {number.show(tuple(self.answer(k)))}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<{self.label}>"


def _values(rng: random.Random, n: int, low: float = -1.5, high: float = 1.5) -> str:
    return "[" + ", ".join(f"{rng.uniform(low, high):.1f}" for _ in range(n)) + "]"


def _tensor(rng: random.Random, width: int, grad: bool = False, low: float = -1.5, high: float = 1.5) -> str:
    text = f"{rng.uniform(low, high):.1f}" if width == 1 else _values(rng, width, low, high)
    return f"torch.tensor({text}" + (", requires_grad=True)" if grad else ")")


def _the_loop_case(k: int) -> TBPTTCase:
    lines = [
        "w = torch.tensor(0.9, requires_grad=True)",
        "seq = Recurrence(params={'w': w}, h0=torch.tensor(1.0),",
        "                 inputs=[torch.tensor(0.1) for _ in range(5)],",
        "                 step=lambda h, x: h * w + x,",
        "                 loss=lambda h, t: h ** 2)",
        f"k = {k}",
    ]
    return TBPTTCase(
        seed=0,
        lines=lines,
        steps=5,
        width=1,
        k=k,
        names=["w"],
        shapes=[()],
        note="the unit's loop",
        features={"the loop"},
    )


def generate_case(seed: int) -> TBPTTCase:
    rng = random.Random(seed)
    steps = rng.randint(1, 8)
    width = rng.choice([1, 1, 2, 3])
    k = rng.choice(sorted({1, steps, rng.randint(1, steps), rng.randint(1, steps)}))
    style = "linear" if width == 1 and rng.random() < 0.4 else "tanh"
    lines = []
    if style == "linear":
        lines.append(f"w = {_tensor(rng, 1, True, 0.5, 1.3)}")
        lines.append(f"xs = [{', '.join(_tensor(rng, 1) for _ in range(steps))}]")
        params, names, shapes = "{'w': w}", ["w"], [()]
        step, loss = "h * w + x", "h ** 2"
        h0 = _tensor(rng, 1, False, 0.5, 1.5)
    elif width == 1:
        lines.append(f"w = {_tensor(rng, 1, True)}")
        lines.append(f"b = {_tensor(rng, 1, True, -0.5, 0.5)}")
        lines.append(f"xs = [{', '.join(_tensor(rng, 1) for _ in range(steps))}]")
        lines.append(f"ys = [{', '.join(_tensor(rng, 1, False, -0.9, 0.9) for _ in range(steps))}]")
        params, names, shapes = "{'w': w, 'b': b}", ["w", "b"], [(), ()]
        step, loss = "torch.tanh(w * h + x + b)", "(h - ys[t]) ** 2"
        h0 = _tensor(rng, 1)
    else:
        rows = ", ".join(_values(rng, width) for _ in range(width))
        lines.append(f"W = torch.tensor([{rows}], requires_grad=True)")
        lines.append(f"b = {_tensor(rng, width, True, -0.5, 0.5)}")
        lines.append(f"xs = [{', '.join(_tensor(rng, width) for _ in range(steps))}]")
        lines.append(f"ys = [{', '.join(_tensor(rng, width, False, -0.9, 0.9) for _ in range(steps))}]")
        params, names, shapes = "{'W': W, 'b': b}", ["W", "b"], [(width, width), (width,)]
        step, loss = "torch.tanh(h @ W + x + b)", "((h - ys[t]) ** 2).sum()"
        h0 = _tensor(rng, width)
    lines += [
        f"seq = Recurrence(params={params}, h0={h0}, inputs=xs,",
        f"                 step=lambda h, x: {step},",
        f"                 loss=lambda h, t: {loss})",
        f"k = {k}",
    ]
    return TBPTTCase(
        seed=seed, lines=lines, steps=steps, width=width, k=k, names=names, shapes=shapes, features={style}
    )


def tbptt_cases(count: int = 30, seed: int = 808) -> list[TBPTTCase]:
    """The unit's loop with k = 1, 2 and 5, then ``count`` generated sequences; smallest first."""
    found = [_the_loop_case(k) for k in (1, STEPS, 2)]
    seen = set()
    i = 0
    while len(found) < count + 3 and i < count * 20:
        case = generate_case(seed * 1000 + i)
        i += 1
        if case.source in seen:
            continue
        seen.add(case.source)
        found.append(case)
    found.sort(key=lambda c: (c.size, c.steps, c.seed != 0, c.seed, c.k))
    return found


def call_tbptt(fn, case, ns):
    return fn(ns["seq"], ns["k"])


def flatten_tbptt_grads(raw, case: TBPTTCase, ns) -> list[float]:
    """The learner's gradients (a dict by name, a list in params order, or one tensor) as one flat list."""
    names = case.names
    wanted = f"a dict {{name: gradient}} with one entry per parameter ({', '.join(names)})"
    if isinstance(raw, Mapping):
        missing = [n for n in names if n not in raw]
        if missing:
            raise BadAnswer(f"expected {wanted}; it has no entry for {', '.join(map(repr, missing))}")
        values = [raw[n] for n in names]
    elif isinstance(raw, (list, tuple)):
        if len(raw) != len(names):
            raise BadAnswer(
                f"expected {wanted}, or a list of {len(names)} gradients in that order; got a list of {len(raw)}"
            )
        values = list(raw)
    elif isinstance(raw, torch.Tensor) and len(names) == 1:
        values = [raw]
    else:
        raise BadAnswer(f"expected {wanted}, got {type_words(raw)}")
    out: list[float] = []
    params = getattr(ns.get("seq"), "params", None)
    params = params if isinstance(params, Mapping) else {}
    for name, shape, value in zip(names, case.shapes, values):
        if value is not None and value is params.get(name):
            raise BadAnswer(f"that is the parameter {name} itself; return its gradient, {name}.grad")
        if value is None:
            raise BadAnswer(f"the gradient for {name} is None: no backward reached it")
        if not isinstance(value, torch.Tensor):
            if isinstance(value, bool) or not isinstance(value, (int, float, list, tuple)):
                raise BadAnswer(f"the gradient for {name} should be a tensor, got {type_words(value)}")
            try:
                value = torch.as_tensor(value, dtype=torch.float32)
            except Exception:
                raise BadAnswer(f"the gradient for {name}, {short(value)}, cannot be read as numbers") from None
        if tuple(value.shape) != tuple(shape):
            raise BadAnswer(f"the gradient for {name} has shape {tuple(value.shape)}; {name} has shape {tuple(shape)}")
        out.extend(float(x) for x in value.detach().reshape(-1).tolist())
    return out
