"""The prediction widget of the learner's loop, and the buttons a refusal offers.

Everything here degrades. Without ipywidgets, outside a kernel, or with
``AUTOGRAD_LAB_WIDGETS=0``, the same objects show as text and HTML, which is
also what nbval compares (widget views never are). Widgets never print: what
they have to say goes into HTML widgets, so nothing reaches a cell's stdout.

* :func:`ask` is what ``predict(qid)`` and ``predict(qid, ...)`` show: an input that suits the question's kind
  (:mod:`grader.learner.inputs`) and a "Lock in" button (Enter in a field presses it). Locking reads the input
  through ``kind.read`` (so bad input gets the same one-line message as in code) and records it with
  :func:`grader.learner.api.commit_prediction`, the same event as ``predict(qid, answer)``. The cell carries the
  record batch grading reads (:mod:`grader.learner.record`): an output above the widget, and a line in it that
  a page reload keeps up to date. Once revealed, the widget says the prediction can no longer change.
* While a question's widget is open with nothing locked in, its reveal waits (:func:`waiting`; Run All runs each
  reveal straight after its question) and offers a button that reveals anyway.
* A self-test's Check widget carries the answer it graded the same way; a wrong answer to a generated self-test
  brings its next program into the widget (heading and empty input) and into every ``program(qid)`` shown
  (:func:`program_view`). A reset closes every input of what it reset (:func:`after_reset`); a widget whose
  kernel is gone hides its inputs and says so (:mod:`grader.learner.stale`).
* :func:`action_box` turns a result that names an action (reset, hint, reveal) into a button that does it.

The unit panel and the course map are in :mod:`grader.learner.panels`.
"""

from __future__ import annotations

import html
from dataclasses import fields, replace

from grader.engine import results
from grader.engine.results import Result
from grader.engine.verdicts import GRADED
from grader.learner import a11y, api, stale, synced
from grader.learner.display import css_name, view_of, widgets_available
from grader.learner.inputs import (  # noqa: F401  (the inputs' names, where they were before)
    ADD,
    ENTER,
    SUBMIT,
    Input,
    closed_choice,
    make_input,
    node_vocabulary,
    offered_names,
    parse_number_text,
    parse_python_text,
    saved_vocabulary,
    style_html,
)
from grader.learner.record import Carried, carry  # noqa: F401
from grader.learner.saved import checked_answer  # noqa: F401


class Asked(Result):
    """A ``Result`` (verdict 'unanswered') that also carries the prediction widget to display."""

    def __init__(self, result: Result, widget: PredictionWidget):
        super().__init__(**{f.name: getattr(result, f.name) for f in fields(Result)})
        self.widget = widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": str(self), "text/html": self._repr_html_(), **view_of(self.widget.box)}


_ACTIONS = {  # action -> (the button's words, its icon)
    "reset": ("Start {target} again", "undo"),
    "hint": ("Show a hint for {target}", "lightbulb-o"),
    "reveal": ("Reveal {target} without a prediction", "eye"),
}


def _do(action: str, target: str) -> Result:
    """What an action's button does: the same call as in code."""
    if action == "reveal":  # a reveal held back (Run All, or no prediction locked): asked for on purpose
        return api.reveal(target, without_prediction=True)
    return getattr(api, action)(target)


def action_view(result: Result) -> dict | None:
    """The display data of :func:`action_box` (or of a program that follows the learner: :func:`program_view`);
    None where widgets cannot show."""
    if not widgets_available():
        return None
    if isinstance(result, api.YourProgram):
        return program_view(result)
    box = action_box(result)
    return view_of(box) if box is not None else None


def action_box(result: Result, show_result: bool = True):
    """The result with a button for each action it names (reset, hint, reveal); None if it names none. With
    ``show_result=False`` only the buttons and what they say: the caller shows the result itself."""
    import ipywidgets as W

    said = W.HTML()
    buttons = []
    for action, target in result.actions:
        if action not in _ACTIONS:
            continue
        words, icon = _ACTIONS[action]
        button = W.Button(description=words.format(target=target), icon=icon, layout=W.Layout(width="auto"))
        button.add_class(f"agl-action-{action}")
        a11y.to_result(button)

        def press(_b, action=action, target=target, button=button):
            try:
                done = _do(action, target)
            except Exception as exc:  # strict mode or a failing store: show it, never raise from a click
                done = Result(action, target, "error", f"{type(exc).__name__}: {exc}")
            if action in ("reset", "reveal"):
                button.disabled = True
            said.value = done._repr_html_()

        button.on_click(press)
        buttons.append(button)
    if not buttons:
        return None
    a11y.result_area(said)
    shown = W.HTML(result._repr_html_() if show_result else "")
    box = W.VBox([shown, W.HBox(buttons), said])
    box.add_class("agl-actions")
    stale.guard(box, shown)  # from an earlier kernel: the result stays, the buttons go
    return a11y.wire(box)


