"""A regrade merged into a gradebook, and a sharded run merged, leave every output complete: the long and wide
CSV, each regraded learner's whole feedback page (every unit, answers shown) and the whole class's report.

Nothing here runs a kernel: the gradebook regraded into is made from recomputed data (as tests/test_gradebook's
feedback page is), and the regrade is of a notebook that cannot run (a broken link gets its row unrun); what is
under test is what the outputs are built from."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from grader.engine.store import Event
from grader.instructor import cli
from grader.instructor.grading import gradebook, outputs, pipeline, shards
from grader.instructor.grading import verify as vs
from grader.instructor.grading.pipeline import GradedSubmission, Submission

WRONG = "MulBackward0"  # a wrong prediction for 01.pow-node (torch says PowBackward0)


def _unit01_rows(learner: str, notebook: Path) -> tuple[list[dict], list[dict]]:
    """(rows with their feedback, the report's facts) of a unit-01 copy with a wrong prediction."""
    events = [
        Event(1, 1.0, "01", "01.pow-node", "predict", WRONG, "recorded", "", "s", {}),
        Event(2, 2.0, "01", "01.pow-node", "reveal", None, "incorrect", "", "s", {}),
    ]
    out = GradedSubmission(
        Submission(learner, notebook), units=[vs.recompute("01", events, {})], isolation="none", unit="01"
    )
    facts = [{"learner": learner, "unit": "01", "wrong": {"01.pow-node": [[WRONG, ""]]}, "minutes": None}]
    return gradebook.rows_of(out, feedback=True), facts


def _class(tmp_path: Path, learners=("ann", "frank")) -> tuple[list[dict], list[dict]]:
    rows, facts = [], []
    for name in learners:
        r, f = _unit01_rows(name, tmp_path / "class" / name / "01_what_the_forward_pass_records.ipynb")
        rows, facts = rows + r, facts + f
    return rows, facts


def _totals(report: Path) -> tuple[str, str]:
    m = re.search(r"id='totals' data-learners='(\d+)' data-notebooks='(\d+)'", report.read_text())
    assert m, "the report has no totals"
    return m.group(1), m.group(2)


def _page(folder: Path, learner: str) -> str:
    return (folder / gradebook.page_name(learner)).read_text(encoding="utf-8")


def test_a_regrade_merged_into_a_gradebook_rebuilds_the_learners_page_and_the_class_report(tmp_path):
    rows, facts = _class(tmp_path)
    grades = tmp_path / "grades.csv"
    gradebook.write_csv(rows, grades)
    outputs.write(grades, rows, facts)
    regrade = tmp_path / "class" / "frank" / "00_start_here.ipynb"
    regrade.parent.mkdir(parents=True)
    regrade.symlink_to(tmp_path / "gone.ipynb")  # frank's unit 00, handed in late: a row, nothing to run
    feedback, report, wide = tmp_path / "feedback", tmp_path / "report.html", tmp_path / "wide.csv"

    pipeline.grade(
        [str(regrade)],
        tmp_path / "frank.csv",
        merge_into=grades,
        wide=wide,
        html_dir=feedback,
        report_to=report,
        progress_to=None,
    )
    merged = gradebook.read_csv(grades)
    assert sorted((r["learner"], r["unit"]) for r in merged) == [("ann", "01"), ("frank", "00"), ("frank", "01")]
    page = _page(feedback, "frank")
    assert "Unit 00" in page and "Unit 01" in page, "the learner's whole page, not the one unit regraded"
    assert WRONG in page and "PowBackward0" in page, "the earlier unit's answers, kept beside the gradebook"
    assert not (feedback / gradebook.page_name("ann")).exists(), "only the regraded learner's page is rewritten"
    assert _totals(report) == ("2", "3"), "the class report, from the merged gradebook"
    assert f"<code>{WRONG}</code> (2)" in report.read_text(), (
        "every learner's wrong answers, not only the regraded one's"
    )
    with open(wide, newline="") as f:
        assert sorted(r["learner"] for r in csv.DictReader(f)) == ["ann", "frank"]
    kept_facts, kept_feedback, note = outputs.read(grades)
    assert note == "" and len(kept_facts) == 2 and len(kept_feedback) == 2  # frank's unit 00 has no answers


def test_grade_merge_writes_every_output_a_single_run_does(tmp_path, capsys):
    names = ["ann", "frank", "gil", "hal"]
    parts = {1: [n for n in names if shards.shard_of(n, 2) == 1], 2: [n for n in names if shards.shard_of(n, 2) == 2]}
    assert parts[1] and parts[2], "the names fall in both shards"
    paths = []
    for i, mine in parts.items():
        rows, facts = _class(tmp_path, mine)
        part = tmp_path / f"part-{i}.csv"
        gradebook.write_csv(rows, part)
        outputs.write(part, rows, facts)
        shards.write_sidecar(part, (i, 2), names, mine, facts)
        paths.append(str(part))
    out, wide, feedback, report = (tmp_path / x for x in ("g.csv", "wide.csv", "feedback", "report.html"))
    code = cli.main(
        [
            "grade",
            "merge",
            *paths,
            "--out",
            str(out),
            "--wide",
            str(wide),
            "--html",
            str(feedback),
            "--report",
            str(report),
        ]
    )
    assert code == 0, capsys.readouterr().err
    with open(wide, newline="") as f:
        assert sorted(r["learner"] for r in csv.DictReader(f)) == names
    for name in names:
        assert WRONG in _page(feedback, name), f"{name}'s page shows their answers"
    assert _totals(report) == ("4", "4") and f"<code>{WRONG}</code> (4)" in report.read_text()
    assert outputs.read(out)[2] == "", "the merged gradebook keeps its outputs' data beside it too"


def test_a_gradebook_without_its_outputs_file_still_merges_and_says_what_is_missing(tmp_path):
    rows, _ = _class(tmp_path, ["ann"])
    grades = tmp_path / "grades.csv"
    gradebook.write_csv(rows, grades)  # written before outputs.json existed
    facts, feedback, note = outputs.read(grades)
    assert (facts, feedback) == ([], {}) and "no grades.csv.outputs.json" in note
    outputs.path_of(grades).write_text("{broken")
    assert "unreadable" in outputs.read(grades)[2]
    merged = outputs.attach(gradebook.read_csv(grades), {})
    assert [r["learner"] for r in merged] == ["ann"] and not merged[0].get("_feedback")


def test_a_regrade_whose_out_is_the_gradebook_it_merges_into_keeps_every_other_row(tmp_path):
    """README's recipe leaves --out at its default, grades.csv, the gradebook it merges into. The run wrote --out
    first, so the merge then read a gradebook of the one regraded row: stop 37's term walk lost 59 of 60 rows."""
    rows, facts = _class(tmp_path)
    grades = tmp_path / "grades.csv"
    gradebook.write_csv(rows, grades)
    outputs.write(grades, rows, facts)
    regrade = tmp_path / "class" / "frank" / "00_start_here.ipynb"
    regrade.parent.mkdir(parents=True)
    regrade.symlink_to(tmp_path / "gone.ipynb")
    pipeline.grade([str(regrade)], grades, merge_into=grades, progress_to=None)
    merged = gradebook.read_csv(grades)
    assert sorted((r["learner"], r["unit"]) for r in merged) == [("ann", "01"), ("frank", "00"), ("frank", "01")]
    kept_facts, _, note = outputs.read(grades)
    assert note == "" and len(kept_facts) == 2
