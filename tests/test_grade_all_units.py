"""The gradebook tells the truth in every unit: one batch run over the whole course.

Three learners hand in all fourteen units:

* ``solved``: the course's own solution notebooks, as stored (outputs and all);
* ``untouched``: the learner notebooks exactly as ``notebooks/`` ships them;
* ``filled``: the learner notebooks with each cell a learner writes (a placeholder in ``notebooks/``)
  replaced by the solution's cell of the same id and every output cleared, for every unit with an
  exercise: what a learner who wrote the solution's code hands in.

Honest work passes with every point; absence earns nothing; an untouched notebook's run raises nowhere
(nbval-lax runs every one of its cells; grading runs those its verdicts need).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest

from grader.engine.course import UNITS
from grader.engine.kinds import Function
from grader.engine.question import of_unit
from grader.instructor.grading import pipeline
from grader.instructor.grading.exercise_sources import grader_owned

ROOT = Path(__file__).resolve().parent.parent
WITH_EXERCISES = [u for u in UNITS if any(isinstance(q.kind, Function) for q in of_unit(u))]


def filled_copy(unit: str) -> nbformat.NotebookNode:
    name = UNITS[unit].notebook
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    solved = {c.get("id"): c for c in nbformat.read(ROOT / "solutions" / name, as_version=4).cells}
    for cell in nb.cells:
        if cell.cell_type == "code" and not grader_owned(cell):
            cell.source = solved[cell.id].source
            cell.outputs, cell.execution_count = [], None
    return nb


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course")
    for learner in ("solved", "untouched", "filled"):
        (folder / learner).mkdir()
    for unit, info in UNITS.items():
        nbformat.write(
            nbformat.read(ROOT / "solutions" / info.notebook, as_version=4), folder / "solved" / info.notebook
        )
        nbformat.write(
            nbformat.read(ROOT / "notebooks" / info.notebook, as_version=4), folder / "untouched" / info.notebook
        )
        if unit in WITH_EXERCISES:
            nbformat.write(filled_copy(unit), folder / "filled" / info.notebook)
    out = folder / "grades.csv"
    pipeline.grade([str(folder)], out, jobs=2, html_dir=folder / "feedback", progress_to=None)
    with open(out, newline="", encoding="utf-8") as f:
        rows = {(r["learner"], r["unit"]): r for r in csv.DictReader(f)}
    return rows, folder


def _why(row) -> str:
    return json.dumps({k: row[k] for k in ("run", "points", "max", "problems", "findings")}, indent=1)[:3000]


@pytest.mark.parametrize("unit", list(UNITS))
def test_a_solution_notebook_passes_with_every_point(book, unit):
    row = book[0][("solved", unit)]
    assert row["marked passed"] == "yes", _why(row)
    assert float(row["points"]) == float(row["max"]) > 0, _why(row)
    assert row["run"] == "ok", _why(row)
    assert "differs" not in row["findings"], _why(row)


@pytest.mark.parametrize("unit", WITH_EXERCISES)
def test_a_copy_filled_with_the_solutions_code_passes_with_every_point(book, unit):
    row = book[0][("filled", unit)]
    assert row["marked passed"] == "yes", _why(row)
    assert float(row["points"]) == float(row["max"]) > 0, _why(row)
    for q in of_unit(unit):
        if q.role == "exercise":
            assert row[q.qid].startswith("correct"), (q.qid, row[q.qid], _why(row))


@pytest.mark.parametrize("unit", list(UNITS))
def test_an_untouched_notebook_earns_nothing_and_its_run_is_clean(book, unit):
    row = book[0][("untouched", unit)]
    assert row["marked passed"] == "no", _why(row)
    assert float(row["points"]) == 0, _why(row)
    assert int(row["correct"]) == 0, _why(row)
    for q in of_unit(unit):
        assert row[q.qid] == "not answered", (q.qid, row[q.qid])
    assert row["run"] == "ok", _why(row)  # no cell the grading run executes raises


def test_every_learner_has_a_feedback_page(book):
    pages = list((book[1] / "feedback").glob("*.html"))
    assert len(pages) == 3
