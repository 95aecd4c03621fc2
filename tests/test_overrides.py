"""A teaching assistant's overrides: applied to the points, shown in every output, never silent, checked on load.

No notebook runs here: the graded submission is made from recorded events, as the grading run recomputes it.
"""

from pathlib import Path

import pytest

from grader.engine.question import get
from grader.engine.store import Event
from grader.instructor.grading import gradebook, overrides, report, scores
from grader.instructor.grading import verify as vs
from grader.instructor.grading.pipeline import GradedSubmission, Submission
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent


def graded(learner="frank", predicted="MulBackward0"):
    """Unit 01 for one learner: 01.pow-node predicted (wrong by default) and the graph walker failing."""
    q = get("01.graph-walk")
    exercises = {q.qid: vs.ExerciseVerdict("incorrect", "case 1 differs from torch", case=0, got=[])}
    events = [
        Event(1, 1.0, "01", "01.pow-node", "predict", predicted, "recorded", "", "s", {}),
        Event(2, 2.0, "01", "01.pow-node", "reveal", None, "incorrect", "", "s", {}),
        Event(3, 3.0, "01", q.qid, "check", None, "incorrect", "", "s", {}),
    ]
    return GradedSubmission(
        Submission(learner, Path(f"/nowhere/{learner}_01.ipynb")),
        units=[vs.recompute("01", events, exercises)],
        isolation="none",
        unit="01",
    )


def load(tmp_path, text):
    path = tmp_path / "overrides.csv"
    path.write_text(text, encoding="utf-8")
    return overrides.load(path)


def test_without_overrides_nothing_changes(tmp_path):
    row = gradebook.rows_of(graded(), feedback=True)[0]
    assert "overrides" not in row and row["_feedback"]["01.pow-node"]["points"] == 1


def test_points_awarded_change_the_points_and_are_shown_everywhere(tmp_path):
    changes = load(tmp_path, "learner,question,points,reason\nfrank,01.graph-walk,3,handed in on paper\n")
    plain = gradebook.rows_of(graded(), feedback=True)[0]
    rows = gradebook.rows_of(graded(), feedback=True, overrides=changes)
    row = rows[0]
    assert row["points"] == plain["points"] + 3
    assert row["01.graph-walk"] == plain["01.graph-walk"]  # the verdict stays torch's
    assert row["marked passed"] == "no"
    assert "01.graph-walk: 0 -> 3 points" in row["overrides"] and "handed in on paper" in row["overrides"]
    assert row["_feedback"]["01.graph-walk"]["points"] == 3
    gradebook.write_csv(rows, tmp_path / "g.csv")
    assert "handed in on paper" in gradebook.read_csv(tmp_path / "g.csv")[0]["overrides"]
    gradebook.write_wide(rows, tmp_path / "w.csv")
    wide = gradebook.read_csv(tmp_path / "w.csv")[0]
    assert wide["01 points"] == str(row["points"]) and "handed in on paper" in wide["overrides"]
    page = gradebook.write_html(rows, tmp_path / "feedback")[0].read_text()
    assert "Override:" in page and "handed in on paper" in page and "teaching assistant" in page
    report.write_report(rows, [], tmp_path / "r.html")
    assert "id='overrides'" in (tmp_path / "r.html").read_text() and "handed in on paper" in page


PAID = scores.Weights(role={**scores.DEFAULTS, "correctness": 1.0})  # a class that pays a prediction's correctness


def test_an_accepted_answer_counts_for_every_learner_who_gave_it_and_only_them(tmp_path):
    changes = load(
        tmp_path, 'learner,question,accept,reason\n*,01.pow-node,"""MulBackward0""",the same node read another way\n'
    )
    frank = gradebook.rows_of(graded("frank"), weights=PAID, overrides=changes)[0]
    gina = gradebook.rows_of(graded("gina", predicted="AddBackward0"), weights=PAID, overrides=changes)[0]
    assert frank["points"] == 2 and "the same node read another way" in frank["overrides"]
    assert gina["points"] == 1 and "overrides" not in gina
    assert changes.unused([frank, gina]) == []


