"""The student bundle: learner notebooks and the grader, never solutions or tests."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from grader.instructor.release import check_bundle

ROOT = Path(__file__).resolve().parent.parent


def test_release_writes_a_bundle_without_solutions(tmp_path):
    out = tmp_path / "bundle"
    result = subprocess.run(
        [sys.executable, "-m", "grader", "release", str(out), "--zip"], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (out / "notebooks").glob("*.ipynb")) == sorted(
        p.name for p in (ROOT / "notebooks").glob("*.ipynb")
    )
    for name in ("solutions", "tests", "bench", ".ci"):
        assert not (out / name).exists()
    assert check_bundle(out) == []
    assert (out / "grader" / "learner" / "api.py").exists() and (out / "pyproject.toml").exists()
    assert "make lab" in (out / "README.md").read_text()
    with zipfile.ZipFile(tmp_path / "bundle.zip") as z:
        names = z.namelist()
    assert any(n.startswith("bundle/notebooks/") for n in names) and not any("/solutions/" in n for n in names)
    # the bundle's grader runs on its own: a learner's placeholder answer is "not answered yet"
    env = dict(os.environ, PYTHONPATH=str(out), AUTOGRAD_LAB_HOME=str(tmp_path / "home"))
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import grader; print(grader.__file__); print(grader.check('00.warmup-square', ...).verdict)",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert probe.stdout.split() == [str(out / "grader" / "__init__.py"), "unanswered"], probe.stderr


def test_release_refuses_a_folder_that_is_not_empty_or_inside_the_course(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    for target in (tmp_path / "full", ROOT / "notebooks" / "out"):
        result = subprocess.run(
            [sys.executable, "-m", "grader", "release", str(target)], capture_output=True, text=True, cwd=ROOT
        )
        assert result.returncode == 2 and "release failed" in result.stderr
    assert not (ROOT / "notebooks" / "out").exists()


def test_a_bundle_with_a_solution_region_is_caught(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "x.ipynb").write_text('{"source": "### BEGIN SOLUTION"}')
    (tmp_path / "solutions").mkdir()
    assert len(check_bundle(tmp_path)) == 2
