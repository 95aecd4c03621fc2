"""Evidence, in a saved notebook, that torch's answer was shown before a prediction: what takes its credit away.

The grading run executes a copy's cells in notebook order, so its own record always has each prediction cell run
before the reveal below it. What happened in the learner's kernel is only in what the copy saved, and that is
data from the learner's machine: it cannot prove a prediction came first, but it can show that one did not. A
prediction is read as made after the reveal (or the reveal as made without one) where the copy shows:

* the reveal's own record (:mod:`grader.engine.order`) saying no prediction was locked in when torch's answer was
  shown (or, in a copy saved before that record existed, the reveal's words saying so);
* a lock record of the prediction's cell saying it was locked after the reveal (any such record, not the last
  one read: a forged record after an honest one changes nothing);
* the reveal's cell run (it has an execution count) while the prediction's cell, which now holds an answer, never
  ran (no execution count, no output): the answer was typed in after the fact.

Each is a finding on the row; none ever gives a prediction credit it would not have had.
"""

from __future__ import annotations

from typing import Any

from grader.engine import locked, order
from grader.instructor.grading.locks import predicted_qid

WITHOUT_PREDICTION_WORDS = "recorded as revealed without a prediction"  # a 0.5.0 reveal's output, no record


def _source(cell: Any) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(src) if isinstance(src, list) else str(src)


def _text(output: Any) -> str:
    data = output.get("data") if isinstance(output, dict) else None
    text = data.get("text/plain", "") if isinstance(data, dict) else ""
    return "".join(text) if isinstance(text, list) else str(text)


def _cells_by_qid(template: list, call: str) -> dict[str, str]:
    """qid -> the id of the unit's cell that makes ``call`` ("predict" or "reveal") for it."""
    out = {}
    for cell in template:
        if isinstance(cell, dict) and cell.get("cell_type") == "code" and cell.get("id"):
            qid = predicted_qid(_source(cell), (call,))
            if qid and qid not in out:
                out[qid] = cell["id"]
    return out


def _ran(cell: Any) -> bool:
    return isinstance(cell, dict) and (isinstance(cell.get("execution_count"), int) or bool(cell.get("outputs")))


def revealed_first(cells: list, template: list, questions: set[str]) -> dict[str, str]:
    """For each prediction question (of ``questions``) whose torch answer the copy shows revealed before its
    prediction, the evidence in words (see the module's text)."""
    out: dict[str, str] = {}
    by_id = {c.get("id"): c for c in cells if isinstance(c, dict) and c.get("id")}
    for cell in cells:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for output in outputs if isinstance(outputs, list) else []:
            read = order.read(output)
            if read is not None and read[0] in questions and not read[1]:
                out.setdefault(read[0], "its reveal's record says torch's answer was shown before any prediction")
                continue
            text = _text(output)
            if WITHOUT_PREDICTION_WORDS in text:
                for qid in questions:
                    if f" {qid}:" in text.split("\n", 1)[0]:
                        out.setdefault(qid, "its reveal's output says torch's answer was shown before any prediction")
            try:
                lock = locked.read_lock(output)
            except locked.Unusable:
                continue
            if lock is not None and lock[0] in questions and not lock[2]:
                out.setdefault(lock[0], "a lock record says the prediction was locked in after the reveal")
    predicts, reveals = _cells_by_qid(template, "predict"), _cells_by_qid(template, "reveal")
    for qid in questions:
        predict, reveal = by_id.get(predicts.get(qid)), by_id.get(reveals.get(qid))
        if predict is not None and reveal is not None and _ran(reveal) and not _ran(predict):
            if _source(predict) != _source(_template_cell(template, predicts[qid])):
                out.setdefault(qid, "its reveal ran while the cell holding its prediction never did")
    return out


def _template_cell(template: list, cell_id: str) -> dict:
    return next((c for c in template if isinstance(c, dict) and c.get("id") == cell_id), {})
