"""Unit 06's exercise cases: two losses sharing an intermediate (computed three ways) and smooth functions for a
Hessian-vector product; how a learner's function is called on a case, with clear messages when it raises,
and how its result is read.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import probes
from grader.engine import torch_state
from grader.engine.cases import Case
from grader.engine.kinds import BadAnswer, short, stable_part
from grader.units.unit06.kinds import WAYS
from grader.units.unit06.support import as_numbers, chain, close_enough

# --- exercise helpers: clear messages when a learner's function raises --------------------------

_GRADER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # grader/
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_MESSAGES: dict[str, str] = {}


def _live_messages() -> dict[str, str]:
    """The stable parts of three torch errors, measured once, to recognise a learner's error."""
    if _MESSAGES:
        return _MESSAGES

    def message_of(action) -> str:
        try:
            with torch_state.clean_room():
                action()
        except Exception as exc:
            return stable_part(str(exc))
        return ""

    def twice():
        w, u, loss = chain()
        loss.backward()
        loss.backward()

    def no_graph():
        x = torch.ones(2, requires_grad=True)
        torch.autograd.grad(torch.ones(2).sum(), x)

    def unused():
        x = torch.ones(2, requires_grad=True)
        y = torch.ones(2, requires_grad=True)
        torch.autograd.grad((y * 2).sum(), x)

    _MESSAGES.update(second_time=message_of(twice), no_graph=message_of(no_graph), unused=message_of(unused))
    return _MESSAGES


def _where(exc: BaseException) -> str:
    """' (in name, line N)' for the innermost frame that is neither the grader's nor torch's."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not os.path.abspath(f.filename).startswith((_GRADER_DIR, _TORCH_DIR))
    ]
    if not frames:
        return ""
    f = frames[-1]
    cell = " of its cell" if "ipykernel" in f.filename or f.filename.startswith("<ipython-input") else ""
    return f" (in {f.name}, line {f.lineno}{cell})"


def _relabel(exc: Exception, prefix: str, hints: dict[str, str]) -> Exception:
    """The same kind of exception, its message cut to the stable part, with where and a hint."""
    text = " ".join(str(exc).split())
    part = stable_part(text) if text else type(exc).__name__
    hint = next((h for key, h in hints.items() if part and part == _live_messages().get(key)), "")
    message = f"{prefix}{part}{_where(exc)}" + (f". {hint}" if hint else "")
    try:
        new = type(exc)(message)
    except Exception:
        new = RuntimeError(message)
    return new


# --- what a check lets the learner's function use: torch.autograd.grad, not torch.func ----------

# differentiation tools that would do the exercises' work without torch.autograd.grad: switched off during a call
BLOCKED = {
    "torch.func": ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"),
    "torch.autograd.functional": ("vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"),
}


class BlockedTool(RuntimeError):
    """Raised by a differentiation tool that the exercise rules out, while the learner's function runs."""


@dataclass
class EngineRuns:
    """The backward passes a call started: torch.autograd.grad calls and backward() calls, counted at
    torch.autograd._engine_run_backward, where both arrive however the learner named them (an alias made by
    ``from torch.autograd import grad`` included). Passes started from inside a torch.func transform are not
    the learner's own calls and are not counted. ``counted`` is False on a torch without that function."""

    grad_calls: int = 0
    backward_calls: int = 0
    counted: bool = True
    blocked: list = field(default_factory=list)  # "torch.func.jvp" for each blocked tool the function called


def _originals() -> dict[str, Any]:
    """Each blocked tool as torch defines it, taken when this module is imported (before any check ran)."""
    import importlib

    found = {}
    for module_name, names in BLOCKED.items():
        module = importlib.import_module(module_name)
        for name in names:
            if hasattr(module, name):
                found[f"{module_name}.{name}"] = getattr(module, name)
    return found


# The grader's own answers use these, never the module attributes a check switches off: a truth computed while
# a check is under way (another thread, or a switch-off an interruption left behind) is still torch's.
ORIGINAL = _originals()


def _blocker(name: str, runs: EngineRuns, others: frozenset):
    original = ORIGINAL[name]

    def blocked(*args, **kwargs):
        # Threads that were running before the check began (the kernel's own) are let through; the thread that
        # runs the learner's function, and any thread started while it runs (the learner's), are refused.
        if threading.current_thread() in others:
            return original(*args, **kwargs)
        runs.blocked.append(name)
        raise BlockedTool(f"{name} is switched off during this check: the exercise asks for torch.autograd.grad")

    return blocked


