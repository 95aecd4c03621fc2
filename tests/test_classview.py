"""The instructor's view without a hub: three learners' stores in three homes, read-only."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from grader.engine.question import all_questions
from grader.instructor import classview


def _self_test_with_note():
    """A self-test that declares hints and a literal misconception (as the browser test picks one)."""
    for q in all_questions():
        if q.role == "self-test" and len(q.hints) >= 2 and any(not callable(w) for w, _ in q.misconceptions):
            wrong, note = next((w, n) for w, n in q.misconceptions if not callable(w))
            return q, wrong, note
    pytest.fail("no self-test declares hints and a literal misconception")


def _as(monkeypatch, homes: Path, name: str) -> Path:
    where = homes / name / classview.STORE_IN_HOME.parent
    monkeypatch.setenv("AUTOGRAD_LAB_HOME", str(where))
    return where / classview.STORE_IN_HOME.name


def listing(folder: Path) -> dict:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_uid) for p in folder.iterdir()}


@pytest.fixture(scope="module")
def a_class(tmp_path_factory):
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _make_class(tmp_path_factory.mktemp("class") / "homes", monkeypatch)


def _square():
    """torch's answer to 00.warmup-square on the program this learner is asked now (their own)."""
    from grader.engine.question import get
    from tests.truths import asked_now

    return asked_now(get("00.warmup-square"))


def _make_class(homes: Path, monkeypatch):
    from grader import check, hint, mark_passed, predict, reveal

    q, wrong, note = _self_test_with_note()
    # ada: unit 00 as the solution does it
    _as(monkeypatch, homes, "ada")
    predict("00.warmup-add", [2.0, 3.0])
    reveal("00.warmup-add")
    predict("00.warmup-flag", False)
    reveal("00.warmup-flag")
    check("00.warmup-square", _square())
    mark_passed("00")
    # bo: the untouched notebook reveals without predicting, and stops there
    _as(monkeypatch, homes, "bo")
    reveal("00.warmup-add")
    reveal("00.warmup-flag")
    mark_passed("00")
    # cy: one wrong prediction, a second attempt, then a hint and a known wrong answer elsewhere
    _as(monkeypatch, homes, "cy")
    predict("00.warmup-add", [1.0, 2.0])
    reveal("00.warmup-add")
    predict("00.warmup-flag", False)
    reveal("00.warmup-flag")
    check("00.warmup-square", _square() + 1000)
    check("00.warmup-square", _square())
    mark_passed("00")
    hint(q.qid)
    check(q.qid, wrong)
    monkeypatch.delenv("AUTOGRAD_LAB_HOME")
    return homes, q, wrong, note


def _row(rep, qid):
    unit = next(u for u in rep["units"] if u["unit"] == qid.split(".")[0])
    return next(r for r in unit["questions"] if r["qid"] == qid)


def test_the_report_counts_each_learners_own_record(a_class):
    homes, q, wrong, note = a_class
    before = {n: listing(homes / n / classview.STORE_IN_HOME.parent) for n in ("ada", "bo", "cy")}
    learners = classview.collect([homes])
    assert [l.name for l in learners] == ["ada", "bo", "cy"] and not any(l.problem for l in learners)
    rep = classview.report(learners)
    add = _row(rep, "00.warmup-add")
    assert (add["predicted_correct"], add["predicted_wrong"], add["revealed_without_prediction"]) == (1, 1, 1)
    assert add["wrong_answers"] == [{"answer": "[1, 2]", "count": 1, "note": ""}]
    square = _row(rep, "00.warmup-square")
    assert (square["passed"], square["passed_first_try"], square["not_answered"]) == (2, 1, 1)
    assert square["attempts_total"] == 3 and square["mean_attempts_to_pass"] == 1.5
    assert square["records"] == {"correct": 1, "correct on attempt 2": 1, "not answered": 1}
    other = _row(rep, q.qid)
    assert other["failing"] == 1 and other["hints_shown"] == 1 and other["learners_with_hints"] == 1
    assert [w["count"] for w in other["wrong_answers"]] == [1]
    assert other["wrong_answers"][0]["note"] == note, "a known misconception is named with its note"
    unit00 = next(u for u in rep["units"] if u["unit"] == "00")
    assert (unit00["started"], unit00["passed"]) == (3, 2)
    where = {r["learner"]: r for r in rep["class"]}
    assert where["ada"]["passed"] == ["00"] and where["ada"]["unit_in_progress"] == ""
    assert where["bo"]["unit_in_progress"] == "00" and where["bo"]["missing"] == [
        "00.warmup-square: not answered yet (self-test)"
    ]
    assert where["cy"]["unit_in_progress"] == q.unit and where["cy"]["last_action"] == f"{q.qid} check incorrect"
    # read-only: nothing created, changed or left beside any store
    after = {n: listing(homes / n / classview.STORE_IN_HOME.parent) for n in ("ada", "bo", "cy")}
    assert after == before


