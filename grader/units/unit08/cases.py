"""Unit 08's exercise cases: seeded sequences (the unit's loop, then generated linear, tanh and LSTM-like
recurrences, whose state is a pair (h, c)) with a window length k, and how the learner's gradients are read.
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
from grader.units.unit08.support import STEPS, Recurrence, chunked_grads, window_grads

# --- the exercise's cases ---------------------------------------------------------------------------


@dataclass
class WindowCase(Case):
    """One seeded sequence and a window length k; ``fresh()`` builds it anew (fresh leaves, no .grad)."""

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
            exec(compile("\n".join(self.lines), f"<window case #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        return ns

    def answer(self, k: int | None = None, chunked: bool = False) -> list[float]:
        """torch's gradients, flattened: the window of ``k`` (this case's by default), or the chunks of k."""
        ns = self.fresh()
        with torch_state.clean_room():
            rule = chunked_grads if chunked else window_grads
            grads = rule(ns["seq"], self.k if k is None else k)
        return [x for g in grads for x in g.reshape(-1).tolist()]

    def drawing(self, ns=None) -> str:
        spans = [(max(0, t - self.k + 1) + 1, t + 1) for t in range(self.steps)]
        windows = [str(a) if a == b else f"{a}-{b}" for a, b in spans]
        lines = [
            f"{self.steps} step{'s' if self.steps > 1 else ''}, k = {self.k}: the loss of each step through the steps "
            + ", ".join(windows),
            f"gradients in the order {', '.join(self.names)}, flattened",
            "torch's answers on this sequence, to compare with yours:",
        ]
        number = Number()
        for k, words, chunked in (
            (self.k, f"chunks of k = {self.k}, as in section 6", True),
            (1, "k = 1 (each loss through its own step)", False),
            (self.steps, "the full history", False),
        ):
            lines.append(f"  {words}: {number.show(tuple(self.answer(k, chunked)))}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<{self.label}>"


def _values(rng: random.Random, n: int, low: float = -1.5, high: float = 1.5) -> str:
    return "[" + ", ".join(f"{rng.uniform(low, high):.1f}" for _ in range(n)) + "]"


def _tensor(rng: random.Random, width: int, grad: bool = False, low: float = -1.5, high: float = 1.5) -> str:
    text = f"{rng.uniform(low, high):.1f}" if width == 1 else _values(rng, width, low, high)
    return f"torch.tensor({text}" + (", requires_grad=True)" if grad else ")")


def _the_loop_case(k: int) -> WindowCase:
    lines = [
        "w = torch.tensor(0.9, requires_grad=True)",
        "seq = Recurrence(params={'w': w}, h0=torch.tensor(1.0),",
        "                 inputs=[torch.tensor(0.1) for _ in range(5)],",
        "                 step=lambda h, x: h * w + x,",
        "                 loss=lambda h, t: h ** 2)",
        f"k = {k}",
    ]
    return WindowCase(
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


def generate_case(seed: int, style: str | None = None) -> WindowCase:
    rng = random.Random(seed)
    steps = rng.randint(2, 8)
    width = rng.choice([1, 1, 2, 3])
    # mostly 1 < k < steps, where the window and the chunks differ; k = 1 and k = steps (the full history) too
    k = rng.randint(2, steps - 1) if steps >= 3 and rng.random() < 0.75 else rng.choice([1, steps])
    style = style or ("linear" if width == 1 and rng.random() < 0.4 else "tanh")
    lines = []
    if style == "lstm":
        width = max(width, 2)
        rows = ", ".join(_values(rng, width) for _ in range(width))
        lines.append(f"W = torch.tensor([{rows}], requires_grad=True)")
        lines.append(f"b = {_tensor(rng, width, True, -0.5, 0.5)}")
        lines.append(f"f = {_tensor(rng, 1, True, 0.3, 0.9)}")
        lines.append(f"xs = [{', '.join(_tensor(rng, width) for _ in range(steps))}]")
        lines.append(f"ys = [{', '.join(_tensor(rng, width, False, -0.9, 0.9) for _ in range(steps))}]")
        lines.append("")
        lines.append("def cell(state, x):           # an LSTM-like cell: the state is a pair (h, c)")
        lines.append("    h, c = state")
        lines.append("    c = f * c + torch.tanh(h @ W + x + b)")
        lines.append("    return torch.tanh(c), c")
        lines.append("")
        params, names, shapes = "{'W': W, 'b': b, 'f': f}", ["W", "b", "f"], [(width, width), (width,), ()]
        step, loss = "cell(s, x)", "((s[0] - ys[t]) ** 2).sum()"
        h0 = f"({_tensor(rng, width)}, {_tensor(rng, width)})"
        lines += [
            f"seq = Recurrence(params={params}, h0={h0}, inputs=xs,",
            f"                 step={step.split('(')[0]},",
            f"                 loss=lambda s, t: {loss})",
            f"k = {k}",
        ]
        return WindowCase(
            seed=seed, lines=lines, steps=steps, width=width, k=k, names=names, shapes=shapes, features={style}
        )
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
    return WindowCase(
        seed=seed, lines=lines, steps=steps, width=width, k=k, names=names, shapes=shapes, features={style}
    )


def window_cases(count: int = 30, seed: int = 818) -> list[WindowCase]:
    """The unit's loop with k = 1, 2 and 5, then ``count`` generated sequences (a third of them LSTM-like, whose
    state is a pair), smallest first. Most have 1 < k < the length, where the window and the chunks differ."""
    found = [_the_loop_case(k) for k in (1, STEPS, 2)]
    seen = set()
    i = 0
    while len(found) < count + 3 and i < count * 20:
        case = generate_case(seed * 1000 + i, "lstm" if i % 3 == 2 else None)
        i += 1
        if case.source in seen:
            continue
        seen.add(case.source)
        found.append(case)
    found.sort(key=lambda c: (c.size, c.steps, c.seed != 0, c.seed, c.k))
    return found


def call_window(fn, case, ns):
    return fn(ns["seq"], ns["k"])


def flatten_window_grads(raw, case: WindowCase, ns) -> list[float]:
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
