"""Is the learner's work in the notebook they will hand in? The saved file, read beside the store.

A prediction locked with the widget, or an answer typed and run, is in the learner's store at once, but in the
notebook's file only once it is saved: a learner who hands in a notebook they never saved after their last answers
hands in less than their panel shows (issue 44: Ctrl+S inside a widget did nothing, and nothing said so). The
gradebook reads the file.

:func:`unsaved` compares the two for one unit: each question of the unit that the store says was predicted (or, a
self-test, answered) and whose cell the saved notebook holds, but whose answer the file does not carry, typed in the
cell or in a cell's record (:func:`grader.engine.locked.carried`). The notebook is the one this kernel was started
for: Jupyter's server names it to the kernel (``JPY_SESSION_NAME``, in JupyterLab and Notebook 7). Elsewhere (no
such name, a file that cannot be read, a notebook of another unit) it says nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from grader.engine.verdicts import GRADED

# a notebook larger than this is not read (its outputs are the learner's; the course's are small)
MAX_BYTES = 50_000_000


def notebook_path() -> Path | None:
    """The notebook this kernel runs, as the Jupyter server named it; None where it named none."""
    name = os.environ.get("JPY_SESSION_NAME", "")
    if not name.endswith(".ipynb"):
        return None
    path = Path(name)
    return path if path.is_file() else None


def unsaved(unit: str, path: Path | None = None) -> list[str]:
    """The questions of ``unit`` whose answer this learner's store holds and the saved notebook at ``path`` (by
    default, this kernel's) lacks (:func:`lacking`); [] where there is none, or nothing to compare."""
    from grader.engine.store import current

    path = path if path is not None else notebook_path()
    if path is None:
        return []
    try:
        if path.stat().st_size > MAX_BYTES:
            return []
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    return lacking(nb, unit, current().events(unit))


def lacking(nb: Any, unit: str, events: list) -> list[str]:
    """The questions of ``unit`` whose latest answer ``events`` (a progress store's) hold and the notebook ``nb``
    (its JSON) lacks, in the unit's order: its cell there carries no record of that answer (none, one not locked,
    or one of an earlier answer) and the answer is not typed in it. A question the notebook has no cell of is left
    out. The learner's panel asks it of their own store; an instructor with the learners' stores beside their
    handed-in copies (a hub's homes) can ask it of each copy: work done and never saved."""
    from grader.engine import locked, progress
    from grader.engine import question as registry

    carried = locked.carried(nb)
    state = progress.unit_state(unit, events)
    out = []
    for qid, qs in state.questions.items():
        q = registry.get(qid)
        if qid not in carried or carried[qid] == locked.TYPED or q is None:
            continue
        checked = checked_answer(q, events) if qs.role == "self-test" else (False, None)
        if qs.role == "predict" and qs.predicted:
            wanted = locked.record(qid, qs.prediction, before_reveal=not qs.predicted_after_reveal)
        elif checked[0]:
            wanted = locked.record(qid, checked[1], before_reveal=True, checked=True)
        else:
            continue
        if carried[qid] != wanted:  # none, not locked, or another answer than the store's latest
            out.append(qid)
    return out


def checked_answer(q, events: list | None = None) -> tuple[bool, Any]:
    """``(found, encoded answer)``: the answer of the self-test's passing check, or else of its latest graded one,
    since the question was last reset, in ``events`` (by default, this learner's store); what the check cell carries
    for grading."""
    from grader.engine.store import current

    found, answer, passed = False, None, False
    for e in events if events is not None else current().events(q.unit):
        if e.action == "reset" and e.qid in (None, q.qid) and e.unit == q.unit:
            found, answer, passed = False, None, False
        elif e.qid == q.qid and e.action == "check" and not passed and e.verdict in GRADED:
            if e.answer is not None:
                found, answer, passed = True, e.answer, e.verdict == "correct"
    return found, answer


def words(missing: list[str], name: str = "") -> str:
    """What the learner is told of ``missing`` (:func:`unsaved`); "" when nothing is missing."""
    if not missing:
        return ""
    shown = ", ".join(missing[:6]) + (" …" if len(missing) > 6 else "")
    where = f"{name} as saved" if name else "the saved notebook"
    return (
        f"{where} does not hold your answer to {shown} yet (your record does): save the notebook "
        "(Ctrl+S, or File → Save Notebook) before you hand it in."
    )


def note(unit: str) -> str:
    """:func:`words` for this kernel's notebook and ``unit``; "" where nothing is missing or nothing can be compared."""
    path = notebook_path()
    return words(unsaved(unit, path), path.name) if path is not None else ""
