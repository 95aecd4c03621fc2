"""Unit 02's exercise cases: generated programs re-run by a ``forward()`` (``02.grad-timeline``) and non-scalar
outputs with the element whose seed is asked for (``02.isolating-seed``)."""

from __future__ import annotations

import functools
import math
import random
from typing import Any

import torch

from grader import probes
from grader.engine import torch_state
from grader.engine.cases import Case
from grader.engine.kinds import BadAnswer, stable_part, type_words
from grader.units import programs
from grader.units.unit02.support import leaf_grads

# the second batch's weight, never 1 or 2, so that a timeline that skips a step, or doubles the first, is wrong
BATCH_WEIGHTS = (0.5, 1.5, 2.5, -1.0, 3.0)


class TimelineCase(Case):
    """A generated program split into its leaves and a forward() that re-runs the rest on them.

    Each call of forward() is a new batch: its output is weighted by the case's weight for that call (1, then
    one of BATCH_WEIGHTS), so the gradient after two steps is not twice the first and only a function that
    really runs both steps gives it. ``fresh()['calls']`` counts the calls.
    """

    output = "out"
    drawing_label = None

    def __init__(self, program: programs.Program):
        self.program = program
        self.leaf_names = list(program.leaves)
        count = len(self.leaf_names)
        self._leaf_code = compile("\n".join(program.lines[:count]), f"<program #{program.seed}: leaves>", "exec")
        self._body_code = compile("\n".join(program.lines[count:]), f"<program #{program.seed}>", "exec")

    @property
    def size(self) -> int:
        return self.program.size

    @property
    def label(self) -> str:
        return self.program.label

    @property
    def weights(self) -> tuple[float, float]:
        """The weight of each step's batch: forward()'s k-th call returns weights[k] * out."""
        return 1.0, random.Random(self.program.seed).choice(BATCH_WEIGHTS)

    @property
    def leftover(self) -> dict[str, list[float]]:
        """In a third of the cases, what an earlier step left in the .grad of each leaf that requires grad: the
        first backward adds to it (issue 45: gradients taken with torch.autograd.grad and summed by hand, never
        reading .grad, passed every case)."""
        if self.program.seed % 3:
            return {}
        rng = random.Random(self.program.seed * 7 + 1)
        return {
            name: [rng.choice([-1, 1]) * rng.randint(1, 9) / 2 for _ in range(self._length)]
            for name, flag in self.program.leaves.items()
            if flag
        }

    @property
    def _length(self) -> int:
        ns: dict[str, Any] = {"torch": torch}
        exec(self._leaf_code, ns)
        return ns[self.leaf_names[0]].numel()

    @property
    def source(self) -> str:
        count = len(self.leaf_names)
        lines = self.program.lines
        first, second = self.weights
        left = [
            f"{name}.grad = torch.tensor({values})    # left by an earlier step"
            for name, values in self.leftover.items()
        ]
        return "\n".join(
            lines[:count]
            + left
            + [f"# forward() runs these lines on those leaves and returns weight * out: {first} on its first call,"]
            + [f"# {second} on its second (each step is a new batch)"]
            + lines[count:]
        )

    def fresh(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch}
        with torch_state.clean_room():
            exec(self._leaf_code, ns)
        leaves = {n: ns[n] for n in self.leaf_names}
        for name, values in self.leftover.items():
            leaves[name].grad = torch.tensor(values, dtype=leaves[name].dtype).reshape(leaves[name].shape)
        body = self._body_code
        weights = self.weights
        calls = [0]

        def forward():
            """The program once more on the leaves, on the next batch: its output times that batch's weight."""
            run = {"torch": torch, **leaves}
            exec(body, run)
            weight = weights[min(calls[0], len(weights) - 1)]
            calls[0] += 1
            return run["out"] * weight

        return {**leaves, "leaves": leaves, "forward": forward, "calls": calls}

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        ns = self.fresh()
        run = {"torch": torch, **ns["leaves"]}
        with torch_state.clean_room():
            exec(self._body_code, run)  # the program's own graph, without the batch's weight
        return probes.text_tree(run["out"], names=ns["leaves"])

    def __repr__(self):
        return f"<{self.label}>"


@functools.lru_cache(maxsize=1)
def timeline_cases() -> tuple:
    found = programs.programs(30, seed=202, max_ops=7, cuts=("detach", "no_grad", "item"), need_backward=True)
    return tuple(TimelineCase(p) for p in found)


def call_timeline(fn, case, ns):
    return fn(dict(ns["leaves"]), ns["forward"])


def timeline_result(raw, case, ns):
    """The learner's timeline, once the run it describes is shown to have happened: forward() called once per
    step (twice), and every leaf's .grad None afterwards, as an optimizer's zero_grad() leaves it."""
    calls = ns["calls"][0]
    if calls != 2:
        raise BadAnswer(
            f"your function called forward() {calls} time(s); each of the two steps calls it once (each call is a "
            "new batch, with its own weight)"
        )
    held = [n for n, t in ns["leaves"].items() if t.grad is not None]
    if held:
        raise BadAnswer(
            f"after your function returned, {', '.join(held)} still held a .grad: the third moment comes after "
            "an optimizer's zero_grad(), which your function must run"
        )
    return raw


