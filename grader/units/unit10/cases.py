"""Exercise 10.diagnose's generated cases: training programs with at most one planted fault.

:func:`generate_audit_case` writes one program from a seed with :mod:`grader.units.unit10.capstone`'s
:func:`~grader.units.unit10.capstone.random_spec`, :func:`~grader.units.unit10.capstone.random_fault` and
:func:`~grader.units.unit10.capstone.render`; :func:`cases` keeps those whose intended version trains and whose
fault shows. The planted fault stays on the :class:`AuditCase` and never reaches the program a learner is given.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any

from grader.engine.cases import Case
from grader.units.unit10.capstone import (
    FACTS,
    KINDS,
    NO_FAULT,
    Fault,
    TrainingProgram,
    checklist,
    prove,
    random_fault,
    random_spec,
    render,
    step_through,
)


@dataclass
class AuditCase(Case):
    """One generated program. The planted fault is kept here (for tests) and never put in the program."""

    seed: int
    program: TrainingProgram
    clean: TrainingProgram = field(repr=False)
    fault: Fault | None = field(repr=False, default=None)
    output: str = "program"
    drawing_label = None  # a class attribute, not a field: drawing() is headed "its graph"

    @property
    def planted(self) -> str:
        return self.fault.kind if self.fault else NO_FAULT

    @property
    def size(self) -> int:
        return len(self.program.lines)

    @property
    def label(self) -> str:
        return f"program #{self.seed} ({self.size} lines, {self.program.steps} steps)"

    @property
    def source(self) -> str:
        return self.program.listing()

    def fresh(self) -> dict[str, Any]:
        return {"program": self.program}

    def drawing(self, ns=None) -> str:
        try:
            return "the audit's readings (two steps):\n" + checklist(step_through(self.program, steps=2))
        except Exception as exc:  # a drawing must never stop a verdict
            return f"(the readings could not be taken: {type(exc).__name__})"

    def __repr__(self):
        return f"<{self.label}>"


def generate_audit_case(seed: int, kind: str) -> AuditCase:
    rng = random.Random(seed)
    spec = random_spec(rng, kind)
    spec, fault = random_fault(rng, kind, spec)
    title = f"program #{seed}"
    return AuditCase(seed, render(spec, fault, title), render(spec, None, title + ", as intended"), fault)


def cases(per_kind: int = 4, decoys: int = 5, seed: int = 1010) -> list[AuditCase]:
    """``per_kind`` programs for each fault kind and ``decoys`` without a fault, smallest first. A program
    is kept only if its intended version trains (every quantity holds against the reference) and its
    planted fault shows in at least one of those quantities."""
    wanted = [k for k in KINDS for _ in range(per_kind)] + [NO_FAULT] * decoys
    found, sources = [], set()
    attempt = 0
    for kind in wanted:
        while True:
            attempt += 1
            case = generate_audit_case(seed * 1000 + attempt, kind)
            if case.program.source in sources:
                continue
            clean = prove(case.clean).facts
            faulty = prove(case.program).facts
            if clean == frozenset(FACTS) and (kind == NO_FAULT) == (faulty == frozenset(FACTS)):
                break
        sources.add(case.program.source)
        found.append(case)
    return sorted(found, key=lambda c: (c.size, c.seed))


@functools.cache
def _case_list() -> tuple[AuditCase, ...]:
    return tuple(cases())


def exercise_cases() -> list[AuditCase]:
    """The cases of exercise 10.diagnose: :func:`cases` with its defaults, generated once per process."""
    return list(_case_list())
