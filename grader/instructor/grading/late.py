"""Late rules: ``grade --due DATE [--late-penalty PCT] [--late-cutoff DAYS]``, applied to a row's points and shown.

The time a notebook was handed in is the row's ``submitted`` column: the LMS's own time (``--times``), or the time
``grader collect`` first saw the notebook (its ``collect-times.csv``, which ``grade`` reads by itself), never the
file's modification time, which its owner can set (``touch -d 2020-01-01``) and an unzip may not restore
(``--times mtime`` takes it all the same, and the row says so). A row with no such time:

* from a **Canvas** export, is judged by Canvas's own mark: a file Canvas named ``_LATE`` was handed in after
  Canvas's due date, and counts as 1 day late (how late is not in the export; Canvas's submission times, given
  with ``--times``, say it to the day); one without the mark was on time by Canvas's due date;
* otherwise gets no late rule, and says why (no trustworthy time): the run names how many such rows there are.
 ``--due`` is one date for every unit or ``NN=DATE`` for one unit (repeatable; a
unit's own date wins over the one for all); a date alone means the end of that day, a date and time that
minute (ISO 8601, ``2026-03-01`` or ``2026-03-01T17:00``; a time without a zone is local, as ``submitted``
is). A notebook handed in after its due time is late by whole days, a part of a day counting as one:

* ``--late-penalty 10`` takes 10 % of the unit's points per day late (at most all of them);
* ``--late-cutoff 3`` gives 0 points to a notebook more than 3 days late (``0``: any late notebook);
* with neither, lateness is shown and no point is taken.

Every late row says so: ``days late`` (a number), ``late rule`` (what was applied: ``2 day(s) late: -20%
(-1.6 points)``) and a finding, so the feedback page, the wide CSV and the class report show it. A time that
cannot be read (an LMS's own format, say) applies no rule, and the row says that too.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field

from grader.engine.course import UNITS
from grader.instructor.grading import scores

ALL = "*"
_UNIT_DATE = re.compile(r"^(?P<unit>\d\d[a-z]?)=(?P<date>.+)$")


class LateRuleError(ValueError):
    pass


@dataclass
class LateRule:
    due: dict = field(default_factory=dict)  # unit (or ALL) -> aware datetime
    penalty: float = 0.0  # percent of the unit's points per day late
    cutoff: float | None = None  # days late after which a notebook scores 0

    def __bool__(self) -> bool:
        return bool(self.due)

    def due_of(self, unit: str):
        return self.due.get(unit, self.due.get(ALL))

    def fingerprint(self) -> list:
        return [sorted((u, d.isoformat()) for u, d in self.due.items()), self.penalty, self.cutoff]


def _when(text: str, end_of_day: bool = False) -> dt.datetime:
    """A time as an aware datetime (local where it names no zone); ValueError when it cannot be read."""
    text = text.strip()
    when = dt.datetime.fromisoformat(text)
    if end_of_day and re.fullmatch(r"\d{4}-\d\d-\d\d", text):
        when = when.replace(hour=23, minute=59, second=59)
    return when if when.tzinfo else when.astimezone()


def parse(due: list[str] | None, penalty: float | None = None, cutoff: float | None = None) -> LateRule:
    """The rule the options give; LateRuleError says which option is wrong."""
    rule = LateRule(penalty=float(penalty or 0), cutoff=cutoff)
    if not due and (penalty is not None or cutoff is not None):
        raise LateRuleError("--late-penalty and --late-cutoff need --due DATE")
    if not 0 <= rule.penalty <= 100:
        raise LateRuleError(f"--late-penalty is a percent of the points per day, 0 to 100, not {penalty:g}")
    if cutoff is not None and cutoff < 0:
        raise LateRuleError(f"--late-cutoff is a number of days, 0 or more, not {cutoff:g}")
    for value in due or []:
        m = _UNIT_DATE.match(value.strip())
        unit, date = (m["unit"], m["date"]) if m else (ALL, value)
        if unit != ALL and unit not in UNITS:
            raise LateRuleError(f"--due {value}: {unit} is not a unit of the course")
        try:
            rule.due[unit] = _when(date, end_of_day=True)
        except ValueError:
            raise LateRuleError(f"--due {value}: give an ISO date such as 2026-03-01 or 2026-03-01T17:00") from None
    return rule


def days_late(submitted: str, due: dt.datetime) -> int | None:
    """Whole days (a part counting as one) after ``due``, 0 when on time, None when the time cannot be read."""
    try:
        when = _when(submitted)
    except ValueError:
        return None
    seconds = (when - due).total_seconds()
    return math.ceil(seconds / 86400) if seconds > 0 else 0


NO_TIME = (
    "no trustworthy submission time (a file's own time is its owner's to set): no late rule applied; give the "
    "LMS's times with --times, or grade what grader collect wrote (its collect-times.csv)"
)
CANVAS_LATE = "late by Canvas's own mark (_LATE; how late is not in the export): counted as 1 day"


def _days(row: dict, due) -> tuple[int | None, str]:
    """(whole days late or None when unknown, what the count rests on: '' for a time, else a note)."""
    text = str(row.get("submitted", "") or "")
    if text:
        days = days_late(text, due)
        return days, "" if days is not None else f"the submission time {text!r} cannot be read: no late rule applied"
    if row.get("late") in ("yes", "no"):  # a Canvas export: Canvas's own judgement against its due date
        return (1, CANVAS_LATE) if row["late"] == "yes" else (0, "")
    return None, NO_TIME


def untimed(rows: list[dict]) -> int:
    """How many rows a late rule could not be applied to (no time, or one that cannot be read)."""
    return sum(1 for r in rows if r.get("days late") == "unknown")


def apply(rows: list[dict], rule: LateRule | None) -> list[dict]:
    """Take the rule's points off each late row (in place) and say so in the row; rows on time are untouched."""
    if not rule:
        return rows
    for row in rows:
        due = rule.due_of(str(row.get("unit", "")))
        if due is None:
            continue
        days, basis = _days(row, due)
        if days is None:
            note = basis
            row["days late"], row["late rule"] = "unknown", note
        elif days == 0:
            continue
        else:
            points, maximum = float(row.get("points") or 0), float(row.get("max") or 0)
            if rule.cutoff is not None and days > rule.cutoff:
                kept, how = 0.0, f"past the cut-off of {scores.number(rule.cutoff)} day(s): 0 points"
            else:
                share = min(100.0, rule.penalty * days)
                kept = points * (1 - share / 100)
                how = f"-{scores.number(share)}% (-{scores.number(points - kept)} points)" if share else "no penalty"
            note = f"{days} day(s) late (due {due.strftime('%Y-%m-%d %H:%M')}): {how}" + (f"; {basis}" if basis else "")
            row.update(
                {
                    "days late": days,
                    "late rule": note,
                    "points": scores.number(kept),
                    "percent": scores.percent(kept, maximum),
                }
            )
        row["findings"] = "; ".join(p for p in (row.get("findings", ""), note) if p)
    return rows
