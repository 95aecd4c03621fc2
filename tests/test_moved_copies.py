"""Copies made before a unit was split (04 into 04 and 04b, 09 into 09 and 09b) still work with today's course.

``tests/fixtures/before_split/`` holds the worked notebooks of 04 and 09 as release 0.4.0 had them (outputs
cleared): what a learner's finished copy in ``my-work/`` looked like then. Today's grader must run such a copy
top to bottom (its imports and old question ids resolve), record every answer under today's ids, and the
gradebook must grade it, handed out as 0.4.0, as both halves: each half on its own questions, the questions
that moved counted where they now are, only those added since excused.

Beside them, progress stores that release 0.4.0's grader wrote (``NN_store-worked``: that copy run top to bottom;
``NN_store-partial``: a few predictions, reveals, a reset, hints and a refused mark), and what that grader read
in each (``stores-0.4.0.json``). Today's course must read every record under today's id, unchanged, without
rewriting the file.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import sqlite3
from pathlib import Path

import nbformat
import pytest

import grader
from grader.engine import moves, progress
from grader.engine.question import get, of_unit
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


# a self-test's check cell, answering the program the learner is asked now (torch's answer on it)
ANSWER_OWN = """from grader.engine.question import get as _get
from grader.learner.api import variant_of as _variant_of

