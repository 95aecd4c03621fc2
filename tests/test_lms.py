"""The LMS's names and shapes: Canvas's and Moodle's export names, --name-pattern, the roster's warnings,
two copies of one unit (--keep), an unreadable file under the unit its name says, and the gradebook in
Canvas's and Moodle's import shapes (UTF-8 with a BOM).

Nothing here runs a kernel: what is under test is naming, CSV shape and choosing between copies. The whole
pipeline is driven by ``grade`` over files that cannot be notebooks (broken links and broken JSON get a row
each without a worker), and the write step is fed rows made here."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from grader.engine.course import UNITS
from grader.instructor.grading import duplicates, lms_gradebook, lms_names, pipeline
from grader.instructor.grading.lms_names import name_of
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent
N00 = "00_start_here.ipynb"
N01 = "01_what_the_forward_pass_records.ipynb"
N02 = "02_backward_and_why_gradients_add.ipynb"


# --- names -----------------------------------------------------------------------------------------


def _export(folder: Path, names, target: Path | None = None) -> Path:
    """An export on disk, no worker needed: each name a broken link (each gets a row, unrun)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).symlink_to((target or folder.parent / "gone") / Path(name).name)
    return folder


@pytest.mark.parametrize(
    "name, learner, file, lms_id, late",
    [
        (f"mullerjurgen_4101_7730011_{N01}", "mullerjurgen_4101", N01, "4101", False),
        (f"mullerjurgen_LATE_4101_7730412_{N02}", "mullerjurgen_4101", N02, "4101", True),
        (
            "mullerjurgen_4101_7730999_02_backward_and_why_gradients_add-1.ipynb",
            "mullerjurgen_4101",
            "02_backward_and_why_gradients_add-1.ipynb",
            "4101",
            False,
        ),
        (f"Jürgen Müller_118822_assignsubmission_file_{N01}", "Jürgen Müller", N01, "118822", False),
    ],
)
def test_canvas_and_moodle_file_names_are_one_learner_each(tmp_path, name, learner, file, lms_id, late):
    export = _export(tmp_path / "export", [name])
    named = name_of(export / name, export)
    assert (named.learner, named.file, named.lms_id, named.late) == (learner, file, lms_id, late)
    assert name_of(export / name, export / name).learner == learner  # a regrade of the one file names it alike


def test_moodle_folders_name_their_learner_and_nfd_names_are_the_same_learner(tmp_path):
    export = tmp_path / "export"
    folder = export / "Jürgen Müller_118822_assignsubmission_file_"
    _export(export, [f"{folder.name}/{N01}", f"{folder.name}/week1/{N01}"])
    named = name_of(folder / N01, export)
    assert (named.learner, named.lms_id, named.lms, named.file) == ("Jürgen Müller", "118822", "moodle", N01)
    nfd = export / "Ju\u0308rgen Mu\u0308ller_118822_assignsubmission_file_" / N02  # unzipped on macOS
    assert name_of(nfd, export).learner == "Jürgen Müller"
    assert name_of(folder / "week1" / N01, export).learner == "Jürgen Müller"  # nested below the folder


def test_an_lms_name_in_a_learners_own_folder_keeps_the_folder(tmp_path):
    klass = _export(tmp_path / "class", [f"mallory/alicesmith_1_2_{N01}", f"mallory/{N02}", f"alice/{N01}"])
    assert name_of(klass / "mallory" / f"alicesmith_1_2_{N01}", klass).learner == "mallory/alicesmith_1"
    assert name_of(klass / "mallory" / f"alicesmith_1_2_{N01}", klass / "mallory").learner == "mallory/alicesmith_1"
    assert name_of(klass / "alice" / N01, klass).learner == "alice"  # the folder rule is unchanged
    assert name_of(klass / "frank_01.ipynb", klass).learner == "class/frank"


