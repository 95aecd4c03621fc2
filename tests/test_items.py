"""grade --report's item analysis (grader.instructor.grading.items): difficulty and discrimination per question."""

from __future__ import annotations

import re

from grader.instructor.grading import items, report

ADD, FLAG, SQUARE = "00.warmup-add", "00.warmup-flag", "00.warmup-square"


def _rows() -> list[dict]:
    """Twelve learners of unit 00 and unit 01's rows: strong learners (who get unit 01's self-tests right) also
    predict 00.warmup-add right; everyone predicts 00.warmup-flag right; 00.warmup-square is got right by the weak
    ones only (a question whose programs differ in difficulty, or luck), and by some only after a wrong answer."""
    from grader.engine.question import of_unit

    ones = [q.qid for q in of_unit("01") if q.role == "self-test"]
    rows = []
    for i in range(12):
        strong = i >= 6
        rows.append(
            {
                "learner": f"l{i:02}",
                "unit": "00",
                ADD: "predicted, correct" if strong or i == 0 else "predicted, incorrect",
                FLAG: "predicted, correct",
                SQUARE: "correct (variant 1)" if not strong else ("correct on attempt 2 (variant 2)" if i % 2 else ""),
            }
        )
        rows.append({"learner": f"l{i:02}", "unit": "01", **{q: "correct" if strong else "not answered" for q in ones}})
    return rows


def test_difficulty_is_the_share_right_at_the_first_try():
    assert items.first_try("correct", "self-test") == 1
    assert items.first_try("correct (variant 1)", "self-test") == 1
    assert items.first_try("correct on attempt 2 (variant 2)", "self-test") == 0  # passed by mastery, not at once
    assert items.first_try("predicted, correct", "predict") == 1
    assert items.first_try("predicted after reveal, correct", "predict") == 0
    assert items.first_try("not in this copy", "predict") is None
    by = {i["qid"]: i for i in items.analyse(_rows())}
    assert by[FLAG]["difficulty"] == 1.0 and by[ADD]["difficulty"] == round(7 / 12, 2)


def test_a_question_that_separates_no_one_or_the_wrong_way_is_flagged():
    by = {i["qid"]: i for i in items.analyse(_rows())}
    assert by[ADD]["r"] > 0.5 and by[ADD]["D"] > 0.5 and by[ADD]["flag"] == ""
    assert "separates no one" in by[FLAG]["flag"]
    assert by[SQUARE]["r"] < 0 and by[SQUARE]["D"] < 0 and "does not separate" in by[SQUARE]["flag"]


def test_the_class_report_shows_the_item_analysis(tmp_path):
    page = tmp_path / "report.html"
    units = report.write_report(_rows(), [], page)
    html = page.read_text()
    assert "<section id='items'>" in html and "point-biserial" in html
    row = re.search(rf"<tr class='item' data-item='{re.escape(SQUARE)}'[^>]*data-flagged='1'", html)
    assert row is not None
    square = next(q for q in units["00"]["questions"] if q["qid"] == SQUARE)
    assert square["item"]["flag"] and square["item"]["learners"] == 9  # three never answered it: not counted


def test_too_few_learners_are_not_flagged():
    assert items.flag(3, 1.0, None, None) == ""
