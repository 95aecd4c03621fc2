"""Unit 03, observing gradients: retain_grad, tensor and node hooks, torch.autograd.grad.

Two exercises need their own cases and kinds, written here:

* ``03.nonfinite-watch``: the learner's ``make_watch()`` returns ``(hook, report)``.
  The grader runs a small seeded training loop, registers ``hook`` on an
  intermediate every step, plants NaN or inf targets at random steps (sometimes
  none, sometimes large but finite decoys), and checks that the hook stayed
  silent before the first fault, raised nothing, left every gradient as it was,
  and that ``report()`` names the first bad step (``None`` when none was).
* ``03.three-ways``: the learner reads the gradient at an intermediate of a
  generated program by a hook, by ``retain_grad`` and by ``torch.autograd.grad``,
  and says which ``.grad`` fields each way left set.
"""
from __future__ import annotations

import math
import numbers
import random
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from .. import probes, programs
from ..kinds import (BadAnswer, Boolean, Choice, Error, Function, Kind, Names, Number, Sequence,
                     Unanswered, is_placeholder, short, type_words)
from ..question import exercise, predict_then_run, self_test
from ..sandbox import CappedWriter, describe_exception


def _chain():
    """The running example: w = 2 (a leaf), x = 3w, y = x ** 2."""
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    y = x ** 2
    return w, x, y


