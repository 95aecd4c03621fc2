"""The prediction inputs of the learner's loop, and the buttons a refusal offers.

Everything here degrades. Without ipywidgets, outside a kernel, or with
``AUTOGRAD_LAB_WIDGETS=0``, the same objects show as text and HTML, which is
also what nbval compares (widget views never are). Widgets never print: what
they have to say goes into HTML widgets, so nothing reaches a cell's stdout.

* :func:`ask` is what ``predict(qid)`` and ``predict(qid, ...)`` show: an input
  that suits the question's kind and a "Lock in" button. Locking reads the
  input through ``kind.read`` (so bad input gets the same one-line message as
  in code) and records it with :func:`grader.learner.api.commit_prediction`, the
  same event as ``predict(qid, answer)``. Above it the cell shows a small record output,
  :class:`Carried`, that Lock in updates: what JupyterLab saves of it is what batch grading reads
  of a prediction locked with the button (:mod:`grader.engine.locked`).
* :func:`action_box` turns a refusal that names an action (reset, hint) into a
  button that does it.
* A self-test's Check widget carries the answer it graded the same way (:class:`Carried`,
  :func:`checked_answer`). A reset closes every input of what it reset (:func:`after_reset`); a
  widget whose kernel is gone hides its inputs and says so (:mod:`grader.learner.stale`).

The unit panel and the course map are in :mod:`grader.learner.panels`.
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from grader.engine import locked, results
from grader.engine.results import Result
from grader.learner import a11y, api, stale, synced
from grader.learner.display import css_name, view_of, widgets_available


class Asked(Result):
    """A ``Result`` (verdict 'unanswered') that also carries the prediction widget to display."""

    def __init__(self, result: Result, widget: PredictionWidget):
        super().__init__(**{f.name: getattr(result, f.name) for f in fields(Result)})
        self.widget = widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": str(self), "text/html": self._repr_html_(), **view_of(self.widget.box)}


_ACTIONS = {"reset": "Start {target} again", "hint": "Show a hint for {target}"}


def action_view(result: Result) -> dict | None:
    """The display data of :func:`action_box`; None where widgets cannot show."""
    if not widgets_available():
        return None
    box = action_box(result)
    return view_of(box) if box is not None else None


def action_box(result: Result, show_result: bool = True):
    """The result with a button for each action it names (reset, hint); None if it names none. With
    ``show_result=False`` only the buttons and what they say: the caller shows the result itself."""
    import ipywidgets as W

    said = W.HTML()
    buttons = []
    for action, target in result.actions:
        if action not in _ACTIONS:
            continue
        button = W.Button(
            description=_ACTIONS[action].format(target=target),
            icon="undo" if action == "reset" else "lightbulb-o",
            layout=W.Layout(width="auto"),
        )
        button.add_class(f"agl-action-{action}")
        a11y.to_result(button)

        def press(_b, action=action, target=target, button=button):
            try:
                done = getattr(api, action)(target)
            except Exception as exc:  # strict mode or a failing store: show it, never raise from a click
                done = Result(action, target, "error", f"{type(exc).__name__}: {exc}")
            if action == "reset":
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


# --- the names offered for node and _saved_ questions, read from torch -------------------

_VOCABULARY: dict[str, list[str]] = {}


def _recorded(build: Callable[[Any, Any], list]) -> list:
    import torch

    with torch.inference_mode(False), torch.enable_grad():
        a = torch.ones(2, 2, requires_grad=True)
        b = torch.ones(2, 2, requires_grad=True)
        return [t.grad_fn for t in build(a, b) if t.grad_fn is not None] + [(a * 1).grad_fn.next_functions[0][0]]


def _common_ops(a, b):
    import torch

    return [
        a + b,
        a - b,
        a * b,
        a / b,
        a**2,
        a.pow(b),
        a @ b,
        a.sum(),
        a.mean(),
        a.relu(),
        a.sigmoid(),
        a.tanh(),
        a.exp(),
        a.log(),
        a.sin(),
        a.cos(),
        a.abs(),
        -a,
        a.sqrt(),
        a.t(),
        a.view(4),
        a[0],
        a.clone(),
        torch.addmm(b[0], a, b),
        a.unsqueeze(0),
        a.expand(3, 2, 2),
        torch.cat([a, b]),
        a.softmax(0),
        a.max(),
        torch.where(a > 0, a, b),
    ]


def node_vocabulary() -> list[str]:
    """Class names of the nodes common operations record, asked of torch (cached)."""
    if "nodes" not in _VOCABULARY:
        try:
            found = {type(fn).__name__ for fn in _recorded(_common_ops)}
        except Exception:  # a torch without one of the ops: offer what the pools give
            found = set()
        _VOCABULARY["nodes"] = sorted(found, key=lambda n: (n != "AccumulateGrad", n))
    return list(_VOCABULARY["nodes"])


def saved_vocabulary() -> list[str]:
    """Names of the tensor-valued ``_saved_*`` attributes common nodes have, asked of torch."""
    if "saved" not in _VOCABULARY:
        import torch

        from grader.probes import saved_attributes

        found = set()
        try:
            for fn in _recorded(_common_ops):
                found |= {a for a, v in saved_attributes(fn).items() if isinstance(v, torch.Tensor)}
        except Exception:
            pass
        _VOCABULARY["saved"] = sorted(found)
    return list(_VOCABULARY["saved"])


def _merge(*groups) -> list[str]:
    out: list[str] = []
    for group in groups:
        for name in group:
            if name not in out:
                out.append(name)
    return out


def offered_names(kind) -> list[str]:
    """The names a Name, Names or Sequence input offers: the kind's pool plus torch's vocabulary."""
    from grader.engine.kinds import node_key, saved_key

    key = getattr(kind, "key", None)
    pool = list(getattr(kind, "pool", ()))
    if key is node_key:
        return _merge(node_vocabulary(), [p for p in pool if p != "None"])
    if key is saved_key:
        return _merge(pool, saved_vocabulary())
    return pool


# --- inputs, one per kind ----------------------------------------------------------------------


def _split_names(text: str) -> list[str]:
    return [part.strip().strip("'\"") for part in re.split(r"[,\n]", text or "") if part.strip().strip("'\"")]


def parse_number_text(text: str) -> Any:
    """'0.2983' -> 0.2983, '4, 1' or '[4, 1]' -> [4.0, 1.0]; anything else is passed on unchanged,
    so the kind's own message explains what was wrong."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        parts = [p for p in re.split(r"[,\s]+", text.strip("[]()")) if p]
        try:
            return [float(p) for p in parts] if len(parts) > 1 else float(parts[0])
        except (ValueError, IndexError):
            return text
    return list(value) if isinstance(value, tuple) else value


