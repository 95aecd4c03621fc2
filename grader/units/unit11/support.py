"""Unit 11's instruments: the Functions its experiments use, a count of the passes that build a Jacobian, and the
report that grades a learner's ``torch.autograd.Function`` against the live op.

A report is a tuple of ``(fact, value)`` pairs, measured the same way on the learner's Function and on the
op torch ships (or, for the straight-through estimator, on the ``detach`` trick autograd differentiates
itself): what forward gives, what backward gives for a fixed output gradient, whether ``gradcheck`` (and
where declared ``gradgradcheck`` and ``vmap``) accept it, and what it keeps for backward, counted by
``probes.bill`` (what goes through ``save_for_backward``) plus every tensor stashed on ``ctx``. The
exercises' generated inputs are in :mod:`grader.units.unit11.cases`, the kinds that read a report in
:mod:`grader.units.unit11.kinds`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch.autograd import Function as AutogradFunction
from torch.autograd.function import once_differentiable

from grader.engine import torch_state
from grader.engine.cases import Case
from grader.engine.kinds import short, type_words
from grader.engine.limits import describe_exception

# =====================================================================================================
# Functions the experiments use (the notebook writes its own; these are for the live answers)
# =====================================================================================================


class CubeSaved(AutogradFunction):
    """x ** 3, keeping x through save_for_backward; backward in differentiable ops."""

    @staticmethod
    def forward(x):
        return x**3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2


class CubeStashed(CubeSaved):
    """The same, with x stashed on ctx: no version check."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.x = inputs[0]

    @staticmethod
    def backward(ctx, grad):
        return grad * 3 * ctx.x**2


class CubeOnce(CubeSaved):
    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2


class SplitPair(AutogradFunction):
    """Two outputs, 2x and x ** 2; records what backward receives for each output gradient."""

    seen: list = []
    materialize = True

    @staticmethod
    def forward(x):
        return x * 2, x**2

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
# Building a whole Jacobian, and reading gradcheck's message
# =====================================================================================================


def passes_for_whole_jacobian(f, x):
    """Build f's Jacobian at x row by row (one reverse pass each) and column by column (one forward-mode
    pass each); check both agree and count the passes each took."""
    y = f(x)
    reverse = []
    for i in range(y.numel()):
        onehot = torch.zeros(y.numel())
        onehot[i] = 1
        (row,) = torch.autograd.grad(y.reshape(-1), x, onehot, retain_graph=True)
        reverse.append(row.reshape(-1))
    forward = []
    for j in range(x.numel()):
        direction = torch.zeros(x.numel())
        direction[j] = 1
        _, column = torch.func.jvp(f, (x.detach(),), (direction.reshape(x.shape),))
        forward.append(column.reshape(-1))
    assert torch.allclose(torch.stack(reverse), torch.stack(forward, dim=1), atol=1e-5)
    return [len(reverse), len(forward)]


def matrix_after(label: str, message: str) -> list[float]:
    block = message.split(label, 1)[1]
    block = block[: block.index(")") + 1]
    return [float(v) for v in re.findall(r"-?\d+\.\d*(?:e-?\d+)?", block.split("dtype")[0])]


# =====================================================================================================
# The live op, and the report
# =====================================================================================================


def format_value(v: float) -> str:
    text = f"{v:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def live_apply(op: str, step: float = 0.5) -> Callable:
    """The op torch ships (for the STE: the detach trick, whose gradient autograd works out itself)."""
    if op == "softplus":
        return F.softplus
    if op == "sigmoid_":
        return lambda h: h.sigmoid_()
    return lambda x: x + (torch.round(x / step) * step - x).detach()


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
    return format_value(float(x[index]))


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


def function_report(op: str, apply: Callable, case: Case, live: bool = False) -> tuple:
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
        facts.append(
            (
                "returns",
                "h itself"
                if out is h
                else "a view of h"
                if isinstance(out, torch.Tensor) and out._base is h
                else "a new tensor",
            )
        )
        facts.append(("h", "written in place" if h._version > 0 else "untouched"))
    if not isinstance(target, torch.Tensor):
        return tuple(facts) + (("forward", f"returned {short(target)}, not a tensor"),)
    facts.append(("forward", _compare(target, want_value, x)))
    ctx = target.grad_fn
    stashed = _tensors_on_ctx(ctx) if ctx is not None else []
    own = {t.untyped_storage().data_ptr() for t in (x, h, out) if isinstance(t, torch.Tensor)}
    copies = sum(n for ptr, n in kept.items() if ptr not in own)
    facts.append(
        ("keeps", (sum(kept.values()), copies, sum(t.untyped_storage().nbytes() for t in stashed), len(stashed)))
    )
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


def _vmap(apply: Callable, truth_fn: Callable, case: Case) -> str:
    batch = torch.stack([case.fresh()["x"].detach(), -case.fresh()["x"].detach() / 2])
    try:
        got = torch.func.vmap(apply)(batch)
    except NotImplementedError:
        raise
    except Exception as exc:
        return _short_error(exc)
    want = torch.stack([truth_fn(row) for row in batch])
    return (
        "works"
        if isinstance(got, torch.Tensor)
        and got.shape == want.shape
        and bool(torch.isclose(got, want, rtol=1e-7, atol=1e-8).all())
        else "gives other values"
    )
