"""docs/threat-model.md, walked: each attack of issue 43 (and the honest paths of issue 44 it touches) graded in one
class, one warm worker at a time, so that the order of the learners matters as it did for the attacker.

The class: a learner who plants a package where the warm worker's restart would import it and kills the worker,
then two honest learners; learners who write one folder up, make thousands of files, hand in a cell too large to
parse, read the grader's environment; exercise functions that reach the course's own tool by frames or by a
function's globals from a thread; copies whose predictions were typed in after the reveal, or whose lock records
were edited; self-test records renumbered or repeating one answer; a laptop learner's own identity; two learners
carrying one identity; a kernel that dies in a cell. Each row must say what happened, and no attacker earns a point
for the attack.
"""

from __future__ import annotations

import copy
import csv
from pathlib import Path

import nbformat
import pytest

from grader.engine import identity, locked, order, variants
from grader.engine.question import get
from grader.instructor.grading import containment
from tests.cli import run as cli
from tests.test_grade_attacks import BLANK_00, BLANK_01, SOLVED_00, SOLVED_01, exercise_only, with_cell

FIXTURES = Path(__file__).parent / "fixtures" / "threats"
SECRET = "sekrit-token-4f1c"
SQUARE = "00.warmup-square"
WRITE_MB, FILES = 64, 1000

TAKEOVER = """
import os, signal, pathlib
for where in (pathlib.Path.cwd().parent, pathlib.Path.cwd(), pathlib.Path("/tmp")):
    try:
        (where / "grader").mkdir(exist_ok=True)
        (where / "grader" / "__init__.py").write_text("raise SystemExit('planted grader imported')\\n")
    except OSError:
        pass
os.kill(os.getppid(), signal.SIGKILL)
"""

UP_FILL = """
import pathlib
written, refused = 0, ""
for i in range(4):
    try:
        with open(pathlib.Path.cwd().parent / f"up{i}.bin", "wb") as f:
            for _ in range(40):
                f.write(bytes(2**20))
                f.flush()
                written += 1
    except OSError as exc:
        refused = type(exc).__name__
        break
raise RuntimeError(f"up wrote {written} MB {refused}")
"""

MANY_FILES = """
import os, time
for i in range(5 * {files}):
    open(os.path.join({where!r}, f"e{{i}}"), "w").close()
time.sleep(3)  # measured twice a second
raise RuntimeError("many files not stopped")
"""

ENV_LEAK = "import os\nraise RuntimeError('env: ' + repr(dict(os.environ)))"
ENV_EXERCISE = "import os\n\n\ndef graph_nodes(t):\n    raise RuntimeError('env: ' + repr(dict(os.environ)))\n"
BIG_CELL = "numbers = [" + "0," * 300_000 + "]\n"
CRASH = "import os\nos._exit(3)"


def _truth(qid: str):
    return get(qid).kind.encode(get(qid).run())


def _square(who: str, number: int):
    q = get(SQUARE)
    return q.kind.encode(q.run(variants.make(q.program, SQUARE, who, number).program))


def _cell(nb, cell_id: str):
    return next(c for c in nb.cells if c.get("id") == cell_id)


def _display(data: dict) -> dict:
    return nbformat.v4.new_output("display_data", data={**data, "text/plain": "record"})


def typed_after_reveal():
    """Predictions typed into cells that never ran, under reveals that did (and say no prediction came first)."""
    nb = nbformat.read(BLANK_00, as_version=4)
    for predict, reveal, qid in (("c006", "c009", "00.warmup-add"), ("c011", "c013", "00.warmup-flag")):
        _cell(nb, predict).source = f"answer = {_truth(qid)!r}\npredict({qid!r}, answer)"
        shown = _cell(nb, reveal)
        shown.execution_count = 4
        shown.outputs = [_display(order.record(qid, predicted=False))]
    return nb


def lock_edited(second_honest: bool):
    """A lock record whose before_reveal was edited to true (after an honest after-reveal one, or alone), beside a
    reveal whose own record says torch's answer came first."""
    nb = nbformat.read(BLANK_00, as_version=4)
    qid = "00.warmup-add"
    forged = locked.bundle(locked.record(qid, _truth(qid), before_reveal=True))
    honest = locked.bundle(locked.record(qid, _truth(qid), before_reveal=False))
    cell = _cell(nb, "c006")
    cell.execution_count = 6
    cell.outputs = [_display(honest), _display(forged)] if second_honest else [_display(forged)]
    if not second_honest:
        _cell(nb, "c009").execution_count = 3
        _cell(nb, "c009").outputs = [_display(order.record(qid, predicted=False))]
    return nb


