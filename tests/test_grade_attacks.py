"""A class of attackers and one honest learner, graded in one run: the run finishes, every learner gets a row,
only the honest learner passes, and each attacker's row says what was found.

Each attack is a cell in tests/fixtures/attacks/, added to a unit 00 notebook (or, for the exercise attack, a
trimmed unit 01 notebook) the way a learner would add it.
"""

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from grader.engine.question import get
from grader.instructor.grading import containment

ROOT = Path(__file__).resolve().parent.parent
ATTACKS = Path(__file__).parent / "fixtures" / "attacks"
SOLVED_00 = ROOT / "solutions" / "00_start_here.ipynb"
BLANK_00 = ROOT / "notebooks" / "00_start_here.ipynb"
SOLVED_01 = ROOT / "solutions" / "01_what_the_forward_pass_records.ipynb"
BLANK_01 = ROOT / "notebooks" / "01_what_the_forward_pass_records.ipynb"
EXERCISE_CELLS = ("c001", "c052", "c053", "c078")  # unit 01: imports, graph_nodes, its check, mark

# learner: (base notebook, where the attack cell goes)
CLASS = {
    "forged": (BLANK_00, "end"),
    "patchkind": (BLANK_00, "start"),
    "peek": (BLANK_00, "start"),  # reveal, reset, predict
    "patchtorch": (BLANK_00, "start"),
    "leftover": (BLANK_00, "start"),
    "resultdir": (BLANK_00, "start"),
    "fifo": (SOLVED_00, "end"),
    "fakekill": (SOLVED_00, "end"),
    "flood": (BLANK_00, "start"),
    "nostore": (SOLVED_00, "end"),
}
FILES = {
    "forged": "forged_events",
    "patchkind": "patched_kind",
    "peek": "reveal_reset_predict",
    "patchtorch": "patched_torch",
    "leftover": "leftover_process",
    "resultdir": "result_folder",
    "fifo": "fifo_store",
    "fakekill": "fake_result_kill",
    "flood": "flood_fd2",
    "nostore": "deleted_store",
}


def with_cell(base: Path, code: str, where: str):
    nb = nbformat.read(base, as_version=4)
    cell = nbformat.v4.new_code_cell(code)
    after_imports = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code") + 1
    nb.cells.insert(after_imports if where == "start" else len(nb.cells), cell)
    return nb


def exercise_only(base: Path, function_source: str | None = None):
    nb = nbformat.read(base, as_version=4)
    nb.cells = [c for c in nb.cells if c.get("id") in EXERCISE_CELLS]
    if function_source is not None:
        next(c for c in nb.cells if c.get("id") == "c052").source = function_source
    return nb


def _leftovers() -> list[int]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"agl-leftover-attack" in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attack-class")
    # what a reveal showed the attacker in their own kernel (a grading run shows nothing): torch's live answers
    seen = {qid: get(qid).kind.encode(get(qid).run()) for qid in ("00.warmup-add", "00.warmup-flag")}
    notebooks = {
        name: with_cell(base, f"SEEN = {seen!r}\n" + (ATTACKS / f"{FILES[name]}.py").read_text(), where)
        for name, (base, where) in CLASS.items()
    }
    notebooks["alice"] = nbformat.read(SOLVED_00, as_version=4)
    notebooks["ivan"] = exercise_only(SOLVED_01)  # honest exercise, the rest of unit 01 left out
    notebooks["framewalk"] = exercise_only(BLANK_01, (ATTACKS / "frame_walk.py").read_text())
    for name, nb in notebooks.items():
        (folder / name).mkdir()
        unit = "01_what_the_forward_pass_records" if name in ("ivan", "framewalk") else "00_start_here"
        nbformat.write(nb, folder / name / f"{unit}.ipynb")
    (folder / "linky").mkdir()
    (folder / "linky" / "00_start_here.ipynb").symlink_to(folder / "nowhere.ipynb")
    out = folder / "grades.csv"
    # Without bubblewrap a detached process is only caught when its notebook ends: grade one at a time then.
    jobs = "2" if containment.bwrap_works() else "1"
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            str(folder),
            "--out",
            str(out),
            "-j",
            jobs,
            "--cell-timeout",
            "20",
            "--notebook-timeout",
            "240",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out, newline="") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    return rows, seconds, result.stderr


def test_every_learner_has_a_row_and_only_the_honest_pass(graded):
    rows, seconds, stderr = graded
    assert set(rows) == set(CLASS) | {"alice", "ivan", "framewalk", "linky"}, stderr[-2000:]
    passed = {name for name, r in rows.items() if r["marked passed"] == "yes"}
    assert passed == {"alice"}, {n: (r["run"], r["findings"]) for n, r in rows.items()}
    assert rows["alice"]["done"] == "3" and not rows["alice"]["findings"], rows["alice"]
    assert all(r["isolation"] for r in rows.values())
    print(f"attack class graded in {seconds:.1f} s")