def test_homonyms_are_two_learners_by_the_lms_id_in_canvas_and_in_moodle(tmp_path):
    """Two Canvas users with one sortable name, two Moodle participants with one full name: never one row."""
    canvas = _export(tmp_path / "canvas", [f"smithalice_4101_7001_{N01}", f"smithalice_4999_7002_{N01}"])
    assert sorted(s.learner for s in pipeline.find([str(canvas)])) == ["smithalice_4101", "smithalice_4999"]
    moodle = _export(
        tmp_path / "moodle",
        [f"Alice Smith_118822_assignsubmission_file_/{N01}", f"Alice Smith_119999_assignsubmission_file_/{N01}"]
        + [f"Bo Li_118830_assignsubmission_file_/{N01}"],
    )
    found = pipeline.find([str(moodle)])
    assert sorted(s.learner for s in found) == ["Alice Smith_118822", "Alice Smith_119999", "Bo Li"]
    said = lms_names.warnings([(s.path, s.named) for s in found])
    assert len(said) == 1 and "2 Moodle participants" in said[0] and "Alice Smith_118822" in said[0]


def test_blind_marking_is_one_learner_per_participant(tmp_path):
    export = _export(
        tmp_path / "blind",
        [f"Participant_{n}_assignsubmission_file_/{N01}" for n in (118822, 118823, 118824)],
    )
    assert sorted(s.learner for s in pipeline.find([str(export)])) == [
        "Participant_118822",
        "Participant_118823",
        "Participant_118824",
    ]


def test_per_unit_canvas_zips_unzipped_into_folders_of_their_own_are_one_learner_each(tmp_path):
    """One Canvas assignment per unit: one zip per unit, each unzipped into its own folder."""
    klass = tmp_path / "class"
    _export(klass / "unit01", [f"mullerjurgen_4101_1_{N01}", f"zhangwei_4102_2_{N01}"])
    _export(klass / "unit02", [f"mullerjurgen_4101_3_{N02}", f"zhangwei_LATE_4102_4_{N02}"])
    found = pipeline.find([str(klass)])
    assert sorted((s.learner, s.named.file) for s in found) == [
        ("mullerjurgen_4101", N01),
        ("mullerjurgen_4101", N02),
        ("zhangwei_4102", N01),
        ("zhangwei_4102", N02),
    ]
    assert lms_names.warnings([(s.path, s.named) for s in found]) == []
    # a student renamed between the two exports: one Canvas id, two learners, and the run says so
    (klass / "unit02" / f"mullerjurgen_4101_3_{N02}").rename(klass / "unit02" / f"mullerjorgen_4101_3_{N02}")
    found = pipeline.find([str(klass)])
    said = lms_names.warnings([(s.path, s.named) for s in found])
    assert len(said) == 1 and "Canvas user id 4101 is on the notebooks of 2 learners" in said[0]


def test_a_name_pattern_names_learners_and_units_and_says_what_it_did_not_match(tmp_path):
    export = tmp_path / "export"
    pattern = lms_names.compile_pattern(r"^(?P<id>\d+)-(?P<learner>[a-z]+)-unit(?P<unit>\d+)")
    named = name_of(export / "20931-zoe-unit1.ipynb", export, pattern)
    assert (named.learner, named.lms_id, named.unit, named.lms) == ("zoe", "20931", "1", "pattern")
    sub = pipeline.Submission(named.learner, export / "20931-zoe-unit1.ipynb", named=named)
    assert pipeline.unit_named(sub) == "01"
    other = name_of(export / "alice" / N01, export, pattern)
    assert other.unmatched and other.learner == "alice"
    with pytest.raises(lms_names.PatternError, match="needs a group"):
        lms_names.compile_pattern(r"(\d+)")
    with pytest.raises(lms_names.PatternError, match="not a regular expression"):
        lms_names.compile_pattern(r"(?P<learner>")


# --- the whole run, without a kernel --------------------------------------------------------------


def _grade(*args):
    return cli("grade", *args)


