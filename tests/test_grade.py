"""python -m grader grade: a folder of learner notebooks becomes a gradebook, whatever the notebooks do."""

import csv
from pathlib import Path

import nbformat
import pytest

from grader.instructor.grading.gradebook import page_name
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "00_start_here.ipynb"
UNTOUCHED = ROOT / "notebooks" / "00_start_here.ipynb"
# the solution's answer to 00.warmup-square: torch's, on the program the learner's identity is asked
SOLVED_SQUARE = 'answer = program("00.warmup-square").run()["s"].grad.item()'


def edited(source: Path, change) -> nbformat.NotebookNode:
    nb = nbformat.read(source, as_version=4)
    change(nb)
    return nb


def replace_in(nb, old, new):
    for cell in nb.cells:
        cell.source = cell.source.replace(old, new)


def drop_question(nb, qid):
    nb.cells = [c for c in nb.cells if qid not in c.source]


def add_first(nb, code):
    nb.cells.insert(1, nbformat.v4.new_code_cell(code))


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    learners = {
        "alice": nbformat.read(SOLUTION, as_version=4),
        "bob": nbformat.read(UNTOUCHED, as_version=4),
        "carol": edited(SOLUTION, lambda nb: replace_in(nb, SOLVED_SQUARE, "answer = 123456.0")),
        "dave": edited(SOLUTION, lambda nb: drop_question(nb, "00.warmup-flag")),
        "erin": edited(SOLUTION, lambda nb: add_first(nb, "while True:\n    pass")),
        "gina": edited(SOLUTION, lambda nb: add_first(nb, "import os\nos._exit(1)")),
        # 4 GB: fits this machine, not the 2 GB limit given below
        "hank": edited(SOLUTION, lambda nb: add_first(nb, "import torch\nbig = torch.ones(10**9)")),
    }
    for name, nb in learners.items():
        (folder / name).mkdir()
        nbformat.write(nb, folder / name / "00_start_here.ipynb")
    (folder / "frank").mkdir()
    (folder / "frank" / "00_start_here.ipynb").write_text("{ this is not json")
    (folder / "ivy").mkdir()  # named per learner: the unit is in the name after the learner's
    (folder / "ivy" / "ivy_03.ipynb").write_text("{ this is not json either")
    out = folder / "grades.csv"
    html = folder / "feedback"
    result = cli(
        "grade", folder, "--out", out, "-j", "2", "--cell-timeout", "10", "--memory-mb", "2048", "--html", html
    )
    assert result.returncode == 0, result.stderr
    with open(out, newline="") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    return rows, html, result.stderr


def test_a_solved_notebook_passes_everything(gradebook):
    rows, _, _ = gradebook
    alice = rows["alice"]
    assert alice["run"] == "ok" and alice["unit"] == "00" and alice["marked passed"] == "yes"
    assert alice["00.warmup-add"] == "predicted, correct" and alice["00.warmup-square"] == "correct (variant 1)"
    assert (alice["done"], alice["questions"], alice["percent"]) == ("3", "3", "100")


def test_an_untouched_notebook_passes_nothing(gradebook):
    bob = gradebook[0]["bob"]
    assert bob["run"] == "ok" and bob["marked passed"] == "no"
    assert bob["00.warmup-add"] == "not answered"  # the re-run revealed it; bob never predicted
    assert bob["00.warmup-square"] == "not answered" and bob["done"] == "0" and bob["points"] == "0"


def test_a_wrong_answer_is_recorded_and_blocks_the_pass(gradebook):
    carol = gradebook[0]["carol"]
    assert carol["00.warmup-square"] == "incorrect (1 attempt; last on variant 1)" and carol["marked passed"] == "no"


def test_deleted_cells_are_reported_and_the_rest_still_graded(gradebook):
    dave = gradebook[0]["dave"]
    assert dave["run"] == "missing cells" and "are missing" in dave["problems"]
    assert dave["00.warmup-flag"] == "not attempted" and dave["00.warmup-add"] == "predicted, correct"


def test_an_endless_cell_is_stopped_and_grading_goes_on(gradebook):
    erin = gradebook[0]["erin"]
    assert erin["run"] == "timed out" and 'cell 2 ("while True:") ran past 10 s' in erin["problems"]
    assert erin["marked passed"] == "yes"


def test_a_dead_kernel_gets_a_row(gradebook):
    gina = gradebook[0]["gina"]
    assert gina["run"] == "kernel died" and gina["unit"] == "00" and gina["marked passed"] == "no"


def test_the_memory_limit_holds_and_grading_goes_on(gradebook):
    hank = gradebook[0]["hank"]
    assert hank["run"] == "out of memory" and 'cell 2 ("import torch") raised' in hank["problems"]
    assert hank["marked passed"] == "yes"


def test_a_file_that_is_not_json_gets_a_row(gradebook):
    frank = gradebook[0]["frank"]
    assert frank["run"] == "not a notebook" and "could not be read" in frank["problems"]
    ivy = gradebook[0]["ivy"]
    assert ivy["run"] == "not a notebook" and ivy["unit"] == "03" and float(ivy["max"]) > 0


def test_feedback_pages_and_progress(gradebook):
    rows, html, stderr = gradebook
    assert len(rows) == 9
    page = (html / page_name("carol")).read_text()
    assert "00.warmup-square" in page and "incorrect" in page
    assert "9/9" in stderr and "per minute" in stderr