# --- the prediction widget ------------------------------------------------------------------

_LIVE: dict[str, list] = {}  # qid -> weak references to the prediction widgets on screen


def _live(qid: str) -> list[PredictionWidget]:
    return [w for w in (ref() for ref in _LIVE.get(qid, [])) if w is not None]


def after_reveal(qid: str) -> None:
    """A reveal happened: every prediction widget of that question stops taking input and says so (no longer that
    the prediction may change)."""
    for w in _live(qid):
        if w.mode == "predict":
            try:
                w.input.disable()
                w.button.disabled = True
                w.message.value = (
                    f"<div class='agl-closed' style='color:#57606a'>Revealed: {html.escape(qid)}'s prediction can no "
                    "longer change; torch's answer is in the reveal's cell. To predict it again: "
                    f"<code>reset('{html.escape(qid)}')</code>.</div>"
                )
                w.offers.children = []
                if w.carried is not None:
                    w.carried.update()
            except Exception:
                pass


def after_reset(target: str) -> None:
    """A reset happened (a question, or a whole unit): every widget of it on screen stops taking input, says why
    and what to do next, and its cell's record is brought up to date."""
    for qid in list(_LIVE):
        if qid != target and qid.split(".")[0] != target:
            continue
        for w in _live(qid):
            w.closed_by_reset()


def waiting(qid: str) -> str | None:
    """Whether a prediction widget of ``qid`` is on screen in this kernel, open and with nothing locked in: None if
    not, else what it holds in words ("" when nothing is chosen). A reveal then waits (Run All: api.reveal). Only
    in a kernel that draws widgets: elsewhere nothing is on screen."""
    if not widgets_available():
        return None
    for w in reversed(_live(qid)):
        if w.mode == "predict" and not w.button.disabled and not w.closed:
            try:
                chosen = w.input.value()
            except Exception:
                chosen = None
            if chosen in (None, "", [], set()):
                return ""
            try:
                return w.q.kind.show(w.q.kind.read(chosen))
            except Exception:
                return str(chosen)
    return None


BOX = {"border": "1px solid #d0d7de", "padding": "6px 10px", "margin": "4px 0"}  # a prediction widget's box
RETRY_HERE = "Your next program is shown above, in place of the one you answered: answer it there."