def parse_python_text(text: str) -> Any:
    text = (text or "").strip()
    if not text:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


class Input:
    """One input widget. ``value()`` is what ``kind.read`` gets; ``None`` means nothing chosen yet."""

    def __init__(self, box, value: Callable[[], Any], restore: Callable[[Any], None], parts: list):
        self.box, self.value, self._restore, self.parts = box, value, restore, parts
        import ipywidgets as W

        for part in parts:  # a press right after typing comes after what was typed (grader.learner.synced)
            if isinstance(part, W.Text):
                synced.follow(part)

    def restore(self, encoded: Any) -> None:
        """Show a stored prediction (its JSON form) again; ignore one that no longer fits."""
        try:
            self._restore(encoded)
        except Exception:
            pass

    def disable(self, disabled: bool = True) -> None:
        for part in self.parts:
            part.disabled = disabled


def _toggles(options, restore_map=None, label: str = "your answer: choose one") -> Input:
    import ipywidgets as W

    toggle = a11y.palette(W.ToggleButtons(options=options, value=None, style={"button_width": "auto"}), label)

    def restore(encoded):
        toggle.value = restore_map(encoded) if restore_map else encoded

    return Input(toggle, lambda: toggle.value, restore, [toggle])


def _number_input() -> Input:
    import ipywidgets as W

    field = W.Text(
        placeholder="a number, or several separated by commas", continuous_update=True, layout=W.Layout(width="26em")
    )
    a11y.named(field, "your answer: a number, or several separated by commas")

    def restore(encoded):
        field.value = ", ".join(f"{x:g}" for x in encoded) if isinstance(encoded, list) else f"{encoded:g}"

    return Input(field, lambda: parse_number_text(field.value), restore, [field])


