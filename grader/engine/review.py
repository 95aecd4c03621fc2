"""Review that comes back: which passed self-tests are due again, from the record's own timestamps.

Only generated self-tests (:mod:`grader.engine.variants`) of units already passed are reviewed: each review asks a
fresh program of the same mechanism. A question's place in the schedule (``QuestionState.level``) is set when it
is passed (one got wrong on the way starts a step earlier) and moves one step on with each right review, back
to the start with a wrong one; it is due :data:`grader.engine.progress.INTERVALS_DAYS` days (1, 3, 7, 21) after it
was last answered (``seen``). A review is recorded like a check (action ``review``) and never takes a pass away.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from grader.engine import question as registry
from grader.engine.progress import INTERVALS_DAYS, UnitState

DAY = 86_400.0
HOW_MANY = 3  # questions a review offers at a time


@dataclass(frozen=True)
class Due:
    qid: str
    unit: str
    at: float  # when it is (or was) due, in seconds since the epoch
    wrong: int  # wrong answers it has had, checks and reviews
    reviews: int  # graded reviews so far: the number of the next review's program

    def when(self, now: float) -> str:
        """'due now', 'due 3 days ago', 'in 2 days', 'in 5 hours': relative, so a saved output does not date."""
        days = (self.at - now) / DAY
        if days <= 0:
            late = int(-days)
            return "due now" if late < 1 else f"due since {late} day{'s' if late != 1 else ''}"
        if days < 1:
            hours = max(1, round(days * 24))
            return f"in {hours} hour{'s' if hours != 1 else ''}"
        whole = round(days)
        return f"in {whole} day{'s' if whole != 1 else ''}"


def schedule(states: dict[str, UnitState]) -> list[Due]:
    """Every reviewable question (a generated self-test, passed, in a unit passed) with when it is due."""
    out = []
    for uid, unit in states.items():
        if not unit.passed:
            continue
        for qid, s in unit.questions.items():
            q = registry.get(qid)
            if q is None or q.program is None or not s.passed or s.seen <= 0:
                continue
            at = s.seen + INTERVALS_DAYS[min(s.level, len(INTERVALS_DAYS) - 1)] * DAY
            out.append(Due(qid, uid, at, s.wrong, s.reviews))
    return out


def due(states: dict[str, UnitState], now: float | None = None, limit: int = HOW_MANY) -> list[Due]:
    """The questions due now, those this learner got wrong first, then the longest overdue; at most ``limit``."""
    now = time.time() if now is None else now
    ready = [d for d in schedule(states) if d.at <= now]
    ready.sort(key=lambda d: (-min(d.wrong, 1), d.at, d.qid))
    return ready[:limit]


def upcoming(states: dict[str, UnitState], now: float | None = None) -> Due | None:
    """The next question to come due, when none is due now."""
    now = time.time() if now is None else now
    later = sorted((d for d in schedule(states) if d.at > now), key=lambda d: (d.at, d.qid))
    return later[0] if later else None