def self_test_copy(who: str, drawn_for: str, answers: list, cell_answer, numbers: list | None = None):
    """A solved unit 00 copy whose self-test cell answers ``cell_answer`` and whose record carries ``answers``."""
    nb = nbformat.read(SOLVED_00, as_version=4)
    numbers = numbers if numbers is not None else list(range(len(answers)))
    record = variants.record(
        SQUARE,
        numbers[-1] + 1 if numbers else 0,
        list(zip(numbers, answers)),
        identity.fingerprint(drawn_for),
        drawn_for,
    )
    cell = _cell(nb, "c015")
    cell.source = f"answer = {cell_answer!r}\ncheck({SQUARE!r}, answer)"
    cell.outputs = [_display(variants.bundle(record))] if answers else []
    return nb


def _renumbered():
    """A learner who edits a record's program number to one of their programs whose answer they were given."""
    who = "p-renumbered"
    first = _square(who, 0)
    n = next(n for n in range(1, 200) if _square(who, n) != first)
    return self_test_copy(who, who, [_square(who, n)], _square(who, n), numbers=[n])


def _repeater():
    """A learner who repeats one wrong answer eight times, hoping a later program has it for its answer."""
    who = "q-repeater"
    wrong = next(_square(who, n) for n in range(1, 200) if _square(who, n) != _square(who, 0))
    return self_test_copy(who, who, [wrong] * 8, wrong)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("threats")
    notebooks = {
        "a-takeover": with_cell(BLANK_00, TAKEOVER, "start"),
        "b-honest": nbformat.read(SOLVED_00, as_version=4),
        "c-honest": nbformat.read(SOLVED_00, as_version=4),
        "d-upfill": with_cell(BLANK_00, UP_FILL, "start"),
        "e-manyfiles": with_cell(BLANK_00, MANY_FILES.format(files=FILES, where="."), "start"),
        "f-tmpfiles": with_cell(BLANK_00, MANY_FILES.format(files=FILES, where="/tmp"), "start"),
        "g-envleak": with_cell(BLANK_00, ENV_LEAK, "start"),
        "h-bigcell": with_cell(SOLVED_00, BIG_CELL, "end"),
        "i-framewalk": exercise_only(BLANK_01, (FIXTURES / "frames_to_real_sys.py").read_text()),
        "j-globalswalk": exercise_only(BLANK_01, (FIXTURES / "globals_to_tool.py").read_text()),
        "k-envexercise": exercise_only(BLANK_01, ENV_EXERCISE),
        "l-typedafter": typed_after_reveal(),
        "m-lockforged": lock_edited(second_honest=False),
        "n-twolocks": lock_edited(second_honest=True),
        "o-crash": with_cell(BLANK_00, CRASH, "end"),
        "p-renumbered": _renumbered(),
        "q-repeater": _repeater(),
        "r-laptop": self_test_copy("r-laptop", "laptop-7f3a", [_square("laptop-7f3a", 0)], _square("laptop-7f3a", 0)),
        "s-copycat": self_test_copy("s-copycat", "shared-1", [_square("shared-1", 0)], _square("shared-1", 0)),
        "t-original": self_test_copy("t-original", "shared-1", [_square("shared-1", 0)], _square("shared-1", 0)),
        "u-honest01": exercise_only(SOLVED_01),
    }
    for name, nb in notebooks.items():
        (folder / name).mkdir()
        unit = (
            "01_what_the_forward_pass_records"
            if name in ("i-framewalk", "j-globalswalk", "k-envexercise", "u-honest01")
            else "00_start_here"
        )
        nbformat.write(nb, folder / name / f"{unit}.ipynb")
    out = folder / "grades.csv"
    env = {"AGL_WRITABLE_MB": str(WRITE_MB), "AGL_WRITABLE_FILES": str(FILES), "CANVAS_API_TOKEN": SECRET}
    done = cli("grade", folder, "--out", out, "-j", "1", "--cell-timeout", "60", "--memory-mb", "1024", env=env)
    with open(out, newline="") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    return rows, done


def _why(row: dict) -> dict:
    return {k: row[k] for k in ("run", "problems", "findings", "points", "max")}


def test_the_run_finishes_with_a_row_for_everyone(graded):
    rows, done = graded
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(rows) == 21, sorted(rows)


def test_a_planted_package_and_a_killed_worker_reach_no_later_learner(graded):
    rows = graded[0]
    assert rows["a-takeover"]["run"] == "worker died", _why(rows["a-takeover"])
    for name in ("b-honest", "c-honest"):
        assert rows[name]["run"] == "ok" and rows[name]["marked passed"] == "yes", _why(rows[name])
        assert not rows[name]["findings"], _why(rows[name])


def test_writing_one_folder_up_is_refused_or_stopped(graded):
    row = graded[0]["d-upfill"]
    refused = "up wrote 0 MB PermissionError" in row["problems"]
    stopped = row["run"] == "killed" and f"more than {WRITE_MB} MB" in row["problems"]
    assert refused or stopped, _why(row)


