"""Every exercise refuses every shortcut of its corpus (tests/shortcuts/): text-only readers, lookups, wrappers of
the reference op or API (and of the course's own answers), re-runs of the program, and the heuristics the units
warn against (issue 45). The corpus is walked in this process, each check stopping at the first case a shortcut
fails, which gives the same verdict as a full check."""

import re

import pytest

from grader.engine.exercises import run_exercise
from grader.engine.kinds import Function
from grader.engine.question import all_questions
from tests.shortcuts import OPEN, SHORTCUTS

EXERCISES = [q for q in all_questions() if isinstance(q.kind, Function)]
FAMILIES = ("text", "lookup", "wrapper", "rerun", "heuristic", "switch", "stack", "measure")


def test_every_exercise_has_shortcuts_each_named_by_its_family():
    assert {q.qid for q in EXERCISES} == set(SHORTCUTS)
    assert set(OPEN) <= set(SHORTCUTS)
    for qid, fns in SHORTCUTS.items():
        assert len(fns) >= 2, qid
        for fn in fns + OPEN.get(qid, []):
            doc = (fn.__doc__ or "") if not isinstance(fn, tuple) else (fn[0].__doc__ or "")
            family = re.match(r"\s*\[(\w+)\]", doc)
            assert family and family.group(1) in FAMILIES, f"{qid}: {getattr(fn, '__name__', fn)} names no family"


@pytest.mark.parametrize("q", EXERCISES, ids=lambda q: q.qid)
def test_every_shortcut_is_refused(q):
    for fn in SHORTCUTS[q.qid]:
        result = run_exercise(q, fn, first_failure=True)
        name = getattr(fn, "__name__", repr(fn))
        assert result.verdict == "incorrect", f"{q.qid}: {name} was not refused ({result.verdict}): {result}"
        assert "smallest failing case" in dict(result.rows), f"{q.qid}: {name}"


OPEN_CASES = [
    pytest.param(
        qid,
        fn,
        id=f"{qid}:{getattr(fn, '__name__', None) or fn[0].__name__}",
        marks=pytest.mark.xfail(
            strict=True, raises=AssertionError, reason="shortcut45: check does not refuse it yet (issue 45, item 4)"
        ),
    )
    for qid, fns in OPEN.items()
    for fn in fns
]


@pytest.mark.parametrize(("qid", "fn"), OPEN_CASES)
def test_open_shortcut_is_refused(qid, fn):
    """A shortcut check still passes: expected to fail until the grader refuses it, then it moves to SHORTCUTS."""
    q = next(q for q in EXERCISES if q.qid == qid)
    result = run_exercise(q, fn, first_failure=True)
    assert result.verdict == "incorrect", f"{qid}: {getattr(fn, '__name__', fn)} was not refused: {result}"
