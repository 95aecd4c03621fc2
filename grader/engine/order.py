"""What a saved notebook carries of a reveal: whether a prediction came before it, in the learner's own kernel.

A reveal cell's output shows torch's answer beside the prediction, or says that torch's answer came first. Its
record (``{"qid", "predicted"}`` under :data:`MIME`) is saved with the notebook, so batch grading can see what the
learner's kernel saw when the answer was shown. Grading re-runs the cells in notebook order, so a prediction typed
into its cell *after* the reveal would otherwise pass for one made before it; the record, the lock records and the
cells' execution counts are read as evidence against that (:mod:`grader.instructor.grading.prediction_order`). The
evidence can only take a prediction's credit away, never give it: a record is data from the learner's machine.
"""

from __future__ import annotations

from typing import Any

MIME = "application/vnd.autograd-lab.reveal+json"


def record(qid: str, predicted: bool) -> dict[str, Any]:
    """The record a reveal's output carries: whether a prediction was locked in before torch's answer was shown."""
    return {MIME: {"qid": qid, "predicted": bool(predicted)}}


def read(output: Any) -> tuple[str, bool] | None:
    """(qid, predicted) from a saved output that carries a reveal's record, else None (a malformed one too)."""
    data = output.get("data") if isinstance(output, dict) else None
    payload = data.get(MIME) if isinstance(data, dict) else None
    if not isinstance(payload, dict):
        return None
    qid, predicted = payload.get("qid"), payload.get("predicted")
    if not isinstance(qid, str) or len(qid) > 100 or not isinstance(predicted, bool):
        return None
    return qid, predicted
