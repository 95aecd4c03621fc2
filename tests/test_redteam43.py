"""Red team 43: attacks on docs/threat-model.md that its defences did not stop, graded as an instructor would.

One class, graded once with one warm worker (`-j 1`, learners in name order), holds every attack that needs a
grading run; each test asserts what the threat model says holds. Each was written by a red team that had not seen
the defences, failed on the code it attacked, and passes since its fix (the CHANGELOG names them).

The class (unit 00 unless named):
* ``S-4242``: a blank copy from a learner whose name is a-alice's student ID (the roster's), which an override line
  keyed by that ID pays;
* ``a-alice``: an honest learner, framed by ``e-evil``;
* ``b-bob``: an honest learner, whose row ``m-mallory`` takes over;
* ``c-control``: a plain 400 MB allocation past ``--memory-mb`` (the cap holds: a control);
* ``e-evil<ESC…>``: a name that retitles and clears the instructor's terminal, whose self-test record says it
  was drawn for ``a-alice``;
* ``f-fakemodule`` (unit 01): an exercise function returning a list subclass that says it is ``builtins``'s and
  computes its items with the course's own tool when the runner reads it;
* ``g-savedcode`` (unit 01): an exercise function that puts the tools' saved code back and asks ``node_names``;
* ``h-unlinked``: writes three times the byte cap into files it unlinks but keeps open;
* ``i-memfd``: holds more than ``--memory-mb`` in memfd files (written, never mapped);
* ``m-mallory/b-bob_7_assignsubmission_file_/``: a blank copy in a folder named like a Moodle submission, with a
  file time in the future;
* ``y-poison``: leaves more entries than the cap in a ``/tmp`` folder it made read-only;
* ``z-honest``: an honest learner graded after it, on the same warm worker.

CPU: one grading run of 12 notebooks (about 25 CPU-seconds on this machine, most of it the warm worker's start).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import nbformat
import pytest

from grader.instructor.grading import containment
from tests.cli import run as cli
from tests.test_grade_attacks import BLANK_00, BLANK_01, SOLVED_00, exercise_only, with_cell
from tests.test_grade_threats import _square, self_test_copy

FIXTURES = Path(__file__).parent / "fixtures" / "redteam43"
WRITE_MB, FILES, MEMORY_MB = 16, 1000, 300
EVIL = "e-evil\x1b]0;owned\x07\x1b[2J"
MOODLE_LIKE = "b-bob_7_assignsubmission_file_"
SQUARE = "00.warmup-square"
ALICE_ID = "S-4242"

POISON_TMP = f"""
import os
keep = "/tmp/.keep"
os.makedirs(keep + "/inner")
os.chmod(keep, 0o300)  # unlisted (so unmeasured) while it fills
for i in range({FILES} + 200):
    open(f"{{keep}}/inner/f{{i}}", "w").close()
os.chmod(keep + "/inner", 0o500)
os.chmod(keep, 0o500)  # listed again, all at once; its user (the warm parent's too) can no longer empty it
"""

UNLINKED = f"""
import os, time
held = []
for i in range(3):
    fd = os.open(f"big{{i}}", os.O_CREAT | os.O_RDWR)
    os.unlink(f"big{{i}}")
    for _ in range({WRITE_MB} - 1):
        os.write(fd, bytes(2**20))
    held.append(fd)
assert sum(os.fstat(fd).st_blocks * 512 for fd in held) > 2 * {WRITE_MB} * 2**20
time.sleep(2)  # measured four times meanwhile
"""

MEMFD = f"""
import os, time
held = []
while sum(os.fstat(fd).st_size for fd in held) < {MEMORY_MB + 100} * 2**20:
    fd = os.memfd_create("m")
    for _ in range({WRITE_MB} - 1):
        os.write(fd, bytes(2**20))
    held.append(fd)
