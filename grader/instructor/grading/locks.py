"""Predictions locked in with the widget, written back into their cells before a notebook is graded.

A prediction locked with the "Lock in" button is not in the cell's source, which still reads
``answer = ...``; the cell's saved outputs carry it instead, as the record output the widget updates
(:mod:`grader.engine.locked`). :func:`apply_locks` runs in ``pipeline.restore`` before the notebook is
re-run: each learner-owned predict cell that still holds the placeholder and whose outputs record a
prediction locked for the question that cell's template predicts gets ``answer = <that answer>`` in
place of the placeholder. The re-run then predicts where the learner did, before the reveal below it.

A self-test's answer checked with the widget's Check button is carried the same way: its check cell
(``answer = ...`` then ``check("qid", answer)``) shows a record of the answer the button graded, and the
re-run checks it there; the gradebook computes its verdict as for an answer written in the cell.

A prediction locked after torch's answer was revealed (the learner revealed, reset the question and
locked a new one: the record says ``before_reveal: false``) is carried as what it was: the cell first
replays that reveal and reset (:func:`after_reveal`), then predicts. The re-run's record is then the
learner's panel's, "predicted after reveal", which earns nothing (a reveal never passes for a prediction).
Such a record is honoured even where the cell's answer is typed in code (a prediction typed after a reveal
is carried the same way): it can only lower what the cell earns.

Never carried, and noted: a record of another question than the cell's own, and a malformed one.

The record is read from the cell's widget first, where the notebook's saved widget state holds one
(:func:`grader.engine.locked.from_widgets`): after a page reload or a reopen, a lock reaches the widget but no longer
the record output (issue 44).
"""

from __future__ import annotations

import ast
from typing import Any

from grader.engine import locked

MARK = "  # locked in with the widget"
REPLAYED = "  # replayed: torch's answer was revealed, then the question reset, before this prediction"


_source = locked.source_of
predicted_qid = locked.predicted_qid
_placeholders = locked.placeholders


def literal(encoded: Any) -> str:
    """A Python literal of a JSON answer, checked to read back as the same value."""
    text = repr(encoded)
    if ast.literal_eval(text) != encoded:
        raise ValueError("the answer has no exact Python literal")
    return text


def with_answer(source: str, encoded: Any) -> str | None:
    """``source`` with each top-level ``answer = ...`` replaced by ``answer = <encoded>``; None if it has none."""
    nodes = _placeholders(source)
    if not nodes:
        return None
    lines = source.splitlines(keepends=True)
    text = f"answer = {literal(encoded)}"
    for node in reversed(nodes):  # from the bottom, so earlier offsets stay right
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        start = lines[first].encode("utf-8")[: node.col_offset]
        end = lines[last].encode("utf-8")[node.end_col_offset :]
        rest = end.decode("utf-8")
        if not rest.strip() or rest.strip().startswith("#"):  # the placeholder's own comment goes
            rest = MARK + ("\n" if rest.endswith("\n") else "")
        lines[first : last + 1] = [start.decode("utf-8") + text + rest]
    return "".join(lines)


def after_reveal(source: str, qid: str) -> str:
    """``source`` preceded by the reveal and reset that came before a prediction locked after the reveal."""
    name = literal(qid)
    return f"import grader as _agl{REPLAYED}\n_agl.reveal({name}); _agl.reset({name})\n" + source


def apply_locks(cells: list, template: list, widgets: Any = None) -> list[str]:
    """Write the predictions the outputs record as locked into their cells' placeholders; the notes.

    ``cells`` are the submission's cells (changed in place), ``template`` the unit's cells in
    ``notebooks/``; a cell is matched to its template by cell id. ``widgets`` is the notebook's saved widget state
    (``metadata.widgets``): a record a cell's widget carries there takes the place of its record output first
    (:func:`grader.engine.locked.from_widgets`: a lock after a page reload reached only the widget).
    """
    locked.from_widgets(cells, widgets)
    asks, predicts = {}, set()
    for cell in template:
        if isinstance(cell, dict) and cell.get("cell_type") == "code" and cell.get("id"):
            qid = predicted_qid(_source(cell), ("predict", "check"))
            if qid and _placeholders(_source(cell)):
                asks[cell["id"]] = qid
                if predicted_qid(_source(cell)) == qid:
                    predicts.add(cell["id"])
    notes: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        outputs = cell.get("outputs")
        if not isinstance(outputs, list) or not outputs:
            continue
        own = asks.get(cell.get("id")) if isinstance(cell.get("id"), str) else None
        found = None
        for output in outputs:
            try:
                read = locked.read_lock(output)
            except locked.Unusable as exc:
                notes.append(f"a lock record was ignored: {exc}")
                continue
            if read is None:
                continue
            if read[0] != own:
                where = f"the cell of {own}" if own else "a cell that predicts nothing"
                notes.append(f"a lock record of {read[0]} in {where} was ignored")
                continue
            if not read[2] and cell.get("id") not in predicts:  # only a prediction has a reveal to come after
                notes.append(f"a lock record of {read[0]} was ignored: locked after a reveal, but it is no prediction")
                continue
            if found is None or found[2]:  # a record locked after the reveal is kept: a later one cannot undo it
                found = read
        if found is None:
            continue
        try:
            rewritten = with_answer(_source(cell), found[1])
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            notes.append(f"the prediction locked for {own} could not be written into its cell and was ignored")
            continue
        if not found[2]:  # locked after the reveal: replayed as such, whatever the cell's answer
            rewritten = after_reveal(rewritten if rewritten is not None else _source(cell), found[0])
        if rewritten is not None:
            cell["source"] = rewritten
    return notes
