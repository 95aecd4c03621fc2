"""Absence and the answer key earn nothing; honest copies are not accused (issue: the gradebook tells the truth).

One batch run grades a class of hostile and odd notebooks; each test reads its learner's row.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import nbformat
import pytest

from grader.engine.question import of_unit
from grader.instructor.grading import copies, gradebook, pipeline, scores, versions

ROOT = Path(__file__).resolve().parent.parent
U00, U01, U02 = (
    "00_start_here.ipynb",
    "01_what_the_forward_pass_records.ipynb",
    "02_backward_and_why_gradients_add.ipynb",
)


def read(folder: str, name: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / folder / name, as_version=4)


def without(nb, keep) -> nbformat.NotebookNode:
    nb.cells = [c for c in nb.cells if keep(c)]
    return nb


def names_any(cell, qids) -> bool:
    return any(q in cell.source for q in qids)


def answer_key_copy() -> nbformat.NotebookNode:
    nb = read("notebooks", U00)
    for cell in nb.cells:
        if cell.cell_type == "code" and "answer = ..." in cell.source:
            call, qid = re.search(r'(predict|check)\("(\d\d[a-z]?\.[a-z0-9-]+)"', cell.source).groups()
            cell.source = (
                "from grader.engine.question import get\n"
                f"answer = get({qid!r}).kind.encode(get({qid!r}).run())\n"
                f"{call}({qid!r}, answer)"
            )
    return nb


def probe_copy() -> nbformat.NotebookNode:
    nb = read("solutions", U01)
    for cell in nb.cells:
        if cell.source.startswith("def graph_nodes"):
            cell.source = "def graph_nodes(t):\n    import sys\n    return sys.modules['grader.probes'].node_names(t)\n"
    return nb


def old_copy() -> nbformat.NotebookNode:
    """The learner notebook less two cells that belong to no question (an earlier commit had neither)."""
    nb = read("notebooks", U02)
    qids = [q.qid for q in of_unit("02")]
    plain = [c.id for c in nb.cells if c.cell_type == "code" and not names_any(c, qids) and "answer" not in c.source]
    gone = set(plain[3:5])
    return without(nb, lambda c: c.id not in gone)


def no_ids() -> dict:
    nb = json.loads((ROOT / "solutions" / U01).read_text(encoding="utf-8"))
    nb["nbformat_minor"] = 4
    for cell in nb["cells"]:
        cell.pop("id", None)
    return nb


CLASS = {
    "empty": {U00: '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'},
    "v3": {
        U00: json.dumps(
            {
                "nbformat": 3,
                "nbformat_minor": 0,
                "metadata": {},
                "worksheets": [
                    {"cells": [{"cell_type": "code", "input": "print(1)", "outputs": [], "language": "python"}]}
                ],
            }
        )
    },
    "noids": {U01: no_ids()},
    "gutted": {U00: without(read("solutions", U00), lambda c: not names_any(c, [q.qid for q in of_unit("00")]))},
    "partial": {
        U01: without(
            read("solutions", U01),
            lambda c: (
                not names_any(c, [q.qid for q in of_unit("01") if q.role != "predict"])
                and not c.source.startswith("def graph_nodes")
            ),
        )
    },
    "key": {U00: answer_key_copy()},
    "probe": {U01: probe_copy()},
    "older": {U02: old_copy()},
    "many": {
        U00: nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1") for _ in range(pipeline.CELL_CAP + 1)])
    },
    "diedlate": {U00: read("solutions", U00)},
}
CLASS["diedlate"][U00].cells.append(nbformat.v4.new_code_cell("import os\nos._exit(0)"))


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    for learner, books in CLASS.items():
        (folder / learner).mkdir()
        for name, nb in books.items():
            path = folder / learner / name
            if isinstance(nb, str):
                path.write_text(nb, encoding="utf-8")
            elif isinstance(nb, dict) and not isinstance(nb, nbformat.NotebookNode):
                path.write_text(json.dumps(nb), encoding="utf-8")
            else:
                nbformat.write(nb, path)
    out = folder / "grades.csv"
    pipeline.grade([str(folder)], out, jobs=2, cell_timeout=30, progress_to=None)
    with open(out, newline="", encoding="utf-8") as f:
        return {r["learner"]: r for r in csv.DictReader(f)}


def _why(row) -> str:
    return json.dumps({k: row.get(k) for k in ("run", "points", "max", "problems", "findings")}, indent=1)


@pytest.mark.parametrize("learner", ["empty", "v3", "many"])
def test_a_copy_whose_cells_cannot_be_matched_is_not_restored_and_not_scored(rows, learner):
    row = rows[learner]
    assert row["marked passed"] == "no", _why(row)
    assert row["run"] == pipeline.NOT_RESTORED, _why(row)
    assert float(row["points"]) == 0 and float(row["max"]) > 0, _why(row)
    assert "not graded:" in row["problems"], _why(row)


def test_a_copy_saved_without_cell_ids_is_graded_by_the_source_of_its_cells(rows):
    """nbformat 4.4 (Colab, older tools): the worked solution saved without ids earns what the solution earns."""
    row = rows["noids"]
    assert row["run"] == "ok" and row["marked passed"] == "yes", _why(row)
    assert float(row["points"]) == float(row["max"]) > 0, _why(row)
    assert "found by their source" in row["findings"], _why(row)


def test_a_copy_without_its_questions_counts_them_all(rows):
    row = rows["gutted"]
    assert row["marked passed"] == "no", _why(row)
    assert float(row["max"]) == gradebook.unit_maximum("00", scores.Weights()), _why(row)
    assert float(row["points"]) == 0, _why(row)
    assert row["not in copy"] == ""


def test_deleting_the_exercise_and_self_test_keeps_them_in_the_maximum(rows):
    row = rows["partial"]
    assert row["marked passed"] == "no", _why(row)
    assert float(row["points"]) < float(row["max"]) == gradebook.unit_maximum("01", scores.Weights()), _why(row)
    assert "missing" in row["problems"], _why(row)


def test_answers_taken_from_the_answer_key_earn_nothing_and_are_named(rows):
    row = rows["key"]
    assert row["marked passed"] == "no", _why(row)
    assert float(row["points"]) == 0, _why(row)
    assert "grader.engine.question" in row["findings"], _why(row)
    assert "sealed while grading" in row["findings"], _why(row)


def test_an_exercise_that_borrows_the_courses_probe_is_refused_and_named(rows):
    row = rows["probe"]
    assert not row["01.graph-walk"].startswith("correct"), _why(row)
    assert "sys.modules" in row["findings"], _why(row)


def test_an_older_copy_missing_cells_of_no_question_is_not_accused(rows):
    row = rows["older"]
    assert row["run"] == "ok", _why(row)
    assert "missing" not in row["problems"] and "edited" not in row["findings"], _why(row)


def test_a_kernel_that_dies_is_never_a_pass(rows):
    row = rows["diedlate"]
    assert row["run"] == "kernel died", _why(row)
    assert row["marked passed"] == "no", _why(row)
    assert "did not finish" in row["problems"], _why(row)


def test_only_questions_added_after_the_handed_out_version_may_be_absent(monkeypatch, tmp_path):
    nb = without(read("solutions", U00), lambda c: "00.warmup-flag" not in c.source)
    path = tmp_path / "dave" / U00
    path.parent.mkdir()
    nbformat.write(nb, path)
    sub = pipeline.find([str(tmp_path)])[0]
    assert pipeline.restore(sub).copy.absent == []  # no version named: it counts
    assert pipeline.restore(sub, "0.2.0").copy.absent == []  # 0.2.0 had it: it counts
    older = {u: [q for q in qs if q != "00.warmup-flag"] for u, qs in versions.current_entry().items()}
    released = {"0.1.9": older, **versions.released()}
    monkeypatch.setattr(versions, "released", lambda: released)
    restored = pipeline.restore(sub, "0.1.9")
    assert restored.copy.absent == ["00.warmup-flag"]
    assert restored.copy.missing == []
    with pytest.raises(versions.UnknownVersion):
        versions.check("9.9.9")


def test_the_current_version_lists_every_question():
    import grader

    assert versions.released()[grader.__version__] == versions.current_entry(), (
        "a question was added or removed: `python -m grader release-version X.Y.Z` writes the course's VERSION and "
        "its entry in versions.json"
    )


def test_copies_names_only_question_cells_as_missing():
    template = read("notebooks", U02).cells
    qids = [q.qid for q in of_unit("02")]
    plain = [c for c in template if c.cell_type == "code" and not names_any(c, qids)]
    held = copies.what_the_copy_holds(qids, [], template, [c for c in template if c is not plain[0]])
    assert held.missing == []
    asked = next(c for c in template if "reveal(" in c.source)
    held = copies.what_the_copy_holds(qids, [], template, [c for c in template if c is not asked])
    assert [cid for cid, _ in held.missing] == [asked.id]


def test_a_copy_handed_out_before_a_question_grades_without_it(monkeypatch, tmp_path):
    older = {u: [q for q in qs if q != "00.warmup-flag"] for u, qs in versions.current_entry().items()}
    released = {"0.1.9": older, **versions.released()}
    monkeypatch.setattr(versions, "released", lambda: released)
    nb = without(read("solutions", U00), lambda c: "00.warmup-flag" not in c.source)
    (tmp_path / "dave").mkdir()
    nbformat.write(nb, tmp_path / "dave" / U00)
    out = tmp_path / "grades.csv"
    pipeline.grade([str(tmp_path / "dave")], out, jobs=1, progress_to=None, handed_out="0.1.9")
    with open(out, newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["00.warmup-flag"] == "not in this copy" and row["not in copy"] == "00.warmup-flag", _why(row)
    assert row["run"] == "ok" and row["marked passed"] == "yes", _why(row)
    left_out = sum(scores.Weights().of("00.warmup-flag", "predict").values())  # the absent question's worth
    assert float(row["points"]) == float(row["max"]) == gradebook.unit_maximum("00", scores.Weights()) - left_out
    assert "not in this copy" in row["findings"]


def test_a_course_cell_that_catches_not_implemented_error_stays_the_courses():
    """Only build's marks make a cell the learner's: unit 11's c053 catches NotImplementedError and defines
    CubeBatched, which a later course cell subclasses (its definitions belong in the prelude)."""
    from grader.instructor.build import strip_solutions
    from grader.instructor.grading.exercise_sources import grader_owned

    caught = {"cell_type": "code", "source": "try:\n    f()\nexcept NotImplementedError as exc:\n    print(exc)"}
    stripped = strip_solutions("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n")
    assert grader_owned(caught)
    assert not grader_owned({"cell_type": "code", "source": stripped}), stripped
    c053 = next(c for c in read("notebooks", "11_writing_a_backward.ipynb").cells if c.get("id") == "c053")
    assert "NotImplementedError" in c053.source and grader_owned(c053)
