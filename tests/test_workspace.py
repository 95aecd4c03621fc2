"""The learner's workspace: made from notebooks/, never overwriting their work, out of git's and the tests' reach."""

import datetime
import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from grader.instructor.build import build
from grader.instructor.cli import main
from grader.learner import workspace as ws

ROOT = Path(__file__).resolve().parent.parent
DAY = datetime.date(2031, 5, 4)


def course(tmp_path, **notebooks) -> Path:
    """A tiny course root whose notebooks/ holds the given name -> text files."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    for name, text in notebooks.items():
        (root / "notebooks" / f"{name}.ipynb").write_text(text)
    return root


def actions(changes):
    return {c.name: c.action for c in changes}


def test_first_sync_copies_every_notebook_and_keeps_git_out(tmp_path):
    root = course(tmp_path, **{"00_a": "A1", "01_b": "B1"})
    mine = tmp_path / "mine"
    changes = ws.sync(mine, root, DAY)
    assert actions(changes) == {"00_a.ipynb": "added", "01_b.ipynb": "added"}
    assert (mine / "00_a.ipynb").read_text() == "A1" and (mine / "01_b.ipynb").read_text() == "B1"
    assert (mine / ".gitignore").read_text().splitlines()[-1] == "*"
    assert set(json.loads((mine / ws.RECORD).read_text())["files"]) == {"00_a.ipynb", "01_b.ipynb"}
    again = ws.sync(mine, root, DAY)
    assert set(actions(again).values()) == {"current"}
    assert "all current" in ws.report(again, mine)


def test_a_course_update_never_overwrites_the_learners_work(tmp_path):
    root = course(tmp_path, **{"00_a": "A1", "01_b": "B1", "02_c": "C1"})
    mine = tmp_path / "mine"
    ws.sync(mine, root, DAY)
    (mine / "01_b.ipynb").write_text("B1 + my answers")  # the learner worked in 01
    (mine / "02_c.ipynb").write_text("C1 + my answers")  # and in 02, which the update leaves alone
    course(tmp_path, **{"00_a": "A2", "01_b": "B2", "03_d": "D1"})
    before = {p.name: p.read_bytes() for p in mine.glob("*.ipynb")}

    changes = ws.sync(mine, root, DAY)
    assert actions(changes) == {
        "00_a.ipynb": "updated",
        "01_b.ipynb": "beside",
        "02_c.ipynb": "current",
        "03_d.ipynb": "added",
    }
    assert (mine / "00_a.ipynb").read_text() == "A2"  # untouched by the learner: nothing of theirs lost
    assert (mine / "01_b.ipynb").read_text() == "B1 + my answers"
    assert (mine / "02_c.ipynb").read_text() == "C1 + my answers"
    beside = "01_b.course-update-2031-05-04.ipynb"
    assert (mine / beside).read_text() == "B2"
    text = ws.report(changes, mine)
    assert beside in text and "01_b.ipynb is untouched" in text and "added    03_d.ipynb" in text
    for name, data in before.items():  # no file the learner changed was rewritten
        if name != "00_a.ipynb":
            assert (mine / name).read_bytes() == data

    # the next run adds nothing and still points at the waiting version
    changes = ws.sync(mine, root, DAY + datetime.timedelta(days=1))
    assert actions(changes)["01_b.ipynb"] == "waiting" and beside in ws.report(changes, mine)
    assert sorted(p.name for p in mine.glob("01_b*")) == ["01_b.course-update-2031-05-04.ipynb", "01_b.ipynb"]

    # a second update on the same day, while the learner works in the first one: a new name again
    (mine / beside).write_text("B2 + more answers")
    course(tmp_path, **{"01_b": "B3"})
    changes = ws.sync(mine, root, DAY)
    assert actions(changes)["01_b.ipynb"] == "beside"
    assert (mine / beside).read_text() == "B2 + more answers"
    assert (mine / "01_b.course-update-2031-05-04-2.ipynb").read_text() == "B3"
    assert (mine / "01_b.ipynb").read_text() == "B1 + my answers"


def test_a_deleted_copy_comes_back_and_a_workspace_without_a_record_is_treated_as_the_learners(tmp_path):
    root = course(tmp_path, **{"00_a": "A1"})
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "00_a.ipynb").write_text("mine, from before")  # no record: whose is it? the learner's
    assert actions(ws.sync(mine, root, DAY)) == {"00_a.ipynb": "beside"}
    assert (mine / "00_a.ipynb").read_text() == "mine, from before"
    (mine / "00_a.ipynb").unlink()
    assert actions(ws.sync(mine, root, DAY)) == {"00_a.ipynb": "added"}
    assert (mine / "00_a.ipynb").read_text() == "A1"


def test_the_workspace_stays_out_of_the_course_folders(tmp_path, monkeypatch):
    root = course(tmp_path, **{"00_a": "A1"})
    for bad in (root, tmp_path, root / "notebooks", root / "solutions" / "x", root / "tests", root / "elsewhere"):
        with pytest.raises(ws.WorkspaceError):
            ws.sync(bad, root, DAY)
    assert not (root / "notebooks" / ".gitignore").exists() and not (root / "elsewhere").exists()
    assert ws.sync(root / "my-work", root, DAY)
    monkeypatch.delenv(ws.ENV, raising=False)
    assert ws.default_dir(root) == (root / "my-work").resolve()
    monkeypatch.setenv(ws.ENV, str(tmp_path / "moved"))
    assert ws.default_dir(root) == (tmp_path / "moved").resolve()
    assert actions(ws.sync(None, root, DAY)) == {"00_a.ipynb": "added"}
    assert (tmp_path / "moved" / "00_a.ipynb").exists()


def test_links_between_units_keep_working_in_the_workspace(tmp_path):
    mine = tmp_path / "mine"
    ws.sync(mine, ROOT, DAY)
    assert sorted(p.name for p in mine.glob("*.ipynb")) == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    links = 0
    for nb in mine.glob("*.ipynb"):
        for cell in json.loads(nb.read_text())["cells"]:
            for target in re.findall(r"\]\(([^)#\s]+\.ipynb)", "".join(cell["source"])):
                assert not target.startswith(("/", "http")), f"{nb.name} links to {target}: not relative"
                assert (mine / target).exists(), f"{nb.name} links to {target}, missing in the workspace"
                links += 1
    assert links >= 10


def test_git_ignores_my_work():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "check-ignore", "-q", "my-work/00_start_here.ipynb"], cwd=ROOT)
    assert out.returncode == 0


def test_pytest_never_collects_the_workspace(tmp_path):
    """Even `pytest --nbval-lax .` at the repository root passes my-work/ by."""
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", project)
    (project / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (project / "my-work").mkdir()
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", project / "my-work")
    (project / "my-work" / "test_mine.py").write_text("def test_mine():\n    pass\n")
    for args in ([], ["--nbval-lax", "."]):
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", *args],
            cwd=project,
            capture_output=True,
            text=True,
        )
        assert "test_ok" in out.stdout, out.stdout + out.stderr
        assert "my-work" not in out.stdout, out.stdout


def test_build_never_reads_the_workspace(tmp_path):
    root = tmp_path / "course"
    (root / "solutions").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "00_start_here.ipynb", root / "solutions")
    assert build(root) == ["notebooks/00_start_here.ipynb is missing"]
    mine = root / "my-work"
    ws.sync(mine, root, DAY)
    (mine / "00_start_here.ipynb").write_text("the learner's answers")
    (mine / "99_extra.ipynb").write_text("{}")
    assert build(root, check=True) == []
    assert (root / "notebooks" / "00_start_here.ipynb").read_bytes() == (
        ROOT / "notebooks" / "00_start_here.ipynb"
    ).read_bytes()
    assert (mine / "00_start_here.ipynb").read_text() == "the learner's answers"


def test_port_in_use():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert ws.port_in_use(port)
    assert not ws.port_in_use(port)


def test_cli_workspace_checks_the_port_before_anything(tmp_path, capsys):
    root_mine = tmp_path / "mine"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["workspace", "--dir", str(root_mine), "--port", str(port), "--print-dir"]) == 3
        out = capsys.readouterr()
        assert out.out == "" and f"port {port} is taken" in out.err and "PORT=" in out.err
        assert not root_mine.exists()
    assert main(["workspace", "--dir", str(root_mine), "--port", str(port), "--print-dir"]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == str(root_mine.resolve())  # only the path on stdout, for the Makefile
    assert "added    00_start_here.ipynb" in out.err
    assert main(["workspace", "--dir", str(root_mine)]) == 0
    assert "all current" in capsys.readouterr().out
    assert main(["workspace", "--dir", str(ROOT / "notebooks")]) == 2
    assert "course's own notebooks/" in capsys.readouterr().err


def _notebook(version: str) -> str:
    nb = {
        "cells": [{"cell_type": "markdown", "id": "c1", "metadata": {}, "source": "é"}],
        "metadata": {"language_info": {"name": "python", "version": version}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def test_a_copy_carries_this_pythons_language_version_so_jupyterlab_does_not_mark_it_unsaved(tmp_path):
    """JupyterLab writes the kernel's language_info into a notebook it opens: a notebook built on another
    Python opened dirty. The copy says this Python's version and is otherwise the course's, byte for byte."""
    here = sys.version.split()[0]
    root = course(tmp_path, **{"00_a": _notebook("3.0.1"), "01_b": "not json"})
    mine = tmp_path / "mine"
    assert actions(ws.sync(mine, root, DAY)) == {"00_a.ipynb": "added", "01_b.ipynb": "added"}
    assert (mine / "00_a.ipynb").read_text() == _notebook(here)
    assert (mine / "01_b.ipynb").read_text() == "not json"  # not a notebook: copied as it is
    assert actions(ws.sync(mine, root, DAY)) == {"00_a.ipynb": "current", "01_b.ipynb": "current"}
    # a new course version still replaces an untouched copy, and still never a changed one
    (root / "notebooks" / "00_a.ipynb").write_text(_notebook("3.0.1").replace("é", "new"))
    assert actions(ws.sync(mine, root, DAY))["00_a.ipynb"] == "updated"
    assert (mine / "00_a.ipynb").read_text() == _notebook(here).replace("é", "new")
    (mine / "00_a.ipynb").write_text(_notebook(here).replace("é", "mine"))
    (root / "notebooks" / "00_a.ipynb").write_text(_notebook("3.0.1").replace("é", "newer"))
    assert actions(ws.sync(mine, root, DAY))["00_a.ipynb"] == "beside"
    assert "mine" in (mine / "00_a.ipynb").read_text()


def test_a_notebook_in_another_layout_is_copied_unchanged():
    odd = json.dumps({"metadata": {"language_info": {"version": "3.0.1"}}, "nbformat": 4}).encode()
    assert ws.for_this_python(odd) == odd


def test_the_workspace_command_sets_jupyterlab_to_save_widget_state(tmp_path):
    """The conda path (python -m grader workspace, then jupyter lab) gets make lab's overrides.json: without the widget
    manager's saveState, a prediction locked after a page reload reaches the saved notebook through nothing (term44b).
    Settings already there are kept; a second run changes nothing; a file it cannot read is left alone and named."""
    import json

    from grader.learner.workspace import WIDGETS, lab_settings

    target = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert "save widget state" in lab_settings(tmp_path)
    assert json.loads(target.read_text())[WIDGETS]["saveState"] is True
    assert lab_settings(tmp_path) == ""
    target.write_text(json.dumps({WIDGETS: {"saveState": False, "other": 1}, "x": {"y": 2}}))
    assert lab_settings(tmp_path)
    kept = json.loads(target.read_text())
    assert kept[WIDGETS] == {"saveState": True, "other": 1} and kept["x"] == {"y": 2}
    target.write_text("not json")
    assert "could not be read" in lab_settings(tmp_path) and target.read_text() == "not json"