@pytest.mark.parametrize("name", ["e-manyfiles", "f-tmpfiles"])
def test_thousands_of_empty_files_are_stopped(graded, name):
    if name == "f-tmpfiles" and not containment.bwrap_works():
        pytest.skip("without bubblewrap /tmp is the host's own: not the sandbox's to measure")
    row = graded[0][name]
    assert row["run"] == "killed" and f"more than {FILES:,} files and folders" in row["problems"], _why(row)


def test_the_grading_process_does_not_parse_a_huge_cell(graded):
    row = graded[0]["h-bigcell"]
    assert "too large for the grader to read" in row["findings"], _why(row)


@pytest.mark.parametrize("name", ["g-envleak", "k-envexercise"])
def test_the_graders_environment_reaches_no_submission(graded, name):
    row = graded[0][name]
    assert "env: " in row["problems"] + row["findings"], _why(row)  # the cell (or the exercise) did run
    assert SECRET not in " ".join(row.values()), _why(row)


@pytest.mark.parametrize("name", ["i-framewalk", "j-globalswalk"])
def test_the_courses_own_tool_is_off_while_an_exercise_function_runs(graded, name):
    rows = graded[0]
    row = rows[name]
    assert row["01.graph-walk"].startswith("incorrect"), _why(row)
    assert "grader.probes.node_names, the course's own tool for this answer" in row["findings"], _why(row)
    assert rows["u-honest01"]["01.graph-walk"] == "correct", _why(rows["u-honest01"])


@pytest.mark.parametrize("name", ["l-typedafter", "m-lockforged", "n-twolocks"])
def test_a_reveal_never_passes_for_a_prediction(graded, name):
    row = graded[0][name]
    # the panel's own words may follow ("predicted after reveal, correct"): what came first is said, and earns 0
    assert row["00.warmup-add"].startswith(("predicted after reveal", "revealed without prediction")), _why(row)
    assert (
        "the copy shows torch's answer before the prediction" in row["findings"]
        or "predicted after reveal" in (row["findings"])
    ), _why(row)
    assert float(row["points"]) == 0, _why(row)


def test_predictions_earn_participation_only_and_report_their_correctness(graded):
    honest = graded[0]["b-honest"]
    assert honest["00.warmup-add"] == "predicted, correct"
    assert (float(honest["points"]), float(honest["max"])) == (4, 4), _why(honest)  # 1 + 1 + a self-test's 2


def test_a_kernel_that_dies_names_its_cell(graded):
    row = graded[0]["o-crash"]
    assert row["run"] == "kernel died" and "while cell" in row["problems"] and "os._exit" in row["problems"], _why(row)


def test_the_gradebook_numbers_a_records_answers_itself(graded):
    row = graded[0]["p-renumbered"]
    assert not row[SQUARE].startswith("correct"), _why(row) | {SQUARE: row[SQUARE]}
    assert "numbers its answers otherwise than their order does" in row["findings"], _why(row)


def test_repeating_one_answer_never_passes(graded):
    row = graded[0]["q-repeater"]
    assert row[SQUARE].startswith("incorrect"), _why(row) | {SQUARE: row[SQUARE]}


def test_a_laptop_learner_is_judged_on_the_programs_they_were_asked(graded):
    row = graded[0]["r-laptop"]
    assert row[SQUARE] == "correct (variant 1)", _why(row) | {SQUARE: row[SQUARE]}
    assert "another identity" not in row["findings"] and "one identity" not in row["findings"], _why(row)


def test_two_learners_carrying_one_identity_are_both_named(graded):
    rows = graded[0]
    for name in ("s-copycat", "t-original"):
        assert "one identity, 'shared-1', for 2 learners" in rows[name]["findings"], _why(rows[name])
    assert "shared-1" in graded[1].stderr


def test_a_huge_cell_is_refused_before_ast_sees_it():
    from grader.engine import syntax

    with pytest.raises(syntax.TooLarge, match="more than the 100,000"):
        syntax.parse_submitted("x = [" + "0," * 100_000 + "]")
    assert syntax.parse_submitted("x = 1").body


def test_copies_of_a_record_do_not_repeat_program_numbers():
    """The gradebook's numbering, without the notebook: one wrong answer, then the right one on the next program."""
    from grader.instructor.grading import verify

    q, who = get(SQUARE), "numbering"
    wrong = (_square(who, 0) or 0) + 1000
    events = []
    for answer in (wrong, wrong, "x"):
        events.append(verify.Event(0, 1.0, "00", SQUARE, "check", answer, "recorded", "", "s", {"variant": 0}))
    numbered, findings, repeated = verify._own_programs({SQUARE: q}, events, who, {}, 1)
    assert [e.detail["variant"] for e in numbered] == [0, 1, 2]
    assert not repeated and not findings
    assert copy.deepcopy(numbered[1].detail)["seed"] != variants.seed_of(who, SQUARE, 0)


