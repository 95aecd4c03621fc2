"""The class report's ranking across units, its prompts in the page and an exercise's failing cases.

No notebook runs here: the rows and facts are made by hand, as a grading run makes them."""

import html
import re

from grader.engine.question import get, of_unit
from grader.instructor.grading import report
from grader.instructor.grading import verify as vs


def rows_for(unit, records):
    """One row per learner: every question of ``unit`` not attempted, except those in ``records``."""
    out = []
    for learner, mine in records.items():
        row = {"learner": learner, "unit": unit, "notebook": f"{learner}/{unit}.ipynb", "marked passed": "no"}
        row.update({q.qid: "not attempted" for q in of_unit(unit)})
        row.update(mine)
        out.append(row)
    return out


def a_class():
    rows = rows_for(
        "01",
        {
            "ann": {"01.pow-node": "predicted, incorrect"},
            "ben": {"01.pow-node": "predicted, correct", "01.graph-walk": "incorrect (2 attempts)"},
        },
    ) + rows_for(
        "02",
        {
            "ann": {"02.grad-timeline": "incorrect (1 attempts)", "02.accumulate-runs": "predicted, incorrect"},
            "ben": {"02.grad-timeline": "incorrect (1 attempts)", "02.accumulate-runs": "predicted, incorrect"},
            "cat": {"02.grad-timeline": "incorrect (1 attempts)", "02.accumulate-runs": "predicted, correct"},
        },
    )
    walk = get("01.graph-walk")
    facts = [
        {
            "learner": "ben",
            "unit": "01",
            "wrong": {},
            "minutes": None,
            "failed": {walk.qid: {"case": 2, "label": "x", "bug": ""}},
        },
        *(
            {
                "learner": n,
                "unit": "02",
                "wrong": {},
                "minutes": None,
                "failed": {"02.grad-timeline": {"case": c, "label": f"c{c}", "bug": ""}},
            }
            for n, c in (("ann", 0), ("ben", 3), ("cat", 3))
        ),
    ]
    return rows, facts


def test_questions_are_ranked_across_units_by_how_many_got_them_wrong(tmp_path):
    rows, facts = a_class()
    units = report.summary(rows, facts)
    order = [q["qid"] for q in report.ranked(units)]
    assert order[:2] == ["02.grad-timeline", "02.accumulate-runs"]  # 3 wrong, then 2 (of 3 who tried)
    assert (
        "01.pow-node" in order
        and next(q for q in report.ranked(units) if q["qid"] == "01.pow-node")["wrong_learners"] == 1
    )
    report.write_report(rows, facts, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    ranked_rows = re.findall(r"<tr class='ranked' data-rank-qid='([^']+)' data-wrong='(\d+)'", page)
    assert ranked_rows[0] == ("02.grad-timeline", "3")
    assert [int(n) for _, n in ranked_rows] == sorted((int(n) for _, n in ranked_rows), reverse=True)


def test_every_prompt_is_in_the_page_not_only_a_tooltip(tmp_path):
    rows, facts = a_class()
    report.write_report(rows, facts, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    without_titles = re.sub(r"title='[^']*'", "", page)
    for q in [*of_unit("01"), *of_unit("02")]:
        assert f"<div class='prompt'>{html.escape(q.prompt)}</div>" in without_titles, q.qid


def test_an_exercise_shows_the_case_that_failed_most_often(tmp_path):
    rows, facts = a_class()
    units = report.summary(rows, facts)
    timeline = next(q for q in units["02"]["questions"] if q["qid"] == "02.grad-timeline")
    assert timeline["failed_cases"][0] == {"case": 4, "label": "c3", "bug": "", "learners": 2}
    assert timeline["failed_cases"][1]["case"] == 1 and timeline["failed_cases"][1]["learners"] == 1
    report.write_report(rows, facts, tmp_path / "r.html")
    assert "case 4: c3 (2)" in (tmp_path / "r.html").read_text()


def test_the_facts_of_a_graded_notebook_name_the_failing_case():
    walk = get("01.graph-walk")
    verdicts = {walk.qid: vs.ExerciseVerdict("incorrect", "case 2 differs", case=1, got=[])}
    facts = report.facts_of("ben", "01", None, [], verdicts)
    assert facts["failed"][walk.qid]["case"] == 1
    assert facts["failed"][walk.qid]["label"] == walk.kind.cases()[1].label
    passed = {walk.qid: vs.ExerciseVerdict("correct", "", case=-1)}
    assert report.facts_of("ann", "01", None, [], passed)["failed"] == {}
