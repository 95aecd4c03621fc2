"""Unit 03's exercise cases: generated programs with an intermediate to observe (``03.three-ways``), and
seeded training loops with non-finite targets planted at some steps (``03.nonfinite-watch``), with the
loop that runs a learner's watch on them."""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import probes
from grader.engine.cases import Case
from grader.engine.kinds import short
from grader.engine.limits import CappedWriter, describe_exception
from grader.units import programs
from grader.units.unit03.kinds import Watched


@dataclass
class ProgramWithIntermediate(Case):
    """A generated program, one of whose intermediates is the tensor to observe."""

    drawing_label = None  # a class attribute, not a field: drawing() is the program's graph

    program: programs.Program
    target: str  # the intermediate's name in the program
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


def three_ways_cases():
    found = []
    for prog in programs.programs(60, seed=303, max_ops=7, need_backward=True):
        ns = prog.fresh()
        on_path = set(probes.nodes(ns[prog.output]))
        candidates = [
            name
            for name in ns
            if name.startswith("t")
            and name[1:].isdigit()
            and isinstance(ns[name], torch.Tensor)
            and ns[name].grad_fn in on_path
        ]
        if not candidates:
            continue
        rng = random.Random(prog.seed)
        found.append(ProgramWithIntermediate(prog, rng.choice(candidates)))
    found.sort(key=lambda c: (c.size, c.program.seed))
    return found[:30]


LR = 0.1
FAULT_VALUES = (float("nan"), float("inf"), float("-inf"))
DECOYS = (1e12, -1e12)
# A target this far out in every row of a step gives h a gradient of about 3e38 / batch in every entry: each
# finite (float32 reaches 3.4e38), their sum not. A watch that tests g.sum() or g.norm() instead of every
# entry flags the step; so does any threshold on the size of a finite gradient.
HUGE = 1.5e38


@dataclass
class LoopCase(Case):
    """A seeded training loop with faults planted in the targets of some steps."""

    drawing_label = None  # a class attribute, not a field; drawing() is the targets step by step

    seed: int
    steps: int
    batch: int
    width: int
    faults: dict = field(default_factory=dict)  # step -> (row, value): nan, inf or -inf
    decoys: dict = field(default_factory=dict)  # step -> (row, value): large but finite
    huge: dict = field(default_factory=dict)  # step -> value: every row's target, finite, the gradient's sum not
    output: str = "loop"

    @property
    def size(self) -> int:
        return self.steps

    @property
    def label(self) -> str:
        planted = (
            f"targets planted at steps {', '.join(map(str, sorted(self.faults)))}"
            if self.faults
            else "no fault planted"
        )
        return f"loop #{self.seed} ({self.steps} steps, {planted})"

    @staticmethod
    def _word(value):
        return (
            "nan"
            if math.isnan(value)
            else "inf"
            if value == math.inf
            else "-inf"
            if value == -math.inf
            else f"{value:g}"
        )

    @property
    def source(self) -> str:
        plants = [f"target[{row}] = {self._word(v)} at step {s}" for s, (row, v) in sorted(self.faults.items())]
        plants += [
            f"target[{row}] = {self._word(v)} at step {s} (large, but finite)"
            for s, (row, v) in sorted(self.decoys.items())
        ]
        plants += [
            f"target[:] = {self._word(v)} at step {s} (every row: finite, but the gradient's entries sum past 3.4e38)"
            for s, v in sorted(self.huge.items())
        ]
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
        for step, value in self.huge.items():
            targets[step][:] = value
        return {"w0": w0, "xs": xs, "targets": targets}

    def drawing(self, ns=None) -> str:
        cells = []
        for step in range(self.steps):
            if step in self.faults:
                cells.append(self._word(self.faults[step][1]))
            elif step in self.decoys:
                cells.append("big")
            elif step in self.huge:
                cells.append("huge")
            else:
                cells.append("ok")
        width = max(4, *(len(c) + 1 for c in cells))
        return (
            ("step:   " + "".join(f"{s:<{width}}" for s in range(self.steps))).rstrip()
            + "\n"
            + ("target: " + "".join(f"{c:<{width}}" for c in cells)).rstrip()
        )

    def __repr__(self):
        return f"<{self.label}>"


