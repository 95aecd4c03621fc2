"""A unit split after a release: what a copy handed out before the split holds, and how it is graded."""

from __future__ import annotations

from grader.engine import moves
from grader.engine.question import of_unit
from grader.instructor.grading import versions


def _pretend_split(monkeypatch, old: str, new: str, moved: list[str]) -> None:
    """Today's ``new`` holds ``moved`` (ids that a release before the split listed under ``old``)."""
    monkeypatch.setattr(moves, "SPLITS", {**moves.SPLITS, old: new})
    monkeypatch.setattr(
        moves, "QUESTIONS", {**moves.QUESTIONS, **{f"{old}.{q.split('.', 1)[1]}-then": q for q in moved}}
    )
    then = {u: qs for u, qs in versions.current_entry().items() if u != new}
    then[old] = then[old] + [f"{old}.{q.split('.', 1)[1]}-then" for q in moved]
    released = {"0.0.1": then, **versions.released()}
    monkeypatch.setattr(versions, "released", lambda: released)
    monkeypatch.setattr(versions, "SPLITS", moves.SPLITS)
    monkeypatch.setattr(versions, "current_id", moves.current_id)


def test_a_copy_from_before_a_split_holds_the_half_that_moved(monkeypatch):
    moved = [q.qid for q in of_unit("01")][:3]
    _pretend_split(monkeypatch, "00", "01", moved)
    assert versions.split_since("0.0.1", "00") == ["01"]
    assert versions.split_since("0.0.1", "01") == []
    # the moved questions were held (under their old ids); the rest of the new unit came after
    assert set(versions.added_since("0.0.1", "01")) == {q.qid for q in of_unit("01")} - set(moved)
    assert versions.added_since("0.0.1", "00") == []


def test_no_split_since_a_version_that_has_both_halves(monkeypatch):
    monkeypatch.setattr(moves, "SPLITS", {"00": "01"})
    monkeypatch.setattr(versions, "SPLITS", moves.SPLITS)
    for version in versions.released():
        assert versions.split_since(version, "00") == []  # every release lists unit 01