def test_unknown_units_are_errors():
    for args in (("questions", "--unit", "99"), ("verify", "--unit", "99")):
        done = cli(*args)
        assert done.returncode == 2 and "no such unit: 99" in done.stderr


def test_bad_grade_options_are_refused_before_anything_runs(tmp_path):
    nb = tmp_path / "x.ipynb"
    nb.write_text("{}")
    for extra, words in (
        (("--out", str(tmp_path)), "is a folder"),
        (("-j", "0"), "--jobs must be a positive"),
        (("--cell-timeout", "-1"), "--cell-timeout must be"),
        (("--memory-mb", "0"), "--memory-mb"),
    ):
        done = cli("grade", nb, *(extra if "--out" in extra else ("--out", tmp_path / "g.csv", *extra)))
        assert done.returncode == 2 and words in done.stderr, done.stderr
    assert not (tmp_path / "g.csv").exists()


def test_restore_puts_grader_cells_back_and_reports_deleted_ones(tmp_path):
    from grader.instructor.grading.pipeline import Submission, restore

    nb = edited(SOLUTION, lambda nb: replace_in(nb, 'mark_passed("00")', 'print("no mark")'))
    nb.cells = [c for c in nb.cells if c.get("id") != "c013"]
    nbformat.write(nb, tmp_path / "00_start_here.ipynb")
    restored = restore(Submission("x", tmp_path / "00_start_here.ipynb"))
    sources = {c["id"]: c["source"] for c in restored.notebook.cells}
    assert sources["c017"] == 'mark_passed("00")' and SOLVED_SQUARE in sources["c015"]
    assert restored.status == "missing cells" and "1 cell(s) of the unit's questions" in restored.problems[0]
    assert restored.findings == []  # the mark cell belongs to no question: restored, and not the learner's business
    nb.cells[1].source += "\n# edited"  # the import cell: no question either
    asked = next(c for c in nb.cells if c.source.startswith('reveal("00.warmup-add")'))
    asked.source = "print('no reveal')"
    nbformat.write(nb, tmp_path / "00_start_here.ipynb")
    restored = restore(Submission("x", tmp_path / "00_start_here.ipynb"))
    assert restored.findings == [f"1 grader cell(s) of a question had been edited and were restored: {asked.id}"]


def test_a_store_is_read_as_data(tmp_path):
    import os

    from grader.engine.store import Store
    from grader.instructor.grading.pipeline import read_events

    home, scratch = tmp_path / "home", tmp_path / "scratch"
    home.mkdir(), scratch.mkdir()
    Store(home / "progress.sqlite3").append("00", "00.warmup-square", "check", "correct", 6.0)
    events, findings = read_events(home, scratch)
    assert [(e.qid, e.answer, e.verdict) for e in events] == [("00.warmup-square", 6.0, "correct")] and not findings
    for name in os.listdir(home):
        os.remove(home / name)
    os.mkfifo(home / "progress.sqlite3")
    assert read_events(home, scratch) == (
        [],
        ["store missing or corrupt: the progress store is not a plain file (a folder, FIFO or device)"],
    )


def test_the_cold_path_grades_as_the_warm_one(tmp_path, gradebook):
    """AGL_GRADE_COLD=1: each notebook in a fresh worker process and kernel (grading/notebook_worker.py)."""

    folder = tmp_path / "class"
    for name, source in (("alice", SOLUTION), ("bob", UNTOUCHED)):
        (folder / name).mkdir(parents=True)
        (folder / name / "00_start_here.ipynb").write_bytes(source.read_bytes())
    out = tmp_path / "cold.csv"
    result = cli("grade", folder, "--out", out, "-j", "2", "--cell-timeout", "60", env={"AGL_GRADE_COLD": "1"})
    assert result.returncode == 0, result.stderr
    with open(out, newline="") as f:
        cold = {r["learner"]: r for r in csv.DictReader(f)}
    warm = gradebook[0]
    for name in ("alice", "bob"):
        assert cold[name]["run"] == "ok", cold[name]
        for column in ("marked passed", "done", "correct", "00.warmup-add", "00.warmup-flag", "00.warmup-square"):
            assert cold[name][column] == warm[name][column], (name, column)


def test_each_grading_process_gets_its_share_of_the_cores_and_the_environment_is_left_as_it_was(tmp_path, monkeypatch):
    import os

    from grader.instructor.grading import pipeline

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert [pipeline.threads_per_job(j) for j in (1, 2, 3, 16, 0)] == [8, 4, 2, 1, 8]
    seen = []

    def spy(*args, **kwargs):
        seen.append(os.environ.get("OMP_NUM_THREADS"))
        raise RuntimeError("stop here: only the environment is under test")

    monkeypatch.setattr(pipeline.workers, "Pool", spy)
    nb = nbformat.v4.new_notebook()
    (tmp_path / "in").mkdir()
    nbformat.write(nb, tmp_path / "in" / "ada_00_start_here.ipynb")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("AGL_GRADE_COLD", raising=False)
    for given, expected in ((None, "4"), ("3", "3")):
        if given is not None:
            monkeypatch.setenv("OMP_NUM_THREADS", given)
        with pytest.raises(RuntimeError, match="stop here"):
            pipeline.grade([str(tmp_path / "in")], tmp_path / "out.csv", jobs=2, progress_to=None)
        assert seen[-1] == expected and os.environ.get("OMP_NUM_THREADS") == given