def loop_cases():
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
            fault_steps = [0]  # a fault at the very first step
        batch, width = rng.randint(3, 6), rng.randint(2, 4)
        faults = {}
        for j, step in enumerate(fault_steps):
            if plan == "nan":
                value = FAULT_VALUES[0]
            elif plan in ("inf", "inf-only"):
                value = FAULT_VALUES[1 + rng.randrange(2)]
            elif plan == "mixed":
                value = FAULT_VALUES[1 + rng.randrange(2)] if j == 0 else FAULT_VALUES[0]
            else:
                value = rng.choice(FAULT_VALUES)
            faults[step] = (rng.randrange(batch), value)
        decoys = {}
        if plan in ("none", "late", "inf") or rng.random() < 0.3:
            free = [s for s in range(steps) if s not in faults]
            for step in rng.sample(free, min(len(free), 1 + rng.randrange(2))):
                decoys[step] = (rng.randrange(batch), rng.choice(DECOYS))
        huge = {}
        if i % 3 == 0:  # a third of the loops, the smallest among them: a huge step before any fault, or none
            free = [s for s in range(steps) if s not in faults and s not in decoys and s < min(faults, default=steps)]
            if free:
                huge[rng.choice(free)] = rng.choice((HUGE, -HUGE))
        cases.append(
            LoopCase(seed=3031 + i, steps=steps, batch=batch, width=width, faults=faults, decoys=decoys, huge=huge)
        )
    cases.sort(key=lambda c: (c.steps, c.seed))
    return cases


def run_loop(ns, hook=None, at_step=None, returned=None):
    """Run the loop; returns (w.grad after each step, whether h's gradient was finite at each step). With
    ``returned`` (a list), the steps at which ``hook`` returned something other than None are added to it."""
    with torch.enable_grad():  # whatever make_watch() did to grad mode; the sandbox reports that
        return _steps(ns, hook, at_step, returned)


def _returning(hook, returned: list, step: int):
    """``hook`` as registered, noting in ``returned`` when it hands back anything but None."""

    def watched(g):
        out = hook(g)
        if out is not None:
            returned.append((step, out))
        return out

    return watched


def _steps(ns, hook, at_step, returned=None):
    w = ns["w0"].clone().requires_grad_()
    grads, finite = [], []
    for step, (x, target) in enumerate(zip(ns["xs"], ns["targets"])):
        if at_step is not None:
            at_step(step)
        h = x * w
        h.register_hook(lambda g: finite.append(bool(torch.isfinite(g).all())))
        if hook is not None:
            h.register_hook(hook if returned is None else _returning(hook, returned, step))
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


def run_watch(fn, case, ns):
    made = fn()
    if not (isinstance(made, (tuple, list)) and len(made) == 2 and all(callable(m) for m in made)):
        return Watched(
            None, (f"make_watch() returned {short(made)}; it must return a pair (hook, report) of functions",)
        )
    hook, report = made
    writer, problems, watched, returned = _StepWriter(), [], None, []
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = writer
    try:
        try:
            watched, _ = run_loop(ns, hook, at_step=writer.at, returned=returned)
        except Exception as exc:
            problems.append(
                f"the hook raised {describe_exception(exc)} at step {writer.step}; a watch "
                "reports and lets training go on"
            )
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
    # the unwatched run only now: while the watch ran, no answer was held anywhere it could read
    clean, finite = run_loop(case.fresh())
    first_bad = next((step for step, ok in enumerate(finite) if not ok), None)
    early = [s for s in writer.steps if first_bad is None or s < first_bad]
    if early:
        when = (
            "while every gradient was finite"
            if first_bad is None
            else f"before the first non-finite gradient (step {first_bad})"
        )
        problems.insert(0, f"it printed at step {early[0]}, {when}: a watch stays silent until then")
    if watched is not None:
        changed = next((s for s, (a, b) in enumerate(zip(clean, watched)) if not _same(a, b)), None)
        if changed is not None:
            problems.insert(
                0,
                f"the gradient reaching w differs from an unwatched run at step {changed}: "
                "a hook that returns a tensor replaces the gradient (so does an in-place "
                "edit of g); a watch returns None",
            )
        elif returned:
            step, out = returned[0]
            problems.insert(
                0,
                f"the hook returned {short(out)} at step {step}: whatever a hook returns replaces the gradient, "
                "even a tensor equal to it (a copy of g is an edit that happens to change nothing); a watch "
                "returns None",
            )
    return Watched(reported, tuple(problems))
