"""The inputs of the prediction widget, one per kind of answer, and the names and words they offer.

:func:`make_input` builds the input that suits a question's kind: toggle buttons for a choice, an error's place
and its candidate causes (a radio list whose long labels wrap in their own rows), checkboxes for a set of names,
a palette of buttons for a sequence (node names read from torch, or the words the prompt names), a field for a
number. Each part has an accessible name (:mod:`grader.learner.a11y`); a typed field is followed by the page
(:mod:`grader.learner.synced`), and Enter in it presses its widget's button (:data:`ENTER`, the page's script in
:mod:`grader.learner.a11y`). :data:`STYLE` lays them out for a normal window. What a learner chose is read by
the kind (``kind.read``) exactly as an answer in code is.
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Callable
from typing import Any

from grader.learner import a11y, synced

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


ENTER = "agl-enter"  # a field where Enter presses the widget's submit button (Lock in, Check), as a click would
ENTER_ADD = "agl-enter-add"  # a field where Enter presses Add instead (the sequence's "another name")
SUBMIT = "agl-submit"  # the button Enter presses: Lock in, or Check
ADD = "agl-add"

# Course widgets laid out for a normal window (issue 44): a cause's long label wraps inside its own row (ipywidgets
# gives a radio row a fixed 20 px height in a 300 px box, so long labels ran over the next rows and under the field
# below), toggle buttons wrap onto new lines instead of running off the notebook, and the record line a cell's
# widget carries stands in for the output above it (the same record, kept up to date after a reload: Carried).
STYLE = (
    "<style>"
    ".agl-causes.widget-radio{width:auto !important;max-width:100%;height:auto}"
    ".agl-causes .widget-radio-box{margin-bottom:0;height:auto}"
    ".agl-causes .widget-radio-box label{height:auto;line-height:1.35;white-space:normal;display:flex;"
    "align-items:flex-start;padding:3px 0;margin:0;cursor:pointer}"
    ".agl-causes .widget-radio-box input{float:none;flex:none;order:-1;height:1.35em;margin:0 8px 0 1px;cursor:pointer}"
    ".agl-palette.widget-toggle-buttons{flex-wrap:wrap;height:auto;row-gap:4px}"
    ".agl-palette .widget-toggle-button{max-width:100%}"
    ".jp-OutputArea:has(.agl-record) .jp-OutputArea-child:has(.agl-record-text){display:none}"
    "</style>"
)


def style_html():
    """The hidden HTML widget whose style sheet lays the course's inputs out (:data:`STYLE`)."""
    import ipywidgets as W

    sheet = W.HTML(STYLE, layout=W.Layout(display="none"))
    sheet.add_class("agl-style")
    return sheet


class Input:
    """One input widget. ``value()`` is what ``kind.read`` gets; ``None`` means nothing chosen yet; ``clear()`` empties
    it (a self-test's new program is answered afresh)."""

    def __init__(
        self,
        box,
        value: Callable[[], Any],
        restore: Callable[[Any], None],
        parts: list,
        clear: Callable[[], None] | None = None,
    ):
        self.box, self.value, self._restore, self.parts, self._clear = box, value, restore, parts, clear
        import ipywidgets as W

        for part in parts:  # a press right after typing comes after what was typed (grader.learner.synced)
            if isinstance(part, W.Text):
                synced.follow(part)
                if ENTER_ADD not in part._dom_classes:
                    part.add_class(ENTER)

    def restore(self, encoded: Any) -> None:
        """Show a stored prediction (its JSON form) again; ignore one that no longer fits."""
        try:
            self._restore(encoded)
        except Exception:
            pass

    def clear(self) -> None:
        if self._clear is not None:
            try:
                self._clear()
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

    return Input(toggle, lambda: toggle.value, restore, [toggle], clear=lambda: setattr(toggle, "value", None))


def _number_input() -> Input:
    import ipywidgets as W

    field = W.Text(
        placeholder="a number, or several separated by commas", continuous_update=True, layout=W.Layout(width="26em")
    )
    a11y.named(field, "your answer: a number, or several separated by commas")

    def restore(encoded):
        field.value = ", ".join(f"{x:g}" for x in encoded) if isinstance(encoded, list) else f"{encoded:g}"

    return Input(
        field, lambda: parse_number_text(field.value), restore, [field], clear=lambda: setattr(field, "value", "")
    )


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

    return Input(
        combo, lambda: combo.value.strip() or None, restore, [combo], clear=lambda: setattr(combo, "value", "")
    )


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

    def clear():
        for b in boxes:
            b.value = False
        extra.value = ""

    return Input(W.VBox([grid, extra, note]), value, restore, boxes + [extra], clear=clear)


def quoted_words(prompt: str) -> list[str]:
    """The words a prompt asks to choose from, each in single quotes ("say 'raises', 'opt loses it' or 'opt keeps
    it'"), in order and once each: what a sequence of plain words offers as buttons."""
    quoted = re.findall(r"(?<![\w'])'([^'\n]{1,60})'(?![\w])", prompt or "")  # not an apostrophe: w's, don't
    return _merge(w.strip() for w in quoted if w.strip())