def _name_input(kind) -> Input:
    import ipywidgets as W

    combo = W.Combobox(
        options=offered_names(kind),
        placeholder="type a name or pick one",
        ensure_option=False,
        layout=W.Layout(width="26em"),
    )
    a11y.named(combo, "your answer: a name (type it, or pick one from the list)")

    def restore(encoded):
        combo.value = str(encoded)

    return Input(combo, lambda: combo.value.strip() or None, restore, [combo])


def closed_choice(kind, prompt: str) -> bool:
    """True when a set-of-names question is a choice among names its prompt lists ("which of x, W, b, y"):
    its input then offers those names only, with no field for other names. Node and ``_saved_`` names are an
    open vocabulary read from torch, and a pool the prompt does not list may leave out part of the answer."""
    from grader.engine.kinds import node_key, saved_key

    pool = tuple(getattr(kind, "pool", ()))
    return bool(pool) and getattr(kind, "key", None) not in (node_key, saved_key) and all(p in prompt for p in pool)


def _names_input(kind, closed: bool = False) -> Input:
    import ipywidgets as W

    offered = offered_names(kind)
    boxes = [
        W.Checkbox(value=False, description=name, indent=False, layout=W.Layout(width="auto", margin="0 1.2em 0 0"))
        for name in offered
    ]
    extra = W.Text(placeholder="other names, separated by commas", layout=W.Layout(width="26em"))
    a11y.named(extra, "other names in your answer, separated by commas")
    if closed:
        extra.layout.display = "none"
    grid = a11y.palette(W.HBox(boxes, layout=W.Layout(flex_flow="row wrap")), "your answer: tick every name in it")
    note = W.HTML("<span style='color:#57606a'>Tick every name in your answer; leave all unticked for none.</span>")

    def value():
        chosen = [b.description for b in boxes if b.value]
        return set(_merge(chosen, _split_names(extra.value)))

    def restore(encoded):
        names = set(encoded)
        for b in boxes:
            b.value = b.description in names
        extra.value = ", ".join(n for n in sorted(names) if n not in offered)
        if extra.value:
            extra.layout.display = None

    return Input(W.VBox([grid, extra, note]), value, restore, boxes + [extra])


def _sequence_input(kind) -> Input:
    import ipywidgets as W

    from grader.engine.kinds import node_key

    offered = offered_names(kind)
    if kind.key is node_key:
        offered = offered + ["None"]
    chosen: list[str] = []
    shown = W.HTML()
    palette = [
        W.Button(description=name, layout=W.Layout(width="auto"), tooltip=f"add {name} to the end") for name in offered
    ]
    other = W.Combobox(
        options=offered, placeholder="another name, then Add", ensure_option=False, layout=W.Layout(width="18em")
    )
    a11y.named(other, "another name to add to the end of your list")
    add = W.Button(description="Add", layout=W.Layout(width="auto"), tooltip="add the name typed to the end")
    synced.waits(add)
    undo = W.Button(description="Remove last", icon="undo", layout=W.Layout(width="auto"))
    clear = W.Button(description="Clear", icon="times", layout=W.Layout(width="auto"))
    a11y.result_area(shown, live_only=True)

    def redraw():
        if not chosen:
            shown.value = "<span style='color:#57606a'>your list: (empty) — click names in order</span>"
        else:
            items = "".join(f"<li><code>{html.escape(n)}</code></li>" for n in chosen)
            shown.value = (
                f"<span style='color:#57606a'>your list, in order:</span><ol style='margin:2px 0'>{items}</ol>"
            )

    def push(name):
        if name and name.strip():
            chosen.append(name.strip())
            redraw()

    for button in palette:
        button.on_click(lambda b: push(b.description))
    add.on_click(lambda b: (push(other.value), setattr(other, "value", "")))
    undo.on_click(lambda b: (chosen.pop() if chosen else None, redraw()))
    clear.on_click(lambda b: (chosen.clear(), redraw()))
    redraw()

    def restore(encoded):
        chosen[:] = [str(n) for n in encoded]
        redraw()

    names = a11y.palette(W.HBox(palette, layout=W.Layout(flex_flow="row wrap")), "names to add to your list, in order")
    box = W.VBox([names, W.HBox([other, add, undo, clear]), shown])
    return Input(box, lambda: list(chosen), restore, palette + [other, add, undo, clear])