def test_the_page_says_what_it_is_and_carries_the_numbers(a_class, tmp_path):
    homes, q, _, _ = a_class
    rep = classview.report(classview.collect([homes]))
    text = classview.page(rep)
    assert "This is the learners' own record." in text and "nothing was re-run" in text
    assert "<script src" not in text and "http" not in text.split("<script type='application/json'")[0], (
        "the page works offline: no remote resource"
    )
    assert "data-q='00.warmup-add' data-k='predicted_correct'>1<" in text
    assert json.loads(text.split("id='report'>")[1].split("</script>")[0].replace("<\\/", "</")) == rep


def test_a_store_being_written_is_read_through_its_own_wal_and_gains_no_files(a_class, tmp_path):
    homes, *_ = a_class
    path = tmp_path / classview.STORE_IN_HOME.name
    shutil.copyfile(homes / "ada" / classview.STORE_IN_HOME, path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute(
        "INSERT INTO events (time, unit, qid, action, answer, verdict, torch) "
        "VALUES (1, '01', NULL, 'reset', 'null', 'recorded', 'x')"
    )
    try:
        names = set(os.listdir(path.parent))
        assert {path.name + "-wal", path.name + "-shm"} <= names
        committed = len(classview.read_events(path))
        assert set(os.listdir(path.parent)) == names
    finally:
        writer.execute("COMMIT")
        writer.close()
    assert len(classview.read_events(path)) == committed + 1
    assert set(os.listdir(path.parent)) == {path.name}


def test_missing_and_unreadable_stores_are_listed_not_fatal(a_class, tmp_path):
    homes, *_ = a_class
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"not a database at all, " * 100)
    learners = classview.collect([homes], stores={"dee": tmp_path / "nothing.sqlite3", "eve": broken})
    problems = {l.name: l.problem for l in learners}
    assert problems["dee"].startswith("not started")
    assert problems["eve"].startswith("store not readable")
    rep = classview.report(learners)
    assert (rep["learners"], rep["readable"]) == (5, 3)
    assert broken.read_bytes() == b"not a database at all, " * 100


def test_a_named_user_without_a_store_reads_not_started_and_other_homes_are_not_learners(a_class, tmp_path):
    """A home with nothing of the course (a service account, a user not in the course) is not a learner unless
    named; a named user who never ran a graded cell is listed "not started", never dropped."""
    homes, *_ = a_class
    (homes / "dev").mkdir()  # a user who never logged in: a home and nothing in it
    try:
        others: list = []
        assert [l.name for l in classview.collect([homes], others=others)] == ["ada", "bo", "cy"]
        assert others == ["dev"]
        learners = classview.collect([homes], users=["ada", "bo", "cy", "dev"])
        assert [l.name for l in learners] == ["ada", "bo", "cy", "dev"]
        rep = classview.report(learners)
        dev = next(r for r in rep["class"] if r["learner"] == "dev")
        assert dev["problem"].startswith("not started") and (rep["learners"], rep["readable"]) == (4, 3)
        assert "not started" in classview.page(rep).split("data-learner='dev'")[1].split("</tr>")[0]
        assert not (homes / "dev" / classview.STORE_IN_HOME).exists(), "collecting created a store"
    finally:
        (homes / "dev").rmdir()


@pytest.mark.parametrize("linked", ["store", ".local"])
def test_a_store_or_a_whole_local_folder_linked_to_another_learners_is_refused(a_class, tmp_path, linked):
    """eve makes her store (or her whole ~/.local) a link to ada's: the old view showed ada's record as eve's."""
    homes, *_ = a_class
    eve = homes / "eve"
    try:
        if linked == "store":
            (eve / classview.STORE_IN_HOME.parent).mkdir(parents=True)
            (eve / classview.STORE_IN_HOME).symlink_to(homes / "ada" / classview.STORE_IN_HOME)
        else:
            eve.mkdir()
            (eve / ".local").symlink_to(homes / "ada" / ".local")
        learners = {l.name: l for l in classview.collect([homes])}
        assert "eve" in learners, "a home with a trace of the course is a learner"
        assert not learners["eve"].events, "another learner's record was read as eve's"
        assert "a link (not followed)" in learners["eve"].problem
        rep = classview.report(list(learners.values()))
        assert rep["readable"] == 3 and classview.text(rep).count("a link (not followed)") == 1
    finally:
        shutil.rmtree(eve)


