"""Unit 11's instruments: the Functions its experiments use, the generated inputs of its exercises, and the
report that grades a learner's ``torch.autograd.Function`` against the live op.

A report is a tuple of ``(fact, value)`` pairs, measured the same way on the learner's Function and on the
op torch ships (or, for the straight-through estimator, on the ``detach`` trick autograd differentiates
itself): what forward gives, what backward gives for a fixed output gradient, whether ``gradcheck`` (and
where declared ``gradgradcheck`` and ``vmap``) accept it, and what it keeps for backward, counted by
``probes.bill`` (what goes through ``save_for_backward``) plus every tensor stashed on ``ctx``.
"""
from __future__ import annotations

import functools
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.autograd import Function as AutogradFunction
from torch.autograd.function import once_differentiable

from grader.engine import torch_state
from grader.engine.kinds import BadAnswer, Function, Kind, Unanswered, is_placeholder, short, type_words
from grader.engine.limits import describe_exception

# =====================================================================================================
# Functions the experiments use (the notebook writes its own; these are for the live answers)
# =====================================================================================================

class CubeSaved(AutogradFunction):
    """x ** 3, keeping x through save_for_backward; backward in differentiable ops."""

    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2


class CubeStashed(CubeSaved):
    """The same, with x stashed on ctx: no version check."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.x = inputs[0]

    @staticmethod
    def backward(ctx, grad):
        return grad * 3 * ctx.x ** 2


class CubeOnce(CubeSaved):
    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2


class SigmoidInPlaceFn(AutogradFunction):
    """x.sigmoid_() with mark_dirty, keeping its output."""

    @staticmethod
    def forward(x):
        return x.sigmoid_()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)


class SplitPair(AutogradFunction):
    """Two outputs, 2x and x ** 2; records what backward receives for each output gradient."""

    seen: list = []
    materialize = True

    @staticmethod
    def forward(x):
        return x * 2, x ** 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(SplitPair.materialize)
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g_double, g_square):
        (x,) = ctx.saved_tensors
        SplitPair.seen.append((g_double, g_square))
        out = torch.zeros_like(x)
        if g_double is not None:
            out = out + 2 * g_double
        if g_square is not None:
            out = out + 2 * x * g_square
        return out


def describe_received(g) -> str:
    if g is None:
        return "None"
    if isinstance(g, torch.Tensor) and not g.any():
        return "a tensor of zeros"
    if isinstance(g, torch.Tensor) and bool((g == 1).all()):
        return "a tensor of ones"
    return "another tensor"


# =====================================================================================================
# The graded exercises: generated inputs
# =====================================================================================================

OPS = ("softplus", "sigmoid_", "ste")
CLASS_NAMES = {"softplus": "StableSoftplus", "sigmoid_": "SigmoidInPlace", "ste": "RoundSTE"}


def _fmt(v: float) -> str:
    text = f"{v:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


@dataclass(eq=False)
class OpCase:
    """One generated float64 input (and output gradient) for one of the three Functions."""

    op: str
    seed: int
    values: tuple
    grads: tuple
    step: float = 0.5
    drawing_label = "the live op"

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def label(self) -> str:
        return f"input #{self.seed} ({self.size} values)"

    @property
    def source(self) -> str:
        x = f"torch.tensor([{', '.join(_fmt(v) for v in self.values)}], dtype=torch.float64, requires_grad=True)"
        g = f"g = torch.tensor([{', '.join(_fmt(v) for v in self.grads)}], dtype=torch.float64)"
        name = CLASS_NAMES[self.op]
        if self.op == "sigmoid_":
            return (f"a = {x}\n{g}\nh = a * 1\nout = {name}.apply(h)    # h itself must become sigmoid(a)\n"
                    "torch.autograd.grad(h, a, g)")
        call = f"{name}.apply(x, {self.step})" if self.op == "ste" else f"{name}.apply(x)"
        return f"x = {x}\n{g}\ny = {call}\ntorch.autograd.grad(y, x, g)"

    def fresh(self) -> dict[str, Any]:
        return {"x": torch.tensor(self.values, dtype=torch.float64, requires_grad=True),
                "g": torch.tensor(self.grads, dtype=torch.float64)}

    def drawing(self, ns=None) -> str:
        ns = self.fresh()
        x, g = ns["x"], ns["g"]
        y = live_apply(self.op, self.step)(x * 1 if self.op == "sigmoid_" else x)
        (gx,) = torch.autograd.grad(y, x, g)
        ref = {"softplus": "torch.nn.functional.softplus(x)", "sigmoid_": "h.sigmoid_()",
               "ste": f"x + (torch.round(x / {self.step}) * {self.step} - x).detach()"}[self.op]
        return (f"{ref}\n  value:    {[round(v, 4) for v in y.tolist()]}\n"
                f"  gradient: {[round(v, 4) for v in gx.tolist()]}")

    def __repr__(self):
        return f"<{self.op} {self.label}>"


def live_apply(op: str, step: float = 0.5) -> Callable:
    """The op torch ships (for the STE: the detach trick, whose gradient autograd works out itself)."""
    if op == "softplus":
        return F.softplus
    if op == "sigmoid_":
        return lambda h: h.sigmoid_()
    return lambda x: x + (torch.round(x / step) * step - x).detach()


_HANDMADE = {
    "softplus": [((0.5, -1.25), (1.5, -0.5)), ((2.0, -0.5, 1.5), (0.5, -2.0, 1.0)),
                 ((750.0, 1.0), (1.0, 1.0)), ((-900.0, 3.0), (1.0, 0.5))],
    "sigmoid_": [((0.5, -1.25), (1.5, -0.5)), ((2.0, -0.5, 1.5), (0.5, -2.0, 1.0))],
    "ste": [((0.3, 1.1), (1.5, -0.5)), ((1.6, -0.45, 2.2), (0.5, -2.0, 1.0))],
}


@functools.cache
def op_cases(op: str, count: int = 10, seed: int = 11) -> tuple[OpCase, ...]:
    rng = random.Random(seed * 100 + OPS.index(op))
    found = [OpCase(op, i + 1, v, g) for i, (v, g) in enumerate(_HANDMADE[op])]
    while len(found) < count:
        n = 2 + len(found) % 5
        if op == "softplus" and len(found) % 2:
            values = [rng.choice([-1, 1]) * rng.uniform(5, 40) for _ in range(n - 1)] + [rng.uniform(715, 950)]
            rng.shuffle(values)
        elif op == "ste":
            step = rng.choice([0.5, 0.25])
            # keep clear of the rounding boundaries, where forward-mode and finite differences jump
            values = [(rng.randint(-12, 12) + rng.choice([0.2, 0.3, 0.7, 0.8])) * step for _ in range(n)]
        else:
            values = [rng.uniform(-6, 6) for _ in range(n)]
        grads = [rng.choice([-1, 1]) * rng.uniform(0.25, 2) for _ in range(n)]
        case = OpCase(op, len(found) + 1, tuple(round(v, 2) for v in values), tuple(round(v, 2) for v in grads))
        if op == "ste":
            case.step = step
        found.append(case)
    found.sort(key=lambda c: (c.size, c.seed))
    return tuple(found)


# =====================================================================================================
# The report
# =====================================================================================================

def _tensors_on_ctx(ctx) -> list[torch.Tensor]:
    """Tensors stashed as attributes of ctx (a node's Python object), looking inside lists, tuples and dicts."""
    found, stack = [], list(vars(ctx).values()) if hasattr(ctx, "__dict__") else []
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _first_bad(x: torch.Tensor, ok: torch.Tensor) -> str:
    index = int((~ok).nonzero()[0]) if (~ok).any() else 0
    return _fmt(float(x[index]))


def _compare(mine: torch.Tensor, torch_says: torch.Tensor, x: torch.Tensor) -> str:
    if not isinstance(mine, torch.Tensor):
        return f"not a tensor ({type_words(mine)})"
    if mine.shape != torch_says.shape:
        return f"shape {tuple(mine.shape)}, torch's is {tuple(torch_says.shape)}"
    finite = torch.isfinite(mine)
    if not bool(finite.all()) and bool(torch.isfinite(torch_says).all()):
        return f"inf or nan at x = {_first_bad(x, finite)}"
    close = torch.isclose(mine.detach().double(), torch_says.detach().double(), rtol=1e-7, atol=1e-8)
    if not bool(close.all()):
        return f"wrong at x = {_first_bad(x, close)}"
    return "right"


def _short_error(exc: BaseException) -> str:
    return "raised " + describe_exception(exc)[:160]


def saved_storages(forward: Callable) -> tuple[Any, dict[int, int]]:
    """Run ``forward()`` and record every storage a save_for_backward (or a built-in node) keeps, as
    {storage address: bytes}, the way probes.bill counts them."""
    kept: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        output = forward()
    return output, kept


def report(op: str, apply: Callable, case: OpCase, live: bool = False) -> tuple:
    """Measure a Function (``apply``) on one case; the same measurements for the live op give torch's answer."""
    truth_fn = live_apply(op, case.step)
    ns = case.fresh()
    x, g = ns["x"], ns["g"]
    with torch_state.clean_room():
        xs = case.fresh()["x"]
        want_value = truth_fn(xs * 1 if op == "sigmoid_" else xs)
        (want_grad,) = torch.autograd.grad(want_value, xs, g)
        want_value = want_value.detach()
    call = (lambda t: apply(t, case.step)) if op == "ste" else apply
    facts: list[tuple[str, Any]] = []

    def forward():
        if op == "sigmoid_":
            h = x * 1
            out = call(h)
            return h, out
        return None, call(x)

    try:
        (h, out), kept = saved_storages(forward)
    except NotImplementedError:
        raise
    except Exception as exc:
        return (("forward", _short_error(exc)),)
    target = h if op == "sigmoid_" else out
    if op == "sigmoid_":
        facts.append(("returns", "h itself" if out is h else
                      "a view of h" if isinstance(out, torch.Tensor) and out._base is h else "a new tensor"))
        facts.append(("h", "written in place" if h._version > 0 else "untouched"))
    if not isinstance(target, torch.Tensor):
        return tuple(facts) + (("forward", f"returned {short(target)}, not a tensor"),)
    facts.append(("forward", _compare(target, want_value, x)))
    ctx = target.grad_fn
    stashed = _tensors_on_ctx(ctx) if ctx is not None else []
    own = {t.untyped_storage().data_ptr() for t in (x, h, out) if isinstance(t, torch.Tensor)}
    copies = sum(n for ptr, n in kept.items() if ptr not in own)
    facts.append(("keeps", (sum(kept.values()), copies, sum(t.untyped_storage().nbytes() for t in stashed), len(stashed))))
    try:
        if target.grad_fn is None:
            raise RuntimeError("the output has no grad_fn: nothing to differentiate")
        (got,) = torch.autograd.grad(target, x, g)
        facts.append(("gradient", _compare(got, want_grad, x)))
    except NotImplementedError:
        raise
    except Exception as exc:
        facts.append(("gradient", _short_error(exc)))
    if op != "ste":
        xg = case.fresh()["x"]
        fn = (lambda t: apply(t * 1)) if op == "sigmoid_" else apply
        facts.append(("gradcheck", _gradcheck(torch.autograd.gradcheck, fn, xg)))
    if op == "softplus":
        facts.append(("gradgradcheck", _gradcheck(torch.autograd.gradgradcheck, apply, case.fresh()["x"])))
        facts.append(("vmap", _vmap(apply, truth_fn, case)))
    return tuple(facts)


def _gradcheck(check: Callable, fn: Callable, x: torch.Tensor) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ok = check(fn, (x,), raise_exception=False)
        return "passes" if ok else "fails"
    except NotImplementedError:
        raise
    except Exception as exc:
        return _short_error(exc)


def _vmap(apply: Callable, truth_fn: Callable, case: OpCase) -> str:
    batch = torch.stack([case.fresh()["x"].detach(), -case.fresh()["x"].detach() / 2])
    try:
        got = torch.func.vmap(apply)(batch)
    except NotImplementedError:
        raise
    except Exception as exc:
        return _short_error(exc)
    want = torch.stack([truth_fn(row) for row in batch])
    return "works" if isinstance(got, torch.Tensor) and got.shape == want.shape and \
        bool(torch.isclose(got, want, rtol=1e-7, atol=1e-8).all()) else "gives other values"


class Report(Kind):
    """A Function's report on one case; it agrees with torch's when every fact does and it keeps no more."""

    label = "a report"

    def read(self, answer):
        if not (isinstance(answer, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in answer)):
            raise BadAnswer(f"expected a report, got {type_words(answer)}")
        return answer

    def agrees(self, truth, value):
        mine = dict(value)
        for key, want in truth:
            got = mine.get(key)
            if key == "keeps":
                if got is None or got[0] > want[0] or got[1] > want[1] or got[3] > 0:
                    return False
            elif got != want:
                return False
        return True

    def _line(self, key, value, truth=None) -> str:
        if key == "keeps":
            saved, copies, stash_bytes, stash_count = value
            text = f"keeps {saved} bytes through save_for_backward"
            if copies:
                text += f" ({copies} of them a new tensor, neither an input nor an output)"
            if stash_count:
                text += f" and {stash_count} tensor(s) ({stash_bytes} bytes) on ctx, out of the version check"
            return text
        return f"{key}: {value}"

    def show(self, value):
        return "; ".join(self._line(k, v) for k, v in value)

    def verdict_note(self, truth, value):
        mine = dict(value)
        notes = []
        for key, want in truth:
            got = mine.get(key)
            if got is None:
                raised = [f"{k} {v}" for k, v in value if isinstance(v, str) and v.startswith("raised")]
                notes.append(raised[0] if raised else f"it stopped before {key}")
                break
            if key == "keeps":
                if got[3]:
                    notes.append("a tensor stashed on ctx escapes the version check: keep tensors with "
                                 "ctx.save_for_backward")
                elif got[1] > want[1]:
                    notes.append(f"it keeps a new tensor of {got[1]} bytes for backward, where torch's op keeps "
                                 "only its input or output")
                elif got[0] > want[0]:
                    notes.append(f"it keeps {got[0]} bytes where torch's op keeps {want[0]}: save only what "
                                 "backward reads")
            elif got != want:
                notes.append(f"{key}: {got} (torch's op: {want})")
        return "; ".join(notes)

    def encode(self, value):
        return repr(value)


class FunctionClass(Function):
    """A learner-written ``torch.autograd.Function`` subclass, passed as the class itself."""

    label = "a torch.autograd.Function subclass"

    def describe(self):
        return "a torch.autograd.Function subclass (the class itself, not Name.apply and not an instance)"

    def read(self, answer):
        if is_placeholder(answer):
            raise Unanswered()
        if isinstance(answer, type) and issubclass(answer, AutogradFunction):
            if answer is AutogradFunction:
                raise BadAnswer("that is torch.autograd.Function itself: pass your subclass of it")
            return answer
        owner = getattr(answer, "__self__", None)
        if isinstance(owner, type) and issubclass(owner, AutogradFunction):
            raise BadAnswer(f"pass the class {owner.__name__} itself, not {owner.__name__}.apply")
        raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")


def exercise_kind(op: str) -> FunctionClass:
    return FunctionClass(returns=Report(), cases=lambda: op_cases(op),
                         call=lambda cls, case, ns: report(op, cls.apply, case),
                         per_case_s=4.0, budget_s=40.0)
