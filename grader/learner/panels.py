"""The unit panel and the course map: where a learner stands, from the same honest record as ``status``.

Both degrade like the rest of the learner's tools: a widget in a Jupyter kernel with ipywidgets, the same
text and HTML everywhere else (what nbval compares).
"""

from __future__ import annotations

import html
from typing import Any

from grader.engine.results import Result
from grader.learner import a11y, api, saved, stale
from grader.learner.display import Shown, css_name, widgets_available

# --- the unit panel -----------------------------------------------------------------------


def question_line(qs) -> str:
    """What one question has reached, in words: the same honest record as status and the gradebook."""
    return qs.record


def due_for_review(unit: str | None = None) -> list[str]:
    """The questions due for review now (:mod:`grader.engine.review`), of ``unit`` or of every unit. Shown only when
    there are some: a unit passed today has none due until tomorrow, so stored outputs stay the same."""
    from grader.engine import progress, review
    from grader.engine.store import current

    states = progress.course_state(current())
    return [d.qid for d in review.due(states, limit=100) if unit is None or d.unit == unit]


def _review_line(qids: list[str]) -> str:
    shown = ", ".join(qids[:6]) + (" …" if len(qids) > 6 else "")
    return f"review due: {shown} (review() asks a fresh program of each)"


class UnitPanel:
    """A unit's status (predicted, revealed, checked, missing) and a "Mark passed" button."""

    def __init__(self, unit: Any, interactive: bool | None = None):
        from grader.engine.course import UNITS, unit_id

        self.uid = unit_id(unit)
        self.unit = UNITS[self.uid]
        self.last: Result | None = None
        self.widget = None
        if interactive if interactive is not None else widgets_available():
            self._build()

    def state(self):
        from grader.engine import progress
        from grader.engine.store import current

        return progress.unit_state(self.uid, current().events(self.uid))

    # static forms -----------------------------------------------------------------------
    def text(self) -> str:
        s = self.state()
        c = s.counts()
        lines = [
            f"unit {self.uid} · {self.unit.title}: {s.status}",
            f"  done {c['done']} of {c['questions']}: predicted before the reveal "
            f"{c['predicted']}/{c['predict_total']}, revealed {c['revealed']}/{c['predict_total']}, "
            f"checked {c['checked']}/{c['check_total']}",
        ]
        width = max((len(q) for q in s.questions), default=0)
        for qid, qs in s.questions.items():
            lines.append(f"  {'✓' if qs.done else '·'} {qid:<{width}}  {qs.role:<9}  {question_line(qs)}")
        missing = s.missing()
        due = due_for_review(self.uid)
        if s.passed:
            lines.append("  marked passed.")
            if due:
                lines.append("  " + _review_line(due))
        elif missing:
            lines.append(f"  missing before Mark passed: {len(missing)}")
        else:
            lines.append(f"  everything is done: mark_passed('{self.uid}') or the Mark passed button records it.")
        unsaved = saved.note(self.uid)
        if unsaved:
            lines.append(f"  ⚠ {unsaved}")
        return "\n".join(lines)

    def html(self) -> str:
        s = self.state()
        c = s.counts()
        esc = html.escape
        colour = "#1a7f37" if s.passed else "#57606a"
        rows = []
        for qid, qs in s.questions.items():
            mark = "✓" if qs.done else "·"
            rows.append(
                f"<tr><td style='padding:1px 8px 1px 0;color:{'#1a7f37' if qs.done else '#57606a'}'>{mark}</td>"
                f"<td style='padding:1px 12px 1px 0'><code>{esc(qid)}</code></td>"
                f"<td style='padding:1px 12px 1px 0;color:#57606a'>{esc(qs.role)}</td>"
                f"<td>{esc(question_line(qs))}</td></tr>"
            )
        missing = s.missing()
        if s.passed:
            due = due_for_review(self.uid)
            foot = esc("Marked passed." + (" " + _review_line(due[:]) + "." if due else ""))
        elif missing:
            foot = esc(f"{len(missing)} still missing before the unit can be marked passed.")
        else:
            foot = "Everything is done: press Mark passed."
        unsaved = saved.note(self.uid)  # the notebook as saved lacks answers the store holds (only in a live kernel)
        if unsaved:
            foot += f" <span class='agl-unsaved' style='color:#9a6700'>⚠ {esc(unsaved)}</span>"
        return (
            f"<div class='agl-status' style='font-family:var(--jp-ui-font-family,sans-serif)'>"
            f"<div style='font-weight:600;color:{colour}'>unit {esc(self.uid)} · {esc(self.unit.title)}: "
            f"<span class='agl-unit-state'>{esc(s.status)}</span></div>"
            f"<div style='color:#57606a'>done {c['done']} of {c['questions']} · predicted before the reveal "
            f"{c['predicted']}/{c['predict_total']} · revealed {c['revealed']}/{c['predict_total']} · "
            f"checked {c['checked']}/{c['check_total']}</div>"
            f"<table style='border-collapse:collapse;margin:4px 0'>{''.join(rows)}</table>"
            f"<div>{foot}</div></div>"
        )

    # the widget ---------------------------------------------------------------------------
    def _build(self) -> None:
        import ipywidgets as W

        self.table = W.HTML()
        self.mark = W.Button(
            description="Mark passed",
            button_style="success",
            icon="check",
            tooltip=f"mark_passed('{self.uid}'): refused, with what is missing, until all is done",
        )
        self.mark.add_class("agl-mark")
        a11y.to_result(self.mark)
        self.refresh_button = W.Button(description="Refresh", icon="refresh", tooltip="read the record again")
        self.message = a11y.result_area(W.HTML())
        self.mark.on_click(self.mark_passed)
        self.refresh_button.on_click(lambda b: self.refresh())
        self.widget = W.VBox(
            [self.table, W.HBox([self.mark, self.refresh_button]), self.message],
            layout=W.Layout(border="1px solid #d0d7de", padding="6px 10px", margin="4px 0"),
        )
        self.widget.add_class("agl-panel")
        self.widget.add_class("agl-panel-" + css_name(self.uid))
        stale.guard(self.widget, self.table)  # from an earlier kernel: the table stays (as it was), the buttons go
        a11y.wire(self.widget)
        self.refresh()

    def refresh(self) -> None:
        if self.widget is not None:
            self.table.value = self.html()
            self.mark.disabled = self.state().passed

    def mark_passed(self, _button=None) -> Result:
        """What the button does: mark_passed(unit), its verdict shown under the table."""
        try:
            result = api.mark_passed(self.uid)
        except Exception as exc:  # strict mode turns a refusal into an exception; show it as the refusal
            result = Result("mark", self.uid, "refused", str(exc).strip())
        self.last = result
        if self.widget is not None:
            self.message.value = result._repr_html_()
            self.refresh()
        return result

    def _repr_mimebundle_(self, include=None, exclude=None):
        return Shown(self.text, self.html, self.widget)._repr_mimebundle_()

    def __repr__(self):
        return self.text()