def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def canvas_export(tmp_path):
    """A Canvas export no worker needs to run: broken links under Canvas's names (each gets a row, unrun)."""
    export = tmp_path / "submissions"
    export.mkdir()
    for name, when in (
        (f"mullerjurgen_4101_7730011_{N01}", 1_700_000_000),
        (f"mullerjurgen_LATE_4101_7730412_{N02}", 1_700_000_100),
        (f"zhangwei_4102_7730013_{N01}", 1_700_000_000),
        (f"zhangwei_4102_7730500_{N02}", 1_700_000_000),
    ):
        (export / name).symlink_to(tmp_path / "gone" / name)
        os.utime(export / name, (when, when), follow_symlinks=False)
    roster = tmp_path / "roster.csv"
    roster.write_text("learner,student id\nmullerjurgen_4101,S-7\n", encoding="utf-8")
    return export, roster


def test_a_canvas_export_grades_to_one_row_per_learner_and_unit_with_ids(canvas_export, tmp_path):
    export, roster = canvas_export
    out = tmp_path / "grades.csv"
    done = _grade(export, "--out", out, "--roster", roster, "--lms", "canvas")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = _csv(out)
    assert sorted((r["learner"], r["unit"]) for r in rows) == [
        ("mullerjurgen_4101", "01"),
        ("mullerjurgen_4101", "02"),
        ("zhangwei_4102", "01"),
        ("zhangwei_4102", "02"),
    ]
    by = {(r["learner"], r["unit"]): r for r in rows}
    assert {r["student id"] for r in rows if r["learner"] == "mullerjurgen_4101"} == {"S-7"}
    assert by[("mullerjurgen_4101", "02")]["late"] == "yes" and by[("mullerjurgen_4101", "01")]["late"] == "no"
    assert {r["lms id"] for r in rows if r["learner"] == "zhangwei_4102"} == {"4102"}
    assert by[("zhangwei_4102", "02")]["run"] == "unreadable" and float(by[("zhangwei_4102", "02")]["max"]) > 0
    assert "zhangwei_4102 is not in the roster" in done.stderr and "mullerjurgen_4101 is not in" not in done.stderr

    raw = (tmp_path / "grades-canvas.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), "UTF-8 with a BOM"
    table = list(csv.reader(raw.decode("utf-8-sig").splitlines()))
    head = table[0]
    assert head[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert [h[:7] for h in head[5:]] == ["Unit 01", "Unit 02"]
    assert table[1][0] == "    Points Possible" and all(float(x) > 0 for x in table[1][5:])
    people = {r[0]: r for r in table[2:]}
    assert people["mullerjurgen_4101"][1:3] == ["4101", "S-7"] and people["zhangwei_4102"][1:3] == ["4102", ""]
    assert "refused from the file" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith(f"canvas import file {tmp_path / 'grades-canvas.csv'}")


def test_homonyms_in_a_canvas_export_keep_both_rows_in_the_canvas_file(tmp_path):
    """The attack: smithalice 4101 and smithalice 4999 were one row ("2 copies, kept the latest"), and 4101's
    work was missing from the Canvas import."""
    export = _export(tmp_path / "export", [f"smithalice_4101_7001_{N01}", f"smithalice_4999_7002_{N01}"])
    done = _grade(export, "--out", tmp_path / "grades.csv", "--lms", "canvas")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "2 copies" not in done.stderr
    table = list(csv.reader((tmp_path / "grades-canvas.csv").read_text(encoding="utf-8-sig").splitlines()))
    assert sorted(r[1] for r in table[2:]) == ["4101", "4999"]


def test_a_file_named_for_a_learner_in_an_unknown_folder_gets_no_id_and_is_warned_of(tmp_path):
    """The attack: roster alice,1001; mal/alice_00.ipynb with mal not in the roster was given 1001, and the
    Canvas file listed 1001 twice (the import keeps the last)."""
    klass = _export(tmp_path / "class", [f"alice/{N00}", "mal/alice_00.ipynb"])
    roster = tmp_path / "roster.csv"
    roster.write_text("learner,student id\nalice,1001\n", encoding="utf-8")
    done = _grade(klass, "--out", tmp_path / "grades.csv", "--roster", roster, "--lms", "canvas")
    assert done.returncode == 0, done.stderr[-2000:]
    ids = {r["learner"]: r["student id"] for r in _csv(tmp_path / "grades.csv")}
    assert ids == {"alice": "1001", "mal/alice": ""}
    assert "mal/alice is not in the roster" in done.stderr and "never gives a learner an ID" in done.stderr
    table = list(csv.reader((tmp_path / "grades-canvas.csv").read_text(encoding="utf-8-sig").splitlines()))
    assert [r[2] for r in table[2:]] == ["1001"], "1001 once; mal/alice (no id at all) is refused and named"
    assert "mal/alice (no ID and no SIS User ID)" in done.stderr


def test_names_are_matched_exactly_and_one_id_is_one_learner(tmp_path):
    from grader.instructor.grading import overrides, roster

    path = tmp_path / "roster.csv"
    path.write_text("learner,student id\nbob,1002\n", encoding="utf-8")
    ids = roster.read_roster(path)
    assert roster.lookup(ids, "bob", "x") == "1002"
    assert roster.lookup(ids, "BOB", "x") is None and roster.lookup(ids, "bob ", "x") is None
    assert "names match exactly" in roster.not_in_roster(ids, "Bob ")
    for text, said in (
        ("learner,student id\nalice,1001\nAlice,1001\n", "one ID, one learner"),
        ("learner,student id\nalice,1001\nalice,1009\n", "one name, one ID"),
    ):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(roster.RosterError, match=said):
            roster.read_roster(path)
    changes = tmp_path / "overrides.csv"
    changes.write_text("learner,question,points,reason\n1002,00.warmup-add,1,on paper\n", encoding="utf-8")
    loaded = overrides.load(changes, ids={"bob": "1002"})
    assert [o.line for o in loaded.for_question("00.warmup-add", "bob", "1002")] == [2]
    assert loaded.for_question("00.warmup-add", "BOB", "") == []  # the folder BOB is not the student 1002
    assert loaded.for_question("00.warmup-add", "Bob ", "") == []
    assert loaded.for_question("00.warmup-add", "1002", "") == []  # nor is a folder named like bob's ID


def test_two_copies_of_one_unit_are_named_and_one_is_kept(canvas_export, tmp_path):
    """Without submission times, Canvas's attachment ids say which was handed in last (Canvas numbers them in
    order), never the files' own times, which a learner can set."""
    export, _ = canvas_export
    (export / f"mullerjurgen_4101_7731000_{N01}").symlink_to(tmp_path / "gone" / "again")
    os.utime(export / f"mullerjurgen_4101_7731000_{N01}", (1_500_000_000, 1_500_000_000), follow_symlinks=False)
    out = tmp_path / "grades.csv"
    done = _grade(export, "--out", out)
    assert done.returncode == 0, done.stderr[-2000:]
    mine = [r for r in _csv(out) if r["learner"] == "mullerjurgen_4101" and r["unit"] == "01"]
    assert len(mine) == 1 and mine[0]["notebook"].endswith(f"7731000_{N01}")  # the latest
    assert "2 copies of unit 01 handed in; kept the latest by Canvas's attachment ids" in mine[0]["findings"]
    assert "mullerjurgen_4101: 2 copies of unit 01" in done.stderr
    times = tmp_path / "times.csv"  # the LMS's own times, where given, come first
    times.write_text(
        f"file,time\nmullerjurgen_4101_7730011_{N01},2026-01-12T09:00\nmullerjurgen_4101_7731000_{N01},2026-01-11T09:00\n"
    )
    done = _grade(export, "--out", out, "--times", times)
    mine = [r for r in _csv(out) if r["learner"] == "mullerjurgen_4101" and r["unit"] == "01"]
    assert mine[0]["notebook"].endswith(f"7730011_{N01}") and "by the submission times" in mine[0]["findings"]


def test_a_broken_json_file_is_shown_under_the_unit_its_name_says(tmp_path):
    from grader.instructor.grading import gradebook

    for name, unit in ((f"zhangwei_4102_7730500_{N02}", "02"), (N01, "01"), ("notes.ipynb", "?")):
        path = tmp_path / name
        path.write_text('{"cells": [')  # cut short
        named = name_of(path, tmp_path)
        graded = pipeline.grade_one(pipeline.Submission(named.learner, path, named=named))
        (row,) = gradebook.rows_of(graded)
        assert (row["unit"], row["run"], row["points"]) == (unit, "not a notebook", 0), name
        if unit != "?":
            assert row["max"] > 0 and row["questions"] > 0  # its unit's maximum: 0 of it, not left out


def _row(learner, unit, points, maximum, notebook, submitted="", **more):
    return {
        "learner": learner,
        "student id": more.pop("sid", ""),
        "notebook": notebook,
        "unit": unit,
        "submitted": submitted,
        "points": points,
        "max": maximum,
        "percent": round(100 * points / maximum, 1) if maximum else 0,
        "marked passed": "no",
        "findings": "",
        **more,
    }


def test_keep_best_takes_the_most_points_and_latest_the_last_handed_in():
    rows = [
        _row("ann", "01", 30, 40, "a/first.ipynb", "2026-01-10 09:00:00"),
        _row("ann", "01", 20, 40, "a/second.ipynb", "2026-01-11 09:00:00"),
        _row("ann", "02", 5, 10, "a/first.ipynb", "2026-01-10 09:00:00"),  # the same file's other unit stays
        _row("bob", "01", 10, 40, "b/only.ipynb"),
    ]
    facts = [{"learner": "ann", "unit": "01", "notebook": "a/first.ipynb"}]
    kept, kept_facts, notes = duplicates.keep([dict(r) for r in rows], facts, "latest")
    assert [(r["learner"], r["unit"], r["notebook"]) for r in kept] == [
        ("ann", "01", "a/second.ipynb"),
        ("ann", "02", "a/first.ipynb"),
        ("bob", "01", "b/only.ipynb"),
    ]
    assert kept_facts == [] and notes == [
        "ann: 2 copies of unit 01 handed in; kept the latest by the submission times (a/second.ipynb), not a/first.ipynb"
    ]
    kept, kept_facts, _ = duplicates.keep([dict(r) for r in rows], facts, "best")
    assert [r["notebook"] for r in kept if r["learner"] == "ann" and r["unit"] == "01"] == ["a/first.ipynb"]
    assert kept_facts == facts


def test_moodles_shape_percent_blanks_and_no_row_without_an_identifier(tmp_path):
    """Moodle's import has no maximum (a grade item it makes is out of 100, and a grade over the site's maximum
    is refused), so every unit goes in percent; a unit not handed in is "-" (no grade), never 0; a row with a blank
    identifier would give its grades to the row before it, so such a learner is refused and named."""
    from grader.instructor.grading import gradebook, roster, scores

    top = gradebook.unit_maximum("02", scores.Weights())  # unit 02 as today's course counts it, for everyone
    rows = [
        _row("Jürgen Müller", "01", 30, 40, "x/j1.ipynb", sid="S-1", **{"lms id": "118822", "lms": "moodle"}),
        _row("Jürgen Müller", "02", 9, top, "x/j2.ipynb", sid="S-1"),
        _row("Ana Ortiz", "02", top, top, "x/a2.ipynb", sid="S-2"),
        _row("Zoé", "01", 18, 36, "x/z1.ipynb"),  # an older copy (a smaller maximum), and no student ID
    ]
    ids = roster.Roster({"Jürgen Müller": "S-1", "Ana Ortiz": "S-2"}, emails={"Jürgen Müller": "jm@example.org"})
    path = tmp_path / "moodle.csv"
    notes = lms_gradebook.write("moodle", rows, path, ids=ids)
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    table = list(csv.reader(raw.decode("utf-8-sig").splitlines()))
    assert table[0][:6] == list(lms_gradebook.MOODLE_USER_COLUMNS)
    assert all(h.startswith("Unit") and h.endswith("(percent)") for h in table[0][6:])
    people = {(r[0], r[1]): r for r in table[1:]}
    assert people[("Jürgen", "Müller")][2:] == ["S-1", "", "", "jm@example.org", "75", str(scores.percent(9, top))]
    assert ("Zoé", "") not in people and ("Ana", "Ortiz") not in people, "no identifier the file uses: refused"
    (refused,) = [n for n in notes if "refused from the file" in n]
    assert "Zoé (no ID number and no Email address)" in refused and "Ana Ortiz (no Email address)" in refused
    # without e-mails in the roster, the ID number is the one identifier: Ana is written, unit 01 blank
    lms_gradebook.write("moodle", rows, path, ids=roster.Roster(dict(ids)))
    people = {(r[0], r[1]): r for r in list(csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))[1:]}
    assert people[("Ana", "Ortiz")][6:] == ["-", "100"]
    canvas = tmp_path / "canvas.csv"
    notes = lms_gradebook.write("canvas", rows, canvas)
    table = list(csv.reader(canvas.read_text(encoding="utf-8-sig").splitlines()))
    assert [float(x) for x in table[1][5:]] == [100, top]  # Points Possible: the percent column, then unit 02's maximum
    # a Moodle participant id is not a Canvas id: the ID column is Canvas's alone
    assert {r[0]: r[1:3] for r in table[2:]} == {"Jürgen Müller": ["", "S-1"], "Ana Ortiz": ["", "S-2"]}
    assert {r[0]: r[5] for r in table[2:]} == {"Jürgen Müller": "75", "Ana Ortiz": ""}, "not handed in: blank"
    assert any("unit 01 is in percent" in n for n in notes) and any(
        "Zoé (no ID and no SIS User ID)" in n for n in notes
    )


def test_two_learners_with_one_identifier_are_both_refused_from_the_lms_file(tmp_path):
    rows = [_row("alice", "01", 30, 40, "a.ipynb", sid="1001"), _row("Alice", "01", 0, 40, "b.ipynb", sid="1001")]
    for shape in ("canvas", "moodle"):
        path = tmp_path / f"{shape}.csv"
        notes = lms_gradebook.write(shape, rows, path)
        body = list(csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))[2 if shape == "canvas" else 1 :]
        assert body == [] and any("1001 is given to another learner too" in n for n in notes), (shape, notes)