def test_an_answer_as_the_page_shows_it_is_accepted_too(tmp_path):
    changes = load(tmp_path, "learner,question,accept,reason\nfrank,01.pow-node,MulBackward0,ok\n")
    assert gradebook.rows_of(graded(), weights=PAID, overrides=changes)[0]["points"] == 2


def test_an_override_that_matched_nobody_is_warned_of(tmp_path):
    changes = load(tmp_path, "learner,question,points,reason\nfrnak,01.graph-walk,3,typo\n")
    rows = gradebook.rows_of(graded(), overrides=changes)
    assert "overrides" not in rows[0]
    (warning,) = changes.unused(rows)
    assert "line 2" in warning and "frnak" in warning


@pytest.mark.parametrize(
    "text, words",
    [
        ("learner,question,points,reason\nfrank,01.nope,1,x\n", "not a question"),
        ("learner,question,points,reason\nfrank,01.graph-walk,3,\n", "reason"),
        ("learner,question,points,reason\nfrank,01.graph-walk,9,x\n", "0 to 4"),
        ("learner,question,points,reason\nfrank,01.graph-walk,lots,x\n", "number"),
        ("learner,question,points,reason\n*,01.graph-walk,1,x\n", "one learner"),
        ("learner,question,points,accept,reason\nfrank,01.pow-node,1,x,y\n", "exactly one"),
        ("learner,question,accept,reason\nfrank,01.graph-walk,x,y\n", "exercise"),
        ("who,what\nfrank,01.pow-node\n", "needs the columns"),
    ],
)
def test_a_wrong_overrides_file_says_what_is_wrong(tmp_path, text, words):
    with pytest.raises(overrides.OverridesError, match=words):
        load(tmp_path, text)


def test_the_cli_refuses_a_wrong_overrides_file_without_a_traceback(tmp_path):
    bad = tmp_path / "o.csv"
    bad.write_text("learner,question,points,reason\nfrank,01.nope,1,x\n")
    done = cli("grade", tmp_path, "--out", tmp_path / "g.csv", "--overrides", bad)
    assert done.returncode == 2 and "01.nope" in done.stderr and "Traceback" not in done.stderr


def test_the_weights_in_force_bound_the_points(tmp_path):
    weights = scores.Weights()
    weights.role["exercise"] = 10.0
    path = tmp_path / "o.csv"
    path.write_text("learner,question,points,reason\nfrank,01.graph-walk,9,x\n")
    assert overrides.load(path, weights).items[0].points == 9


