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
reads only a prediction locked before the reveal.

The same record also travels in the cell's widget (issue 44): a display id is forgotten when the page is reloaded
or the notebook closed and opened again, so a lock after that never reaches the output, while the widget, drawn
again from the kernel, still takes it. Its record line (an HTML widget with the class :data:`CARRIER` and a synced
``record``, :mod:`grader.learner.record`) is saved in the notebook's widget state (``metadata.widgets``) by JupyterLab
and Notebook 7. :func:`from_widgets` puts each cell's widget record into that cell's outputs, in place of the output
record it supersedes, before anything reads them; :func:`carried` says which questions a saved notebook answers (the
learner is told of work their store holds and their saved notebook lacks). This module draws nothing and imports
nothing of the course: both the learner's widgets and the grader use it.
"""

from __future__ import annotations

import ast
import html
import math
import re
from typing import Any

from grader.engine import syntax

MIME = "application/vnd.autograd-lab.prediction+json"
QID = re.compile(r"\d\d[a-z]?\.[a-z0-9][a-z0-9-]{0,80}")
MAX_ITEMS = 1_000  # list items, dict keys and string characters counted together
MAX_DEPTH = 6
CARRIER = "agl-record"  # the class of a widget that carries its cell's records in the saved widget state
RECORDS = "application/vnd.autograd-lab."  # what the course's records' mimetypes start with
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MAX_MODELS = 400  # widget models walked from one cell's outputs


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
    """Display data of a record: the record itself and its words (as HTML too, marked ``agl-record-text``, so that a
    page that draws the cell's widget, whose record line says the same, can leave this one out)."""
    said = words(str(payload.get("qid")), payload, shown)
    return {
        MIME: payload,
        "text/plain": said,
        "text/html": f"<pre class='agl-record-text' style='margin:0'>{html.escape(said)}</pre>",
    }


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


# --- the record a cell's widget carries, in the notebook's saved widget state ------------------------------------


def _widget_states(widgets: Any) -> dict[str, dict]:
    """model id -> state, from a notebook's ``metadata.widgets`` (learner data: anything not a dict is left out)."""
    saved = widgets.get(WIDGET_STATE) if isinstance(widgets, dict) else None
    models = saved.get("state") if isinstance(saved, dict) else None
    if not isinstance(models, dict):
        return {}
    return {
        k: v["state"]
        for k, v in models.items()
        if isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("state"), dict)
    }


def _widget_record(root: str, states: dict[str, dict]) -> dict[str, Any] | None:
    """The records carried by the last record line found under the widget ``root`` (its children, depth first)."""
    found, seen, todo = None, set[str](), [root]
    while todo and len(seen) < MAX_MODELS:
        model = todo.pop(0)
        if model in seen or model not in states:
            continue
        seen.add(model)
        state = states[model]
        classes = state.get("_dom_classes")
        record = state.get("record")
        if isinstance(classes, list) and CARRIER in classes and isinstance(record, dict):
            found = {k: v for k, v in record.items() if isinstance(k, str) and k.startswith(RECORDS)}
        children = state.get("children")
        if isinstance(children, list):
            todo[:0] = [c[len("IPY_MODEL_") :] for c in children if isinstance(c, str) and c.startswith("IPY_MODEL_")]
    return found or None


def from_widgets(cells: list, widgets: Any) -> int:
    """Put the records each cell's widgets carry in the saved widget state (``widgets``: the notebook's
    ``metadata.widgets``) into that cell's outputs, in place of the output records of the same kind (a widget's record
    is never older than the output's: both were written together, and only the widget's reaches the page after a
    reload). Changes ``cells`` in place; returns how many cells took a widget's record. The records are read as
    data afterwards, as every record is (:func:`read_lock`, ``grader.engine.variants.read_record``)."""
    states = _widget_states(widgets)
    if not states:
        return 0
    taken = 0
    for cell in cells:
        outputs = cell.get("outputs") if isinstance(cell, dict) and cell.get("cell_type") == "code" else None
        if not isinstance(outputs, list):
            continue
        records: dict[str, Any] = {}
        for output in outputs:
            data = output.get("data") if isinstance(output, dict) else None
            view = data.get(WIDGET_VIEW) if isinstance(data, dict) else None
            model = view.get("model_id") if isinstance(view, dict) else None
            if isinstance(model, str):
                records.update(_widget_record(model, states) or {})
        if not records:
            continue
        at = next((i for i, o in enumerate(outputs) if _holds(o, records)), len(outputs))
        new = _output(records, outputs[0] if outputs else None)
        outputs[:] = [o for o in outputs if not _holds(o, records)]
        outputs.insert(min(at, len(outputs)), new)
        taken += 1
    return taken


def _output(records: dict[str, Any], like: Any) -> Any:
    """A display output of ``records``, of the same dict type as ``like`` (a cell's other output): a notebook read by
    nbformat holds NotebookNodes, whose readers ask ``output.output_type``."""
    kind = type(like) if isinstance(like, dict) else dict
    return kind(output_type="display_data", data=kind(records), metadata=kind())


def _holds(output: Any, records: dict[str, Any]) -> bool:
    data = output.get("data") if isinstance(output, dict) else None
    return isinstance(data, dict) and MIME in records and MIME in data


# --- which questions a saved notebook answers ---------------------------------------------------------------------


def source_of(cell: Any) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(src) if isinstance(src, list) else str(src)


def predicted_qid(source: str, calls: tuple[str, ...] = ("predict",)) -> str | None:
    """The question a predict cell's source predicts: the first ``predict("qid", ...)`` call's literal id
    (the first call named in ``calls``)."""
    try:
        tree = syntax.parse_submitted(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in calls
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            return node.args[0].value
    return None


def placeholders(source: str) -> list[ast.Assign]:
    """The top-level ``answer = ...`` statements of a cell."""
    try:
        tree = syntax.parse_submitted(source)
    except (SyntaxError, ValueError):
        return []
    return [
        node
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == "answer"
        and isinstance(node.value, ast.Constant)
        and node.value.value is Ellipsis
    ]


TYPED = "typed"  # what :func:`carried` says of a question whose answer is typed in its cell


def carried(nb: Any) -> dict[str, Any]:
    """For each question a saved notebook (its JSON) has a predict or check cell of, what the notebook carries of
    its answer: :data:`TYPED` (the cell's ``answer = ...`` replaced: the answer is in the code), else the latest
    record in the cell's outputs or its widget's record (:func:`from_widgets`): a dict as :func:`record` makes it,
    which may say ``locked: False``; None where it carries none."""
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return {}
    cells = [dict(c, outputs=list(c.get("outputs") or [])) for c in cells if isinstance(c, dict)]
    from_widgets(cells, (nb.get("metadata") or {}).get("widgets"))
    out: dict[str, Any] = {}
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = source_of(cell)
        qid = predicted_qid(source, ("predict", "check"))
        if qid is None:
            continue
        if not placeholders(source):
            out[qid] = TYPED
            continue
        for output in cell.get("outputs", []):
            data = output.get("data") if isinstance(output, dict) else None
            payload = data.get(MIME) if isinstance(data, dict) else None
            if isinstance(payload, dict) and payload.get("qid") == qid and out.get(qid) != TYPED:
                out[qid] = payload
        out.setdefault(qid, None)
    return out
