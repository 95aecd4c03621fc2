"""What predict, reveal, check and mark_passed return: one object, shown as text or HTML.

Tests assert on its attributes (``passed``, ``verdict``, ``expected``, ``got``,
``message``); notebooks display it. Both renderings are deterministic, so nbval
can compare stored outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from grader.engine.verdicts import Action, Verdict

MARKS: dict[Verdict, str] = {
    "correct": "✓",
    "passed": "✓",
    "recorded": "•",
    "incorrect": "✗",
    "refused": "✗",
    "revealed": "○",
    "unanswered": "…",
    "invalid": "?",
    "locked": "✗",
    "error": "!",
    "info": "≡",
}

HEADLINES: dict[Verdict, str] = {
    "correct": "correct",
    "passed": "passed",
    "recorded": "prediction locked in",
    "incorrect": "incorrect",
    "refused": "not yet",
    "revealed": "revealed without a prediction",
    "unanswered": "not answered yet",
    "invalid": "cannot read that answer",
    "locked": "prediction refused",
    "error": "the grader could not run this experiment",
    "info": "",
}

_COLOURS = {
    "✓": "#1a7f37",
    "✗": "#cf222e",
    "•": "#0969da",
    "○": "#9a6700",
    "…": "#57606a",
    "?": "#9a6700",
    "!": "#cf222e",
}


@dataclass
class Result:
    action: Action  # 'predict', 'reveal', 'check', 'mark', ...
    subject: str  # a question id or a unit id
    verdict: Verdict
    message: str = ""
    expected: Any = None  # torch's live answer (normalised), when shown
    got: Any = None  # the learner's answer (normalised), when read
    rows: list = field(default_factory=list)  # (label, text) pairs shown under the headline
    explain: str = ""
    detail: dict = field(default_factory=dict)
    actions: list = field(default_factory=list)  # (action, target) a front end offers as a button: ("reset", qid)
    records: dict = field(default_factory=dict)  # display data the saved notebook carries (mimetype -> JSON payload)

    @property
    def passed(self) -> bool:
        return self.verdict in ("correct", "passed")

    @property
    def mark(self) -> str:
        return MARKS.get(self.verdict, "?")

    @property
    def headline(self) -> str:
        words = HEADLINES.get(self.verdict, self.verdict)
        return f"{self.mark} {self.subject}: {words}" if words else f"{self.mark} {self.subject}"

    def __str__(self) -> str:
        lines = [self.headline]
        width = max((len(label) for label, _ in self.rows), default=0)
        for label, text in self.rows:
            body = str(text).replace("\n", "\n" + " " * (width + 4))
            lines.append(f"  {label + ':':<{width + 1}} {body}")
        if self.message:
            lines.append("  " + self.message.replace("\n", "\n  "))
        if self.explain:
            lines.append("  why: " + self.explain)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        data = {"text/plain": str(self), "text/html": self._repr_html_(), **self.records}
        for view in EXTRA_VIEWS:  # a front end's additions (the learner's widgets: a button per action)
            try:
                data.update(view(self) or {})
            except Exception:
                pass
        return data

    def _repr_html_(self) -> str:
        colour = _COLOURS.get(self.mark, "#57606a")
        from html import escape as esc  # here, not at import (html.entities): `import grader` stays light

        parts = [
            f'<div class="agl-result agl-{esc(self.verdict)}" style="border-left:4px solid {colour};'
            'padding:4px 10px;margin:4px 0;font-family:var(--jp-ui-font-family,sans-serif)">',
            f'<div style="font-weight:600;color:{colour}">{esc(self.headline)}</div>',
        ]
        if self.rows:
            parts.append('<table style="border-collapse:collapse;margin:2px 0;margin-left:0">')
            cell = "text-align:left;vertical-align:top;background:none;border:none;"
            for label, text in self.rows:
                parts.append(
                    # the label stays on one line: a long answer beside it never squeezes it to one word a line
                    f'<tr><td style="{cell}padding:1px 10px 1px 0;color:#57606a;white-space:nowrap">{esc(label)}</td>'
                    f'<td style="{cell}padding:1px 0"><pre style="margin:0;white-space:pre-wrap;word-break:normal;'
                    f'overflow-wrap:break-word;text-align:left">{esc(str(text))}</pre></td></tr>'
                )
            parts.append("</table>")
        if self.message:
            parts.append(f'<div style="white-space:pre-wrap">{esc(self.message)}</div>')
        if self.explain:
            parts.append(f'<div style="color:#57606a"><i>why:</i> {esc(self.explain)}</div>')
        parts.append("</div>")
        return "".join(parts)


# Display data that a front end adds to every result it can draw more of (grader.learner.widgets adds a
# button for each action a refusal names). The engine draws none of it and imports no front end.
EXTRA_VIEWS: list[Callable[[Result], dict | None]] = []


class GraderCheckFailed(AssertionError):
    """Raised in strict mode (AUTOGRAD_LAB_STRICT=1) when a solution's own check does not pass."""