def test_a_grade_run_applies_overrides_then_the_late_rule_and_shows_both(tmp_path):
    """One solved notebook graded by the command line: a TA takes a self-test's points away, it came 2 days late."""
    import nbformat

    (tmp_path / "ann").mkdir()
    nb = nbformat.read(ROOT / "solutions" / "00_start_here.ipynb", as_version=4)
    notebook = tmp_path / "ann" / "00_start_here.ipynb"
    nbformat.write(nb, notebook)
    (tmp_path / "times.csv").write_text(f"file,time\n{notebook},2026-03-03 12:00:00\n")
    (tmp_path / "o.csv").write_text(
        "learner,question,points,reason\nann,00.warmup-square,0,copied from a neighbour\nbob,00.warmup-square,1,x\n"
    )
    out, wide, pages = tmp_path / "g.csv", tmp_path / "w.csv", tmp_path / "fb"
    done = cli(
        "grade", tmp_path / "ann", "--out", out, "--wide", wide, "--html", pages, "--times", tmp_path / "times.csv",
        "--overrides", tmp_path / "o.csv", "--due", "2026-03-01", "--late-penalty", "10",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = gradebook.read_csv(out)
    full = float(row["max"])
    assert row["00.warmup-square"].startswith("correct")  # torch's verdict stands
    assert float(row["points"]) == scores.number((full - 2) * 0.8)
    assert "00.warmup-square: 2 -> 0 points" in row["overrides"] and row["days late"] == "2"
    assert "copied from a neighbour" in gradebook.read_csv(wide)[0]["overrides"]
    page = next(pages.iterdir()).read_text()
    assert "copied from a neighbour" in page and "2 day(s) late" in page
    assert "line 3" in done.stderr and "bob" in done.stderr  # the line that matched nobody


def test_a_regrade_of_one_learner_warns_only_of_lines_for_them_or_for_nobody(tmp_path):
    changes = load(
        tmp_path,
        "learner,question,points,reason\nfrank,01.graph-walk,3,a\ngina,01.graph-walk,1,b\nginna,01.graph-walk,1,c\n",
    )
    rows = gradebook.rows_of(graded("frank"), overrides=changes)
    everyone = {"frank", "gina"}
    (warning,) = changes.unused(rows, everyone)  # gina was graded earlier; ginna is no one
    assert "ginna" in warning
    assert len(changes.unused(rows)) == 2  # without the gradebook around it, both are unused


def test_an_override_for_a_learner_not_regraded_stops_the_regrade_and_one_already_shown_does_not(tmp_path):
    """A kept row cannot take a new override (it does not hold what each question earned): a regrade merged into a
    gradebook refuses, before anything runs, a line for a learner of the gradebook who is not graded now and
    whose rows do not show it; a line their rows already show (given to an earlier run) is fine."""
    (tmp_path / "dave").mkdir()
    (tmp_path / "dave" / "01_what_the_forward_pass_records.ipynb").symlink_to(tmp_path / "gone.ipynb")
    changes = load(tmp_path, "learner,question,points,reason\ncarol,01.graph-walk,3,on paper\n")
    grades = tmp_path / "grades.csv"
    regrade = ("grade", tmp_path / "dave", "--out", tmp_path / "dave.csv", "--merge-into", grades)
    gradebook.write_csv(gradebook.rows_of(graded("carol")), grades)  # graded before the line was written
    done = cli(*regrade, "--overrides", tmp_path / "overrides.csv")
    assert done.returncode == 2 and "carol is in the gradebook but not graded in this run" in done.stderr
    gradebook.write_csv(gradebook.rows_of(graded("carol"), overrides=changes), grades)  # graded with it
    again = cli(*regrade, "--overrides", tmp_path / "overrides.csv")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "on paper" in next(r for r in gradebook.read_csv(grades) if r["learner"] == "carol")["overrides"]


def test_a_regrade_writes_the_lms_file_beside_the_gradebook_merged_into_and_says_so(tmp_path):
    folder = tmp_path / "class"
    for name in ("dave", "carol"):
        (folder / name).mkdir(parents=True)
        (folder / name / "01_what_the_forward_pass_records.ipynb").symlink_to(tmp_path / "gone.ipynb")
    (tmp_path / "roster.csv").write_text("learner,student id\ndave,1\ncarol,2\n")
    grades = tmp_path / "grades.csv"
    common = ("--roster", tmp_path / "roster.csv", "--lms", "canvas")
    assert cli("grade", folder, "--out", grades, *common).returncode == 0
    uploaded = tmp_path / "grades-canvas.csv"
    uploaded.unlink()
    done = cli("grade", folder / "dave", "--out", tmp_path / "dave.csv", "--merge-into", grades, *common)
    assert done.returncode == 0, done.stderr[-2000:]
    assert uploaded.is_file() and not (tmp_path / "dave-canvas.csv").exists()
    assert len(uploaded.read_text(encoding="utf-8-sig").splitlines()) == 4, "the whole class: header, points, 2"
    assert done.stderr.strip().splitlines()[-1].endswith(f"canvas import file {uploaded}")