def test_a_cold_run_is_measured_the_same_way(tmp_path):
    """AGL_GRADE_COLD=1 (a worker and a kernel per notebook): its folder and its sandbox's /tmp are measured too."""
    where = "/tmp" if containment.bwrap_works() else "."
    nb = with_cell(BLANK_00, MANY_FILES.format(files=FILES, where=where), "start")
    (tmp_path / "cold").mkdir()
    nbformat.write(nb, tmp_path / "cold" / "00_start_here.ipynb")
    out = tmp_path / "cold.csv"
    env = {"AGL_GRADE_COLD": "1", "AGL_WRITABLE_FILES": str(FILES)}
    done = cli("grade", tmp_path / "cold", "--out", out, "-j", "1", env=env)
    row = next(csv.DictReader(open(out, newline="")))
    assert row["run"] == "killed" and f"more than {FILES:,} files" in row["problems"], (_why(row), done.stderr[-800:])


def test_warm_workers_outlive_the_moment_they_are_ready():
    """bubblewrap's --die-with-parent kills a sandbox when the thread that started it ends: the pool starts its warm
    parents from the thread that keeps it (they used to be started from threads that ended at once)."""
    import time

    from grader.instructor.grading import workers

    pool = workers.Pool(1, workers.base_env(), units=["00"])
    try:
        time.sleep(1.5)
        assert all(w.alive() for w in pool.all)
    finally:
        pool.close()


def test_a_grader_started_by_a_relative_path_from_another_folder_grades(tmp_path):
    """`cd submissions && ../course/.venv/bin/python -m grader grade .` once made every row 'worker died', exit 0."""
    import os
    import subprocess
    import sys

    (tmp_path / "class" / "alice").mkdir(parents=True)
    nbformat.write(nbformat.read(SOLVED_00, as_version=4), tmp_path / "class" / "alice" / "00_start_here.ipynb")
    python = os.path.relpath(sys.executable, tmp_path / "class")
    done = subprocess.run(
        [python, "-m", "grader", "grade", ".", "--out", "../grades.csv", "-j", "1"],
        cwd=tmp_path / "class",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    row = next(csv.DictReader(open(tmp_path / "grades.csv", newline="")))
    assert row["run"] == "ok" and row["marked passed"] == "yes", _why(row)


def test_a_run_whose_grading_failed_says_so_and_exits_non_zero(tmp_path, monkeypatch):
    """Workers that cannot start: the run stops with the reason, exit 1, and no gradebook of zeros is written."""
    (tmp_path / "alice").mkdir()
    nbformat.write(nbformat.read(SOLVED_00, as_version=4), tmp_path / "alice" / "00_start_here.ipynb")
    monkeypatch.setattr(containment, "python", lambda: str(tmp_path / "no-such-python"))
    out = tmp_path / "grades.csv"
    done = cli("grade", tmp_path / "alice", "--out", out, "-j", "1", "--lms", "canvas")
    assert done.returncode == 1, done.stderr
    assert "the grading workers could not start" in done.stderr and "nothing was graded" in done.stderr
    assert not out.exists() and not (tmp_path / "grades-canvas.csv").exists()


def test_most_notebooks_not_run_is_a_failed_run(tmp_path):
    """Rows that the grader failed to run (here: every warm worker killed by its own notebook) are not a gradebook
    to upload: the LMS file is not written, and the run exits 1 saying why."""
    killer = with_cell(SOLVED_00, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", "start")
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        nbformat.write(killer, tmp_path / name / "00_start_here.ipynb")
    out = tmp_path / "grades.csv"
    done = cli("grade", tmp_path, "--out", out, "-j", "1", "--lms", "canvas")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "the grading itself failed for 2 of 2 notebook(s) (worker died)" in done.stderr
    assert out.exists() and not (tmp_path / "grades-canvas.csv").exists()


def test_an_instructor_can_pay_a_self_test_only_within_a_number_of_attempts(tmp_path):
    """Cycling through a self-test's few answers passes it (the attempts column shows how): self-test-attempts pays
    only a pass within that many graded attempts."""
    from types import SimpleNamespace

    from grader.instructor.grading import scores

    path = tmp_path / "weights.toml"
    path.write_text("self-test-attempts = 2\n")
    weights = scores.load(path)
    assert weights.self_test_attempts == 2
    w = weights.of(SQUARE, "self-test")
    for attempts, paid in ((1, 2.0), (2, 2.0), (3, 0.0)):
        state = SimpleNamespace(passed=True, attempts=attempts)
        assert scores.earned("self-test", state, "", w, weights.self_test_attempts) == {"self-test": paid}
    path.write_text("self-test-attempts = -1\n")
    with pytest.raises(scores.WeightsError, match="whole number"):
        scores.load(path)