def _error_input(kind) -> Input:
    import ipywidgets as W

    places = W.ToggleButtons(options=list(kind.places), value=None, style={"button_width": "auto"})
    a11y.palette(places, "your answer: where torch raises")
    causes = W.RadioButtons(options=[(f"{c.label}: {c.text}", c.label) for c in kind.causes], value=None)
    a11y.named(causes, "the cause: why torch raises")
    note = W.Text(placeholder="your own words (a note, not graded)", layout=W.Layout(width="30em"))
    a11y.named(note, "your own words (a note, not graded)")

    def value():
        if places.value is None:
            return None
        if places.value == "no error":
            return places.value
        head = [places.value]
        if kind.causes:
            if causes.value is None:
                return places.value  # read() then asks for the cause
            head.append(causes.value)
        if note.value.strip():
            head.append(note.value)
        return tuple(head) if len(head) > 1 else places.value

    def restore(encoded):
        parts = encoded if isinstance(encoded, list) else [encoded]
        places.value = parts[0]
        rest = parts[1:]
        if kind.causes and rest:
            causes.value, rest = rest[0], rest[1:]
        note.value = rest[0] if rest else ""

    controls = [places] + ([causes] if kind.causes else []) + [note]
    return Input(W.VBox(controls), value, restore, controls)


def _text_input() -> Input:
    import ipywidgets as W

    field = W.Text(placeholder="your answer, written as in Python", layout=W.Layout(width="30em"))
    a11y.named(field, "your answer, written as in Python")
    return Input(field, lambda: parse_python_text(field.value), lambda e: setattr(field, "value", repr(e)), [field])


def make_input(kind, prompt: str = "") -> Input:
    """The input that suits ``kind``: toggle buttons for choices, checkboxes for a set of names (with a field
    for other names unless the prompt lists every name offered: :func:`closed_choice`), a field for a number,
    an ordered list the learner builds for a sequence. Every part has an accessible name (:mod:`a11y`)."""
    from grader.engine import kinds as K

    if isinstance(kind, K.Boolean):
        return _toggles([("True", True), ("False", False)], restore_map=bool)
    if isinstance(kind, K.Choice):
        return _toggles(list(kind.options))
    if isinstance(kind, K.Error):
        return _error_input(kind)
    if isinstance(kind, K.Number):
        return _number_input()
    if isinstance(kind, K.Sequence):
        return _sequence_input(kind)
    if isinstance(kind, K.Names):
        return _names_input(kind, closed=closed_choice(kind, prompt))
    if isinstance(kind, K.Name):
        return _name_input(kind)
    return _text_input()


# --- the record a predict cell carries of its locked prediction ----------------------------


class Carried:
    """The record output of a predict cell (:mod:`grader.engine.locked`): display data under ``locked.MIME``
    with a display id, updated in place when the prediction is locked, so the saved notebook holds it."""

    def __init__(self, q, handle):
        self.q, self.handle = q, handle

    @staticmethod
    def data(q, state) -> dict:
        """The record of ``state``'s locked prediction; one locked after a reveal says so. For a self-test, the
        answer its latest check graded (:func:`checked_answer`), carried the same way."""
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
    def show(cls, q, state=None) -> Carried | None:
        """Display the record of ``q`` as it stands; None where nothing can be displayed."""
        if not widgets_available():
            return None
        try:
            from IPython.display import display

            state = state if state is not None else api._state(q)
            handle = display(cls.data(q, state), raw=True, display_id=f"agl-prediction-{css_name(q.qid)}")
        except Exception:  # a display that fails must not cost the learner the question
            return None
        return cls(q, handle) if handle is not None else None

    def update(self, state=None) -> None:
        try:
            self.handle.update(self.data(self.q, state if state is not None else api._state(self.q)), raw=True)
        except Exception:
            pass