class PredictionWidget:
    """A question's prompt, an input for its kind, a "Lock in" button and what locking said.

    With ``mode="check"`` (a self-test) the button reads "Check" and grades the answer with
    ``check(qid, answer)``, the same event as in code; a generated self-test's wrong answer brings its next program
    here: the heading shows it, the input is emptied (:meth:`next_program`).
    """

    def __init__(self, q, state=None, mode: str = "predict", carried: Carried | None = None):
        import weakref

        import ipywidgets as W

        self.q = q
        self.mode = mode
        self.closed = False
        self.carried = carried  # the cell's record (its output and its line here) that Lock in updates
        self.input = make_input(q.kind, q.prompt)
        if mode == "check":
            self.button = W.Button(
                description="Check",
                button_style="primary",
                icon="check",
                tooltip=f"check('{q.qid}', answer): graded against live torch; every attempt is recorded",
            )
        else:
            self.button = W.Button(
                description="Lock in",
                button_style="primary",
                icon="lock",
                tooltip="record this prediction (you may replace it until the reveal)",
            )
        self.button.add_class("agl-lock" if mode == "predict" else "agl-check")
        self.button.add_class(SUBMIT)
        a11y.to_result(self.button)
        synced.waits(self.button)
        _LIVE.setdefault(q.qid, []).append(weakref.ref(self))
        _LIVE[q.qid] = [r for r in _LIVE[q.qid] if r() is not None][-20:]
        self.again = W.Button(
            description="Start this question again",
            icon="undo",
            tooltip=f"reset('{q.qid}'): forget the reveal, then predict and reveal again",
            layout=W.Layout(display="none"),
        )
        self.again.add_class("agl-again")
        a11y.to_result(self.again)
        self.again.on_click(self.start_again)
        self.message = a11y.result_area(W.HTML())
        self.offers = W.VBox()  # the Hint button of a wrong answer (action_box), as a result in code offers
        self.last: Result | None = None
        self.head = W.HTML(self._heading(q))
        line = [carried.line] if carried is not None and carried.line is not None else []
        self.box = W.VBox(
            [*line, self.head, self.input.box, W.HBox([self.button, self.again]), self.message, self.offers],
            layout=W.Layout(**BOX),
        )
        self.box.add_class("agl-predict")
        self.box.add_class("agl-q-" + css_name(q.qid))
        stale.guard(self.box, *line, self.head)
        self.box.children = (*self.box.children, style_html())
        a11y.wire(self.box)
        self.button.on_click(self.lock)
        self._show(state if state is not None else api._state(q))

    def _heading(self, q) -> str:
        verb = "predict" if self.mode == "predict" else "self-test"
        prompt = html.escape(q.prompt)
        if "\n" in q.prompt:  # a generated self-test's program: its lines kept
            prompt = f"<pre style='margin:2px 0;white-space:pre-wrap'>{prompt}</pre>"
        return f"<div style='margin-bottom:4px'><b>{html.escape(q.qid)}</b> · {verb}: {prompt}</div>"

    def _show(self, state) -> None:
        self.again.layout.display = "none"
        if self.mode == "check":
            if state.passed:
                self.input.disable()
                self.button.disabled = True
                self.message.value = f"<div style='color:#1a7f37'>Passed ({html.escape(state.record)}).</div>"
            else:
                self.message.value = (
                    "<div style='color:#57606a'>Type or choose your answer and press Check (or Enter); "
                    "every attempt is recorded.</div>"
                )
            return
        if state.revealed:
            if state.predicted:
                self.input.restore(state.prediction)
            self.input.disable()
            self.button.disabled = True
            if not state.predicted_before_reveal:  # revealed by running ahead: offer a way back
                self.again.layout.display = None
            said = (
                "your prediction was locked in before it"
                if state.predicted_before_reveal
                else "it was revealed before a prediction was locked in"
            )
            self.message.value = (
                f"<div style='color:#57606a'>Already revealed ({html.escape(said)}). "
                f"To predict it again: <code>reset('{html.escape(self.q.qid)}')</code>.</div>"
            )
        elif state.predicted:
            self.input.restore(state.prediction)
            self.message.value = (
                "<div style='color:#57606a'>Your locked-in prediction is shown; change it and "
                "press Lock in to replace it, until the reveal.</div>"
            )
        else:
            self.message.value = (
                "<div style='color:#57606a'>Choose or type your prediction, press Lock in (or Enter), "
                "then run the experiment and the reveal below.</div>"
            )

    def start_again(self, _button=None) -> Result:
        """What "Start this question again" does: reset(qid), the same event as in code; this widget then
        closes (:meth:`closed_by_reset`) and says to run its cell again."""
        try:
            result = api.reset(self.q.qid)
        except Exception as exc:
            result = Result("reset", self.q.qid, "error", f"{type(exc).__name__}: {exc}")
        self.last = result
        self.message.value = result._repr_html_() + self.message.value
        return result

    def closed_by_reset(self) -> None:
        """The question was reset: no more input here (its cell's record now says not locked), and why."""
        try:
            self.closed = True
            self.input.disable()
            self.button.disabled = True
            self.again.layout.display = "none"
            if self.carried is not None:
                self.carried.update()
            self.message.value = (
                f"<div class='agl-closed' style='color:#57606a'>This input is closed: {html.escape(self.q.qid)} was "
                "reset. Run this cell again for a fresh one.</div>"
            )
        except Exception:  # a widget library that misbehaves must not cost the learner the reset
            pass

    def lock(self, _button=None) -> Result:
        """Read the input as the kind reads code answers, then record it exactly as predict(qid, answer)."""
        from grader.engine.kinds import BadAnswer, Unanswered

        q = self.q
        shown: Result | None = None
        try:
            raw = self.input.value()
            state = api._state(q)
            if self.mode == "check":
                result = api.check(q.qid, raw)
                if result.passed:
                    self.input.disable()
                    self.button.disabled = True
                if self.carried is not None:  # the answer graded, carried by the cell for batch grading
                    self.carried.update()
                shown = self.next_program(result)
            elif state.revealed:
                result = api.predict(q.qid, raw)  # refused, with the same words as in code
            else:
                try:
                    value = q.kind.read(raw)
                except Unanswered:
                    result = Result(
                        "predict",
                        q.qid,
                        "unanswered",
                        "choose or type your prediction first, then press Lock in",
                        rows=[("question", q.prompt)],
                    )
                except BadAnswer as exc:
                    result = Result("predict", q.qid, "invalid", str(exc), rows=[("question", q.prompt)])
                else:
                    result = api.commit_prediction(q, value, replaced=state.predicted)
                    if self.carried is not None:
                        self.carried.update()
        except Exception as exc:  # strict mode, a store that cannot be written: say it, never raise
            result = Result("predict", q.qid, "error", f"{type(exc).__name__}: {exc}")
        self.last = result
        self.message.value = (shown or result)._repr_html_()
        self._offer(result)
        return result

    def next_program(self, result: Result) -> Result | None:
        """After a graded answer to a generated self-test that brings a new program: the heading shows the new
        program, the input is emptied, and what the widget says of the answer (returned) names the program it was
        given on and says the next one is above, where it is answered. None where nothing moved on."""
        from grader.engine import question as registry

        generated = registry.get(self.q.qid)
        if generated is None or generated.program is None or result.verdict not in GRADED:
            return None
        state = api._state(generated)
        nxt = api.variant_of(generated, state)
        if state.passed or nxt is None:
            return None
        cut = next((i for i, (label, _) in enumerate(result.rows) if label.startswith("your next program")), None)
        if cut is None:
            return None
        self.q = generated.asked(nxt.program)
        self.head.value = self._heading(self.q)
        self.input.clear()
        rows = [(label.replace("your program", "the program you answered"), text) for label, text in result.rows[:cut]]
        message = result.message.replace(api.retry_words(self.q.qid), RETRY_HERE)
        return replace(result, rows=rows, message=message)

    def _offer(self, result: Result) -> None:
        """A wrong answer's Hint button, the same one a result in code shows (``action_box``). The result stays in
        the widget's own result area, where Check and Lock in move the focus and a screen reader hears it."""
        box = action_box(result, show_result=False) if any(a == "hint" for a, _ in result.actions) else None
        self.offers.children = [box] if box is not None else []


