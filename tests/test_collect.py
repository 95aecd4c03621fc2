"""`python -m grader collect`: every learner's workspace notebooks out of their homes, a folder per user.

Nothing here grades: what matters is the layout (``grade`` names each copy's learner by its folder, read
through :func:`grader.instructor.grading.roster.learner_of`), the times it records (when collect saw each
notebook, never the file's own time), who counts as a learner, and that a learner's home is read as untrusted
(links and odd files refused, never followed, even when a link is swapped in while collect reads)."""

from __future__ import annotations

import csv
import datetime
import os
import shutil
import threading
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


def _notebooks(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*.ipynb"))


def _record(out: Path) -> dict[str, dict]:
    with open(out / collect.TIMES, newline="", encoding="utf-8") as f:
        return {row["file"]: row for row in csv.DictReader(f)}


def test_each_learners_course_notebooks_are_copied_to_a_folder_named_for_them(homes, tmp_path, capsys):
    out = tmp_path / "collected"
    assert cli.main(["collect", "--homes", str(homes), "--users", "alice,bob,carol", str(out)]) == 0
    assert _notebooks(out) == [f"alice/{N00}", f"alice/{N01}", f"bob/{N00}"]
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == [collect.TIMES]
    assert (out / "bob" / N00).read_bytes() == (homes / "bob" / collect.WORKSPACE / N00).read_bytes()
    for copy in out.rglob("*.ipynb"):  # grade names each by its folder: one learner each
        assert learner_of(copy, out) == copy.parent.name
        assert learner_of(copy, copy) == copy.parent.name  # a regrade of that one file too
    printed = capsys.readouterr().out
    assert "carol" in printed and "not started" in printed
    assert "collected 3 notebooks of 2 of 3 learners" in printed


def test_the_time_recorded_is_when_collect_saw_the_notebook_never_the_files_own(homes, tmp_path):
    """A backdated notebook (``touch -d 2020-01-01``) is not handed in in 2020: the record says when collect first
    saw those bytes; a notebook unchanged since keeps that time, a changed one takes the later run's."""
    out = tmp_path / "collected"
    bob = homes / "bob" / collect.WORKSPACE / N00
    backdated = datetime.datetime(2020, 1, 1).timestamp()
    os.utime(bob, (backdated, backdated))
    before = datetime.datetime.now().astimezone()
    collect.collect([homes], out)
    first = _record(out)
    seen = datetime.datetime.fromisoformat(first[f"bob/{N00}"]["time"])
    assert seen >= before.replace(microsecond=0), "the time collect saw it, not the file's 2020"
    assert first[f"bob/{N00}"]["saved"].startswith("2020-01-01"), "the file's own time is kept, as shown only"
    # a second run: alice changed a notebook, bob did not
    (homes / "alice" / collect.WORKSPACE / N01).write_text("{}")
    os.utime(homes / "alice" / collect.WORKSPACE / N01, (backdated, backdated))
    later = datetime.datetime.now().timestamp() + 3600
    collect.collect([homes], out, now=later)
    second = _record(out)
    assert second[f"bob/{N00}"]["time"] == first[f"bob/{N00}"]["time"], "unchanged: the time it was first seen"
    assert second[f"alice/{N00}"]["time"] == first[f"alice/{N00}"]["time"]
    assert datetime.datetime.fromisoformat(second[f"alice/{N01}"]["time"]).timestamp() == int(later)
    assert second[f"alice/{N01}"]["sha256"] != first[f"alice/{N01}"]["sha256"]


def test_units_and_users_narrow_it_and_a_second_run_replaces_its_copies(homes, tmp_path, capsys):
    out = tmp_path / "collected"
    assert cli.main(["collect", "--homes", str(homes), "--unit", "1", "--users", "alice,bob", str(out)]) == 0
    assert _notebooks(out) == [f"alice/{N01}"]
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
    assert _notebooks(out) == [f"alice/{N00}", f"bob/{N00}"]
    printed = capsys.readouterr().out
    assert f"refused {N01}: a link (not followed)" in printed
    assert f"refused {N02}: not a plain file" in printed
    assert "dan" in printed and "autograd-lab: a link (not followed)" in printed


def _swapping(workspace: Path, other: Path, stop: threading.Event) -> None:
    """A learner's loop: their workspace is a folder, then a link to another learner's, then the folder again."""
    aside = workspace.with_name(workspace.name + ".real")
    while not stop.is_set():
        os.rename(workspace, aside)
        os.symlink(other, workspace)
        os.unlink(workspace)
        os.rename(aside, workspace)


def test_a_workspace_swapped_for_a_link_in_a_loop_never_yields_another_learners_notebook(homes, tmp_path):
    """The race of the old collect (``lstat`` the workspace, then open ``workspace/NAME`` by path): alice swaps
    ~/autograd-lab between her folder and a link to bob's while root collects her again and again. Every part is
    opened from the folder above it without following a link, so each try copies her own notebook or is refused."""
    alice, bob = homes / "alice" / collect.WORKSPACE, homes / "bob" / collect.WORKSPACE
    (bob / N01).write_text((alice / N01).read_text().replace("# alice", "# bob"))
    stop = threading.Event()
    swapper = threading.Thread(target=_swapping, args=(alice, bob, stop), daemon=True)
    swapper.start()
    outcomes = {"hers": 0, "refused": 0, "not there": 0}
    try:
        for i in range(1500):
            out = tmp_path / f"try{i % 4}"
            got = collect.collect_one("alice", homes / "alice", out, ["01"])
            if got.copied:
                assert "# bob" not in (out / "alice" / N01).read_text(), f"try {i} copied bob's notebook as alice's"
                outcomes["hers"] += 1
            else:
                outcomes["refused" if got.problem.startswith("refused") else "not there"] += 1
    finally:
        stop.set()
        swapper.join()
    # a backstop, not the proof (the injected swap above is): on a busy machine the loop may never land in the window,
    # so only what it must never do is asserted, and what it saw is printed
    print(outcomes)


def test_a_link_swapped_in_between_a_check_and_the_open_is_not_followed(homes, tmp_path, monkeypatch):
    """The race made certain: the workspace becomes a link to bob's right after anything looks at it by path."""
    alice, bob = homes / "alice" / collect.WORKSPACE, homes / "bob" / collect.WORKSPACE
    (bob / N01).write_text("bob's notebook")
    real_lstat = os.lstat

    def lstat_then_swap(path, *args, **kwargs):
        info = real_lstat(path, *args, **kwargs)
        if Path(os.fsdecode(path)) == alice and not alice.is_symlink():
            alice.rename(alice.with_name("kept"))
            alice.symlink_to(bob)
        return info

    monkeypatch.setattr(os, "lstat", lstat_then_swap)
    out = tmp_path / "collected"
    got = collect.collect_one("alice", homes / "alice", out, ["00", "01"])
    copies = [p.read_text() for p in out.rglob("*.ipynb")]
    assert "bob's notebook" not in copies, got


def test_only_homes_that_hold_the_course_are_learners_and_the_others_are_named(homes, tmp_path, capsys):
    """A service account's home (or any user's who is not in the course) is not a learner: it is named once, and
    listed "not started" only when named with --users (or --group)."""
    (homes / "svc-backup").mkdir()
    (homes / "erin" / ".local" / "share" / "autograd-lab").mkdir(parents=True)  # started, no workspace
    out = tmp_path / "collected"
    results = {r.learner: r for r in collect.collect([homes], out)}
    assert sorted(results) == ["alice", "bob", "erin"]
    assert results["erin"].problem.startswith("not started")
    assert collect.main(["--homes", str(homes), str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 home(s) hold nothing of the course" in printed and "carol, svc-backup" in printed
    assert "svc-backup " not in printed.split("home(s) hold")[0]


def test_control_characters_in_a_learners_name_are_escaped_in_the_summary(homes, tmp_path, capsys):
    odd = "\x1b]0;pwned\x07eve\x1b[2J"
    _workspace(homes, odd, [N00])
    assert collect.main(["--homes", str(homes), str(tmp_path / "collected")]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\x07" not in printed
    assert "\\x1b]0;pwned\\x07eve\\x1b[2J" in printed


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_workspace_that_is_not_the_home_owners_is_refused(homes, tmp_path, capsys):
    shutil.copytree(homes / "bob" / collect.WORKSPACE, homes / "eve" / collect.WORKSPACE)
    os.chown(homes / "eve", 12345, 12345)  # eve's home is eve's; the workspace in it belongs to someone else
    out = tmp_path / "collected"
    results = {r.learner: r for r in collect.collect([homes], out)}
    assert results["eve"].problem.startswith("refused") and not (out / "eve").exists()
    assert results["bob"].copied == [N00]
    # a notebook in one's own workspace that belongs to someone else (a hard link, say) is not one's own
    os.chown(homes / "eve" / collect.WORKSPACE, 12345, 12345)
    os.chown(homes / "eve" / collect.WORKSPACE / N00, 0, 0)
    again = collect.collect_one("eve", homes / "eve", out, ["00"])
    assert not again.copied and "does not belong to the learner" in again.refused[0]