def checked_answer(q) -> tuple[bool, Any]:
    """``(found, encoded answer)``: the answer of the self-test's passing check, or else of its latest graded one,
    since the question was last reset; what the check cell carries for grading."""
    from grader.engine.store import current

    found, answer, passed = False, None, False
    for e in current().events(q.unit):
        if e.action == "reset" and e.qid in (None, q.qid):
            found, answer, passed = False, None, False
        elif e.qid == q.qid and e.action == "check" and not passed and e.verdict in ("correct", "incorrect"):
            if e.answer is not None:
                found, answer, passed = True, e.answer, e.verdict == "correct"
    return found, answer


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
    """What ``predict(qid, ...)`` shows of the record when it runs again after the reveal."""
    Carried.show(q, state)


# --- the prediction widget ------------------------------------------------------------------

_LIVE: dict[str, list] = {}  # qid -> weak references to the prediction widgets on screen


def after_reveal(qid: str) -> None:
    """A reveal happened in code: every prediction widget of that question stops taking input."""
    import weakref  # noqa: F401  (the registry holds weakref.ref objects)

    for ref in _LIVE.get(qid, []):
        w = ref()
        if w is not None and w.mode == "predict":
            try:
                w.input.disable()
                w.button.disabled = True
            except Exception:
                pass


def after_reset(target: str) -> None:
    """A reset happened (a question, or a whole unit): every widget of it on screen stops taking input, says why
    and what to do next, and its cell's record is brought up to date."""
    for qid, refs in list(_LIVE.items()):
        if qid != target and qid.split(".")[0] != target:
            continue
        for ref in refs:
            w = ref()
            if w is not None:
                w.closed_by_reset()


class PredictionWidget:
    """A question's prompt, an input for its kind, a "Lock in" button and what locking said.

    With ``mode="check"`` (a self-test) the button reads "Check" and grades the answer with
    ``check(qid, answer)``, the same event as in code.
    """

    def __init__(self, q, state=None, mode: str = "predict", carried: Carried | None = None):
        import weakref

        import ipywidgets as W

        self.q = q
        self.mode = mode
        self.carried = carried  # the record output Lock in updates, where one is displayed
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
        verb = "predict" if mode == "predict" else "self-test"
        prompt = html.escape(q.prompt)
        if "\n" in q.prompt:  # a generated self-test's program: its lines kept
            prompt = f"<pre style='margin:2px 0;white-space:pre-wrap'>{prompt}</pre>"
        head = W.HTML(f"<div style='margin-bottom:4px'><b>{html.escape(q.qid)}</b> · {verb}: {prompt}</div>")
        self.box = W.VBox(
            [head, self.input.box, W.HBox([self.button, self.again]), self.message, self.offers],
            layout=W.Layout(border="1px solid #d0d7de", padding="6px 10px", margin="4px 0"),
        )
        self.box.add_class("agl-predict")
        self.box.add_class("agl-q-" + css_name(q.qid))
        stale.guard(self.box, head)
        a11y.wire(self.box)
        self.button.on_click(self.lock)
        self._show(state if state is not None else api._state(q))

    def _show(self, state) -> None:
        self.again.layout.display = "none"
        if self.mode == "check":
            if state.passed:
                self.input.disable()
                self.button.disabled = True
                self.message.value = f"<div style='color:#1a7f37'>Passed ({html.escape(state.record)}).</div>"
            else:
                self.message.value = (
                    "<div style='color:#57606a'>Type or choose your answer and press Check; "
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
                "<div style='color:#57606a'>Choose or type your prediction, press Lock in, "
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
        self.message.value = result._repr_html_()
        self._offer(result)
        return result

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


# Plug the inputs, the reveal lock and the action buttons into the learner's API and its results.
api.FRONT_END.ask = ask
api.FRONT_END.carry = carry
api.FRONT_END.revealed.append(after_reveal)
api.FRONT_END.reset.append(after_reset)
results.EXTRA_VIEWS.append(action_view)