def sequence_words(kind, prompt: str = "") -> list[str]:
    """What a Sequence input offers as buttons: node names (and None) read from torch with any name the prompt
    quotes, or for a list of plain words the words its prompt names (:func:`quoted_words`)."""
    from grader.engine.kinds import node_key

    offered = offered_names(kind)
    if kind.key is node_key:  # and a name the prompt gives a node ("or 'w' for w's AccumulateGrad")
        return _merge(offered, ["None"], [w for w in quoted_words(prompt) if re.fullmatch(r"[A-Za-z_][\w.]*", w)])
    return offered or quoted_words(prompt)


def _sequence_input(kind, prompt: str = "") -> Input:
    import ipywidgets as W

    offered = sequence_words(kind, prompt)
    noun = "names" if offered and all(" " not in w for w in offered) else "words"
    chosen: list[str] = []
    shown = W.HTML()
    palette = [
        W.Button(description=name, layout=W.Layout(width="auto"), tooltip=f"add {name} to the end") for name in offered
    ]
    other = W.Combobox(
        options=offered,
        placeholder=f"another {noun[:-1]}, then Add",
        ensure_option=False,
        layout=W.Layout(width="18em"),
    )
    other.add_class(ENTER_ADD)
    a11y.named(other, f"another {noun[:-1]} to add to the end of your list")
    add = W.Button(description="Add", layout=W.Layout(width="auto"), tooltip=f"add the {noun[:-1]} typed to the end")
    add.add_class(ADD)
    synced.waits(add)
    undo = W.Button(description="Remove last", icon="undo", layout=W.Layout(width="auto"))
    clear = W.Button(description="Clear", icon="times", layout=W.Layout(width="auto"))
    a11y.result_area(shown, live_only=True)

    def redraw():
        if not chosen:
            how = f"click {noun} in order" if offered else f"type each {noun[:-1]} and press Add (or Enter), in order"
            shown.value = f"<span style='color:#57606a'>your list: (empty) — {how}</span>"
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

    def emptied():
        chosen.clear()
        other.value = ""
        redraw()

    names = a11y.palette(
        W.HBox(palette, layout=W.Layout(flex_flow="row wrap")), f"{noun} to add to your list, in order"
    )
    box = W.VBox([names, W.HBox([other, add, undo, clear]), shown])
    return Input(box, lambda: list(chosen), restore, palette + [other, add, undo, clear], clear=emptied)


def _error_input(kind) -> Input:
    import ipywidgets as W

    places = W.ToggleButtons(options=list(kind.places), value=None, style={"button_width": "auto"})
    a11y.palette(places, "your answer: where torch raises")
    causes = W.RadioButtons(
        options=[(f"{c.label}: {c.text}", c.label) for c in kind.causes],
        value=None,
        layout=W.Layout(width="auto", max_width="60em"),
    )
    causes.add_class("agl-causes")
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

    def clear():
        places.value = None
        if kind.causes:
            causes.value = None
        note.value = ""

    controls = [places] + ([causes] if kind.causes else []) + [note]
    return Input(W.VBox(controls), value, restore, controls, clear=clear)


def _text_input() -> Input:
    import ipywidgets as W

    field = W.Text(placeholder="your answer, written as in Python", layout=W.Layout(width="30em"))
    a11y.named(field, "your answer, written as in Python")
    return Input(
        field,
        lambda: parse_python_text(field.value),
        lambda e: setattr(field, "value", repr(e)),
        [field],
        clear=lambda: setattr(field, "value", ""),
    )


INPUTS: dict[type, Callable[[Any, str], Input]] = {}  # a kind's class -> the factory of its input


def input_for(kind_class: type) -> Callable:
    """Register the input a kind's class (and its subclasses that register none of their own) is answered with:
    ``@input_for(MyKind) def _mine(kind, prompt) -> Input``. A unit's own kind that subclasses an engine kind gets
    that kind's input; one that needs its own registers it from the learner's layer (units cannot import it)."""

    def register(factory: Callable[[Any, str], Input]) -> Callable[[Any, str], Input]:
        INPUTS[kind_class] = factory
        return factory

    return register


def make_input(kind, prompt: str = "") -> Input:
    """The input that suits ``kind``, found by its class (the nearest in its method resolution order that has one
    registered, :func:`input_for`): toggle buttons for choices, checkboxes for a set of names (with a field for
    other names unless the prompt lists every name offered: :func:`closed_choice`), a field for a number, an ordered
    list the learner builds for a sequence; a text field for any other. Every part has an accessible name
    (:mod:`a11y`); Enter in a field does what its widget's button does (:data:`ENTER`)."""
    for cls in type(kind).__mro__:
        if cls in INPUTS:
            return INPUTS[cls](kind, prompt)
    return _text_input()


def _register_the_engines_kinds() -> None:
    from grader.engine import kinds as K

    input_for(K.Boolean)(lambda kind, prompt: _toggles([("True", True), ("False", False)], restore_map=bool))
    input_for(K.Choice)(lambda kind, prompt: _toggles(list(kind.options)))
    input_for(K.Error)(lambda kind, prompt: _error_input(kind))
    input_for(K.Number)(lambda kind, prompt: _number_input())
    input_for(K.Sequence)(lambda kind, prompt: _sequence_input(kind, prompt))
    input_for(K.Names)(lambda kind, prompt: _names_input(kind, closed=closed_choice(kind, prompt)))
    input_for(K.Name)(lambda kind, prompt: _name_input(kind))


_register_the_engines_kinds()
