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


# --- which time: collect's record, the LMS's, Canvas's own mark; never a file's own time --------------------


def test_a_row_without_a_trustworthy_time_gets_no_rule_and_says_why():
    r = late.apply([row("")], late.parse(["2026-03-01"], penalty=50))[0]
    assert r["points"] == 10 and r["days late"] == "unknown" and "no trustworthy submission time" in r["findings"]
    assert late.untimed([r]) == 1


def test_canvas_late_mark_counts_as_a_day_late_and_its_absence_as_on_time():
    rule = late.parse(["2026-03-01"], penalty=50)
    marked, unmarked = {**row(""), "late": "yes"}, {**row(""), "late": "no"}
    late.apply([marked, unmarked], rule)
    assert marked["days late"] == 1 and marked["points"] == 5 and "Canvas's own mark" in marked["late rule"]
    assert unmarked["points"] == 10 and "late rule" not in unmarked
    timed = late.apply([{**row("2026-03-04 10:00:00"), "late": "yes"}], rule)[0]  # a time wins over the mark
    assert timed["days late"] == 3 and "Canvas" not in timed["late rule"]


def _class_with_links(tmp_path: Path, names: list[str]) -> Path:
    """Notebooks no worker needs to run (broken links: a row each), backdated the way a learner can."""
    import os

    folder = tmp_path / "class"
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).symlink_to(tmp_path / "gone" / Path(name).name)
        os.utime(folder / name, (1_577_836_800, 1_577_836_800), follow_symlinks=False)  # 2020-01-01
    return folder


def test_a_backdated_file_is_never_on_time_by_its_own_time(tmp_path):
    """The attack: `touch -d 2020-01-01` on one's notebook, and --due took nothing. Without a trustworthy time
    the rule is not applied, the row says why, and the run names how many such rows there are."""
    folder = _class_with_links(tmp_path, ["mal/01_what_the_forward_pass_records.ipynb"])
    done = cli("grade", folder, "--out", tmp_path / "g.csv", "--due", "2026-03-01", "--late-penalty", "50")
    assert done.returncode == 0, done.stderr[-2000:]
    (r,) = gradebook.read_csv(tmp_path / "g.csv")
    assert r["submitted"] == "" and r["days late"] == "unknown" and "no trustworthy submission time" in r["findings"]
    assert "1 row(s) with no late rule applied" in done.stderr
    taken = cli("grade", folder, "--out", tmp_path / "m.csv", "--due", "2026-03-01", "--times", "mtime")
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert gradebook.read_csv(tmp_path / "m.csv")[0]["submitted"].startswith("2020-01-01"), "asked for: mtime"


def test_grade_reads_the_time_collect_recorded_from_the_folder_collect_wrote(tmp_path):
    """collect's record says when it first saw each notebook: a backdated copy collected after the due date is
    late by that time; the record is read by itself from the folder given (paths relative to it)."""
    folder = _class_with_links(tmp_path, ["mal/01_what_the_forward_pass_records.ipynb"])
    (folder / "collect-times.csv").write_text(
        "file,time,saved,sha256\nmal/01_what_the_forward_pass_records.ipynb,2026-03-03T12:00:00+00:00,"
        "2020-01-01T00:00:00+00:00,x\n"
    )
    done = cli("grade", folder, "--out", tmp_path / "g.csv", "--due", "2026-03-01T00:00+00:00", "--late-penalty", "50")
    assert done.returncode == 0, done.stderr[-2000:]
    (r,) = gradebook.read_csv(tmp_path / "g.csv")
    assert r["submitted"] == "2026-03-03T12:00:00+00:00" and r["days late"] == "3"
    assert "submission times from collect's record" in done.stderr