time.sleep(2)  # held, and measured four times meanwhile (a hold shorter than one measure is not seen: the doc says so)
"""

CONTROL = f"x = bytearray({MEMORY_MB + 100} * 2**20)"


def _write(folder: Path, learner: str, nb, unit: str = "00_start_here") -> Path:
    (folder / learner).mkdir(parents=True, exist_ok=True)
    path = folder / learner / f"{unit}.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not containment.bwrap_works():
        pytest.skip("the attacks on the sandbox need bubblewrap")
    base = tmp_path_factory.mktemp("redteam43")
    folder = base / "class"
    solved = nbformat.read(SOLVED_00, as_version=4)
    _write(folder, ALICE_ID, nbformat.read(BLANK_00, as_version=4))
    _write(folder, "a-alice", solved)
    _write(folder, "b-bob", solved)
    _write(folder, "c-control", with_cell(SOLVED_00, CONTROL, "start"))
    _write(folder, EVIL, self_test_copy(EVIL, "a-alice", [_square("a-alice", 0)], _square("a-alice", 0)))
    unit01 = "01_what_the_forward_pass_records"
    _write(folder, "f-fakemodule", exercise_only(BLANK_01, (FIXTURES / "fake_module.py").read_text()), unit01)
    _write(folder, "g-savedcode", exercise_only(BLANK_01, (FIXTURES / "saved_code.py").read_text()), unit01)
    _write(folder, "h-unlinked", with_cell(SOLVED_00, UNLINKED, "start"))
    _write(folder, "i-memfd", with_cell(SOLVED_00, MEMFD, "start"))
    blank = _write(folder / "m-mallory", MOODLE_LIKE, nbformat.read(BLANK_00, as_version=4))
    future = 1_900_000_000  # 2030: a file's time is its owner's to set
    os.utime(blank, (future, future))
    _write(folder, "y-poison", with_cell(SOLVED_00, POISON_TMP, "start"))
    _write(folder, "z-honest", solved)
    roster, overrides = base / "roster.csv", base / "overrides.csv"
    roster.write_text(f"learner,student id\na-alice,{ALICE_ID}\n")
    overrides.write_text(f"learner,question,points,accept,reason\n{ALICE_ID},{SQUARE},2,,handed in on paper\n")
    out = base / "grades.csv"
    env = {"AGL_WRITABLE_MB": str(WRITE_MB), "AGL_WRITABLE_FILES": str(FILES)}
    done = cli(
        "grade",
        folder,
        "--out",
        out,
        "-j",
        "1",
        "--memory-mb",
        str(MEMORY_MB),
        "--roster",
        roster,
        "--overrides",
        overrides,
        env=env,
    )
    with open(out, newline="") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    return rows, done


def _why(row: dict) -> dict:
    return {k: row.get(k) for k in ("learner", "notebook", "run", "problems", "findings", "points", "max")}


def test_the_class_is_graded(graded):
    rows, done = graded
    assert done.returncode == 0, done.stderr[-3000:]
    assert {ALICE_ID, "a-alice", "b-bob", "z-honest", "f-fakemodule", "g-savedcode"} <= set(rows), sorted(rows)


def test_memory_past_the_cap_is_refused_control(graded):
    row = graded[0]["c-control"]
    assert row["run"] == "out of memory", _why(row)


def test_a_folder_left_in_tmp_reaches_no_later_learner(graded):
    """Boundaries 1-2: the warm parent empties /tmp with rmtree as the job's own user, which cannot empty a folder
    the job made read-only; its entries are measured as every later job's, which is stopped at once."""
    row = graded[0]["z-honest"]
    assert row["run"] == "ok" and row["marked passed"] == "yes" and "more than" not in row["problems"], _why(row)


def test_files_unlinked_but_held_open_count_against_the_cap(graded):
    """Boundary 1: usage() walks names; a file unlinked and held open keeps its blocks on the host's disk (each up
    to RLIMIT_FSIZE, as many as descriptors allow) for the whole run, and nothing measures it."""
    row = graded[0]["h-unlinked"]
    assert row["run"] == "killed" and f"more than {WRITE_MB} MB" in row["problems"], _why(row)


