"""Issue 44, tried again by an independent tester (term44b): each break found after the lead's fixes, one test each,
marked xfail(strict=True) until it was fixed (two, both in the browser, still are).

The instructor's tests run no kernel: files that cannot be notebooks get a row each without a worker, which is
enough to see naming, exit codes and the LMS files."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.cli import run as cli

N01 = "01_what_the_forward_pass_records.ipynb"
N02 = "02_backward_and_why_gradients_add.ipynb"
N03 = "03_observing_gradients.ipynb"


def _rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def _put(folder: Path, names) -> Path:
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("not a notebook", encoding="utf-8")
    return folder


# --- bad input: a clear message and a non-zero exit -------------------------------------------------------


def test_a_path_that_does_not_exist_is_refused(tmp_path, monkeypatch):
    """Found by term44b: a path that does not exist (a typo) is graded as a notebook: a row for a learner named after
    the current folder, 'unreadable', 'graded 1 notebooks', exit 0; it should be refused with a clear message."""
    monkeypatch.chdir(tmp_path)
    done = cli("grade", "submissions-typo", "--out", "g.csv")
    assert done.returncode != 0
    assert "submissions-typo" in done.stderr and ("not exist" in done.stderr or "no such" in done.stderr.lower())


def test_an_empty_folder_says_it_holds_no_notebooks(tmp_path, monkeypatch):
    """Found by term44b: an empty folder exits 2 but says only 'graded 0 notebooks ... -> g.csv': nothing says the
    folder held no notebooks."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    done = cli("grade", "empty", "--out", "g.csv")
    assert done.returncode != 0
    assert "no notebook" in done.stderr.lower() and "empty" in done.stderr


def test_a_run_where_no_notebook_could_be_read_exits_non_zero(tmp_path, monkeypatch):
    """Found by term44b: a run whose only notebooks are not JSON (nothing could be graded) exits 0; the row says 'not a
    notebook' but the command says 'graded 2 notebooks' and succeeds."""
    monkeypatch.chdir(tmp_path)
    _put(tmp_path / "class", [f"alice/{N01}", f"alice/{N02}"])
    done = cli("grade", "class", "--out", "g.csv")
    assert done.returncode != 0
    assert "not a notebook" in done.stderr or "could not be read" in done.stderr


# --- LMS names --------------------------------------------------------------------------------------------


def test_blind_marked_moodle_units_with_one_participant_each_stay_apart(tmp_path, monkeypatch):
    """Found by term44b: a blind-marked Moodle export whose unit folder holds one participant names that learner
    'Participant' (no id): two such unit folders (two different students) become one learner, with no warning."""
    monkeypatch.chdir(tmp_path)
    _put(
        tmp_path / "export",
        [
            f"unit01/Participant_11_assignsubmission_file_/{N01}",
            f"unit01/Participant_12_assignsubmission_file_/{N01}",
            f"unit02/Participant_21_assignsubmission_file_/{N02}",
            f"unit03/Participant_31_assignsubmission_file_/{N03}",
        ],
    )
    done = cli("grade", "export", "--out", "g.csv")
    learners = [r["learner"] for r in _rows(tmp_path / "g.csv")]
    assert "Participant" not in learners, (learners, done.stderr)
    assert len(set(learners)) == 4


# --- LMS import files -------------------------------------------------------------------------------------


def test_a_roster_of_emails_fills_moodles_email_column(tmp_path, monkeypatch):
    """Two blank copies of unit 00, graded (a run where nothing is a notebook writes no LMS file)."""
    monkeypatch.chdir(tmp_path)
    blank = (Path(__file__).resolve().parent.parent / "notebooks" / "00_start_here.ipynb").read_bytes()
    for who in ("Jürgen Müller_118822", "Alice Smith_118823"):
        folder = tmp_path / "export" / "unit00" / f"{who}_assignsubmission_file_"
        folder.mkdir(parents=True)
        (folder / "00_start_here.ipynb").write_bytes(blank)
    (tmp_path / "roster.csv").write_text("learner,email\nJürgen Müller,jm@x.org\nAlice Smith,as@x.org\n")
    cli("grade", "export", "--out", "g.csv", "--lms", "moodle", "--roster", "roster.csv")
    rows = _rows(tmp_path / "g-moodle.csv")
    assert {r["Email address"] for r in rows} == {"jm@x.org", "as@x.org"}
    assert not any("@" in r["ID number"] for r in rows)