def test_the_instructors_own_columns_by_name_or_canvas_id_with_their_maximum(tmp_path):
    """--lms-columns: Canvas columns named after the instructor's assignments (a bare id becomes Canvas's
    'Name (id)'), points scaled to each assignment's maximum; a unit left out of the mapping is said."""
    columns = tmp_path / "columns.csv"
    columns.write_text("unit,column,points\n01,31415,10\n02,Autograd unit 2,\n", encoding="utf-8")
    from grader.instructor.grading import gradebook, scores

    mapping = lms_gradebook.read_columns(columns)
    top = gradebook.unit_maximum("02", scores.Weights())
    rows = [
        _row("ann", "01", 30, 40, "a1.ipynb", sid="S-1"),
        _row("ann", "03", 5, 10, "a3.ipynb", sid="S-1"),
        _row("bo", "02", 4, top, "b2.ipynb", sid="S-2"),
    ]
    path = tmp_path / "canvas.csv"
    notes = lms_gradebook.write("canvas", rows, path, mapping=mapping)
    table = list(csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))
    assert table[0][5:] == [f"Unit 01: {UNITS['01'].title} (31415)", "Autograd unit 2"]
    assert table[1][5] == "10"
    assert {r[0]: r[5:] for r in table[2:]} == {"ann": ["7.5", ""], "bo": ["", "4"]}
    assert any("unit(s) 03 graded but not in --lms-columns" in n for n in notes)
    for text, said in (("unit,column\n99,x\n", "not a unit"), ("unit,column,points\n01,x,0\n", "positive")):
        columns.write_text(text, encoding="utf-8")
        with pytest.raises(lms_gradebook.ColumnsError, match=said):
            lms_gradebook.read_columns(columns)


