"""Item analysis: how hard each question was for the class, and how well it separates strong learners from weak.

From the gradebook's rows alone (the same words the CSV holds), per question:

* **difficulty** ``p``: the share of the learners graded on it who got it right at the first try (a prediction
  "predicted, correct"; a self-test or exercise "correct" on attempt 1). A self-test passed only after a wrong
  answer is passed (mastery) but scores 0 here: a question anyone passes by retrying would otherwise look easy;
* **discrimination**, two ways: the corrected point-biserial correlation ``r`` between the question's score and
  each learner's score on every other question graded (their rest score), and the upper-lower index ``D``: the
  share right in the top 27 % of learners by rest score minus the share right in the bottom 27 %.

A question almost everyone or almost no one gets right says little; one whose ``r`` or ``D`` is near zero or
negative does not separate learners who know the course from those who do not: a generator whose programs differ
in difficulty (one learner's variant is easy, another's hard), or a question that tests luck. The report lists
these as flagged.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from grader.engine.course import UNITS
from grader.engine.question import of_unit
from grader.engine.verdicts import Role

GROUP = 0.27  # the share of learners in each of the upper and lower groups
FEW = 5  # fewer learners than this: no flag, the numbers are shown but say little
EASY, HARD = 0.95, 0.2
WEAK = 0.15  # r or D below this: the question does not separate strong from weak learners


def first_try(record: str, role: Role) -> int | None:
    """1 right at the first try, 0 otherwise; None where the copy did not hold the question."""
    if not record or record == "not in this copy":
        return None
    if role == "predict":
        return int(record.startswith("predicted, correct"))
    return int(record.startswith("correct") and not record.startswith("correct on attempt"))


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def analyse(rows: list[dict]) -> list[dict]:
    """Per question of every unit graded: learners, difficulty, r, D and a flag (the words the report shows)."""
    scores: dict[str, dict[str, int]] = defaultdict(dict)  # learner -> qid -> 0/1
    roles = {}
    for r in rows:
        unit = r.get("unit")
        if unit not in UNITS:
            continue
        for q in of_unit(unit):
            roles[q.qid] = (unit, q.role)
            x = first_try(str(r.get(q.qid, "")), q.role)
            if x is not None:
                scores[r["learner"]][q.qid] = max(x, scores[r["learner"]].get(q.qid, 0))
    totals = {learner: sum(items.values()) for learner, items in scores.items()}
    out = []
    for qid, (unit, role) in roles.items():
        taken = [(learner, items[qid]) for learner, items in scores.items() if qid in items]
        n = len(taken)
        if not n:
            continue
        xs = [float(x) for _, x in taken]
        rest = [float(totals[learner] - x) for learner, x in taken]
        p = statistics.fmean(xs)
        r_pb = _pearson(xs, rest)
        ranked = sorted(taken, key=lambda lx: totals[lx[0]] - lx[1])
        k = max(1, round(GROUP * n))
        d = statistics.fmean(x for _, x in ranked[-k:]) - statistics.fmean(x for _, x in ranked[:k]) if n >= 2 else None
        out.append(
            {
                "qid": qid,
                "unit": unit,
                "role": role,
                "learners": n,
                "difficulty": round(p, 2),
                "r": round(r_pb, 2) if r_pb is not None else None,
                "D": round(d, 2) if d is not None else None,
                "flag": flag(n, p, r_pb, d),
            }
        )
    return out


def flag(n: int, p: float, r: float | None, d: float | None) -> str:
    """Why a question deserves a look, in words; '' when it does not (or too few learners to say)."""
    if n < FEW:
        return ""
    if p >= EASY:
        return "almost everyone right at the first try: it separates no one"
    if p <= HARD:
        return "almost no one right at the first try: too hard, or its programs ask more than the unit taught"
    if (r is not None and r < WEAK) or (d is not None and d < WEAK):
        return "does not separate strong learners from weak: programs of unequal difficulty, or luck"
    return ""