def test_an_honest_exercise_is_recomputed_correct(graded):
    ivan = graded[0]["ivan"]
    assert ivan["01.graph-walk"] == "correct" and "verdict recomputed" not in ivan["findings"], ivan


def test_forged_events_are_not_verdicts(graded):
    r = graded[0]["forged"]
    assert r["00.warmup-square"].startswith("incorrect")
    assert "verdict recomputed: differs from the kernel's record" in r["findings"]
    assert "kernel's record says marked passed" in r["findings"]


def test_a_patched_kind_changes_nothing(graded):
    r = graded[0]["patchkind"]  # the notebook's own check cell runs later, so the last check is "not answered"
    assert r["00.warmup-add"] == "predicted, incorrect" and r["00.warmup-square"].startswith(
        ("incorrect", "not answered")
    )
    # the run is sealed: the kernel judges nothing a patched kind could bend, and the cell is named
    assert "imports grader.engine.kinds, past the course's API" in r["findings"], r["findings"]
    assert r["marked passed"] == "no"


def test_reveal_reset_predict_is_flagged(graded):
    r = graded[0]["peek"]
    why = {k: r[k] for k in ("run", "problems", "findings", "seconds")}
    # the record the panel reads ("predicted after reveal, correct"), never a prediction before the reveal
    assert all(r[q].startswith("predicted after reveal") for q in ("00.warmup-add", "00.warmup-flag")), why
    assert "predicted after reveal: 00.warmup-add, 00.warmup-flag" in r["findings"], why


def test_frame_walking_finds_no_truth(graded):
    r = graded[0]["framewalk"]
    assert r["01.graph-walk"].startswith("incorrect")
    assert "01.graph-walk: 0 of 40 cases passed" in r["findings"], r["findings"]


def test_patched_torch_in_the_kernel_changes_nothing(graded):
    r = graded[0]["patchtorch"]
    assert r["00.warmup-add"] == "predicted, incorrect" and r["00.warmup-square"].startswith(
        ("incorrect", "not answered")
    )
    assert r["marked passed"] == "no"  # torch patched in the kernel bends nothing: the run judges nothing


def test_a_leftover_process_reaches_no_one(graded):
    rows = graded[0]
    assert rows["leftover"]["run"] == "ok" and rows["alice"]["marked passed"] == "yes"
    if not containment.bwrap_works():
        assert "process(es) it started" in rows["leftover"]["findings"]
    assert _leftovers() == []


def test_a_result_folder_or_a_fifo_store_neither_crashes_nor_hangs(graded):
    rows = graded[0]
    assert rows["resultdir"]["run"] == "ok"
    why = {k: rows["fifo"][k] for k in ("run", "problems", "findings", "seconds")}
    assert "store missing or corrupt: the progress store is not a plain file" in rows["fifo"]["findings"], why
    assert rows["fifo"]["marked passed"] == "no"


def test_a_fake_result_and_a_killed_worker(graded):
    r = graded[0]["fakekill"]
    assert r["run"] == "worker died" and "cannot be trusted" in r["problems"]


def test_a_flood_on_fd2_is_capped(graded):
    r = graded[0]["flood"]
    assert "wrote 200 MB to stdout/stderr" in r["findings"]


def test_a_deleted_store_is_reported(graded):
    r = graded[0]["nostore"]
    assert "store missing or corrupt: the progress store is missing" in r["findings"]
    assert r["00.warmup-square"] == "not answered"


def test_a_broken_link_gets_a_row(graded):
    r = graded[0]["linky"]
    assert r["run"] == "unreadable" and "broken symbolic link" in r["problems"]


def test_the_notebook_after_one_that_killed_its_worker_is_graded_as_usual(tmp_path):
    """One warm worker, two learners in order: the first forges a report on every pipe of its worker and kills
    it; the second, an honest solution, must be graded normally (never charged with the first one's kill)."""
    folder = tmp_path / "pair"
    killer = with_cell(SOLVED_00, (ATTACKS / "fake_result_kill.py").read_text(), "end")
    for name, nb in (("a-killer", killer), ("b-honest", nbformat.read(SOLVED_00, as_version=4))):
        (folder / name).mkdir(parents=True)
        nbformat.write(nb, folder / name / "00_start_here.ipynb")
    out = tmp_path / "grades.csv"
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "-j", "1", "--cell-timeout", "60"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out, newline="") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    assert rows["a-killer"]["run"] == "worker died" and rows["a-killer"]["marked passed"] == "no"
    assert "signal 9" in rows["a-killer"]["problems"], "its forged report was taken for the worker's reply"
    honest = rows["b-honest"]
    assert honest["run"] == "ok" and honest["marked passed"] == "yes" and not honest["findings"], honest
