"""A teaching assistant's per-question overrides (``grade --overrides overrides.csv``), applied and always shown.

The file is a CSV, not TOML: a TA keeps it open beside the gradebook in the same spreadsheet, adds one line per
decision (several TAs can append to it), and it is read with the same rules as the roster (a header, UTF-8 with
or without a byte-order mark, a leading ``'`` that a spreadsheet-safe copy added is taken off). Columns::

    learner,question,points,accept,reason
    alice,01.pow-node,2,,"answered on paper in class; checked by Sam"
    *,03.shape-of-grad,,"[3, 4]","(3, 4) is the same shape written as a list: accepted for everyone"

* ``learner``: the learner as the gradebook names them, or their student ID, exactly (``bob``'s line is never
  ``BOB``'s or ``bob ``'s: names are identities; a near miss is named in the warning), or ``*`` (every learner;
  only with ``accept``);
* ``question``: a question id of the course (``python -m grader questions``);
* exactly one of ``points`` (the points this learner gets for the question, 0 to its maximum: replaces what the
  recomputed verdict earned) or ``accept`` (an alternative answer, as the learner's answer is written, a JSON
  literal or as the feedback page shows it: every matching learner whose recorded answer is this one gets the
  question's full points, as if torch had agreed; a prediction made after the reveal still earns nothing);
* ``reason``: required; shown wherever the override is.

An override never changes a verdict: the question's column still says what live torch decided, and the row's
``overrides`` column, the wide CSV's ``overrides`` column, the learner's feedback page and the class report say
which points a person changed, from what to what, and why. "Marked passed" stays torch's. An override that
matched no graded learner is warned of at the end of the run, so a misspelt name is never silently ignored. In a
regrade merged into a gradebook (``--merge-into``), a line for a learner of that gradebook who is not graded in this
run, whose rows do not show it yet, stops the run before anything is graded (:meth:`Overrides.pending`): a kept row
cannot take a new override, so that learner is graded again with it.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from grader.instructor.grading import csv_cells, scores

COLUMNS = ("learner", "question", "points", "accept", "reason")
EVERYONE = "*"


class OverridesError(ValueError):
    pass


@dataclass
class Override:
    line: int
    learner: str
    qid: str
    reason: str
    points: float | None = None  # award exactly this many points
    accept: str | None = None  # or: accept this answer as correct (read() gives each line exactly one of the two)

    def describe(self) -> str:
        what = f"{scores.number(self.points)} points" if self.points is not None else f"answer {self.accept} accepted"
        return f"{what} ({self.reason})"


@dataclass
class Overrides:
    path: str = ""
    items: list[Override] = field(default_factory=list)
    student_ids: set = field(default_factory=set)  # the roster's ids: a line keyed by one names that student only

    def __bool__(self) -> bool:
        return bool(self.items)

    def for_question(self, qid: str, learner: str, student: str) -> list[Override]:
        """The lines for ``qid`` that name this learner exactly (their gradebook name or their student ID; case and
        spaces count: ``bob``'s line is never ``BOB``'s), or everyone. A line keyed by a student ID of the roster
        names that student only, never a learner whose folder bears that name."""

        def names(o: Override) -> bool:
            if o.learner == EVERYONE or (student and o.learner == student):
                return True
            return o.learner == learner and o.learner not in self.student_ids

        return [o for o in self.items if o.qid == qid and names(o)]

    def unused(self, rows: list[dict], everyone=None) -> list[str]:
        """A warning for each override that changed no row of ``rows`` (the rows graded now, which keep the lines
        that changed them). Where ``everyone`` (the names and IDs of the whole gradebook, in a regrade merged into
        it) is given, a line for a learner of the gradebook who was not graded now is not warned of; one for a
        learner it does not know (a misspelt name) is."""
        from grader.instructor.grading.printable import escape

        used = {line for r in rows for line in r.get("_overridden", [])}
        graded = {str(r.get(k) or "") for r in rows for k in ("learner", "student id")} - {""}
        known = {str(x or "") for x in everyone} - {""} if everyone is not None else graded
        return [
            f"{self.path} line {o.line}: the override of {o.qid} for {escape(o.learner)} matched no graded learner"
            + (" with that answer" if o.accept is not None else "")
            + (_near(o.learner, known) if o.learner != EVERYONE and o.learner not in known else "")
            for o in self.items
            if o.line not in used and (o.learner == EVERYONE or o.learner in graded or o.learner not in known)
        ]

    def pending(self, old_rows: list[dict], graded_now: set) -> list[str]:
        """In a regrade merged into a gradebook (``old_rows``): a reason to refuse for each line naming a learner of
        that gradebook who is not graded in this run and whose rows do not show the line yet. An override is applied
        where a row is made; a row kept from an earlier run cannot take a new one (it does not hold what each
        question earned), so that learner must be graded in this run too."""
        from grader.instructor.grading.printable import escape

        out = []
        for o in self.items:
            if o.learner == EVERYONE:
                continue
            mine = [
                r
                for r in old_rows
                if o.learner in (r.get("learner"), r.get("student id")) and r.get("learner") not in graded_now
            ]
            if not mine or any(o.describe() in str(r.get("overrides") or "") for r in mine):
                continue
            who = escape(mine[0].get("learner", o.learner))
            out.append(
                f"{self.path} line {o.line}: {who} is in the gradebook but not graded in this run, and their rows "
                f"were made without this override of {o.qid}: add {who}'s notebooks to this run (an override is "
                "applied where a row is made), or leave the line out"
            )
        return out

    def fingerprint(self) -> list:
        """What a journal compares (a changed file regrades the rows)."""
        return [(o.learner, o.qid, o.points, o.accept, o.reason) for o in self.items]


def _near(name: str, known: set) -> str:
    from grader.instructor.grading.printable import escape

    near = sorted(k for k in known if k.strip().casefold() == name.strip().casefold())
    return f" (the gradebook has {escape(near[0])!r}: names match exactly, case and spaces count)" if near else ""


def load(path: Path | None, weights: scores.Weights | None = None, ids: dict | None = None) -> Overrides:
    """The overrides of ``path`` (none without one); OverridesError names the line and what is wrong. ``ids``: the
    roster (name -> student ID), whose IDs a line may be keyed by."""
    if path is None:
        return Overrides()
    weights = weights or scores.Weights()
    try:
        text = csv_cells.text_of(path)
    except OSError as exc:
        raise OverridesError(f"cannot read overrides {path}: {exc.strerror or exc}") from None
    except UnicodeError as exc:
        raise OverridesError(f"cannot read overrides {path}: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    heads = {(h or "").strip().lower(): h for h in reader.fieldnames or []}
    lacking = [c for c in ("learner", "question", "reason") if c not in heads]
    if lacking or not ({"points", "accept"} & heads.keys()):
        raise OverridesError(
            f"overrides {path} needs the columns {', '.join(COLUMNS)} (points or accept may be left out); "
            f"it has {', '.join(reader.fieldnames or []) or 'none'}"
        )
    from grader.engine.question import load as questions

    known = questions()
    out = Overrides(str(path), student_ids={str(v) for v in (ids or {}).values() if v})
    for line, raw in enumerate(reader, start=2):

        def cell(name: str, row=raw) -> str:
            return csv_cells.restore((row.get(heads[name]) or "").strip()) if name in heads else ""

        learner, qid, reason, points, accept = (cell(c) for c in ("learner", "question", "reason", "points", "accept"))
        if not any((learner, qid, reason, points, accept)):
            continue
        where = f"overrides {path} line {line}"
        q = known.get(qid)
        if q is None:
            raise OverridesError(f"{where}: {qid!r} is not a question of the course")
        if not learner:
            raise OverridesError(f"{where}: name the learner (or their student ID, or * for everyone)")
        if not reason:
            raise OverridesError(f"{where}: give the reason (it is shown to the learner and in the report)")
        if bool(points) == bool(accept):
            raise OverridesError(f"{where}: give points or an accepted answer, exactly one of them")
        item = Override(line, learner, qid, reason)
        if points:
            if learner == EVERYONE:
                raise OverridesError(f"{where}: points are given to one learner, not to * (accept an answer instead)")
            top = sum(weights.of(qid, q.role).values())
            try:
                item.points = float(points)
            except ValueError:
                raise OverridesError(f"{where}: points must be a number, not {points!r}") from None
            if not 0 <= item.points <= top:
                raise OverridesError(f"{where}: {qid} is worth 0 to {scores.number(top)} points, not {points}")
        else:
            if q.role == "exercise":
                raise OverridesError(f"{where}: {qid} is an exercise (a function): award points instead of accept")
            item.accept = accept
        out.items.append(item)
    return out


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def matches(q, accepted: str, answer, show) -> bool:
    """Is the learner's recorded ``answer`` the ``accepted`` one: the same JSON literal, or the same answer
    as the feedback page shows it (``show(kind, answer)``)?"""
    if answer is None:
        return False
    shown = show(q.kind, answer)
    if accepted == shown:
        return True
    try:
        parsed = json.loads(accepted)
    except ValueError:
        return False
    return _canonical(parsed) == _canonical(answer) or show(q.kind, parsed) == shown


def apply(overrides: Overrides, q, learner: str, student: str, answer, honest: bool, earned: float, top: float, show):
    """(points, the note that says what changed, the override's line) for one question of one learner; (earned,
    '', 0) where no override applies. The first line of the file that applies wins."""
    for o in overrides.for_question(q.qid, learner, student):
        if o.points is not None:
            return (
                o.points,
                f"{q.qid}: {scores.number(earned)} -> {scores.number(o.points)} points, {o.describe()}",
                o.line,
            )
        if o.accept is not None and matches(q, o.accept, answer, show):
            if q.role == "predict" and not honest:
                note = f"{q.qid}: {o.describe()}, but the prediction was not made before the reveal: no change"
                return earned, note, o.line
            return top, f"{q.qid}: {scores.number(earned)} -> {scores.number(top)} points, {o.describe()}", o.line
    return earned, "", 0
