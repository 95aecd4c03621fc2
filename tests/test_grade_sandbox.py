"""The grading sandbox holds: one notebook cannot break the run, read what is not its own, reach a host socket,
exhaust the machine, or erase what it recorded; a store is read as untrusted data everywhere.

Attack notebooks are made as in tests/test_grade_attacks.py (a cell added to a unit 00 notebook). What a cell
found inside the sandbox comes back as the error it raises, which the gradebook lists among the row's problems.
Fixtures that must lie outside the sandbox's private /tmp are made under /var/tmp.
"""

import csv
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import nbformat
import pytest

from grader.instructor.grading import containment, pipeline, workers
from tests.cli import run as cli
from tests.test_grade_attacks import BLANK_00, ROOT, SOLVED_00, with_cell

needs_bwrap = pytest.mark.skipif(not containment.bwrap_works(), reason="bubblewrap does not work here")


@pytest.fixture
def outside():
    """A folder outside /tmp (the sandbox's /tmp is private, so a fixture there would prove nothing)."""
    path = Path(tempfile.mkdtemp(prefix="agl-sandbox-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def grade(folder: Path, *options: str, env: dict | None = None) -> dict:
    out = folder.parent / f"{folder.name}-grades.csv"
    done = cli("grade", folder, "--out", out, "-j", "1", "--cell-timeout", "60", *options, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out, newline="") as f:
        return {r["learner"]: r for r in csv.DictReader(f)}


def write_class(folder: Path, notebooks: dict) -> None:
    for name, nb in notebooks.items():
        (folder / name).mkdir(parents=True)
        nbformat.write(nb, folder / name / "00_start_here.ipynb")


# --- one notebook cannot break the run -------------------------------------------------------------------

PRECREATE = """
from pathlib import Path
base = Path.cwd().parent
for i in range(1, 40):
    (base / f"job-{i}").mkdir(exist_ok=True)
"""


def test_precreated_job_folders_do_not_break_the_next_learner(outside):
    folder = outside / "class"
    write_class(
        folder,
        {
            "a-precreates": with_cell(BLANK_00, PRECREATE, "start"),
            "b-honest": nbformat.read(SOLVED_00, as_version=4),
            "c-honest": nbformat.read(SOLVED_00, as_version=4),
        },
    )
    rows = grade(folder)
    for name in ("b-honest", "c-honest"):
        assert rows[name]["run"] == "ok" and rows[name]["marked passed"] == "yes", rows[name]


class _Pool:
    def __init__(self, worker):
        self.worker, self.returned = worker, []

    def borrow(self, timeout=None):
        return self.worker

    def give_back(self, worker):
        self.returned.append(worker)


class _BrokenWorker:
    def job_folder(self):
        raise FileExistsError("job-2")


def test_a_worker_is_given_back_whatever_happens():
    restored = pipeline.Restored(pipeline.Submission("x", Path("x.ipynb")), notebook=nbformat.v4.new_notebook())
    from grader.instructor.grading.exercise_sources import ExerciseSource

    restored.exercises = {"01.graph-walk": ExerciseSource("01.graph-walk", ["graph_nodes"])}
    for step in (
        lambda pool: pipeline.execute(restored, pool=pool),
        lambda pool: pipeline.run_exercises(restored, pool=pool),
    ):
        pool = _Pool(_BrokenWorker())
        with pytest.raises(FileExistsError):
            step(pool)
        assert pool.returned == [pool.worker]


def test_borrowing_a_worker_times_out_with_a_clear_error():
    pool = workers.Pool.__new__(workers.Pool)  # no warm parents at all: every one busy
    pool.idle, pool.all = workers.queue.Queue(), []
    with pytest.raises(workers.NoWorker, match="no grading worker came free"):
        pool.borrow(timeout=0.2)


# --- the store is untrusted data ------------------------------------------------------------------------


def endless_view_store(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute(
        "CREATE VIEW events AS WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM r) "
        "SELECT id, 1.0 AS time, '00' AS unit, NULL AS qid, 'mark' AS action, 'null' AS answer, "
        "'passed' AS verdict, '' AS torch, '' AS session, '{}' AS detail FROM r"
    )
    con.commit()
    con.close()


def test_a_recursive_view_is_refused_by_grading(tmp_path):
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    endless_view_store(home / "progress.sqlite3")
    scratch.mkdir()
    code = (
        "import sys; from pathlib import Path; from grader.instructor.grading.pipeline import read_events; "
        "print(read_events(Path(sys.argv[1]), Path(sys.argv[2])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(home), str(scratch)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "store missing or corrupt: its events is a view, not a plain table" in done.stdout


def test_a_recursive_view_is_refused_by_the_class_view(tmp_path):
    endless_view_store(tmp_path / "homes" / "mallory" / ".local" / "share" / "autograd-lab" / "progress.sqlite3")
    done = subprocess.run(
        [sys.executable, "-m", "grader", "class", "--homes", str(tmp_path / "homes"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "its events is a view, not a plain table" in done.stdout


def test_a_runaway_query_is_stopped_by_the_budget(tmp_path, monkeypatch):
    """A plain events table with a view beside it: the view is never queried; a query over budget is refused."""
    from grader.engine.store import Store
    from grader.instructor.grading import untrusted_store

    path = tmp_path / "progress.sqlite3"
    Store(path).append("00", "00.warmup-square", "check", "correct", 6.0)
    con = sqlite3.connect(path)
    con.execute("CREATE VIEW other AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r")
    con.executemany(
        "INSERT INTO events (time, unit, qid, action, answer, verdict, torch) VALUES (1, '00', NULL, 'reset', 'null', ?, '')",
        [("recorded",)] * 999,
    )
    con.execute("CREATE TRIGGER t AFTER INSERT ON events BEGIN DELETE FROM events; END")
    con.commit()
    con.close()
    events, findings = untrusted_store.read(path)
    assert [e.verdict for e in events] == ["correct"] + ["recorded"] * 999 and not findings
    monkeypatch.setattr(untrusted_store, "OPS_BUDGET", 10)
    with pytest.raises(untrusted_store.Refused, match="SQLite steps"):
        untrusted_store.read(path)


# --- the sandbox holds ----------------------------------------------------------------------------------

PEEK = """
import os, socket
found = []
for label, path in {targets!r}.items():
    try:
        with open(path, "rb") as f:
            f.read(1)
        found.append(label)
    except OSError:
        pass
s = socket.socket(socket.AF_UNIX)
try:
    s.connect({sock!r})
    found.append("socket")
except OSError:
    pass
raise RuntimeError("reached: " + (",".join(found) or "nothing"))
"""


@needs_bwrap
def test_a_submission_reads_nothing_that_is_not_its_own(outside):
    folder = outside / "class"
    write_class(folder, {"alice": nbformat.read(SOLVED_00, as_version=4)})
    secret = outside / "secret"
    secret.mkdir(mode=0o700)
    (secret / "key.txt").write_text("root only")
    os.chmod(secret / "key.txt", 0o600)
    references = sorted(p for p in (ROOT / "tests" / "reference").iterdir() if p.is_file())
    targets = {
        "classmate": str(folder / "alice" / "00_start_here.ipynb"),
        "solutions": str(ROOT / "solutions" / "00_start_here.ipynb"),
        "reference": str(references[0]),
        "git": str(ROOT / ".git") if (ROOT / ".git").is_file() else str(ROOT / ".git" / "HEAD"),
        "rootonly": str(secret / "key.txt"),
    }
    for path in targets.values():
        assert Path(path).exists(), path
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(outside / "host.sock"))
    server.listen(5)
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    mallory = with_cell(BLANK_00, PEEK.format(targets=targets, sock=str(outside / "host.sock")), "start")
    write_class(folder, {"mallory": mallory})
    try:
        rows = grade(folder)
    finally:
        server.close()
    assert "raised RuntimeError: reached: nothing" in rows["mallory"]["problems"], rows["mallory"]["problems"]
    assert not accepted
    assert rows["alice"]["marked passed"] == "yes"


# --- caps per notebook -----------------------------------------------------------------------------------

FILL = """
import os
written = 0
try:
    with open({path!r}, "wb") as f:
        block = b"x" * 2**20
        while written < {limit}:
            f.write(block)
            f.flush()
            written += 1
except OSError:
    pass
finally:
    try:
        os.remove({path!r})
    except OSError:
        pass
raise RuntimeError(f"wrote {{written}} MB")
"""

FORK_BOMB = """
import os, signal
children = []
try:
    for _ in range(1500):
        pid = os.fork()
        if pid == 0:
            signal.pause()
            os._exit(0)
        children.append(pid)
except OSError:
    pass
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
raise RuntimeError(f"forked {len(children)}")
"""

SHARED_MAP = """
import mmap
try:
    m = mmap.mmap(-1, int(2.3 * 2**30), flags=mmap.MAP_SHARED)
    outcome = "mapped"
except (OSError, MemoryError, ValueError):
    outcome = "refused"
raise RuntimeError("shared map " + outcome)
"""

MANY_FILES = """
import time
for i in range(12):  # 12 files of 16 MB: each under the per-file cap, together three times the folder's
    with open(f"part{i}", "wb") as f:
        for _ in range(16):
            f.write(bytes(2**20))
time.sleep(3)  # the warm parent measures the folder twice a second
raise RuntimeError("many files not stopped")
"""


def _count(problems: str, word: str) -> int:
    tail = problems.split(f"raised RuntimeError: {word} ", 1)[1]
    return int(tail.split()[0])


@needs_bwrap
def test_writes_processes_and_shared_memory_are_capped(outside):
    folder = outside / "class"
    write_class(
        folder,
        {
            "tmpfill": with_cell(BLANK_00, FILL.format(path="/tmp/fill", limit=256), "start"),
            "jobfill": with_cell(BLANK_00, FILL.format(path="fill", limit=256), "start"),
            "forkbomb": with_cell(BLANK_00, FORK_BOMB, "start"),
            "sharedmap": with_cell(BLANK_00, SHARED_MAP, "start"),
            "manyfiles": with_cell(BLANK_00, MANY_FILES, "start"),
        },
    )
    rows = grade(folder, "--memory-mb", "512", env={"AGL_WRITABLE_MB": "64"})
    assert set(rows) == {"tmpfill", "jobfill", "forkbomb", "sharedmap", "manyfiles"}
    many = rows["manyfiles"]
    assert many["run"] == "killed" and "wrote more than 64 MB into its folder" in many["problems"], many
    assert many["marked passed"] == "no"
    print({name: r["problems"] for name, r in rows.items()})
    for name in ("tmpfill", "jobfill"):
        assert _count(rows[name]["problems"], "wrote") <= 64, rows[name]
    assert _count(rows["forkbomb"]["problems"], "forked") <= containment.NPROC_CAP, rows["forkbomb"]
    assert "raised RuntimeError: shared map refused" in rows["sharedmap"]["problems"], rows["sharedmap"]


# --- events leave the sandbox as they happen --------------------------------------------------------------

STRUGGLE = """
hint("00.warmup-square")
check("00.warmup-square", 5.0)
"""

ERASE = """
import sqlite3
from grader.engine.store import current
con = sqlite3.connect(current().path)
con.execute("DELETE FROM events WHERE action = 'hint' OR verdict = 'incorrect'")
con.commit()
con.close()
"""


def _struggled(erase: bool):
    nb = with_cell(SOLVED_00, STRUGGLE, "start")
    if erase:
        nb.cells.append(nbformat.v4.new_code_cell(ERASE))
    return nb


@pytest.mark.parametrize("path", ["warm", "cold"])
def test_erasing_hints_and_attempts_from_the_store_changes_nothing(outside, path):
    folder = outside / "class"
    write_class(folder, {"eraser": _struggled(True), "honest": _struggled(False)})
    rows = grade(folder, env={"AGL_GRADE_COLD": "1"} if path == "cold" else {})
    eraser, honest = rows["eraser"], rows["honest"]
    assert (honest["hints"], honest["attempts"]) == ("00.warmup-square: 1", "00.warmup-square: 2"), honest
    assert "changed after it was written" not in honest["findings"], honest
    for key in ("00.warmup-square", "hints", "attempts", "points", "marked passed"):
        assert eraser[key] == honest[key], (key, eraser, honest)
    assert "the progress store was changed after it was written" in eraser["findings"], eraser


def test_a_checkout_under_tmp_is_reachable_inside_the_sandbox():
    # the sandbox's /tmp is a fresh tmpfs: the folders above code bound there must be made traversable
    args = containment._folders_above([Path("/tmp/ci-clone/.venv"), Path("/tmp/ci-clone/grader")])
    assert args == ["--perms", "0755", "--dir", "/tmp/ci-clone"]
