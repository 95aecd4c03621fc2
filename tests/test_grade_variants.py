"""Batch grading regrades each learner's own programs (grader.engine.variants in the gradebook).

A copy carries the numbers of its self-tests' programs as data; the gradebook regenerates each program from the
identity it grades (the learner's name here) outside the sandbox and recomputes torch's answer, so:

* two learners who wrote the solution's code are both graded right, each on their own program;
* a learner who pasted another learner's answer is marked wrong on their own program;
* a copy whose record says a wrong answer came first is graded on the program that followed it, and its record
  says so ("correct on attempt 2 (variant 2)");
* a copy of a version from before variants (``--handed-out 0.4.0``) is judged on the canonical programs.
"""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest

from grader.engine import identity, variants
from grader.engine.question import get
from grader.instructor.grading import pipeline

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "00_start_here.ipynb"
SQUARE = "00.warmup-square"
ANSWER_CELL = "c015"  # answer = ... then check("00.warmup-square", answer)


def truth_for(learner: str, number: int = 0):
    q = get(SQUARE)
    return q.kind.encode(q.run(variants.make(q.program, SQUARE, learner, number).program))


def with_answer(nb, answer, record=None):
    for cell in nb.cells:
        if cell.get("id") == ANSWER_CELL:
            cell.source = f'answer = {answer!r}\ncheck("{SQUARE}", answer)'
            cell.outputs = []
            if record is not None:
                data = {variants.RECORD_MIME: record, "text/plain": "record"}
                cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
    return nb


def _grade(folder: Path, **options) -> dict:
    out = folder / "grades.csv"
    pipeline.grade([str(folder)], out, jobs=2, progress_to=None, **options)
    with open(out, newline="", encoding="utf-8") as f:
        return {r["learner"]: r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("variants")
    solution = nbformat.read(SOLUTION, as_version=4)
    alice_answer = truth_for("alice")
    assert alice_answer != truth_for("bob"), "the two learners' programs must differ in their answers"
    wrong_first = truth_for("dave", 0) + 1000
    copies = {
        "alice": solution,  # the solution's code: it runs the learner's own program
        "bob": solution,
        "carol": with_answer(nbformat.read(SOLUTION, as_version=4), alice_answer),  # alice's answer, pasted
        "dave": with_answer(
            nbformat.read(SOLUTION, as_version=4),
            truth_for("dave", 1),
            {
                "qid": SQUARE,
                "variant": 1,
                "answers": [[0, wrong_first]],
                "identity": identity.fingerprint("dave"),
            },
        ),
    }
    for name, nb in copies.items():
        (folder / name).mkdir()
        nbformat.write(nb, folder / name / "00_start_here.ipynb")
    return _grade(folder), alice_answer


def test_two_learners_who_ran_their_own_programs_are_both_graded_right(graded):
    rows, _ = graded
    for learner in ("alice", "bob"):
        row = rows[learner]
        assert row["marked passed"] == "yes", row
        assert row[SQUARE] == "correct (variant 1)", row[SQUARE]


def test_an_answer_pasted_from_another_learner_is_wrong_on_ones_own_program(graded):
    rows, _ = graded
    carol = rows["carol"]
    assert carol[SQUARE].startswith("incorrect") and carol["marked passed"] == "no", carol[SQUARE]


def test_a_copy_that_answered_wrong_first_is_graded_on_the_program_that_followed(graded):
    dave = graded[0]["dave"]
    assert dave[SQUARE] == "correct on attempt 2 (variant 2)", (dave[SQUARE], dave["findings"])
    assert dave["marked passed"] == "yes"


def test_a_class_handed_a_version_before_variants_is_judged_on_the_canonical_program(tmp_path):
    (tmp_path / "erin").mkdir()
    old = with_answer(nbformat.read(SOLUTION, as_version=4), get(SQUARE).run())  # 0.4.0's one program: 6.0
    nbformat.write(old, tmp_path / "erin" / "00_start_here.ipynb")
    assert _grade(tmp_path, handed_out="0.4.0")["erin"][SQUARE] == "correct"
    assert _grade(tmp_path)["erin"][SQUARE].startswith("incorrect")  # today: erin's own program
