"""How the learner's tools show themselves: a widget where a front end can draw one, text and HTML
everywhere (what nbval compares). Used by the widgets, the labs, the stepper and the drawings."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from grader.engine import env_vars

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_OFF = ("0", "false", "no", "off")


# --- can widgets be shown here? ------------------------------------------------------


def widgets_available() -> bool:
    """True in a Jupyter kernel with ipywidgets installed (and AUTOGRAD_LAB_WIDGETS not 0)."""
    if os.environ.get(env_vars.WIDGETS, "").strip().lower() in _OFF:
        return False
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def view_of(widget) -> dict:
    """The display data that asks a front end to draw ``widget``."""
    return {WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}}


class Shown:
    """An object a notebook displays: a widget where one can be drawn, text and HTML everywhere.

    ``text`` and ``html`` may be callables, so the static forms follow what the
    widget shows now. ``extra`` adds more display data (a PNG chart, say).
    """

    def __init__(
        self,
        text: str | Callable[[], str],
        html_: str | Callable[[], str] | None = None,
        widget: Any = None,
        extra: dict | Callable[[], dict] | None = None,
    ):
        self._text, self._html, self.widget, self._extra = text, html_, widget, extra

    @property
    def text(self) -> str:
        return self._text() if callable(self._text) else self._text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text)

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = {"text/plain": self.text}
        if self._html is not None:
            data["text/html"] = self._html() if callable(self._html) else self._html
        if self._extra:
            data.update(self._extra() if callable(self._extra) else self._extra)
        if self.widget is not None:
            data.update(view_of(self.widget))
        return data


def css_name(text: str) -> str:
    """A CSS class fragment for a question id or unit: '01.x-is-leaf' -> '01-x-is-leaf'."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)
