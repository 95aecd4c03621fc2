"""Unit 02's answer kind: gradients read off named leaves (``02.grad-timeline``, ``02.isolating-seed``,
``02.flat-steps``, ``02.straight-through``, ``02.where-nan``)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import torch

from grader.engine.kinds import BadAnswer, Kind, Unanswered, is_placeholder, short, type_words


def fmt_number(x: float) -> str:
    if math.isfinite(x) and x == int(x) and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.4g}"


class LeafGrads(Kind):
    """{leaf name: gradient}, each gradient None or numbers, compared leaf by leaf.

    With ``steps`` (their names, in order) each leaf maps to one gradient per step instead.
    A gradient may be given as a tensor, a number or a (nested) list of numbers; ``None``
    means "no gradient at all", which is never the same as zeros.
    """

    label = "gradients by leaf name"

    def __init__(self, steps: tuple[str, ...] = (), tol: float = 1e-4, rel: float = 1e-4):
        self.steps = tuple(steps)
        self.tol, self.rel = tol, rel

    def describe(self):
        if self.steps:
            return (
                "a dict {leaf name: [" + ", ".join(self.steps) + "]}, each entry a tensor (a copy "
                "taken at that moment) or None"
            )
        return "a dict {leaf name: gradient}, each gradient a tensor or None"

    # reading ---------------------------------------------------------------------------
    def _numbers(self, value: Any, where: str) -> tuple[float, ...] | None:
        if value is None:
            return None
        if isinstance(value, torch.Tensor):
            if value.numel() > 10_000:
                raise BadAnswer(f"{where} is a tensor of {value.numel():,} elements; that is too many to be it")
            if value.is_complex():
                raise BadAnswer(f"{where} is a complex tensor; gradients here are real")
            return tuple(float(x) for x in value.detach().to("cpu", torch.float64).flatten().tolist())
        if isinstance(value, bool) or value is Ellipsis:
            raise BadAnswer(f"{where} is {type_words(value)}; give a tensor, a list of numbers or None")
        if isinstance(value, numbers.Real):
            return (float(value),)
        if isinstance(value, (list, tuple)):
            flat: list[float] = []
            stack = [value]
            while stack:
                item = stack.pop()
                if isinstance(item, (list, tuple)):
                    stack.extend(reversed(item))
                elif isinstance(item, numbers.Real) and not isinstance(item, bool):
                    flat.append(float(item))
                elif isinstance(item, torch.Tensor) and item.numel() == 1:
                    flat.append(float(item.item()))
                else:
                    raise BadAnswer(f"{where} holds {type_words(item)}; a gradient is numbers, a tensor or None")
                if len(flat) > 10_000:
                    raise BadAnswer(f"{where} holds too many numbers to be a gradient here")
            return tuple(flat)
        raise BadAnswer(f"{where} is {type_words(value)}; give a tensor, a list of numbers or None")

    def read(self, answer):
        if is_placeholder(answer):
            raise Unanswered()
        if not isinstance(answer, Mapping):
            raise BadAnswer(f"expected {self.describe()}; got {type_words(answer)}")
        if len(answer) > 100:
            raise BadAnswer(f"expected one entry per leaf, got {len(answer)} entries; that is too many")
        out = {}
        for name, entry in answer.items():
            if not isinstance(name, str):
                raise BadAnswer(f"the keys must be leaf names as strings, such as 'a'; got {type_words(name)}")
            if not self.steps:
                out[name] = self._numbers(entry, f"the gradient of {name!r}")
                continue
            if isinstance(entry, torch.Tensor) or not isinstance(entry, (list, tuple)) or len(entry) != len(self.steps):
                raise BadAnswer(
                    f"{name!r} needs a list of {len(self.steps)} entries ("
                    + ", ".join(self.steps)
                    + "); got "
                    + ("None" if entry is None else type_words(entry))
                    + (f" of {len(entry)}" if isinstance(entry, (list, tuple)) else "")
                )
            out[name] = tuple(self._numbers(e, f"{name!r} {step}") for e, step in zip(entry, self.steps))
        return out

    # comparing --------------------------------------------------------------------------
    def _same(self, a, b) -> bool:
        if a is None or b is None:
            return a is None and b is None
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if math.isnan(x) or math.isnan(y):
                if not (math.isnan(x) and math.isnan(y)):
                    return False
            elif math.isinf(x) or math.isinf(y):
                if x != y:
                    return False
            elif abs(x - y) > self.tol + self.rel * abs(x):
                return False
        return True

    def _entries(self, value):
        for name in sorted(value):
            if self.steps:
                for step, g in zip(self.steps, value[name]):
                    yield name, step, g
            else:
                yield name, "", value[name]

    def agrees(self, truth, value):
        if set(truth) != set(value):
            return False
        return all(
            self._same(g, value[name][self.steps.index(step)] if self.steps else value[name])
            for name, step, g in self._entries(truth)
        )

    def _one(self, g) -> str:
        if g is None:
            return "None"
        if len(g) > 8:
            return "[" + ", ".join(fmt_number(x) for x in g[:8]) + f", … ({len(g)} numbers)]"
        return "[" + ", ".join(fmt_number(x) for x in g) + "]"

    def verdict_note(self, truth, value):
        missing, extra = sorted(set(truth) - set(value)), sorted(set(value) - set(truth))
        if missing or extra:
            parts = []
            if missing:
                parts.append("no entry for " + ", ".join(map(repr, missing)))
            if extra:
                parts.append("entries for leaves this program does not have: " + ", ".join(map(repr, extra)))
            return "; ".join(parts) + f" (the leaves are {', '.join(map(repr, sorted(truth)))})"
        for name, step, g in self._entries(truth):
            mine = value[name][self.steps.index(step)] if self.steps else value[name]
            if not self._same(g, mine):
                where = f"{name!r} {step}".strip()
                return f"first difference: {where}: torch has {self._one(g)}, you have {self._one(mine)}"
        return ""

    def show(self, value):
        if not isinstance(value, Mapping):
            return short(value)
        if not self.steps:
            return "; ".join(f"{name}: {self._one(value[name])}" for name in sorted(value))
        lines = ["  |  ".join(self.steps)]
        for name in sorted(value):
            lines.append(f"{name}: " + "  |  ".join(self._one(g) for g in value[name]))
        return "\n".join(lines)

    def encode(self, value):
        if self.steps:
            return {n: [list(g) if g is not None else None for g in v] for n, v in value.items()}
        return {n: list(g) if g is not None else None for n, g in value.items()}

    def wrong_answers(self, truth):
        out = []
        for name in sorted(truth):
            bumped = {n: (list(v) if v is not None and not self.steps else v) for n, v in truth.items()}
            if self.steps:
                bumped[name] = [None if g is not None else [0.0] for g in truth[name]]
            else:
                bumped[name] = None if truth[name] is not None else [0.0]
            out.append(bumped)
        return out