def _values(rng: random.Random, shape: tuple) -> str:
    if not shape:
        return f"{rng.choice([-1, 1]) * rng.randint(1, 20) / 10:.1f}"
    return "[" + ", ".join(_values(rng, shape[1:]) for _ in range(shape[0])) + "]"


# (template, shape of a, shape of b, shape of out); {p}, {q} are sizes
_SEED_TEMPLATES = [
    ("out = a * b.sum()", "({n},)", "({m},)", "({n},)"),
    ("out = a.cumsum(0) * b", "({n},)", "({n},)", "({n},)"),
    ("out = a[:, None] * b.exp()", "({n},)", "({m},)", "({n}, {m})"),
    ("out = (a @ b).sin()", "({n}, {m})", "({m}, {n})", "({n}, {n})"),
    ("out = (a * b).t()", "({n}, {m})", "({m},)", "({m}, {n})"),
    ("out = a.view({n}, {m}) ** 2 + b", "({k},)", "({m},)", "({n}, {m})"),
    ("out = (a.flip(0) * b).transpose(0, 1)", "({n}, {m})", "({n}, 1)", "({m}, {n})"),
    ("out = a.view(2, {n}, {m}) * b", "({j},)", "({m},)", "(2, {n}, {m})"),
    ("out = (a @ b).t() * a.sum()", "({n}, {m})", "({m}, {p})", "({p}, {n})"),
]


class SeedCase(Case):
    """One non-scalar output ``out`` built from leaves a and b, and the index of the element to isolate."""

    output = "out"
    drawing_label = None

    def __init__(self, seed: int, template: int):
        rng = random.Random(seed)
        n, m, p = rng.choice([2, 3]), rng.choice([2, 3]), rng.choice([2, 3])
        if template in (4, 6) and n == m:
            m = 5 - n  # non-square, so row-major and column-major orders differ
        if template == 8 and n == p:
            p = 5 - n
        sizes = {"n": n, "m": m, "p": p, "k": n * m, "j": 2 * n * m}
        text, a_shape, b_shape, out_shape = (part.format(**sizes) for part in _SEED_TEMPLATES[template])
        self.seed, self.template = seed, template
        self.shape = eval(out_shape)
        numel = math.prod(self.shape)
        self.index = rng.randrange(numel)
        a_shape, b_shape = eval(a_shape), eval(b_shape)
        self.lines = [
            f"a = torch.tensor({_values(rng, a_shape)}, requires_grad=True)",
            f"b = torch.tensor({_values(rng, b_shape)}, requires_grad=True)",
            text,
        ]
        self._code = compile("\n".join(self.lines), f"<seed case #{seed}>", "exec")

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def label(self) -> str:
        return f"case #{self.seed}: out of shape {self.shape}, index {self.index}"

    @property
    def element(self) -> str:
        at, rest = [], self.index
        for dim in reversed(self.shape):
            at.append(rest % dim)
            rest //= dim
        return "out[" + ", ".join(str(i) for i in reversed(at)) + "]"

    @property
    def source(self) -> str:
        return "\n".join(
            self.lines
            + [
                f"# isolating_seed(out, {self.index}): out has shape {self.shape}; "
                f"out.flatten()[{self.index}] is {self.element}"
            ]
        )

    def fresh(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch}
        with torch_state.clean_room():
            exec(self._code, ns)
        ns.pop("__builtins__", None)
        return ns

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        ns = ns if ns is not None else self.fresh()
        return probes.text_tree(ns["out"], names={"a": ns["a"], "b": ns["b"]})

    def __repr__(self):
        return f"<{self.label}>"


@functools.lru_cache(maxsize=1)
def seed_cases() -> tuple:
    cases = [SeedCase(2000 + 17 * i + t, t) for t in range(len(_SEED_TEMPLATES)) for i in range(3)]
    return tuple(sorted(cases, key=lambda c: (c.size, len(c.shape), c.seed)))


def call_seed(fn, case, ns):
    return fn(ns["out"], case.index)


def seed_result(raw, case, ns):
    """Run out.backward(raw) on a fresh build of the case and read the leaves' gradients."""
    if not isinstance(raw, torch.Tensor):
        raise BadAnswer(f"a seed is a tensor shaped like out {case.shape}; the function returned {type_words(raw)}")
    fresh = case.fresh()
    with torch_state.clean_room():
        try:
            fresh["out"].backward(raw.detach())
        except Exception as exc:
            raise BadAnswer(
                f"out.backward(seed) raised {type(exc).__name__}: {stable_part(str(exc))} "
                f"(your seed has shape {tuple(raw.shape)}, out has shape {case.shape})"
            ) from None
    return leaf_grads({"a": fresh["a"], "b": fresh["b"]})
