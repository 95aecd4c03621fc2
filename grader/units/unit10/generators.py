"""Unit 10's self-test generators (grader.engine.variants): a training program with at most one planted fault,
written by :mod:`grader.units.unit10.capstone` from a seed, per learner and attempt. The canonical programs are
the four the self-tests asked before they had variants (programs A to D)."""

from __future__ import annotations

import random
from dataclasses import replace

from grader.engine.variants import Draw, Listing
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
    VERDICTS,
    Fault,
    Spec,
    TrainingProgram,
    prove,
    random_fault,
    random_spec,
    render,
)

SELF_A = render(
    Spec(
        template="batch",
        x=((0.3, 1.0), (-0.8, 0.5)),
        y=(0.2, -0.6),
        w_enc=((1.0, -0.3), (0.5, 0.6)),
        w_head=(-0.4, 0.8),
        steps=3,
        lr=0.2,
        zero_first=True,
    ),
    Fault(REBOUND, form="in loop", target="w_head"),
    "program A",
)
SELF_B = render(
    Spec(
        template="sequence",
        x=((1.0, 0.2), (0.7, -0.9), (-0.3, 1.1)),
        y=(0.5, 0.3, -0.4),
        w_enc=((1.2, 0.4), (-0.6, 0.9)),
        w_head=(0.8, 0.6),
        steps=3,
        lr=0.2,
        clamp_state=True,
    ),
    Fault(IN_PLACE, form="state"),
    "program B",
)
SELF_C = render(
    Spec(
        template="batch",
        x=((0.5, 0.5), (1.0, -1.0)),
        y=(0.3, 0.8),
        w_enc=((0.6, -0.2), (0.1, 0.7)),
        w_head=(1.0, -0.5),
        steps=3,
        lr=0.1,
        log=True,
    ),
    Fault(NOT_CLEARED),
    "program C",
)
SELF_D = render(
    Spec(
        template="sequence",
        x=((0.4, -0.7), (1.0, 0.6), (-0.9, 0.2)),
        y=(0.3, -0.5, 0.2),
        w_enc=((0.7, 0.5), (-0.3, 1.1)),
        w_head=(0.9, -0.4),
        steps=3,
        lr=0.2,
        retain=True,
        metric=True,
        log=True,
    ),
    None,
    "program D",
)

KIND_ASK = "Which fault does it have? One of " + ", ".join(repr(v) for v in VERDICTS) + "."


def _planted(seed: int, kinds: tuple, decoys: bool = False) -> TrainingProgram:
    """A program with one fault of ``kinds`` (or none), drawn from ``seed``: the first whose intended version
    trains and whose fault shows in what it measures (as the exercise's cases are kept)."""
    for attempt in range(50):
        rng = random.Random(f"{seed}/{attempt}")
        kind = rng.choice(kinds)
        spec = random_spec(rng, kind)
        if decoys:  # every harmless line the audit must see through
            spec = replace(
                spec,
                log=True,
                metric=rng.random() < 0.6,
                retain=spec.template == "sequence" and kind not in (STALE, CARRIED),
            )
        spec, fault = random_fault(rng, kind, spec)
        program = render(spec, fault, "your program")
        if prove(render(spec, None, "as intended")).facts != frozenset(FACTS):
            continue
        if (kind == NO_FAULT) == (prove(program).facts == frozenset(FACTS)):
            return program
    raise RuntimeError(f"no program with a fault of {kinds} came out of seed {seed}")


def _listing(program: TrainingProgram, ask: str) -> Listing:
    spec = program._spec
    decoys = {"retain": spec.retain, "log": spec.log, "metric": spec.metric, "shift": spec.shift}
    return Listing(
        program.source, ask, {"training": program, "decoys": decoys, "sequence": spec.template == "sequence"}
    )


def kind_a_program(d: Draw) -> Listing:
    """10.self-kind-a: the path from a parameter to the loss is broken: a rebound parameter, a detach, no_grad."""
    program = SELF_A if d.canonical else _planted(d.seed or 0, (REBOUND, DETACHED, NO_GRAD))
    return _listing(program, KIND_ASK)


def kind_b_program(d: Draw) -> Listing:
    """10.self-kind-b: what a graph keeps goes wrong: a saved tensor written in place, a graph made before the loop,
    a carried state never detached."""
    program = SELF_B if d.canonical else _planted(d.seed or 0, (IN_PLACE, STALE, CARRIED))
    return _listing(program, KIND_ASK)


def broken_c_program(d: Draw) -> Listing:
    """10.self-broken-c: which of the four measured quantities a planted fault (or none) breaks."""
    program = SELF_C if d.canonical else _planted(d.seed or 0, (*KINDS, NO_FAULT))
    ask = (
        "Which of these quantities does it break: '"
        + "', '".join(FACTS)
        + "'? Answer a set (set() for none). A quantity no step measured (a run that raises before its first step "
        "ends) counts as broken."
    )
    return _listing(program, ask)


def kind_d_program(d: Draw) -> Listing:
    """10.self-kind-d: every harmless line (a detached log, a no_grad metric, retain_graph on a detached state) next
    to a real fault, or none."""
    program = SELF_D if d.canonical else _planted(d.seed or 0, (NO_FAULT, NO_FAULT, NO_FAULT, *KINDS), decoys=True)
    return _listing(program, KIND_ASK)