_q = _get("{qid}")
answer = _q.kind.encode(_q.run(_variant_of(_q).program))
check("{qid}", answer)"""


# Exercises whose cases issue 45 (0.6.0) made refuse what 0.4.0's worked copy wrote: 04b.why-grad-none now draws a
# name rebound before the loss uses it (the copy took the first binding, and used unit 04's first_broken_edge of its
# own, which does too), and 09.half-guard keeps parameters as they are (the copy made a float16 copy of them, as
# 0.4.0's prompt asked). The copy is run with today's solution for them (and today's imports of unit 04b), and graded
# without their points.
STRICTER = {"04b.why-grad-none", "09.half-guard"}
TODAYS_IMPORTS = {
    "04b.why-grad-none": "from grader.probes import reachable_leaves\nfrom grader.probes.traces import first_broken_edge\n"
}


def _todays_solution(qid: str) -> str:
    """The code cell just before ``qid``'s check in today's worked notebook: its solution."""
    from grader.engine.course import UNITS

    unit = get(qid).unit
    today = nbformat.read(ROOT / "solutions" / f"{unit}_{UNITS[unit].slug}.ipynb", as_version=4)
    code = [c for c in today.cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if re.search(rf"""check\(\s*["']{re.escape(qid)}["']""", c.source))
    return TODAYS_IMPORTS.get(qid, "") + code[at - 1].source


def _answering_todays_programs(path: Path, folder: Path) -> Path:
    """The copy, its self-tests that draw their programs now answering the learner's own program: the answer typed
    in 0.4.0 was for the one program everyone was asked then, which today's learner is not asked (a copy from then is
    graded on that program: test_an_old_copy_is_graded_as_both_halves); the exercises of STRICTER answered with
    today's solution."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        asked = re.search(r"""check\(\s*["']([\w.-]+)["']""", cell.source) if cell.cell_type == "code" else None
        q = get(asked.group(1)) if asked else None
        if q is not None and q.program is not None:
            cell.source = ANSWER_OWN.format(qid=asked.group(1))
        elif q is not None and q.qid in STRICTER:
            cell.source = _todays_solution(q.qid) + "\n\n" + cell.source
    folder.mkdir()
    nbformat.write(nb, folder / path.name)
    return folder / path.name


@pytest.mark.parametrize("old,new", SPLIT)
def test_an_old_copy_runs_and_records_todays_ids(old, new, tmp_path):
    execute(_answering_todays_programs(_fixture(old), tmp_path / "copy"), strict=True, home=str(tmp_path))
    events = Store(tmp_path / "progress.sqlite3").events()
    current = {q.qid for u in (old, new) for q in of_unit(u)}
    recorded = {e.qid for e in events if e.qid}
    assert recorded and recorded <= current, sorted(recorded - current)
    moved_here = {q for q in moves.QUESTIONS.values() if q.startswith(f"{new}.")}
    assert moved_here <= recorded, sorted(moved_here - recorded)
    old_state = progress.unit_state(old, Store(tmp_path / "progress.sqlite3").events(old))
    new_state = progress.unit_state(new, Store(tmp_path / "progress.sqlite3").events(new))
    assert old_state.passed, "the old copy's mark_passed is 04's"
    # run today, its mark_passed("04") is a mark written after the split: it names 04 only (04b has questions the
    # copy never held); the questions that moved are done in the new half all the same
    assert not new_state.passed, f"a mark of {old} written today passed {new}, whose new questions were never asked"
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

    def stricter(unit):  # the points of the STRICTER exercises this copy's answer no longer earns
        return sum(sum(scores.Weights().of(q.qid, q.role).values()) for q in of_unit(unit) if q.qid in STRICTER)

    whole = rows[old]
    assert whole["run"] == "ok" and float(whole["points"]) == float(whole["max"]) - stricter(old), whole["problems"]
    half = rows[new]
    assert half["run"] == "ok", half["problems"]
    added = set(versions.added_since(BEFORE, new))
    for q in of_unit(new):
        if q.qid in added:
            assert half[q.qid] == "not in this copy", (q.qid, half[q.qid])
        else:
            assert half[q.qid] not in ("not in this copy", "not answered"), (q.qid, half[q.qid])
    excused = sum(sum(scores.Weights().of(q.qid, q.role).values()) for q in of_unit(new) if q.qid in added)
    maximum = gradebook.unit_maximum(new, scores.Weights())
    assert float(half["points"]) == pytest.approx(maximum - excused - stricter(new))


# --- a progress store written before the split ---------------------------------------------------------------

THEN = json.loads((FIXTURES / "stores-0.4.0.json").read_text(encoding="utf-8"))


def _old_ids(qid: str) -> list[str]:
    """``qid`` and every id it had before it moved."""
    return [qid] + [old for old in moves.QUESTIONS if old != qid and moves.current_id(old) == qid]


@pytest.mark.parametrize("kind", ["worked", "partial"])
@pytest.mark.parametrize("old,new", SPLIT)
def test_a_store_written_before_the_split_reads_every_record_under_todays_id(old, new, kind, tmp_path):
    path = tmp_path / "progress.sqlite3"
    shutil.copy(FIXTURES / f"{old}_store-{kind}.sqlite3", path)
    written = sqlite3.connect(path).execute("SELECT * FROM events ORDER BY id").fetchall()
    then = THEN[f"{old}_store-{kind}"]
    store = Store(path)
    read = set()
    for unit in (old, new):
        state = progress.unit_state(unit, store.events(unit))
        for qid, now in state.questions.items():
            before = [then["records"][o] for o in _old_ids(qid) if o in then["records"]]
            if before:
                assert now.record == before[0], (kind, qid, now.record, before[0])
                read.add(qid)
            else:  # added since 0.4.0
                assert now.record in ("not attempted", "not answered"), (kind, qid, now.record)
        assert state.passed == then["passed"], f"{unit}: a mark written before the split counts for both halves"
    assert {moves.current_id(q) for q in then["records"]} == read, "every record 0.4.0 read is read today"
    assert not [e for e in store.events() if e.qid and e.qid != moves.current_id(e.qid)], "old ids read as today's"
    assert sqlite3.connect(path).execute("SELECT * FROM events ORDER BY id").fetchall() == written, (
        "the migration reads; it never rewrites the file (0.4.0 can still open it)"
    )


@pytest.mark.parametrize("old,new", SPLIT)
def test_a_unit_wide_event_written_after_the_split_names_only_its_unit(old, new, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_LAB_HOME", str(tmp_path))
    monkeypatch.delenv("AUTOGRAD_LAB_STRICT", raising=False)
    grader.reset(old)  # today's course writes its version on a unit-wide event
    (event,) = Store(tmp_path / "progress.sqlite3").events(old)
    assert event.detail == {"course": grader.__version__}
    store = Store(tmp_path / "other.sqlite3")
    store.append(old, None, "mark", "passed", None, detail={"course": grader.__version__})
    assert progress.unit_state(old, store.events(old)).passed
    assert not progress.unit_state(new, store.events(new)).passed, f"marking {old} today must not pass {new}"
    store.append(old, None, "mark", "passed", None, detail={"course": "0.4.0"})
    assert progress.unit_state(new, store.events(new)).passed, "a mark written by 0.4.0 counts for both halves"