def test_the_same_wrong_answer_on_two_programs_is_two_entries_each_judged_on_its_own(tmp_path, monkeypatch):
    """Each learner's self-test programs are their own: one wrong answer given on two programs is not pooled,
    and the misconception note, where one is given, is worked out on the program that learner was asked."""
    from grader import check
    from grader.engine.question import get

    q = get("00.warmup-square")
    homes = tmp_path / "homes"
    for name in ("kim", "lee"):
        monkeypatch.setenv("AUTOGRAD_LAB_LEARNER", name)
        _as(monkeypatch, homes, name)
        check(q.qid, -12345.0)
    monkeypatch.delenv("AUTOGRAD_LAB_HOME")
    rep = classview.report(classview.collect([homes]))
    wrong = _row(rep, q.qid)["wrong_answers"]
    assert [w["count"] for w in wrong] == [1, 1], wrong
    assert len({w["program"] for w in wrong}) == 2 and all(w["answer"] == wrong[0]["answer"] for w in wrong)
    assert "on program" in classview.page(rep) and "(program " in classview.text(rep)


def test_control_characters_in_names_and_answers_are_escaped_when_printed(tmp_path, monkeypatch, capsys):
    from grader import predict, reveal

    homes = tmp_path / "homes"
    odd = "\x1b]0;pwned\x07mal\x1b[2J"
    _as(monkeypatch, homes, odd)
    predict("00.warmup-add", "\x1b[2J\x1b]0;x\x07")
    reveal("00.warmup-add")
    monkeypatch.delenv("AUTOGRAD_LAB_HOME")
    assert classview.main(["--homes", str(homes)]) == 0
    printed = capsys.readouterr()
    assert "\x1b" not in printed.out + printed.err and "\x07" not in printed.out + printed.err
    assert "\\x1b]0;pwned\\x07mal" in printed.out


def test_the_command_prints_and_writes_the_page(a_class, tmp_path, capsys):
    homes, *_ = a_class
    out = tmp_path / "class.html"
    assert classview.main(["--homes", str(homes), "--html", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 of 3 learners' stores read" in printed and "00.warmup-add" in printed
    assert "bo" in printed and "missing: 00.warmup-square" in printed
    assert out.read_text().startswith("<!doctype html>")
    assert classview.main(["--homes", str(tmp_path / "nobody")]) == 1


def test_a_home_that_cannot_be_entered_is_listed_with_why(a_class, tmp_path, monkeypatch):
    homes, *_ = a_class
    real = classview.home_files.open_home

    def guarded(user, path):
        if user == "bo":
            raise classview.home_files.Refused("the home: permission denied (collect the class as root)")
        return real(user, path)

    monkeypatch.setattr(classview.home_files, "open_home", guarded)
    problems = {l.name: l.problem for l in classview.collect([homes], users=["ada", "bo"])}
    assert problems["ada"] == "" and problems["bo"].startswith("store not read: the home: permission denied")


def test_answers_the_store_holds_and_the_saved_notebook_lacks_are_named(a_class, tmp_path):
    """Issue 44 item 5: a learner who answered with the widgets and never saved hands in a notebook without the
    answers; the class view (which has both the store and the workspace) says which, so the instructor can ask."""
    homes = tmp_path / "homes"
    shutil.copytree(a_class[0], homes)
    workspace = homes / "ada" / "autograd-lab"
    workspace.mkdir()
    root = Path(__file__).resolve().parent.parent
    shutil.copy(root / "notebooks" / "00_start_here.ipynb", workspace / "00_start_here.ipynb")
    learners = classview.collect([homes])
    rep = classview.report(learners)
    ada = next(r for r in rep["class"] if r["learner"] == "ada")
    assert set(ada["unsaved"]) == {"00.warmup-add", "00.warmup-flag", "00.warmup-square"}, ada
    assert "answered but not in the saved notebook" in classview.text(rep)
    assert "answered but not in the saved notebook" in classview.page(rep)
    bo = next(r for r in rep["class"] if r["learner"] == "bo")
    assert bo["unsaved"] == []  # no workspace: nothing to compare
