"""Learner cells that reach past the course's API: into the grader's internals or the progress store.

The course gives a learner ``from grader import ...`` and the modules its own cells import. A
learner-written cell that imports any other grader module (``grader.engine.question``, where the
answer key is declared), looks the grader up in ``sys.modules``, names the progress store's file
or folder, or walks the running program's frames, closures or the garbage collector's objects (the way to what the
exercise runner holds) is a finding on the gradebook's row. It earns nothing by it: in the grading run every
experiment is sealed (:func:`grader.engine.question.seal`) and every verdict is computed outside;
the finding tells the instructor that someone tried.
"""

from __future__ import annotations

import re

from grader.engine.store import FILENAME
from grader.instructor.grading.answer_tools import MACHINERY
from grader.instructor.grading.exercise_sources import grader_modules, grader_owned, source_of

_LOOKUPS = (
    (re.compile(r"sys\s*\.\s*modules"), "looks modules up in sys.modules"),
    (re.compile(r"__import__\s*\(|importlib"), "imports by name at run time"),
    (re.compile(re.escape(FILENAME) + r"|AUTOGRAD_LAB_HOME|sqlite3"), "reaches the progress store"),
    (
        MACHINERY,
        "walks the running program's frames, closures or objects (what the grader holds: an exercise never needs to)",
    ),
)


def findings(template: list, cells: list) -> list[str]:
    """One sentence per learner-written cell that reaches past the API (see the module's text)."""
    owned = {c.get("id") for c in template if isinstance(c, dict) and c.get("id") and grader_owned(c)}
    import grader

    allowed: set[str] = {"grader", *(f"grader.{name}" for name in grader.__all__)}
    for c in template:
        if isinstance(c, dict) and grader_owned(c):
            allowed |= grader_modules(source_of(c))
    out = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or cell.get("id") in owned:
            continue
        text = source_of(cell)
        where = f"cell {cell.get('id') or index + 1}"
        extra = sorted(grader_modules(text) - allowed)
        if extra:
            out.append(f"{where} imports {', '.join(extra[:3])}, past the course's API")
        for pattern, words in _LOOKUPS:
            if pattern.search(text):
                out.append(f"{where} {words}")
    return out
