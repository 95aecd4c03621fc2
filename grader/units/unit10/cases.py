"""Exercise 10.diagnose's generated cases: training programs with at most one planted fault.

:func:`generate_audit_case` writes one program from a seed with :mod:`grader.units.unit10.capstone`'s
:func:`~grader.units.unit10.capstone.random_spec`, :func:`~grader.units.unit10.capstone.random_fault` and
:func:`~grader.units.unit10.capstone.render`; :func:`cases` keeps those whose intended version trains and whose
fault shows. The planted fault stays on the :class:`AuditCase` and never reaches the program a learner is given.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field, replace
from typing import Any

from grader.engine.cases import Case
from grader.units.unit10.capstone import (
    CARRIED,
    DETACHED,
    FACTS,
    IN_PLACE,
    KINDS,
    NO_FAULT,
    NO_GRAD,
    NOT_CLEARED,
    REBOUND,
    STALE,
    Fault,
    Spec,
    TrainingProgram,
    audit,
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


def respelled(
    rng: random.Random, kind: str, spec: Spec, fault: Fault | None, turn: int = 0
) -> tuple[Spec, Fault | None]:
    """The same program in spellings drawn per case (issue 45: a regex over the lines passed every case, because
    each fault had one spelling and each harmless line another). Each fault also comes without its usual words
    (a detach as .data, no_grad as set_grad_enabled, a dropped detach() call, zero_grad without its call, an
    in-place write through copy_, a carried state kept in a list or a dict or carried by torch.lerp), and the
    harmless lines take the faults' words (an add_ or sub_ on a value nothing saved, a no_grad block with the
    encoder in it, a parameter rebound to itself after the optimizer, a number taken from the encoder before the
    loop, clearing without zero_grad, a state detached in place or where it is read). ``turn`` (the case's place
    among its kind's) takes each form in turn."""
    seq = spec.template == "sequence"
    spec = replace(
        spec,
        enc_op=rng.choice(["@", "matmul"]),
        shift_form=rng.choice(["+=", "add_", "sub_"]),
        # a cached or no_grad encoder is written without the shift's lines: its intended program has none either
        shift=kind not in (STALE, NO_GRAD) and (spec.shift or rng.random() < 0.5),
        carry=("axpy", "lerp", "list", "dict")[turn % 4] if seq else "axpy",
        detach_form=("line", "inplace", "read")[turn % 3] if seq else "line",
        clear_form=("zero_grad", "none_loop", "zeros")[turn % 3],
        rebind_decoy=kind != REBOUND and rng.random() < 0.35,
        probe=rng.random() < 0.35,
        init_norm=kind != STALE and rng.random() < 0.35,
    )
    if spec.carry in ("list", "dict") and spec.clamp_state:
        spec = replace(spec, clamp_state=False)  # the clamp writes the state by its name
    if kind == CARRIED:
        spec = replace(spec, detach_form="line")  # a state detached where it is read carries nothing
    if fault is None:
        return spec, None
    if kind == DETACHED:
        fault = replace(fault, form=("data", "call", "line", "copy", "data")[turn % 5])
    elif kind == NO_GRAD:
        fault = replace(fault, form=("set_grad", "")[turn % 2])
    elif kind == CARRIED:
        fault = replace(fault, form=("bare", "", "bare", "")[turn % 4])
    elif kind == NOT_CLEARED:
        fault = replace(fault, form=("attribute", "")[turn % 2])
    elif kind == IN_PLACE:
        if turn % 5 == 4 and seq:
            spec = replace(spec, clamp_state=True, carry="axpy")
            fault = replace(fault, form="state")
        else:
            fault = replace(fault, form="features", op=("copy", "+=", "method", "+=")[turn % 4])
            spec = replace(spec, post=spec.post or ("add", 0.1))
    return spec, fault


def generate_audit_case(seed: int, kind: str, turn: int = 0) -> AuditCase:
    rng = random.Random(seed)
    spec = random_spec(rng, kind)
    spec, fault = random_fault(rng, kind, spec)
    spec, fault = respelled(rng, kind, spec, fault, turn)
    title = f"program #{seed}"
    return AuditCase(seed, render(spec, fault, title), render(spec, None, title + ", as intended"), fault)


def search_cases(per_kind: int = 5, decoys: int = 8, seed: int = 1010) -> list[tuple[int, str, int]]:
    """(seed, kind, turn) for ``per_kind`` programs of each fault kind and ``decoys`` without a fault. A program
    is kept only if its intended version trains (every quantity holds against the reference), its planted fault
    shows in at least one of those quantities, and the grader's audit names it. The search runs each candidate
    twice through prove and once through the audit (seconds); :data:`CHOSEN` keeps what it picks."""
    wanted = [(k, i) for k in KINDS for i in range(per_kind)] + [(NO_FAULT, i) for i in range(decoys)]
    found, sources = [], set()
    attempt = 0
    for kind, turn in wanted:
        for _ in range(200):
            attempt += 1
            case = generate_audit_case(seed * 1000 + attempt, kind, turn)
            if case.program.source in sources:
                continue
            clean = prove(case.clean).facts
            faulty = prove(case.program).facts
            if clean == frozenset(FACTS) and (kind == NO_FAULT) == (faulty == frozenset(FACTS)) and _named(case):
                break
        else:
            raise RuntimeError(f"no program of {kind!r} in spelling {turn} shows its fault")
        sources.add(case.program.source)
        found.append((case.seed, kind, turn))
    return found


def _named(case: AuditCase) -> bool:
    """The grader's audit names the planted kind (a spelling it cannot tell apart is not a case)."""
    try:
        return audit(case.program).kind == case.planted
    except Exception:
        return False


# What search_cases() picks: (program seed, kind, turn). tests/test_unit10.py checks that the search still picks
# exactly these (it takes seconds; rebuilding the picks, a fraction of one).
CHOSEN: tuple = (
    (1010001, DETACHED, 0),
    (1010002, DETACHED, 1),
    (1010004, DETACHED, 2),
    (1010007, DETACHED, 3),
    (1010008, DETACHED, 4),
    (1010009, NO_GRAD, 0),
    (1010010, NO_GRAD, 1),
    (1010011, NO_GRAD, 2),
    (1010012, NO_GRAD, 3),
    (1010013, NO_GRAD, 4),
    (1010015, STALE, 0),
    (1010016, STALE, 1),
    (1010017, STALE, 2),
    (1010018, STALE, 3),
    (1010019, STALE, 4),
    (1010020, IN_PLACE, 0),
    (1010021, IN_PLACE, 1),
    (1010022, IN_PLACE, 2),
    (1010023, IN_PLACE, 3),
    (1010024, IN_PLACE, 4),
    (1010025, CARRIED, 0),
    (1010026, CARRIED, 1),
    (1010027, CARRIED, 2),
    (1010028, CARRIED, 3),
    (1010029, CARRIED, 4),
    (1010030, REBOUND, 0),
    (1010031, REBOUND, 1),
    (1010032, REBOUND, 2),
    (1010033, REBOUND, 3),
    (1010034, REBOUND, 4),
    (1010035, NOT_CLEARED, 0),
    (1010036, NOT_CLEARED, 1),
    (1010037, NOT_CLEARED, 2),
    (1010038, NOT_CLEARED, 3),
    (1010039, NOT_CLEARED, 4),
    (1010040, NO_FAULT, 0),
    (1010041, NO_FAULT, 1),
    (1010042, NO_FAULT, 2),
    (1010043, NO_FAULT, 3),
    (1010044, NO_FAULT, 4),
    (1010045, NO_FAULT, 5),
    (1010046, NO_FAULT, 6),
    (1010047, NO_FAULT, 7),
)


def cases() -> list[AuditCase]:
    """The exercise's programs, rebuilt from :data:`CHOSEN`, smallest first."""
    return sorted((generate_audit_case(s, k, t) for s, k, t in CHOSEN), key=lambda c: (c.size, c.seed))


def programs() -> list[TrainingProgram]:
    """The exercise's programs as a learner is given them, smallest first: what ``diagnose`` is handed, without the
    case around it (the planted fault, the program as intended), which the notebook never needs."""
    return [case.program for case in cases()]


@functools.cache
def _case_list() -> tuple[AuditCase, ...]:
    return tuple(cases())


def exercise_cases() -> list[AuditCase]:
    """The cases of exercise 10.diagnose: :func:`cases`, generated once per process."""
    return list(_case_list())