@contextlib.contextmanager
def autograd_grad_only() -> Iterator[EngineRuns]:
    """While the learner's function runs: torch.func's and torch.autograd.functional's differentiation tools
    raise BlockedTool, and every backward pass is counted. Everything is put back on the way out."""
    import importlib

    import torch.autograd as autograd_module

    runs = EngineRuns()
    others = frozenset(threading.enumerate()) - {threading.current_thread()}
    saved: list[tuple[Any, str, Any]] = []
    for full, original in ORIGINAL.items():
        module_name, name = full.rsplit(".", 1)
        module = importlib.import_module(module_name)
        saved.append((module, name, original))
        setattr(module, name, _blocker(full, runs, others))
    engine = getattr(autograd_module, "_engine_run_backward", None)
    if engine is None:
        runs.counted = False
    else:

        def counting(*args, **kwargs):
            if torch._C._functorch.maybe_current_level() is None:
                if kwargs.get("accumulate_grad", True):
                    runs.backward_calls += 1
                else:
                    runs.grad_calls += 1
            return engine(*args, **kwargs)

        saved.append((autograd_module, "_engine_run_backward", engine))
        autograd_module._engine_run_backward = counting
    try:
        yield runs
    finally:
        for module, name, original in reversed(saved):
            setattr(module, name, original)


# --- exercise 1: two losses sharing an intermediate, three ways ----------------------------------


# way -> (forward calls, backward passes through the shared intermediate h)
RULES = {"retain_graph": (1, 2), "two_forwards": (2, 2), "one_call": (1, 1)}
WAY_WORDS = {
    "retain_graph": "runs forward once and backward twice through that one graph (retain_graph=True on the first)",
    "two_forwards": "runs forward twice and backpropagates each loss through its own graph",
    "one_call": "runs forward once and walks the graph once: a single torch.autograd.grad call on "
    "torch.stack([loss_a, loss_b]) with grad_outputs=torch.eye(2), is_grads_batched=True",
}


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")


SHARED = [
    "(w * c).tanh()",
    "w.sin() * w",
    "(w ** 2 + 1).log()",
    "(w * c).sigmoid()",
    "w.cumsum(0).sin()",
    "(w - c).exp() * 0.5",
]
LOSSES = [
    "(h ** 2).sum()",
    "(h * d).sum()",
    "h.logsumexp(0)",
    "(h * c).sum() + w.sin().sum()",
    "(h - d).pow(2).mean()",
    "h.prod()",
    "(h * w).sum()",
]