def test_memory_in_memfd_files_is_capped(graded):
    """Boundary 1: RLIMIT_AS and RLIMIT_DATA count mappings; a memfd written with write() is never mapped, so a
    notebook holds --memory-mb + 100 MB (and, descriptor by descriptor, as much as the host has)."""
    row = graded[0]["i-memfd"]
    assert row["run"] in ("out of memory", "killed"), _why(row)


def test_a_returned_object_cannot_run_code_while_the_tools_are_on(graded):
    """Boundary 4: _plain refuses an object of a class whose __module__ is the notebook's; a class can say any
    module. Its __iter__ runs when the runner converts the result, the tools back on: node_names answers."""
    row = graded[0]["f-fakemodule"]
    assert not row["01.graph-walk"].startswith("correct"), _why(row) | {"verdict": row["01.graph-walk"]}


def test_the_tools_cannot_be_switched_back_on_by_the_learner(graded):
    """Boundary 4: Refusals keeps each tool's real code in ``saved``, in the runner's frame; the function puts
    every tool's code back (no refusal is ever called, so nothing is noted) and asks node_names."""
    row = graded[0]["g-savedcode"]
    assert not row["01.graph-walk"].startswith("correct"), _why(row) | {"verdict": row["01.graph-walk"]}


def test_the_shared_identity_warning_escapes_names(graded):
    """Boundary 11: `grade: warning: {learner}: one identity ... ({learners})` is printed without escape()."""
    done = graded[1]
    assert "answered as another learner" in done.stderr, done.stderr[-2000:]  # the warning that names it
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr, done.stderr[-2000:]


def test_a_learner_cannot_put_a_finding_on_another_learners_row(graded):
    """Asset 1 (findings computed from the learner's own work only) against boundary 5: e-evil's record says
    "drawn for a-alice"; a-alice, who handed in an honest copy with no record of another identity, is named as
    sharing or copying a notebook."""
    row = graded[0]["a-alice"]
    assert "one identity" not in row["findings"], _why(row)


def test_a_folder_inside_a_learners_folder_names_no_other_learner(graded):
    """Boundaries 9-10: name_of matches MOODLE_FOLDER on the notebook's own folder, wherever it lies: mallory's
    blank copy in mallory/b-bob_7_assignsubmission_file_/ is b-bob's, and (newer by its own time) replaces his."""
    rows = graded[0]
    bob = rows["b-bob"]
    assert "m-mallory" not in bob["notebook"] and float(bob["points"]) == 4, _why(bob)
    assert any(name.startswith("m-mallory") for name in rows), sorted(rows)


def test_an_override_keyed_by_an_id_is_paid_to_that_id_only(graded):
    """Boundary 9: Overrides.for_question matches a line on the learner's name or their student ID alike, so the
    line for a-alice's ID (S-4242) pays the learner whose folder is named S-4242 too."""
    rows = graded[0]
    assert rows["a-alice"]["overrides"], _why(rows["a-alice"])  # the line is a-alice's
    row = rows[ALICE_ID]
    assert not row["overrides"] and float(row["points"]) == 0, _why(row) | {"overrides": row["overrides"]}


def test_a_runners_own_record_is_kept_and_a_lookalike_is_not():
    """Boundary 4, the other way: _plain rebuilds what an exercise's runner returns, so a runner's own named tuple
    (unit 03's Watched) stays itself (rebuilt as a bare tuple, every honest watch read "could not be read"); a named
    tuple made elsewhere that claims the same module and name is rebuilt as a plain tuple."""
    import collections

    from grader.instructor.grading.learner_function import _plain
    from grader.units.unit03.kinds import Watched

    real = _plain(Watched(3, ("a problem",), (3, 4)))
    assert type(real) is Watched and real == Watched(3, ("a problem",), (3, 4))
    fake = collections.namedtuple("Watched", "reported problems bad", module="grader.units.unit03.kinds")
    assert type(_plain(fake(3, (), ()))) is tuple
