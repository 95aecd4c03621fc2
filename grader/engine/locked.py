"""What a notebook carries of a prediction locked in with the widget: one output per predict cell.

A prediction locked with the "Lock in" button is in the learner's store, but not in the cell's source,
which still reads ``answer = ...``. So the predict cell also shows a small record output (a display
that Lock in updates) under the course's own mimetype :data:`MIME`, which JupyterLab saves with the
notebook; batch grading reads it back (:mod:`grader.instructor.grading.locks`) and writes the answer
into the cell before the notebook is re-run, so the predictions stay in notebook order.

A record is ``{"qid", "locked", "answer", "before_reveal"}``: ``answer`` is the JSON form
``kind.encode`` gives, ``before_reveal`` says whether torch's answer had ever been shown when it was
locked. A self-test's check cell carries the answer its Check button graded the same way, marked
``"checked": true`` (a self-test has no reveal: ``before_reveal`` is true). :func:`read_lock` is strict
about the form: only a well-formed record is carried into grading, with its ``before_reveal``; grading
carries a prediction locked after the reveal as such (its record says "predicted after reveal", as the
learner's panel does, and it earns nothing), so a reveal never passes for a prediction. :func:`read`
reads only a prediction locked before the reveal. This module draws nothing and imports nothing of the
course: both the learner's widgets and the grader use it.
"""

from __future__ import annotations

import math
import re
from typing import Any

MIME = "application/vnd.autograd-lab.prediction+json"
QID = re.compile(r"\d\d[a-z]?\.[a-z0-9][a-z0-9-]{0,80}")
MAX_ITEMS = 1_000  # list items, dict keys and string characters counted together
MAX_DEPTH = 6


class Unusable(ValueError):
    """A record is there but cannot be carried into grading: malformed, or locked after the reveal."""


def record(qid: str, encoded: Any, before_reveal: bool, checked: bool = False) -> dict[str, Any]:
    """The record of a locked prediction (``encoded`` is ``kind.encode(value)``); ``checked``: a self-test's answer
    graded with the Check button."""
    out = {"qid": qid, "locked": True, "answer": encoded, "before_reveal": bool(before_reveal)}
    return {**out, "checked": True} if checked else out


def unlocked(qid: str, checked: bool = False) -> dict[str, Any]:
    """The record of a question shown for a prediction (``checked``: a self-test's answer) not locked yet."""
    return {"qid": qid, "locked": False, **({"checked": False} if checked else {})}


def words(qid: str, payload: dict[str, Any], shown: str = "") -> str:
    """What the record says in text (what JupyterLab shows of it): ``shown`` is the answer as the kind shows it."""
    if "checked" in payload:
        return f"{qid}: checked with the widget: {shown}" if payload.get("locked") else f"{qid}: not checked yet"
    if not payload.get("locked"):
        return f"{qid}: not locked yet"
    if not payload.get("before_reveal"):
        return f"{qid}: locked in after torch's answer was revealed (not a prediction): {shown}"
    return f"{qid}: locked in: {shown}"


def bundle(payload: dict[str, Any], shown: str = "") -> dict[str, Any]:
    """Display data of a record: the record itself and its words."""
    return {MIME: payload, "text/plain": words(str(payload.get("qid")), payload, shown)}


def _size(value: Any, depth: int = 0) -> int:
    """How big a JSON answer is; Unusable if it is not plain finite JSON or too deep."""
    if depth > MAX_DEPTH:
        raise Unusable("the locked answer is nested too deeply")
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, int):
        if abs(value) > 10**18:
            raise Unusable("the locked answer holds a number too large")
        return 1
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Unusable("the locked answer holds a number that is not finite")
        return 1
    if isinstance(value, str):
        return len(value) + 1
    if isinstance(value, list):
        return 1 + sum(_size(v, depth + 1) for v in value[: MAX_ITEMS + 1])
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise Unusable("the locked answer has a key that is not a string")
        return 1 + sum(len(k) + _size(v, depth + 1) for k, v in list(value.items())[: MAX_ITEMS + 1])
    raise Unusable(f"the locked answer holds a {type(value).__name__}, not JSON")


def read_lock(output: Any) -> tuple[str, Any, bool] | None:
    """``(qid, encoded answer, before_reveal)`` of the prediction a saved cell output records as locked.

    None when the output holds no record, or one of a question shown but not locked yet;
    :class:`Unusable` (with the reason in words) when it holds one that cannot be carried.
    """
    if not isinstance(output, dict):
        return None
    data = output.get("data")
    if not isinstance(data, dict) or MIME not in data:
        return None
    payload = data[MIME]
    if not isinstance(payload, dict):
        raise Unusable("the lock record is not an object")
    qid = payload.get("qid")
    if not isinstance(qid, str) or not QID.fullmatch(qid):
        raise Unusable("the lock record names no question")
    locked = payload.get("locked")
    if locked is False:
        return None
    if locked is not True or not isinstance(payload.get("before_reveal"), bool) or "answer" not in payload:
        raise Unusable(f"the lock record of {qid} is malformed")
    if _size(payload["answer"]) > MAX_ITEMS:
        raise Unusable(f"the lock record of {qid} is too large")
    return qid, payload["answer"], payload["before_reveal"]


def read(output: Any) -> tuple[str, Any] | None:
    """``(qid, encoded answer)`` of the prediction a saved cell output records as locked before the reveal.

    None when the output holds no record, or one of a question shown but not locked yet;
    :class:`Unusable` (with the reason in words) when it holds one that cannot be carried, or one locked
    after torch's answer was revealed (not a prediction).
    """
    found = read_lock(output)
    if found is None:
        return None
    qid, answer, before_reveal = found
    if not before_reveal:
        raise Unusable(f"{qid} was locked in after torch's answer was revealed: not a prediction")
    return qid, answer