def test_the_cli_refuses_a_bad_pattern_and_an_lms_out_without_lms(tmp_path):
    for args, said in (
        (["--name-pattern", "(x)"], "needs a group"),
        (["--lms-out", str(tmp_path / "c.csv")], "--lms-out: say which LMS"),
    ):
        done = _grade(tmp_path, "--out", tmp_path / "g.csv", *args)
        assert done.returncode == 2 and said in done.stderr


# --- the shapes each LMS documents -------------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lms"


def _table(path: Path) -> list[list[str]]:
    """A CSV file as the LMS reads it: UTF-8 (a byte-order mark allowed), comma-separated, a header row."""
    return list(csv.reader(path.read_bytes().decode("utf-8-sig").splitlines()))


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _assert_same_shape(ours: list[list[str]], documented: list[list[str]], user_columns: int, points_row: bool):
    """Ours has the documented file's user columns, in its order, then only grade columns, every row as long as
    the header and every grade cell a plain number or the LMS's own blank for no grade (Canvas: empty, which its
    import leaves as it is; Moodle: ``-``, which its export writes and its import reads as no grade); the Points
    Possible row where (and only where) it has one."""
    assert ours[0][:user_columns] == documented[0][:user_columns], (ours[0], documented[0])
    assert len(ours[0]) > user_columns and all(h.startswith("Unit ") for h in ours[0][user_columns:]), ours[0]
    assert all(len(r) == len(ours[0]) for r in ours) and all(len(r) == len(documented[0]) for r in documented)
    for table in (ours, documented):
        body = table[2:] if points_row else table[1:]
        blank = "" if points_row else "-"
        assert body and all(_number(c) or c == blank for r in body for c in r[user_columns:]), body
    if points_row:
        assert ours[1][0] == documented[1][0] and ours[1][1:user_columns] == [""] * (user_columns - 1)
        assert all(_number(c) and float(c) > 0 for c in ours[1][user_columns:])
    else:  # no row is anything but a learner: every row after the header names one
        assert all(any(r[:user_columns]) for r in ours[1:]) and "Points Possible" not in str(ours)