@dataclass
class TwoLossCase(Case):
    """w, constants c and d, and forward(w) -> (loss_a, loss_b) sharing the intermediate h."""

    seed: int
    w: list
    c: list
    d: list
    shared: str
    loss_a: str
    loss_b: str

    def _lines(self, probe: bool) -> list[str]:
        lines = [
            f"c = torch.tensor({self.c})",
            f"d = torch.tensor({self.d})",
            "",
            "def forward(w):",
            f"    h = {self.shared}          # shared by both losses",
        ]
        if probe:
            lines.append("    _shared(h)")
        lines += [
            f"    loss_a = {self.loss_a}",
            f"    loss_b = {self.loss_b}",
            "    return loss_a, loss_b",
            "",
            f"w = torch.tensor({self.w}, requires_grad=True)",
        ]
        return lines

    @property
    def source(self) -> str:
        return "\n".join(self._lines(probe=False))

    @property
    def size(self) -> int:
        return len(self.w) + sum(text.count("(") for text in (self.shared, self.loss_a, self.loss_b))

    @property
    def label(self) -> str:
        return f"case #{self.seed} (w of {len(self.w)})"

    output = "forward"
    drawing_label = None  # a verdict heads drawing() "its graph"

    def fresh(self, counter: _Counter | None = None) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch, "_shared": counter.saw if counter else (lambda h: None)}
        exec(compile("\n".join(self._lines(probe=True)), f"<two-loss case #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        if counter is not None:
            counter.wrap(ns)
        return ns

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        ns = ns if ns is not None else self.fresh()
        loss_a, loss_b = ns["forward"](ns["w"])
        names = {"w": ns["w"]}
        return (
            "loss_a:\n" + probes.text_tree(loss_a, names=names) + "\nloss_b:\n" + probes.text_tree(loss_b, names=names)
        )

    def __repr__(self):
        return f"<{self.label}>"


class _Counter:
    """Counts forward calls and backward passes through h (a hook on h, registered by forward)."""

    def __init__(self):
        self.forwards = 0
        self.passes = 0

    def saw(self, h):
        if isinstance(h, torch.Tensor) and h.requires_grad:
            try:
                h.register_hook(self._passed)
            except Exception:
                pass

    def _passed(self, grad):
        self.passes += 1

    def wrap(self, ns):
        inner = ns["forward"]

        def forward(w):
            self.forwards += 1
            return inner(w)

        forward.__name__ = "forward"
        forward.__doc__ = inner.__doc__
        ns["forward"] = forward


def two_loss_cases(count: int = 24, seed: int = 606) -> list[TwoLossCase]:
    with torch_state.clean_room():
        return _generate_two_loss_cases(count, seed)


def _generate_two_loss_cases(count: int, seed: int) -> list[TwoLossCase]:
    found, sources = [], set()
    for i in range(count * 20):
        if len(found) >= count:
            break
        rng = random.Random(seed * 10_007 + i)
        n = rng.choice([2, 3, 4])
        a, b = rng.sample(LOSSES, 2)
        case = TwoLossCase(
            seed=seed * 10_007 + i,
            w=_literal(rng, n),
            c=_literal(rng, n),
            d=_literal(rng, n),
            shared=rng.choice(SHARED),
            loss_a=a,
            loss_b=b,
        )
        if case.source in sources:
            continue
        try:
            ga, gb = two_loss_truth(case)
        except Exception:
            continue
        # keep cases whose two gradients are finite, differ, and differ from their sum
        if not all(math.isfinite(v) and abs(v) < 1e3 for v in ga + gb):
            continue
        if (
            close_enough(ga, gb, 1e-3)
            or close_enough(ga, tuple(x + y for x, y in zip(ga, gb)), 1e-3)
            or close_enough(gb, tuple(x + y for x, y in zip(ga, gb)), 1e-3)
        ):
            continue
        sources.add(case.source)
        found.append(case)
    found.sort(key=lambda c: (c.size, c.seed))
    return found


def _literal(rng: random.Random, n: int) -> list:
    return [rng.choice([-1, 1]) * rng.randint(1, 15) / 10 for _ in range(n)]


def two_loss_truth(case: TwoLossCase) -> tuple[tuple, tuple]:
    """torch.func's Jacobian of (loss_a, loss_b) at w: a route none of the three ways takes."""
    ns = case.fresh()
    forward = ns["forward"]
    jac = ORIGINAL["torch.func.jacrev"](lambda w: torch.stack(forward(w)))(ns["w"].detach())
    return as_numbers(jac[0]), as_numbers(jac[1])


class _Words(str):
    """Text that shows as itself in a message (short() would quote a plain string)."""

    def __repr__(self):
        return str(self)


class _Results:
    """What the learner's function returned for each way, with the counts the grader observed."""

    def __init__(self):
        self.rows: list[tuple[str, Any, int, int, tuple]] = []
        self.runs: dict[str, EngineRuns] = {}  # the backward passes each way's call started
        self.focus: tuple[str, Any] | None = None  # the way and value a message is about

    def __repr__(self):
        if self.focus is None:
            return "a result for each way"
        way, value = self.focus
        return f"{short(value)} for way={way!r}"


def call_two(fn, case: TwoLossCase, ns):
    results = _Results()
    hints = {"second_time": "Pass retain_graph=True to the first backward, or run forward again"}
    for way in WAYS:
        counter = _Counter()
        fresh = case.fresh(counter)
        try:
            with autograd_grad_only() as runs:
                out = fn(fresh["forward"], fresh["w"], way)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _relabel(exc, f"with way={way!r}: ", hints) from None
        results.rows.append((way, out, counter.forwards, counter.passes, tuple(fresh["w"].shape)))
        results.runs[way] = runs
    return results


def _grad_tuple(value, shape, which) -> tuple:
    if value is None:
        raise BadAnswer(
            f"its {which} is None: read the gradient before it is cleared, or take it from what "
            "torch.autograd.grad returns"
        )
    if not isinstance(value, torch.Tensor):
        raise BadAnswer(f"its {which} is {short(value)}: return tensors shaped like w")
    if tuple(value.shape) != shape:
        raise BadAnswer(f"its {which} has shape {tuple(value.shape)}; w has shape {shape}")
    return as_numbers(value)


def convert_two(raw, case, ns):
    if not isinstance(raw, _Results):
        raise BadAnswer("the grader could not read what your function returned")
    out = []
    for way, value, forwards, passes, shape in raw.rows:
        raw.focus = (way, value)
        try:
            pair_ok = len(value) == 2 and not isinstance(value, (str, dict))
        except TypeError:
            pair_ok = False
        if not pair_ok:
            raise BadAnswer("return a pair (grad_a, grad_b)")
        grad_a = _grad_tuple(value[0], shape, "grad_a")
        grad_b = _grad_tuple(value[1], shape, "grad_b")
        want = RULES[way]
        if (forwards, passes) != want:
            raw.focus = (way, _Words("two gradients"))
            raise BadAnswer(
                f"but it ran forward {_times(forwards)} and backward through the shared h {_times(passes)}; "
                f"the {way!r} way {WAY_WORDS[way]}"
            )
        runs = raw.runs.get(way)
        if way == "one_call" and runs is not None and runs.counted and (runs.grad_calls, runs.backward_calls) != (1, 0):
            raw.focus = (way, _Words("two gradients"))
            raise BadAnswer(
                f"but it made {_times(runs.grad_calls)} torch.autograd.grad call(s) and "
                f"{_times(runs.backward_calls)} backward() call(s); the 'one_call' way {WAY_WORDS[way]}"
            )
        out.append((way, grad_a, grad_b))
    raw.focus = None
    return tuple(out)


# --- exercise 2: a Hessian-vector product with create_graph=True ---------------------------------

TERMS = [
    "x.sin().sum()",
    "(x ** 3).sum() / 3",
    "(x * a).exp().sum()",
    "(x ** 2 * a).sum()",
    "(x.cumsum(0) ** 2).sum()",
    "(x @ x).cos()",
    "x.tanh().pow(2).sum()",
    "torch.log1p(x ** 2).sum()",
    "(x[0] * x[-1]).sin()",
    "(x * x.roll(1)).sum()",
    "(x @ a) ** 2",
    "x.logsumexp(0)",
    "x.sigmoid().prod()",
]


@dataclass
class SmoothCase(Case):
    """A smooth f(x) -> scalar, a point x (a leaf that requires grad) and a direction v."""

    seed: int
    terms: list
    x: list
    v: list
    a: list

    @property
    def source(self) -> str:
        return "\n".join(
            [
                f"a = torch.tensor({self.a})",
                "",
                "def f(x):",
                "    return " + " + ".join(self.terms),
                "",
                f"x = torch.tensor({self.x}, requires_grad=True)",
                f"v = torch.tensor({self.v})",
            ]
        )

    @property
    def size(self) -> int:
        return len(self.x) + 2 * len(self.terms)

    @property
    def label(self) -> str:
        return f"case #{self.seed} (x of {len(self.x)}, {len(self.terms)} term(s))"

    output = "f"
    drawing_label = None  # a verdict heads drawing() "its graph"

    def fresh(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch}
        exec(compile(self.source, f"<smooth case #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        return ns

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        ns = ns if ns is not None else self.fresh()
        return probes.text_tree(ns["f"](ns["x"]), names={"x": ns["x"]})

    def __repr__(self):
        return f"<{self.label}>"


def hvp_truth(case: SmoothCase, ones: bool = False) -> tuple:
    """torch.func: the derivative of grad(f) along v (forward over reverse), a route autograd.grad does not take."""
    ns = case.fresh()
    v = torch.ones_like(ns["v"]) if ones else ns["v"]
    jvp, grad = ORIGINAL["torch.func.jvp"], ORIGINAL["torch.func.grad"]
    _, hv = jvp(grad(ns["f"]), (ns["x"].detach(),), (v,))
    return as_numbers(hv)


def smooth_cases(count: int = 24, seed: int = 616) -> list[SmoothCase]:
    with torch_state.clean_room():
        return _generate_smooth_cases(count, seed)


def _generate_smooth_cases(count: int, seed: int) -> list[SmoothCase]:
    found, sources = [], set()
    for i in range(count * 20):
        if len(found) >= count:
            break
        rng = random.Random(seed * 10_007 + i)
        n = rng.choice([2, 3, 4])
        k = 1 if i < 8 else rng.choice([1, 2, 2, 3])
        case = SmoothCase(
            seed=seed * 10_007 + i,
            terms=rng.sample(TERMS, k),
            x=_literal(rng, n),
            v=_literal(rng, n),
            a=_literal(rng, n),
        )
        if case.source in sources:
            continue
        try:
            truth = hvp_truth(case)
            ns = case.fresh()
            (g,) = torch.autograd.grad(ns["f"](ns["x"]), ns["x"], create_graph=True)
            if g.grad_fn is None:
                continue
            (hv,) = torch.autograd.grad(g @ ns["v"], ns["x"])
            plain = as_numbers(g)
        except Exception:
            continue
        if not all(math.isfinite(t) and abs(t) < 1e3 for t in truth) or not close_enough(truth, as_numbers(hv)):
            continue
        # keep cases where the HVP differs from the gradient, from zero and from H @ ones
        if (
            close_enough(truth, plain, 1e-3)
            or all(abs(t) < 1e-3 for t in truth)
            or close_enough(truth, hvp_truth(case, ones=True), 1e-3)
        ):
            continue
        sources.add(case.source)
        found.append(case)
    found.sort(key=lambda c: (c.size, c.seed))
    return found


def call_hvp(fn, case: SmoothCase, ns):
    hints = {
        "no_graph": "Take the first gradient with create_graph=True; retain_graph=True records nothing",
        "unused": "Keep the first gradient attached to x: create_graph=True, no .detach()",
        "second_time": "create_graph=True keeps what the second pass needs",
    }
    marks = ns["_second_order"] = SecondOrder()
    ns["x"].register_hook(marks.saw_gradient)
    try:
        with autograd_grad_only():
            return fn(ns["f"], ns["x"], ns["v"])
    except NotImplementedError:
        raise
    except Exception as exc:
        raise _relabel(exc, "", hints) from None


class SecondOrder:
    """Watches x during a call: a gradient arriving at x with a graph of its own (create_graph=True) gets a
    hook, and ``differentiated`` is set when a later pass sends a gradient back through that graph, which is
    what a Hessian-vector product by torch.autograd.grad does and finite differences or torch.func do not."""

    def __init__(self):
        self.graphs = 0  # gradients of x that carried a graph
        self.differentiated = False

    def saw_gradient(self, grad):
        if isinstance(grad, torch.Tensor) and grad.requires_grad and grad.grad_fn is not None:
            self.graphs += 1
            grad.register_hook(self._through)

    def _through(self, grad):
        self.differentiated = True


def convert_hvp(raw, case: SmoothCase, ns):
    x = ns["x"]
    if raw is None:
        raise BadAnswer("return the tensor H @ v (the function returned nothing)")
    if isinstance(raw, (tuple, list)) and len(raw) == 1 and isinstance(raw[0], torch.Tensor):
        raise BadAnswer("a tuple holding one tensor: torch.autograd.grad returns a tuple; return its first element")
    if not isinstance(raw, torch.Tensor):
        raise BadAnswer(f"expected a tensor shaped like x, got {short(raw)}")
    if tuple(raw.shape) != tuple(x.shape):
        raise BadAnswer(f"a tensor of shape {tuple(raw.shape)}; H @ v has the shape of x, {tuple(x.shape)}")
    value = as_numbers(raw)
    with torch_state.clean_room():
        truth = hvp_truth(case)
        if close_enough(truth, value):
            marks = ns.get("_second_order")
            if marks is not None and not marks.differentiated:
                raise BadAnswer(
                    "the numbers agree, but no gradient of f was differentiated: "
                    + (
                        "the first gradient was taken with create_graph=True, and nothing was differentiated through it"
                        if marks.graphs
                        else "no gradient of f with respect to x carried a graph (create_graph=True)"
                    )
                    + ". The exercise computes H @ v with torch.autograd.grad twice, the second through the first "
                    "gradient's graph; finite differences and torch.func are not that"
                )
            return list(value)
        fresh = case.fresh()
        (g,) = torch.autograd.grad(fresh["f"](fresh["x"]), fresh["x"])
        grad = as_numbers(g)
        along_ones = hvp_truth(case, ones=True)
    if close_enough(grad, value):
        raise BadAnswer(
            "that is the gradient of f at x, not H @ v: differentiate (gradient * v).sum() once more, with respect to x"
        )
    if all(v == 0 for v in value):
        raise BadAnswer(
            "all zeros: the second differentiation found no path back to x, so the first "
            "gradient was taken without create_graph=True or was detached"
        )
    if close_enough(along_ones, value):
        raise BadAnswer(
            "that is H @ ones, the derivative of gradient.sum(): weight the gradient by v "
            "before differentiating, (gradient * v).sum()"
        )
    if close_enough(tuple(a + b for a, b in zip(grad, truth)), value):
        raise BadAnswer(
            "that is the gradient plus H @ v: x.grad still held the first gradient when the second "
            "backward added into it. torch.autograd.grad returns gradients and leaves x.grad alone"
        )
    return list(value)