# --- regrades and late rules --------------------------------------------------------------------------------


def test_a_regrade_outside_the_times_files_folder_keeps_its_time_or_says_so(tmp_path, monkeypatch):
    """Found by term44b: a regrade of a late notebook copied into another folder, with the term's --times file (its
    keys are paths relative to that file), finds no time for it and says nothing: the row's 'submitted' is empty and
    Canvas's _LATE mark counts it 1 day late instead of the 2 the times file gives (with no _LATE, on time)."""
    monkeypatch.chdir(tmp_path)
    name = "smithalice_LATE_4102_7730012_00_start_here.ipynb"
    _put(tmp_path, [f"unit00/{name}", f"regrade/{name}"])
    (tmp_path / "times.csv").write_text(f"file,time\nunit00/{name},2026-10-04T10:00:00Z\n")
    late = ("--times", "times.csv", "--due", "00=2026-10-02", "--late-penalty", "10")
    cli("grade", "unit00", "--out", "term.csv", *late)
    assert _rows(tmp_path / "term.csv")[0]["days late"] == "2"  # the term's run reads the time
    done = cli("grade", "regrade", "--out", "regrade.csv", "--merge-into", "term.csv", *late)
    row = _rows(tmp_path / "regrade.csv")[0]
    assert row["days late"] == "2" or ("times.csv" in done.stderr and name in done.stderr), (row, done.stderr)


def test_a_csv_saved_by_excel_in_another_encoding_gets_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _put(tmp_path / "class", [f"alice/{N01}"])
    (tmp_path / "cp1252.csv").write_bytes("learner,student id\nmüller,S1\n".encode("cp1252"))
    (tmp_path / "utf16.csv").write_text("learner,student id\nalice,S1\n", encoding="utf-16")
    tracebacks = []
    for flag in ("--roster", "--overrides", "--times"):
        for name in ("cp1252.csv", "utf16.csv"):
            try:
                done = cli("grade", "class", "--out", "g.csv", flag, name)
            except UnicodeDecodeError:
                tracebacks.append(f"{flag} {name}")
                continue
            # read (the placeholder notebooks then make it exit 1: nothing could be graded), or refused naming it
            assert "Traceback" not in done.stderr and (done.returncode != 2 or name in done.stderr), (
                flag,
                name,
                done.stderr,
            )
    assert tracebacks == []


def test_merge_into_a_file_that_is_not_a_gradebook_is_refused_clearly(tmp_path, monkeypatch):
    """Found by term44b: --merge-into a CSV that is not a gradebook (the Canvas import file the last run wrote, a
    roster) is accepted, the class is graded, and the run ends in a KeyError 'unit' traceback (exit 1) instead of
    being refused before grading with a clear message."""
    monkeypatch.chdir(tmp_path)
    _put(tmp_path / "class", [f"alice/{N01}"])
    canvas = '"Student","ID","SIS User ID","SIS Login ID","Section","Unit 01"\n"alice","4101","","","","3"\n'
    (tmp_path / "grades-canvas.csv").write_text(canvas, encoding="utf-8-sig")
    try:
        done = cli("grade", "class", "--out", "g.csv", "--merge-into", "grades-canvas.csv")
    except KeyError as exc:
        pytest.fail(f"traceback: KeyError {exc}")
    assert done.returncode == 2 and "grades-canvas.csv" in done.stderr, done.stderr


def test_collect_from_homes_that_do_not_exist_says_so(tmp_path, monkeypatch):
    """Found by term44b: collect --homes with a folder that does not exist exits 1 saying only 'collected 0 notebooks
    of 0 of 0 learners into OUT ... grade them with: ...' (and makes OUT): nothing says the homes folder is not
    there."""
    monkeypatch.chdir(tmp_path)
    done = cli("collect", "--homes", str(tmp_path / "no-such-homes"), "out")
    assert done.returncode != 0
    assert "no-such-homes" in done.stderr + done.stdout and "grade them with" not in done.stderr + done.stdout
