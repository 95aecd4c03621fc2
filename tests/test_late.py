"""Late rules from the ``submitted`` column: a penalty per day or a cut-off, applied to the points and shown."""

from pathlib import Path

import pytest

from grader.instructor.grading import gradebook, late, report
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent


def row(submitted, unit="01", points=10, maximum=10):
    return {
        "learner": "frank",
        "student id": "",
        "notebook": f"frank_{unit}.ipynb",
        "unit": unit,
        "submitted": submitted,
        "findings": "",
        "problems": "",
        "run": "ok",
        "marked passed": "yes",
        "points": points,
        "max": maximum,
        "percent": 100 * points // maximum,
        "done": 1,
        "correct": 1,
        "questions": 1,
    }


def test_on_time_is_untouched_and_a_part_day_late_counts_as_one_day():
    rule = late.parse(["2026-03-01"], penalty=10)
    on_time, late_row = row("2026-03-01 23:59:00"), row("2026-03-02 00:30:00")
    late.apply([on_time, late_row], rule)
    assert on_time["points"] == 10 and "late rule" not in on_time
    assert late_row["days late"] == 1 and late_row["points"] == 9 and late_row["percent"] == 90
    assert "1 day(s) late" in late_row["late rule"] and "-10%" in late_row["findings"]


def test_a_penalty_never_goes_below_zero_and_a_cutoff_gives_zero():
    rule = late.parse(["2026-03-01T17:00"], penalty=30, cutoff=5)
    four, six = row("2026-03-05 16:00:00"), row("2026-03-07 18:00:00")
    late.apply([four, six], rule)
    assert four["days late"] == 4 and four["points"] == 0  # 4 x 30% is all of it, never less than 0
    assert six["days late"] == 7 and six["points"] == 0 and "cut-off" in six["late rule"]


def test_a_unit_date_wins_over_the_date_for_all():
    rule = late.parse(["2026-03-01", "02=2026-03-08"], penalty=50)
    one, two = row("2026-03-03 12:00:00", "01"), row("2026-03-03 12:00:00", "02")
    late.apply([one, two], rule)
    assert one["points"] == 0 and two["points"] == 10 and "late rule" not in two


def test_due_alone_shows_lateness_and_takes_nothing():
    r = late.apply([row("2026-03-03 12:00:00")], late.parse(["2026-03-01"]))[0]
    assert r["points"] == 10 and r["days late"] == 2 and "no penalty" in r["late rule"]


def test_an_unreadable_time_applies_no_rule_and_says_so():
    r = late.apply([row("Tuesday, around noon")], late.parse(["2026-03-01"], penalty=10))[0]
    assert r["points"] == 10 and r["days late"] == "unknown" and "cannot be read" in r["findings"]


def test_a_time_with_a_zone_is_compared_as_that_time():
    rule = late.parse(["2026-03-01T12:00+00:00"], penalty=10)
    r = late.apply([row("2026-03-01T13:00:00+02:00")], rule)[0]  # 11:00 UTC: on time
    assert r["points"] == 10 and "late rule" not in r


def test_late_rows_are_shown_in_the_wide_csv_the_page_and_the_report(tmp_path):
    rows = late.apply([row("2026-03-03 12:00:00")], late.parse(["2026-03-01"], penalty=10))
    gradebook.write_wide(rows, tmp_path / "w.csv")
    wide = gradebook.read_csv(tmp_path / "w.csv")[0]
    assert wide["01 points"] == "8" and "2 day(s) late" in wide["late rule"]
    page = gradebook.write_html(rows, tmp_path / "fb")[0].read_text()
    assert "8 of 10 points" in page and "2 day(s) late" in page
    report.write_report(rows, [], tmp_path / "r.html")
    assert "class='late'>1<" in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--late-penalty", "10"], "need --due"),
        (["--due", "next week"], "ISO date"),
        (["--due", "99=2026-03-01"], "not a unit"),
        (["--due", "2026-03-01", "--late-penalty", "150"], "0 to 100"),
        (["--due", "2026-03-01", "--late-cutoff", "-1"], "0 or more"),
    ],
)
def test_the_cli_refuses_a_wrong_rule_without_a_traceback(tmp_path, argv, words):
    done = cli("grade", tmp_path, "--out", tmp_path / "g.csv", *argv)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
