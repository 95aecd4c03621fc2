"""Copies made before a unit was split (04 into 04 and 04b, 09 into 09 and 09b) still work with today's course.

``tests/fixtures/before_split/`` holds the worked notebooks of 04 and 09 as release 0.4.0 had them (outputs
cleared): what a learner's finished copy in ``my-work/`` looked like then. Today's grader must run such a copy
top to bottom (its imports and old question ids resolve), record every answer under today's ids, and the
gradebook must grade it, handed out as 0.4.0, as both halves: each half on its own questions, the questions
that moved counted where they now are, only those added since excused.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from grader.engine import moves, progress
from grader.engine.question import of_unit
from grader.engine.store import Store
from grader.instructor.build import execute
from grader.instructor.grading import gradebook, pipeline, scores, versions

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "before_split"
BEFORE = "0.4.0"  # the release the fixtures come from
SPLIT = sorted(moves.SPLITS.items())  # (old unit, new unit)


def _fixture(unit: str) -> Path:
    (path,) = FIXTURES.glob(f"{unit}_*.ipynb")
    return path


def test_every_split_has_a_copy_from_before_it():
    assert SPLIT, "no unit has been split: this module has nothing to test"
    for old, new in SPLIT:
        assert _fixture(old).exists()
        assert new not in versions.released()[BEFORE] and old in versions.released()[BEFORE]


@pytest.mark.parametrize("old,new", SPLIT)
def test_an_old_copy_runs_and_records_todays_ids(old, new, tmp_path):
    execute(_fixture(old), strict=True, home=str(tmp_path))
    events = Store(tmp_path / "progress.sqlite3").events()
    current = {q.qid for u in (old, new) for q in of_unit(u)}
    recorded = {e.qid for e in events if e.qid}
    assert recorded and recorded <= current, sorted(recorded - current)
    moved_here = {q for q in moves.QUESTIONS.values() if q.startswith(f"{new}.")}
    assert moved_here <= recorded, sorted(moved_here - recorded)
    old_state = progress.unit_state(old, Store(tmp_path / "progress.sqlite3").events(old))
    new_state = progress.unit_state(new, Store(tmp_path / "progress.sqlite3").events(new))
    assert old_state.passed, "the old copy's mark_passed is 04's"
    assert new_state.passed, f"a mark of {old} written before the split reads as {new} passed too"
    assert all(new_state.questions[q].done for q in moved_here), [
        q for q in moved_here if not new_state.questions[q].done
    ]


@pytest.fixture(scope="module")
def graded_halves(tmp_path_factory):
    folder = tmp_path_factory.mktemp("before-split")
    for old, _ in SPLIT:
        (folder / "olga").mkdir(exist_ok=True)
        shutil.copy(_fixture(old), folder / "olga" / _fixture(old).name)
    out = folder / "grades.csv"
    pipeline.grade([str(folder / "olga")], out, jobs=2, progress_to=None, handed_out=BEFORE)
    with open(out, newline="", encoding="utf-8") as f:
        return {r["unit"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize("old,new", SPLIT)
def test_an_old_copy_is_graded_as_both_halves(old, new, graded_halves):
    rows = graded_halves
    assert {old, new} <= set(rows), sorted(rows)
    whole = rows[old]
    assert whole["run"] == "ok" and float(whole["points"]) == float(whole["max"]), whole["problems"]
    half = rows[new]
    assert half["run"] == "ok", half["problems"]
    added = set(versions.added_since(BEFORE, new))
    for q in of_unit(new):
        if q.qid in added:
            assert half[q.qid] == "not in this copy", (q.qid, half[q.qid])
        else:
            assert half[q.qid] not in ("not in this copy", "not answered"), (q.qid, half[q.qid])
    excused = sum(sum(scores.Weights().of(q.qid, q.role).values()) for q in of_unit(new) if q.qid in added)
    assert float(half["points"]) == pytest.approx(gradebook.unit_maximum(new, scores.Weights()) - excused)