def test_the_canvas_file_has_the_shape_canvas_documents_for_its_gradebook_import(canvas_export, tmp_path):
    """``grade --lms canvas`` against a file written in the shape Canvas documents for Grades > Import
    (tests/fixtures/lms/canvas-gradebook-import.csv, written for this test): the columns Student, ID,
    SIS User ID, SIS Login ID and Section first, then one column per assignment (a name without Canvas's
    ``(id)`` makes a new assignment), and the export's ``Points Possible`` row second, which the import reads
    back. Documented at https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades
    (columns A-E: Student, ID, SIS User ID, SIS Login ID, Section; F: the assignment) and in Canvas's guide
    "How do I import grades in the Gradebook?" (community.canvaslms.com), which points at the export's own
    layout; the file is UTF-8 (https://developerdocs.instructure.com/services/canvas/sis/file.sis_csv: "All
    text should be UTF-8 encoded")."""
    export, roster = canvas_export
    out = tmp_path / "grades.csv"
    done = _grade(export, "--out", out, "--roster", roster, "--lms", "canvas")
    assert done.returncode == 0, done.stderr[-2000:]
    documented = _table(FIXTURES / "canvas-gradebook-import.csv")
    assert documented[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    ours = _table(tmp_path / "grades-canvas.csv")
    _assert_same_shape(ours, documented, 5, points_row=True)
    assert {r[0]: r[1:3] for r in ours[2:]} == {"mullerjurgen_4101": ["4101", "S-7"], "zhangwei_4102": ["4102", ""]}


def test_the_moodle_file_has_the_shape_moodle_documents_for_its_csv_grade_import(tmp_path):
    """``grade --lms moodle`` against a file in the shape Moodle documents for Grades > Import > CSV file
    (tests/fixtures/lms/moodle-grade-import.csv, written for this test). https://docs.moodle.org/en/Grade_import:
    "The import file format is the same as the corresponding export format", users are matched by a column
    mapped "Map from" ID number "Map to" useridnumber, and each other column is mapped to a grade item. The
    plain-text export writes First name, Last name, ID number, Institution, Department, Email address, then one
    column per grade item: no Points Possible row (Moodle would read it as a user that does not exist).
    Before, our file began with a ``Full name`` column, which no Moodle export has."""
    export = tmp_path / "moodle"
    for folder, name in (
        ("Jürgen Müller_118822_assignsubmission_file_", N01),
        ("Jürgen Müller_118822_assignsubmission_file_", N02),
        ("Ana Ortiz_118830_assignsubmission_file_", N01),
    ):
        (export / folder).mkdir(parents=True, exist_ok=True)
        (export / folder / name).symlink_to(tmp_path / "gone" / name)
    roster = tmp_path / "roster.csv"
    roster.write_text("learner,student id\nJürgen Müller,S-7\nAna Ortiz,S-9\n", encoding="utf-8")
    out = tmp_path / "grades.csv"
    done = _grade(export, "--out", out, "--roster", roster, "--lms", "moodle")
    assert done.returncode == 0, done.stderr[-2000:]
    documented = _table(FIXTURES / "moodle-grade-import.csv")
    ours_raw = (tmp_path / "grades-moodle.csv").read_bytes()
    assert ours_raw.startswith(b"\xef\xbb\xbf") and (FIXTURES / "moodle-grade-import.csv").read_bytes().startswith(
        b"\xef\xbb\xbf"
    ), "UTF-8 with a BOM, which Moodle's CSV reader takes off"
    ours = _table(tmp_path / "grades-moodle.csv")
    _assert_same_shape(ours, documented, 6, points_row=False)
    id_number = documented[0].index("ID number")
    assert ours[0][id_number] == "ID number"
    assert {(r[0], r[1]): r[id_number] for r in ours[1:]} == {("Jürgen", "Müller"): "S-7", ("Ana", "Ortiz"): "S-9"}
    ana = next(r for r in ours[1:] if r[0] == "Ana")
    assert ana[7] == "-", "unit 02 not handed in: no grade, never 0"


def test_control_characters_in_a_learners_name_never_reach_the_terminal_or_the_wide_csv(tmp_path):
    """The attack: a folder named with ESC ] 0 ; ... BEL ESC [ 2 J retitled and cleared the instructor's terminal
    through grade's progress line, and the wide CSV kept the raw bytes."""
    odd = "\x1b]0;pwned\x07mal\x1b[2J"
    klass = _export(tmp_path / "class", [f"{odd}/{N01}"])
    roster = tmp_path / "roster.csv"
    roster.write_text("learner,student id\nalice,1\n", encoding="utf-8")
    done = _grade(
        klass, "--out", tmp_path / "g.csv", "--wide", tmp_path / "w.csv", "--roster", roster, "--lms", "moodle"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "\x1b" not in done.stderr + done.stdout and "\x07" not in done.stderr + done.stdout
    assert "\\x1b]0;pwned\\x07mal\\x1b[2J" in done.stderr
    wide = (tmp_path / "w.csv").read_text(encoding="utf-8")
    assert "\x1b" not in wide and "\\x1b]0;pwned" in wide
    assert [r["learner"] for r in _csv(tmp_path / "g.csv")] == [odd], "the long CSV keeps the name exactly"