def ask(q, state=None, result: Result | None = None) -> Asked | None:
    """The prediction widget for ``q`` (a check widget for a self-test) wrapped with the text ``result``;
    None where widgets cannot show. ``predict`` and ``check`` fall back to the text result then.
    """
    if not widgets_available():
        return None
    if q.role == "self-test":
        if result is None:
            result = Result(
                "check",
                q.qid,
                "unanswered",
                f"type or choose your answer below and press Check, or pass it in code: "
                f"check('{q.qid}', answer), where answer is {q.kind.describe()}",
                rows=[("question", q.prompt)],
            )
        try:
            return Asked(result, PredictionWidget(q, state, mode="check", carried=Carried.show(q, state)))
        except Exception:
            return None
    if result is None:
        result = Result(
            "predict",
            q.qid,
            "unanswered",
            f"choose your prediction below and press Lock in, or pass it in code: "
            f"predict('{q.qid}', answer), where answer is {q.kind.describe()}",
            rows=[("question", q.prompt)],
        )
    try:
        return Asked(result, PredictionWidget(q, state, carried=Carried.show(q, state)))
    except Exception:  # a widget library that misbehaves must not cost the learner the question
        return None


# --- a self-test's program, kept up to date where it is shown ------------------------------------------------

_PROGRAMS: dict[str, list] = {}  # qid -> weak references to the HTML widgets that show that learner's program


def program_view(result) -> dict | None:
    """What ``program(qid)`` shows where widgets can draw: the same result in an HTML widget, which a graded answer
    that brings a new program redraws (:func:`program_moved`), so the cell never shows a program already answered."""
    import weakref

    import ipywidgets as W

    if result.program is None:
        return None
    shown = W.HTML(result._repr_html_())
    box = W.VBox([shown])
    box.add_class("agl-program")
    box.add_class("agl-program-" + css_name(result.subject))
    stale.guard(box, shown)  # from an earlier kernel: the program stays as it was, with the note
    refs = [r for r in _PROGRAMS.get(result.subject, []) if r() is not None][-20:]
    _PROGRAMS[result.subject] = [*refs, weakref.ref(shown)]
    return view_of(box)


def program_moved(qid: str) -> None:
    """A graded answer moved ``qid`` on to a new program (or passed it): every program view of it shows it anew."""
    views = [v for v in (r() for r in _PROGRAMS.get(qid, [])) if v is not None]
    if not views:
        return
    try:
        now = api.program(qid)._repr_html_()
    except Exception:
        return
    for view in views:
        view.value = now


# Plug the inputs, the reveal lock and the action buttons into the learner's API and its results.
api.FRONT_END.ask = ask
api.FRONT_END.carry = carry
api.FRONT_END.waiting = waiting
api.FRONT_END.revealed.append(after_reveal)
api.FRONT_END.reset.append(after_reset)
api.FRONT_END.checked.append(program_moved)
results.EXTRA_VIEWS.append(action_view)
