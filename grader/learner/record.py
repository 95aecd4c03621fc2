"""The record a predict or check cell carries of its locked prediction (or checked answer), for batch grading.

A prediction locked with the "Lock in" button is in the learner's store, not in the cell's source. The cell carries
it twice, both read by grading (:mod:`grader.engine.locked`, :mod:`grader.instructor.grading.locks`):

* a record *output* under :data:`grader.engine.locked.MIME`, displayed with a display id and updated in place when the
  prediction is locked. A front end forgets display ids when the page is reloaded or the notebook closed and opened
  again, so an update after that reaches nothing (issue 44): this output then says what it said before;
* a record *line* inside the cell's widget (:class:`RecordLine`, an HTML widget marked :data:`locked.CARRIER`), whose
  synced ``record`` holds the same record. A reloaded page draws the same live widget again, so its line is kept up
  to date, and JupyterLab and Notebook 7 save every widget's state with the notebook (``saveState``, which ``make lab``
  switches on): grading reads the line's record from there first. Its words stand in, on the page, for the output
  above (the style sheet of :mod:`grader.learner.inputs` hides that output where the line is drawn).

A self-test's check cell carries the answer its Check button graded the same way, with the record of the program in
force (:mod:`grader.engine.variants`).
"""

from __future__ import annotations

import functools
import html

from grader.engine import locked
from grader.learner import api
from grader.learner.display import css_name, widgets_available
from grader.learner.saved import checked_answer


@functools.lru_cache(maxsize=1)
def _line_class():
    """An HTML widget with one more synced trait, ``record`` (plain JSON): the front end keeps it on the model and
    saves it with the widget's state, though the view draws only ``value``."""
    import ipywidgets as W
    import traitlets

    class RecordLine(W.HTML):
        record = traitlets.Dict().tag(sync=True)

    return RecordLine


def record_line():
    """A record line, not filled in yet: what a cell's widget carries of its record (see the module's text)."""
    line = _line_class()()
    line.add_class(locked.CARRIER)
    return line


def fill(line, data: dict) -> None:
    """Show ``data`` (a record's display data) on ``line`` and carry its records."""
    line.record = {k: v for k, v in data.items() if k.startswith(locked.RECORDS)}
    words = str(data.get("text/plain", ""))
    line.value = f"<span class='agl-record-words' style='color:#57606a'>{html.escape(words)}</span>"


class Carried:
    """A cell's record: the output displayed with a display id (``handle``, None where none could be displayed) and
    the line the cell's widget draws (``line``); :meth:`update` brings both up to date."""

    def __init__(self, q, handle=None, with_line: bool = True):
        self.q, self.handle = q, handle
        self.line = record_line() if with_line else None
        if self.line is not None:
            fill(self.line, self.data(q, api._state(q)))

    @staticmethod
    def data(q, state) -> dict:
        """The record of ``state``'s locked prediction; one locked after a reveal says so. For a self-test, the
        answer its latest check graded (:func:`grader.learner.saved.checked_answer`), carried the same way."""
        if q.role == "self-test":
            return _checked_data(q)
        if not state.predicted:
            return locked.bundle(locked.unlocked(q.qid))
        try:
            shown = q.kind.show(q.kind.read(state.prediction))
        except Exception:
            shown = repr(state.prediction)
        payload = locked.record(q.qid, state.prediction, before_reveal=not state.predicted_after_reveal)
        return locked.bundle(payload, shown)

    @classmethod
    def show(cls, q, state=None, with_line: bool = True) -> Carried | None:
        """Display the record of ``q`` as it stands (and make its line, for the cell's widget, unless ``with_line`` is
        False); None where widgets cannot show."""
        if not widgets_available():
            return None
        handle = None
        try:
            from IPython.display import display

            state = state if state is not None else api._state(q)
            handle = display(cls.data(q, state), raw=True, display_id=f"agl-prediction-{css_name(q.qid)}")
        except Exception:  # a display that fails must not cost the learner the question
            pass
        try:
            return cls(q, handle, with_line)
        except Exception:
            return None

    def update(self, state=None) -> None:
        data = self.data(self.q, state if state is not None else api._state(self.q))
        try:
            if self.line is not None:
                fill(self.line, data)
        except Exception:
            pass
        try:
            if self.handle is not None:
                self.handle.update(data, raw=True)
        except Exception:
            pass


def _checked_data(q) -> dict:
    """The check cell's record of the answer its Check button graded; a generated self-test's also carries the
    program in force and the answers given (:mod:`grader.engine.variants`), which batch grading reads back."""
    from grader.engine import question as registry

    generated = registry.get(q.qid)
    extra = api._carried(generated, api._state(generated)) if generated is not None and generated.program else {}
    found, answer = checked_answer(q)
    if not found:
        return {**locked.bundle(locked.unlocked(q.qid, checked=True)), **extra}
    try:
        shown = q.kind.show(q.kind.read(answer))
    except Exception:
        shown = repr(answer)
    return {**locked.bundle(locked.record(q.qid, answer, before_reveal=True, checked=True), shown), **extra}


def carry(q, state=None) -> None:
    """What ``predict(qid, ...)`` shows of the record when it runs again after the reveal (no widget: the output)."""
    Carried.show(q, state, with_line=False)