def _read_grad(t):
    """t.grad, without the warning a non-leaf gives."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad


# --- 1. computed, then dropped ----------------------------------------------------------

READ_OUTCOMES = ("None, silently", "None, with a warning", "a tensor", "an error")


@predict_then_run(
    "03.read-x-grad", Choice(*READ_OUTCOMES),
    prompt="w = torch.tensor(2.0, requires_grad=True); x = w * 3; y = x ** 2; y.backward(). Then you "
           "read x.grad. What do you get: 'None, silently', 'None, with a warning', 'a tensor' or "
           "'an error'?",
    explain="x is not a leaf, so backward computed dy/dx, passed it on to the multiplication and kept "
            "nothing. Reading the empty field is allowed, but torch warns, because it is almost always "
            "a mistake.",
)
def read_x_grad():
    w, x, y = _chain()
    y.backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = x.grad
        except Exception:
            return "an error"
    if value is not None:
        return "a tensor"
    return "None, with a warning" if any(issubclass(c.category, UserWarning) for c in caught) \
        else "None, silently"


@predict_then_run(
    "03.retain-grad", Number(),
    prompt="The same chain, but x.retain_grad() is called before y = x ** 2 and y.backward(). What are "
           "x.grad and w.grad? Answer [x.grad, w.grad].",
    explain="retain_grad() asks backward to keep the gradient that passes through x: dy/dx = 2x = 12. "
            "It changes nothing that is computed, so w.grad is still 12 * 3 = 36.",
)
def retain_grad():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    x.retain_grad()
    y = x ** 2
    y.backward()
    return [x.grad.item(), w.grad.item()]


# --- 2. tensor hooks ---------------------------------------------------------------------

@predict_then_run(
    "03.hook-sees", Number(),
    prompt="The same chain, without retain_grad: seen = []; x.register_hook(lambda g: seen.append(g.item())); "
           "then y.backward(). What number is in seen?",
    explain="A tensor hook is called with the gradient with respect to that tensor as it passes, "
            "before it is sent on: the same dy/dx that retain_grad would have kept.",
)
def hook_sees():
    w, x, y = _chain()
    seen = []
    x.register_hook(lambda g: seen.append(g.item()))
    y.backward()
    return seen[0] if len(seen) == 1 else seen


@predict_then_run(
    "03.hook-returns", Number(),
    prompt="The same chain, with a hook meant only to look: x.register_hook(lambda g: g.clamp(max=10)). "
           "After y.backward(), what is w.grad?",
    explain="A hook that returns a tensor replaces the gradient with it: the 12 arriving at x became 10, "
            "and the multiplication sent 10 * 3 on to w. A hook that only looks must return None.",
)
def hook_returns():
    w, x, y = _chain()
    x.register_hook(lambda g: g.clamp(max=10))
    y.backward()
    return w.grad.item()


# --- 3. torch.autograd.grad --------------------------------------------------------------

@predict_then_run(
    "03.autograd-grad", Number(),
    prompt="The same chain (no hooks, no retain_grad): dx, dw = torch.autograd.grad(y, [x, w]). What are "
           "dx and dw? Answer [dx, dw].",
    explain="autograd.grad runs the same backward pass as y.backward() and hands back the gradients with "
            "respect to the inputs you name: 12 at x, 36 at w.",
)
def autograd_grad():
    w, x, y = _chain()
    dx, dw = torch.autograd.grad(y, [x, w])
    return [dx.item(), dw.item()]


@predict_then_run(
    "03.autograd-grad-stores", Names(pool=("w", "x", "y")),
    prompt="After dx, dw = torch.autograd.grad(y, [x, w]) on the same chain, which of w, x, y have a .grad "
           "that is not None? Answer a set of names (set() for none).",
    explain="autograd.grad returns gradients instead of storing them: no AccumulateGrad node writes into "
            "w.grad, so an experiment made with it leaves the training state as it found it.",
)
def autograd_grad_stores():
    w, x, y = _chain()
    torch.autograd.grad(y, [x, w])
    return {name for name, t in {"w": w, "x": x, "y": y}.items() if _read_grad(t) is not None}


@predict_then_run(
    "03.retained-under-grad", Boolean(),
    prompt="The same chain, but x.retain_grad() was called before y = x ** 2. Then torch.autograd.grad(y, w) "
           "(only w is asked for). Is x.grad None afterwards?",
    explain="retain_grad() is a standing order on x, not an option of backward(): it stores whatever "
            "gradient passes through x in any backward pass, torch.autograd.grad's included. Only "
            "leaves are protected by autograd.grad.",
)
def retained_under_grad():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    x.retain_grad()
    y = x ** 2
    torch.autograd.grad(y, w)
    return x.grad is None


# --- 4. node hooks: the order backward runs --------------------------------------------------

def _branching():
    w = torch.tensor(2.0, requires_grad=True)
    a = w * 3
    b = w.exp()
    return w, a, b, a.sin() + a / b


def backward_order(y):
    """Node class names in the order backward runs them, seen by a pre-hook on every node."""
    ran = []
    for node in probes.nodes(y):
        node.register_prehook(lambda grad_outputs, node=node: ran.append(probes.node_name(node)))
    y.backward()
    return ran


@predict_then_run(
    "03.node-order", Sequence(),
    prompt="w = 2.0 (a leaf); a = w * 3; b = w.exp(); y = a.sin() + a / b. A pre-hook on every node of "
           "y's graph logs the node's class name when backward runs it. In what order are they logged?",
    explain="Backward is not the depth-first walk: a node runs only when every gradient meant for it has "
            "arrived (the multiplication waits for both the sine and the division), and among the nodes "
            "that are ready, the one created last runs first. AccumulateGrad runs once, last, with the sum.",
)
def node_order():
    *_, y = _branching()
    return backward_order(y)


# --- 5. the parameter that is not a leaf ---------------------------------------------------

def _scaled():
    """The slip: requires_grad=True on the created tensor, then one more operation."""
    scale = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    return scale, (scale ** 2).sum()


@predict_then_run(
    "03.hook-through-non-leaf", Number(),
    prompt="scale = torch.tensor([1.0, 2.0], requires_grad=True) * 2; loss = (scale ** 2).sum(). A hook on "
           "scale records the gradient it sees during loss.backward(). What does it see?",
    explain="scale.grad stays None, yet a gradient did flow through scale: d(sum of squares)/d(scale) = "
            "2 * scale = [4, 8]. Nothing was missing except a place to store it.",
)
def hook_through_non_leaf():
    scale, loss = _scaled()
    seen = []
    scale.register_hook(lambda g: seen.extend(g.tolist()))
    loss.backward()
    return seen


@predict_then_run(
    "03.hidden-leaf-grad", Number(),
    prompt="Same program. leaf = scale.grad_fn.next_functions[0][0].variable is the tensor that was made "
           "with requires_grad=True. After loss.backward(), what is leaf.grad?",
    explain="The gradient went on through the multiplication by 2 into the real leaf: 2 * [4, 8]. It was "
            "stored, on a tensor your code has no name for.",
)
def hidden_leaf_grad():
    scale, loss = _scaled()
    loss.backward()
    leaf = scale.grad_fn.next_functions[0][0].variable
    return leaf.grad.tolist()


@predict_then_run(
    "03.optimizer-non-leaf", Error("building the optimizer", "at backward", "at step"),
    prompt="Same scale. opt = torch.optim.SGD([scale], lr=0.1); (scale ** 2).sum().backward(); opt.step(). "
           "Where does it fail: 'building the optimizer', 'at backward', 'at step', or 'no error'?",
    explain="An optimizer updates tensors in place between steps, which only makes sense for leaves; "
            "torch refuses a non-leaf when the optimizer is built, before any gradient is computed.",
)
def optimizer_non_leaf():
    scale = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    yield "building the optimizer"
    opt = torch.optim.SGD([scale], lr=0.1)
    yield "at backward"
    (scale ** 2).sum().backward()
    yield "at step"
    opt.step()


# --- self-test -----------------------------------------------------------------------------

WAYS = ("hook", "retain_grad", "autograd.grad")


def _one_way(way):
    """Read dy/dx on a fresh chain one way; return whether every .grad field stayed None."""
    w, x, y = _chain()
    if way == "hook":
        x.register_hook(lambda g: None)
        y.backward()
    elif way == "retain_grad":
        x.retain_grad()
        y.backward()
    else:
        torch.autograd.grad(y, x)
    return _read_grad(w) is None and _read_grad(x) is None


@self_test(
    "03.which-untouched", Names(pool=WAYS),
    prompt="Three ways to read dy/dx on the chain w = 2, x = 3w, y = x ** 2, each on a fresh graph: 'hook' "
           "(x.register_hook(f), then y.backward()), 'retain_grad' (x.retain_grad(), then y.backward()) and "
           "'autograd.grad' (torch.autograd.grad(y, x)). After which of them are both w.grad and x.grad "
           "still None?",
    explain="A hook stores nothing, but the backward() that fires it fills every leaf's .grad; retain_grad "
            "adds x.grad to that; autograd.grad returns the gradient and writes no field.",
)
def which_untouched():
    return {way for way in WAYS if _one_way(way)}


@self_test(
    "03.hook-on-shared", Number(),
    prompt="w = 2.0 (a leaf); x = w * 3; calls = []; x.register_hook(lambda g: calls.append(g.item())); "
           "y = x ** 2 + 5 * x; y.backward(). How many times is the hook called, and with what value? "
           "Answer [calls, value].",
    explain="x is used twice, but its two contributions are added before its node runs, and the hook "
            "sees that sum once: 2x + 5 = 17.",
)
def hook_on_shared():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    calls = []
    x.register_hook(lambda g: calls.append(g.item()))
    (x ** 2 + 5 * x).backward()
    return [len(calls), *calls[:1]]


@self_test(
    "03.leaf-hook-second", Number(),
    prompt="w = 2.0 (a leaf); seen = []; w.register_hook(lambda g: seen.append(g.item())); y = (w * 3) ** 2; "
           "y.backward(retain_graph=True); y.backward(). What did the hook receive the second time, and what "
           "is w.grad now? Answer [second value, w.grad].",
    explain="A hook on a leaf sees the gradient arriving from this pass, before AccumulateGrad adds it to "
            "w.grad; the field holds the running total of both passes.",
)
def leaf_hook_second():
    w = torch.tensor(2.0, requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g.item()))
    y = (w * 3) ** 2
    y.backward(retain_graph=True)
    y.backward()
    return [seen[-1], w.grad.item()]


@self_test(
    "03.retain-accumulates", Number(),
    prompt="w = 2.0 (a leaf); x = w * 3; x.retain_grad(); y = x ** 2; y.backward(retain_graph=True); "
           "y.backward(). What is x.grad?",
    explain="A retained gradient behaves like a leaf's: each backward pass adds to it, so it needs "
            "zeroing just the same.",
)
def retain_accumulates():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    x.retain_grad()
    y = x ** 2
    y.backward(retain_graph=True)
    y.backward()
    return x.grad.item()


# --- exercise A: the three ways on generated programs ---------------------------------------

@dataclass
class ProgramWithIntermediate:
    """A generated program, one of whose intermediates is the tensor to observe."""

    program: programs.Program
    target: str                 # the intermediate's name in the program
    output: str = "out"

    @property
    def size(self) -> int:
        return self.program.size

    @property
    def label(self) -> str:
        return f"{self.program.label}, observing {self.target}"

    @property
    def names(self) -> list[str]:
        return list(self.program.leaves) + [self.target]

    @property
    def source(self) -> str:
        lines = []
        for line in self.program.lines:
            if line.startswith(f"{self.target} = "):
                line += "        # <- t, the intermediate to observe"
            lines.append(line)
        return "\n".join(lines)

    def fresh(self) -> dict[str, Any]:
        return self.program.fresh()

    def build(self):
        ns = self.fresh()
        return ns[self.output], ns[self.target], {n: ns[n] for n in self.names}

    def drawing(self, ns=None) -> str:
        return self.program.drawing(ns)


def _three_ways_cases():
    found = []
    for prog in programs.programs(60, seed=303, max_ops=7, need_backward=True):
        ns = prog.fresh()
        on_path = set(probes.nodes(ns[prog.output]))
        candidates = [name for name in ns
                      if name.startswith("t") and name[1:].isdigit()
                      and isinstance(ns[name], torch.Tensor) and ns[name].grad_fn in on_path]
        if not candidates:
            continue
        rng = random.Random(prog.seed)
        found.append(ProgramWithIntermediate(prog, rng.choice(candidates)))
    found.sort(key=lambda c: (c.size, c.program.seed))
    return found[:30]


def _stored(named):
    return {name for name, t in named.items() if _read_grad(t) is not None}


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
        return ("a dict {'hook': (gradient, names), 'retain_grad': (gradient, names), "
                "'autograd.grad': (gradient, names)}, names being a set")

    def _gradient(self, way, g):
        if g is None:
            raise BadAnswer(f"the gradient read by {way!r} is None: that way did not catch the gradient at t")
        if isinstance(g, torch.Tensor):
            g = g.detach().reshape(-1).tolist()
        elif isinstance(g, numbers.Real) and not isinstance(g, bool):
            g = [g]
        if not isinstance(g, (list, tuple)) or not g or \
                not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in g):
            raise BadAnswer(f"the gradient read by {way!r} should be a tensor, got {type_words(g)}")
        return tuple(float(v) for v in g)

    def _names(self, way, names):
        if isinstance(names, str) or not isinstance(names, (set, frozenset, list, tuple)):
            raise BadAnswer(f"the names for {way!r} should be a set of names such as {{'a', 't1'}}, "
                            f"got {type_words(names)}")
        if not all(isinstance(n, str) for n in names):
            raise BadAnswer(f"the names for {way!r} should be strings, as in the dict build() returns")
        return frozenset(names)

    def read(self, answer):
        if is_placeholder(answer):
            raise Unanswered()
        if not isinstance(answer, dict):
            raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")
        missing = [w for w in WAYS if w not in answer]
        if missing:
            raise BadAnswer(f"the dict has no entry for {', '.join(map(repr, missing))}; its keys must be "
                            f"{', '.join(map(repr, WAYS))}")
        out = []
        for way in WAYS:
            pair = answer[way]
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise BadAnswer(f"the entry for {way!r} should be a pair (gradient, names), "
                                f"got {type_words(pair)}")
            out.append(_Way(way, self._gradient(way, pair[0]), self._names(way, pair[1])))
        return tuple(out)     # in WAYS order; a tuple, so that the manifest can store it

    def _close(self, a, b):
        return len(a) == len(b) and all(
            (math.isnan(x) and math.isnan(y)) or abs(x - y) <= self.tol * (1 + abs(x)) for x, y in zip(a, b))

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


@exercise(
    "03.three-ways",
    Function(returns=ThreeWays(), cases=_three_ways_cases, call=lambda fn, case, ns: fn(case.build)),
    prompt="Write three_ways(build): build() returns a fresh (out, t, named) each call, t an intermediate "
           "and named a dict of the leaves and t by name. Read d out / d t three ways, each on its own "
           "build: a hook on t and out.backward(); t.retain_grad() and out.backward(); "
           "torch.autograd.grad(out, t). Return {'hook': (g, names), 'retain_grad': (g, names), "
           "'autograd.grad': (g, names)}, names being the names in `named` whose .grad is not None after "
           "that way. Checked on generated programs.",
    explain="All three read the same gradient; they differ in what they leave behind. A hook stores "
            "nothing, but the backward() that fires it fills the leaves' .grad; retain_grad adds t's own; "
            "autograd.grad writes no .grad at all.",
)
def three_ways(case):
    out_ = {}
    for way in WAYS:
        out, t, named = case.build()
        if way == "hook":
            seen = []
            t.register_hook(lambda g: seen.append(g.detach().clone()))
            out.backward()
            g = seen[0]
        elif way == "retain_grad":
            t.retain_grad()
            out.backward()
            g = t.grad
        else:
            (g,) = torch.autograd.grad(out, t)
        out_[way] = (g, _stored(named))
    return out_


# --- exercise B: a watch for non-finite gradients -------------------------------------------

LR = 0.1
FAULTS = (float("nan"), float("inf"), float("-inf"))
DECOYS = (1e12, -1e12)


@dataclass
class LoopCase:
    """A seeded training loop with faults planted in the targets of some steps."""

    seed: int
    steps: int
    batch: int
    width: int
    faults: dict = field(default_factory=dict)   # step -> (row, value): nan, inf or -inf
    decoys: dict = field(default_factory=dict)   # step -> (row, value): large but finite
    output: str = "loop"

    @property
    def size(self) -> int:
        return self.steps

    @property
    def label(self) -> str:
        planted = (f"targets planted at steps {', '.join(map(str, sorted(self.faults)))}"
                   if self.faults else "no fault planted")
        return f"loop #{self.seed} ({self.steps} steps, {planted})"

    @staticmethod
    def _word(value):
        return "nan" if math.isnan(value) else "inf" if value == math.inf else "-inf" if value == -math.inf \
            else f"{value:g}"

    @property
    def source(self) -> str:
        plants = [f"target[{row}] = {self._word(v)} at step {s}" for s, (row, v) in sorted(self.faults.items())]
        plants += [f"target[{row}] = {self._word(v)} at step {s} (large, but finite)"
                   for s, (row, v) in sorted(self.decoys.items())]
        lines = [
            "hook, report = make_watch()",
            f"w = torch.randn({self.width}, requires_grad=True)      # seeded: loop #{self.seed}",
            f"for step in range({self.steps}):",
            f"    x, target = batch(step)               # {self.batch} x {self.width} and {self.batch}, seeded",
        ]
        lines += [f"    #   {p}" for p in plants] or ["    #   every target finite"]
        lines += [
            "    h = x * w",
            "    h.register_hook(hook)",
            "    loss = ((h.sum(1) - target) ** 2).mean()",
            "    loss.backward()",
            "    with torch.no_grad():",
            "        if w.grad.isfinite().all():       # a bad step is skipped",
            f"            w -= {LR} * w.grad.clamp(-1, 1)",
            "    w.grad = None",
            "report()",
        ]
        return "\n".join(lines)

    def fresh(self) -> dict[str, Any]:
        gen = torch.Generator().manual_seed(self.seed)
        w0 = torch.randn(self.width, generator=gen)
        xs = [torch.randn(self.batch, self.width, generator=gen) for _ in range(self.steps)]
        targets = [torch.randn(self.batch, generator=gen) for _ in range(self.steps)]
        for plan in (self.faults, self.decoys):
            for step, (row, value) in plan.items():
                targets[step][row] = value
        return {"w0": w0, "xs": xs, "targets": targets}

    def drawing(self, ns=None) -> str:
        cells = []
        for step in range(self.steps):
            if step in self.faults:
                cells.append(self._word(self.faults[step][1]))
            elif step in self.decoys:
                cells.append("big")
            else:
                cells.append("ok")
        width = max(4, *(len(c) + 1 for c in cells))
        return ("step:   " + "".join(f"{s:<{width}}" for s in range(self.steps))).rstrip() + "\n" + \
            ("target: " + "".join(f"{c:<{width}}" for c in cells)).rstrip()

    def __repr__(self):
        return f"<{self.label}>"


def _loop_cases():
    rng = random.Random(3031)
    cases = []
    plans = ("none", "nan", "inf", "mixed", "inf-only", "late")
    for i in range(24):
        steps = 3 + i + rng.randint(0, 2)
        plan = plans[i % len(plans)]
        how_many = {"none": 0, "nan": 1, "inf": 1, "mixed": 2, "inf-only": 3, "late": 1}[plan]
        pool = list(range(1 if plan != "late" else steps // 2, steps))
        fault_steps = sorted(rng.sample(pool, min(how_many, len(pool))))
        if plan == "nan" and i >= 12:
            fault_steps = [0]     # a fault at the very first step
        batch, width = rng.randint(3, 6), rng.randint(2, 4)
        faults = {}
        for j, step in enumerate(fault_steps):
            if plan == "nan":
                value = FAULTS[0]
            elif plan in ("inf", "inf-only"):
                value = FAULTS[1 + rng.randrange(2)]
            elif plan == "mixed":
                value = FAULTS[1 + rng.randrange(2)] if j == 0 else FAULTS[0]
            else:
                value = rng.choice(FAULTS)
            faults[step] = (rng.randrange(batch), value)
        decoys = {}
        if plan in ("none", "late", "inf") or rng.random() < 0.3:
            free = [s for s in range(steps) if s not in faults]
            for step in rng.sample(free, min(len(free), 1 + rng.randrange(2))):
                decoys[step] = (rng.randrange(batch), rng.choice(DECOYS))
        cases.append(LoopCase(seed=3031 + i, steps=steps, batch=batch, width=width, faults=faults,
                              decoys=decoys))
    cases.sort(key=lambda c: (c.steps, c.seed))
    return cases


def _train(ns, hook=None, at_step=None):
    """Run the loop; returns (w.grad after each step, whether h's gradient was finite at each step)."""
    with torch.enable_grad():    # whatever make_watch() did to grad mode; the sandbox reports that
        return _steps(ns, hook, at_step)


def _steps(ns, hook, at_step):
    w = ns["w0"].clone().requires_grad_()
    grads, finite = [], []
    for step, (x, target) in enumerate(zip(ns["xs"], ns["targets"])):
        if at_step is not None:
            at_step(step)
        h = x * w
        h.register_hook(lambda g: finite.append(bool(torch.isfinite(g).all())))
        if hook is not None:
            h.register_hook(hook)
        loss = ((h.sum(1) - target) ** 2).mean()
        loss.backward()
        grads.append(w.grad.detach().clone())
        with torch.no_grad():
            if torch.isfinite(w.grad).all():
                w -= LR * w.grad.clamp(-1, 1)
        w.grad = None
    return grads, finite


def _same(a, b):
    return a.shape == b.shape and bool(((a == b) | (a.isnan() & b.isnan())).all())


class Watched(NamedTuple):
    """What a watch did on one loop: the step its report named, and what it should not have done."""

    reported: Any
    problems: tuple = ()
    bad: tuple = ()         # in torch's answer: every step whose gradient was non-finite

    def __repr__(self):
        return f"a watch whose report() gave {short(self.reported, 60)}"


class _StepWriter(CappedWriter):
    """Stands in for stdout and stderr during the loop, noting at which step anything was printed."""

    def __init__(self):
        super().__init__()
        self.step, self.steps = None, []

    def at(self, step):
        self.step = step

    def write(self, text):
        text = str(text)
        if self.step is not None and text.strip():
            self.steps.append(self.step)
        return super().write(text)

    def flush(self):
        pass

    def isatty(self):
        return False


def _run_watch(fn, case, ns):
    made = fn()
    if not (isinstance(made, (tuple, list)) and len(made) == 2 and all(callable(m) for m in made)):
        return Watched(None, (f"make_watch() returned {short(made)}; it must return a pair "
                              "(hook, report) of functions",))
    hook, report = made
    clean, finite = _train(case.fresh())
    first_bad = next((step for step, ok in enumerate(finite) if not ok), None)
    writer, problems, watched = _StepWriter(), [], None
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = writer
    try:
        try:
            watched, _ = _train(ns, hook, at_step=writer.at)
        except Exception as exc:
            problems.append(f"the hook raised {describe_exception(exc)} at step {writer.step}; a watch "
                            "reports and lets training go on")
        writer.at(None)
        try:
            reported = report()
        except Exception as exc:
            reported = None
            problems.append(f"report() raised {describe_exception(exc)}")
    finally:
        sys.stdout, sys.stderr = saved
    if writer.kept:
        saved[0].write("".join(writer.kept))
    early = [s for s in writer.steps if first_bad is None or s < first_bad]
    if early:
        when = "while every gradient was finite" if first_bad is None else \
            f"before the first non-finite gradient (step {first_bad})"
        problems.insert(0, f"it printed at step {early[0]}, {when}: a watch stays silent until then")
    if watched is not None:
        changed = next((s for s, (a, b) in enumerate(zip(clean, watched)) if not _same(a, b)), None)
        if changed is not None:
            problems.insert(0, f"the gradient reaching w differs from an unwatched run at step {changed}: "
                               "a hook that returns a tensor replaces the gradient (so does an in-place "
                               "edit of g); a watch returns None")
    return Watched(reported, tuple(problems))


class StepReport(Kind):
    """The step a watch reported (an int, or None for 'never'), and whether it kept quiet and hands off."""

    label = "the first step with a non-finite gradient, or None"

    def describe(self):
        return "report() returning the first step (an int, counting from 0) or None"

    def read(self, answer):
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


@exercise(
    "03.nonfinite-watch",
    Function(returns=StepReport(), cases=_loop_cases, call=lambda fn, case, ns: _run_watch(fn, case, ns),
             per_case_s=3.0),
    prompt="Write make_watch(): it returns (hook, report). hook is registered on an intermediate once per "
           "training step; it must print nothing, raise nothing and return None (leave the gradient as it "
           "is) until it sees a gradient with a NaN or an infinity, and remember the step (the first call "
           "is step 0). report() returns the first such step, or None if there was none. Checked on "
           "generated loops with faults planted at random steps.",
    explain="A hook runs on every backward pass, so it can test a condition cheaply and stay silent "
            "otherwise; torch.isfinite catches NaN and both infinities at once. Returning None is what "
            "keeps a watch from becoming an edit.",
)
def nonfinite_watch(case):
    ns = case.fresh()
    bad, calls = [], 0

    def watch(g):
        nonlocal calls
        if not bool(torch.isfinite(g).all()):
            bad.append(calls)
        calls += 1

    _train(ns, watch)
    return Watched(bad[0] if bad else None, (), tuple(bad))
