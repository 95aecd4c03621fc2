"""Unit 03's answer kinds: ``ThreeWays`` (the gradient at an intermediate read three ways, with the
``.grad`` fields each way left set) and ``StepReport`` (what a watch for non-finite gradients reported,
as a :class:`Watched`)."""

from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

import torch

from grader.engine.kinds import BadAnswer, Kind, Unanswered, is_placeholder, short, type_words

WAYS_TO_READ = ("hook", "retain_grad", "autograd.grad")


class _Way(NamedTuple):
    way: str
    grad: tuple
    stored: frozenset


class ThreeWays(Kind):
    """A dict {'hook': (gradient, names), 'retain_grad': (...), 'autograd.grad': (...)}."""

    label = "the gradient at t three ways, each with the names whose .grad is set"

    def __init__(self, tol: float = 1e-5):
        self.tol = tol

    def describe(self):
        return (
            "a dict {'hook': (gradient, names), 'retain_grad': (gradient, names), "
            "'autograd.grad': (gradient, names)}, names being a set"
        )

    def _gradient(self, way, g):
        if g is None:
            raise BadAnswer(f"the gradient read by {way!r} is None: that way did not catch the gradient at t")
        if isinstance(g, torch.Tensor):
            g = g.detach().reshape(-1).tolist()
        elif isinstance(g, numbers.Real) and not isinstance(g, bool):
            g = [g]
        if (
            not isinstance(g, (list, tuple))
            or not g
            or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in g)
        ):
            raise BadAnswer(f"the gradient read by {way!r} should be a tensor, got {type_words(g)}")
        return tuple(float(v) for v in g)

    def _names(self, way, names):
        if isinstance(names, str) or not isinstance(names, (set, frozenset, list, tuple)):
            raise BadAnswer(
                f"the names for {way!r} should be a set of names such as {{'a', 't1'}}, got {type_words(names)}"
            )
        if not all(isinstance(n, str) for n in names):
            raise BadAnswer(f"the names for {way!r} should be strings, as in the dict build() returns")
        return frozenset(names)

    def read(self, answer):
        if is_placeholder(answer):
            raise Unanswered()
        if not isinstance(answer, dict):
            raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")
        missing = [w for w in WAYS_TO_READ if w not in answer]
        if missing:
            raise BadAnswer(
                f"the dict has no entry for {', '.join(map(repr, missing))}; its keys must be "
                f"{', '.join(map(repr, WAYS_TO_READ))}"
            )
        out = []
        for way in WAYS_TO_READ:
            pair = answer[way]
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise BadAnswer(f"the entry for {way!r} should be a pair (gradient, names), got {type_words(pair)}")
            out.append(_Way(way, self._gradient(way, pair[0]), self._names(way, pair[1])))
        return tuple(out)  # in WAYS_TO_READ order; a tuple, so that the manifest can store it

    def _close(self, a, b):
        return len(a) == len(b) and all(
            (math.isnan(x) and math.isnan(y)) or abs(x - y) <= self.tol * (1 + abs(x)) for x, y in zip(a, b)
        )

    def agrees(self, truth, value):
        return all(self._close(t.grad, v.grad) and t.stored == v.stored for t, v in zip(truth, value))

    def verdict_note(self, truth, value):
        for t, v in zip(truth, value):
            if not self._close(t.grad, v.grad):
                return f"the gradient read by {t.way!r} is not the gradient at t"
            if t.stored != v.stored:
                return f"after {t.way!r}, the .grad fields that are set are not the ones you named"
        return ""

    def show(self, value):
        def grad(g):
            return "[" + ", ".join(f"{v:.4f}" for v in g) + "]"

        def names(s):
            return "{" + ", ".join(sorted(s)) + "}" if s else "nothing"

        return "\n".join(f"{v.way + ':':<15} {grad(v.grad)}, .grad set on {names(v.stored)}" for v in value)

    def encode(self, value):
        return {v.way: [list(v.grad), sorted(v.stored)] for v in value}


class Watched(NamedTuple):
    """What a watch did on one loop: the step its report named, and what it should not have done."""

    reported: Any
    problems: tuple = ()
    bad: tuple = ()  # in torch's answer: every step whose gradient was non-finite

    def __repr__(self):
        return f"a watch whose report() gave {short(self.reported, 60)}"


class StepReport(Kind):
    """The step a watch reported (an int, or None for 'never'), and whether it kept quiet and hands off."""

    label = "the first step with a non-finite gradient, or None"

    def describe(self):
        return "report() returning the first step (an int, counting from 0) or None"

    def read(self, answer):
        if isinstance(answer, dict) and set(answer) == {"reported", "problems", "bad"}:  # the encoded form
            problems, bad = answer["problems"], answer["bad"]
            if not (isinstance(problems, list) and all(isinstance(p, str) for p in problems)):
                raise BadAnswer("expected the outcome of a watched loop")
            if not (isinstance(bad, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in bad)):
                raise BadAnswer("expected the outcome of a watched loop")
            answer = Watched(answer["reported"], tuple(problems), tuple(bad))
        if not isinstance(answer, Watched):
            raise BadAnswer("expected the outcome of a watched loop")
        reported, problems, bad = answer
        if reported is None:
            return Watched(None, tuple(problems), tuple(bad))
        if isinstance(reported, bool) or not isinstance(reported, numbers.Integral):
            if isinstance(reported, torch.Tensor):
                why = "report() returned a tensor; return a plain int (use .item()) or None"
            else:
                why = f"report() returned {type_words(reported)}; return a step number (an int) or None"
            if problems:
                return Watched(f"<{short(reported, 40)}>", tuple(problems), tuple(bad))
            raise BadAnswer(why)
        return Watched(int(reported), tuple(problems), tuple(bad))

    def truth(self, value):
        return self.read(value)

    def agrees(self, truth, value):
        return not value.problems and value.reported == truth.reported

    def verdict_note(self, truth, value):
        if value.problems:
            return "; ".join(value.problems)
        if truth.reported is None:
            return "no gradient in this loop was non-finite: report() should give None"
        if value.reported is None:
            return "report() gave None, but a gradient was non-finite"
        if value.reported in truth.bad and value.reported != truth.reported:
            return f"step {value.reported} was non-finite too, but not first: keep the first bad step"
        if isinstance(value.reported, int) and value.reported == truth.reported + 1:
            return "off by one: the first backward pass is step 0"
        return ""

    def show(self, value):
        step = "None (no non-finite gradient)" if value.reported is None else f"step {value.reported}"
        if len(value.bad) > 1:
            step += f" (non-finite at steps {', '.join(map(str, value.bad))})"
        if value.problems:
            return "; ".join(value.problems) + f" (report() gave {step})"
        return step

    def encode(self, value):
        return {"reported": value.reported, "problems": list(value.problems), "bad": list(value.bad)}
