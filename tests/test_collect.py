"""`python -m grader collect`: every learner's workspace notebooks out of their homes, a folder per user.

Nothing here grades: what matters is the layout (``grade`` names each copy's learner by its folder, read
through :func:`grader.instructor.grading.roster.learner_of`), the times kept, and that a learner's home is
read as untrusted (links and odd files refused, never followed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from grader.engine.course import UNITS
from grader.instructor import cli, collect
from grader.instructor.grading.roster import learner_of

ROOT = Path(__file__).resolve().parent.parent
N00, N01, N02 = (UNITS[u].notebook for u in ("00", "01", "02"))


def _workspace(homes: Path, user: str, names: list[str], when: float = 1_700_000_000) -> Path:
    where = homes / user / collect.WORKSPACE
    where.mkdir(parents=True)
    for name in names:
        (where / name).write_text((ROOT / "notebooks" / name).read_text().replace("answer = ...", f"# {user}"))
        os.utime(where / name, (when, when))
    return where


@pytest.fixture
def homes(tmp_path):
    homes = tmp_path / "home"
    ws = _workspace(homes, "alice", [N00, N01])
    (ws / "scratch.ipynb").write_text("{}")  # the learner's own: not the course's
    (ws / N01.replace(".ipynb", ".course-update-2026-01-01.ipynb")).write_text("{}")  # the course's, not hers
    (ws / ".ipynb_checkpoints").mkdir()
    _workspace(homes, "bob", [N00], when=1_700_000_100)
    (homes / "carol").mkdir()  # a user of the hub who never started: no workspace
    return homes


def test_each_learners_course_notebooks_are_copied_to_a_folder_named_for_them(homes, tmp_path, capsys):
    out = tmp_path / "collected"
    assert cli.main(["collect", "--homes", str(homes), str(out)]) == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        f"alice/{N00}",
        f"alice/{N01}",
        f"bob/{N00}",
    ]
    assert (out / "bob" / N00).read_bytes() == (homes / "bob" / collect.WORKSPACE / N00).read_bytes()
    assert (out / "bob" / N00).stat().st_mtime == 1_700_000_100, "the learner's own save time, for grade"
    for copy in out.rglob("*.ipynb"):  # grade names each by its folder: one learner each
        assert learner_of(copy, out) == copy.parent.name
        assert learner_of(copy, copy) == copy.parent.name  # a regrade of that one file too
    printed = capsys.readouterr().out
    assert "carol" in printed and "not started" in printed
    assert "collected 3 notebooks of 2 of 3 learners" in printed


def test_units_and_users_narrow_it_and_a_second_run_replaces_its_copies(homes, tmp_path, capsys):
    out = tmp_path / "collected"
    assert cli.main(["collect", "--homes", str(homes), "--unit", "1", "--users", "alice,bob", str(out)]) == 0
    assert sorted(p.name for p in out.rglob("*.ipynb")) == [N01]
    (homes / "alice" / collect.WORKSPACE / N01).write_text("{}")
    assert collect.main(["--homes", str(homes), "--unit", "01", str(out)]) == 0
    assert (out / "alice" / N01).read_text() == "{}" and not list(out.rglob("*.part"))
    assert collect.main(["--homes", str(homes), "--unit", "99", str(out)]) == 2
    assert collect.main(["--homes", str(homes), "--users", "../etc", str(out)]) == 2
    assert "not a user name" in capsys.readouterr().err
    assert collect.main(["--homes", str(homes), "--users", "carol", str(out)]) == 1, "nothing collected"


def test_links_and_odd_files_in_a_home_are_refused_never_followed(homes, tmp_path, capsys):
    secret = tmp_path / "secret.ipynb"
    secret.write_text("not alice's")
    alice = homes / "alice" / collect.WORKSPACE
    (alice / N01).unlink()
    (alice / N01).symlink_to(secret)  # a learner's link to a file only root may read
    os.mkfifo(alice / N02)  # would block a reader that opened it blocking
    (homes / "dan").mkdir()
    (homes / "dan" / collect.WORKSPACE).symlink_to(homes / "bob" / collect.WORKSPACE)  # bob's work, as dan's
    out = tmp_path / "collected"
    assert collect.main(["--homes", str(homes), str(out)]) == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [f"alice/{N00}", f"bob/{N00}"]
    printed = capsys.readouterr().out
    assert f"refused {N01}: a link (not followed)" in printed
    assert f"refused {N02}: not a plain file" in printed
    assert "dan" in printed and "is a link or not a folder" in printed


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_workspace_that_is_not_the_home_owners_is_refused(homes, tmp_path, capsys):
    shutil.copytree(homes / "bob" / collect.WORKSPACE, homes / "eve" / collect.WORKSPACE)
    os.chown(homes / "eve", 12345, 12345)  # eve's home is eve's; the workspace in it belongs to someone else
    out = tmp_path / "collected"
    results = {r.learner: r for r in collect.collect([homes], out)}
    assert results["eve"].problem.startswith("refused") and not (out / "eve").exists()
    assert results["bob"].copied == [N00]