def unit_panel(unit: Any) -> UnitPanel:
    """The end of a unit: its status and a "Mark passed" button (text where widgets cannot show)."""
    return UnitPanel(unit)


# --- the course map ----------------------------------------------------------------------------


class CourseMap:
    """Every unit with its state, the units recommended before it, and how far it is.

    Question counts are shown for units already started only, so the map of a fresh store does
    not change when a unit gains a question (unit 00's stored output stays comparable)."""

    def __init__(self, interactive: bool | None = None):
        self.widget = None
        if interactive if interactive is not None else widgets_available():
            import ipywidgets as W

            # An Output widget renders its HTML with the notebook's own renderer, whose link handler opens
            # a relative link as a JupyterLab tab; an HTML widget's links would reload the whole page.
            self.table = W.Output()
            self.refresh()
            refresh = W.Button(description="Refresh", icon="refresh", tooltip="read the record again")
            refresh.on_click(lambda b: self.refresh())
            self.widget = W.VBox([self.table, refresh])
            self.widget.add_class("agl-course-map")
            stale.guard(self.widget, self.table)
            a11y.wire(self.widget)

    def refresh(self) -> None:
        from IPython.display import HTML

        self.table.outputs = ()
        self.table.append_display_data(HTML(self.html()))

    def rows(self) -> list[dict]:
        from grader.engine import progress
        from grader.engine.course import UNITS
        from grader.engine.store import current

        states = progress.course_state(current())
        out = []
        for uid, unit in UNITS.items():
            s = states[uid]
            c = s.counts()
            out.append(
                {
                    "unit": uid,
                    "title": unit.title,
                    "notebook": unit.notebook,
                    "status": s.status,
                    "needs": [(n, states[n].passed) for n in unit.needs],
                    "done": c["done"],
                    "questions": c["questions"],
                    "note": progress.prerequisites_note(uid, states) if not s.passed else "",
                }
            )
        return out

    def text(self) -> str:
        rows = self.rows()
        lines = [f"course map: {sum(r['status'] == 'passed' for r in rows)} of {len(rows)} units passed"]
        for r in rows:
            needs = ", ".join(n + ("✓" if ok else "") for n, ok in r["needs"]) or "-"
            done = f"{r['done']}/{r['questions']}" if r["questions"] and r["status"] != "not started" else "-"
            lines.append(f"  {r['unit']:<3} {r['status']:<12} {done:>6}  after {needs:<9} {r['title']}")
        due = due_for_review()
        if due:
            lines.append("  " + _review_line(due))
        return "\n".join(lines)

    def html(self) -> str:
        esc = html.escape
        colours = {"passed": "#1a7f37", "in progress": "#9a6700", "not started": "#57606a"}
        head = "".join(
            f"<th style='text-align:left;text-align:left;padding:2px 10px 2px 0'>{h}</th>"
            for h in ("unit", "title", "recommended after", "state", "done")
        )
        body = []
        for r in self.rows():
            needs = (
                ", ".join(
                    f"<span style='color:{'#1a7f37' if ok else '#57606a'}'>{esc(n)}{'✓' if ok else ''}</span>"
                    for n, ok in r["needs"]
                )
                or "–"
            )
            done = f"{r['done']}/{r['questions']}" if r["questions"] and r["status"] != "not started" else "–"
            note = f" <small style='color:#57606a'>({esc(r['note'])})</small>" if r["note"] else ""
            body.append(
                f"<tr><td style='text-align:left;padding:2px 10px 2px 0'>{esc(r['unit'])}</td>"
                f"<td style='text-align:left;padding:2px 10px 2px 0'><a style='color:#0969da' href='{esc(r['notebook'])}'>"
                f"{esc(r['title'])}</a></td>"
                f"<td style='text-align:left;padding:2px 10px 2px 0'>{needs}</td>"
                f"<td style='text-align:left;padding:2px 10px 2px 0;color:{colours.get(r['status'], '#57606a')}'>"
                f"{esc(r['status'])}{note}</td><td style='text-align:left'>{done}</td></tr>"
            )
        due = due_for_review()
        review = f"<div class='agl-review-due'>{esc(_review_line(due))}</div>" if due else ""
        return (
            f"<table class='agl-map' style='border-collapse:collapse'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{review}"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        return Shown(self.text, self.html, self.widget)._repr_mimebundle_()

    def __repr__(self):
        return self.text()


def course_map() -> CourseMap:
    """The course map: every unit's state and prerequisites, refreshable in a notebook."""
    return CourseMap()
