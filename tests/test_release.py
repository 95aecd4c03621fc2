"""The student bundle: learner notebooks and the grader, never solutions or tests."""

import os
import re
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
    assert not (out / "grader" / "instructor").exists(), "the instructor's tools are not the learner's"
    readme = (out / "README.md").read_text()
    two = re.search(r"Two commands.*?```\n(.*?)```", readme, re.S).group(1)
    assert [line.split("#")[0].split()[:2] for line in two.strip().splitlines()] == [
        ["make", "lab"],
        [".venv/bin/python", "-m"],
    ], "the README says two commands and shows two"
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
    # python -m grader in the bundle: the learner's commands, and no instructor's command
    status = subprocess.run(
        [sys.executable, "-m", "grader", "status"], capture_output=True, text=True, env=env, cwd=out
    )
    assert status.returncode == 0 and "00  not started" in status.stdout, status.stderr
    grade = subprocess.run(
        [sys.executable, "-m", "grader", "grade", "."], capture_output=True, text=True, env=env, cwd=out
    )
    assert grade.returncode == 2 and "invalid choice: 'grade'" in grade.stderr and "Traceback" not in grade.stderr


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


def test_the_bundle_installs_the_course_alone_and_ships_only_targets_that_work_there(tmp_path):
    """Issue 31: the bundle shipped `test`, `hub` and `drift` (they need tests/, tools/, the test extra), its
    `make lab` installed the test extra, its README's conda steps opened notebooks/ instead of the workspace,
    the summary said "15 notebooks" (it counted grader/), and there was no LICENSE although pyproject says MIT."""
    import shutil

    out = tmp_path / "bundle"
    result = subprocess.run(
        [sys.executable, "-m", "grader", "release", str(out)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    count = len(list((ROOT / "solutions").glob("*.ipynb")))
    assert f": {count} notebooks, " in result.stdout and "LICENSE" in result.stdout, result.stdout
    assert (
        "MIT License" in (out / "LICENSE").read_text()
        and (ROOT / "LICENSE").read_bytes() == (out / "LICENSE").read_bytes()
    )
    make = shutil.which("make")
    if make is None:
        import pytest

        pytest.skip("make is not installed")
    # make's own database of the bundle's Makefile: the learner's targets, nothing that needs the repository
    env = dict(os.environ, PYTHON=sys.executable)
    db = subprocess.run([make, "-pnq", "-f", "Makefile", "-r", "-R"], cwd=out, capture_output=True, text=True, env=env)
    rules = {l.split(":")[0] for l in db.stdout.splitlines() if re.match(r"^[a-z][\w-]*:(?!=)", l)}
    assert {"install", "lab", "clean"} <= rules
    assert not rules & {"test", "test-install", "hub", "hub-deps", "drift", "lint", "unit-tests", "build", "check"}
    phony = next(l for l in db.stdout.splitlines() if l.startswith(".PHONY:")).split()[1:]
    assert set(phony) <= rules, "every phony target has its rule"
    # the dry run of `make lab` resolves every prerequisite and installs the course without an extra
    dry = subprocess.run([make, "-n", "lab"], cwd=out, capture_output=True, text=True, env=env)
    assert dry.returncode == 0, dry.stderr
    assert "pip install --quiet -e .;" in dry.stdout and "[test]" not in dry.stdout and "[dev]" not in dry.stdout
    for name in ("test", "hub", "drift"):
        refused = subprocess.run([make, "-n", name], cwd=out, capture_output=True, text=True, env=env)
        assert refused.returncode != 0 and "No rule to make target" in refused.stderr, name
    # environment.yml in the bundle installs the course alone too
    assert (out / "environment.yml").read_text().rstrip().endswith("- -e .")
    # the README's conda steps: the workspace they make holds the notebook they open
    readme = (out / "README.md").read_text()
    assert "notebooks/00_start_here.ipynb" not in readme
    opened = re.search(r"`jupyter lab ([^`]+)`", readme).group(1)
    assert "`python -m grader workspace`" in readme
    made = subprocess.run(
        [sys.executable, "-m", "grader", "workspace"],
        cwd=out,
        capture_output=True,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if k != "AUTOGRAD_LAB_WORKSPACE"},
            "PYTHONPATH": str(out),
            "AUTOGRAD_LAB_HOME": str(tmp_path / "home"),
        },
    )
    assert made.returncode == 0, made.stderr
    assert (out / opened).is_file() and opened.startswith("my-work/"), opened
