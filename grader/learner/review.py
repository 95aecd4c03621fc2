"""review(): fresh programs of the mechanisms a learner passed, when the spaced schedule says they are due.

``review()`` lists what is due now (:mod:`grader.engine.review`: a few generated self-tests of passed units, the ones
this learner got wrong first, then those not seen for longest), each with a program of its own drawn for this
review; ``review(question_id)`` shows one; ``review(question_id, answer)`` grades it against
torch on that program and records it (action ``review``), like any check. A review never takes a pass away: a
right one sends the question further along the schedule (1, 3, 7, 21 days), a wrong one brings it back tomorrow.
``python -m grader review`` prints the same list in a terminal.
"""

from __future__ import annotations

import time
from typing import Any

from grader.engine import identity, progress, variants
from grader.engine import review as schedule
from grader.engine.kinds import plain_copy
from grader.engine.question import Question
from grader.engine.results import Result
from grader.engine.store import current as store
from grader.engine.verdicts import GRADED
from grader.learner import api

_ASK = object()


def _program(q: Question, state: progress.QuestionState) -> variants.Variant:
    """The program of this learner's next review of ``q``: one they were not asked before (neither a program of
    the self-test they answered or had in force, nor an earlier review's), where the generator has one left."""
    assert q.program is not None, "review takes self-tests, and every self-test draws its programs"
    who = identity.current()
    numbers = {state.variant, *(n for n, _ in state.answers if isinstance(n, int))}
    seen = [variants.make(q.program, q.qid, who, n).program.source for n in sorted(numbers)]
    v = None
    for n in range(state.reviews + 1):
        v = variants.fresh(q.program, q.qid, who, n, "review", seen)
        seen.append(v.program.source)
    assert v is not None
    return v


def program_for(qid: str) -> variants.Variant:
    """The program ``review(qid)`` asks now (for tests and tools that answer it)."""
    q = _known(qid)
    return _program(q, progress.course_state(store())[q.unit].questions[q.qid])


def _known(qid: str) -> Question:
    """The question ``qid`` names, which the caller knows exists (the schedule's, a test's)."""
    q = api.registry.get(qid)
    if q is None:
        raise KeyError(f"there is no question {qid!r}")
    return q


def listing(states: dict[str, progress.UnitState], now: float) -> Result:
    """What is due for review now, each with its program (the words ``review()`` and ``python -m grader review``
    show)."""
    due = schedule.due(states, now)
    if not due:
        nxt = schedule.upcoming(states, now)
        more = (
            f" The next one: {nxt.qid}, {nxt.when(now)}."
            if nxt
            else " Review starts once a unit whose self-test draws its own programs is passed."
        )
        return Result("review", "review", "info", "Nothing is due for review." + more)
    rows = []
    for d in due:
        q = _known(d.qid)
        v = _program(q, states[d.unit].questions[d.qid])
        rows.append((f"{d.qid} ({d.when(now)})", f"{v.program.source.strip()}\n{' '.join(v.program.ask.split())}"))
    return Result(
        "review",
        "review",
        "info",
        f"{len(due)} due: a fresh program of a mechanism you passed. Answer each with review(question_id, answer); a "
        "review is recorded like a check and never takes a pass away.",
        rows=rows,
    )


@api._guarded("review")
def review(qid: Any = None, answer: Any = _ASK) -> Result:
    """What is due for review (no arguments), one question's review program (``qid``), or its answer graded."""
    states = progress.course_state(store())
    now = time.time()
    if qid is None:
        return api._finish(listing(states, now))
    q = api._question(qid, "review")
    if isinstance(q, Result):
        return api._finish(q)
    if q.role != "self-test" or q.program is None:
        return api._finish(
            Result("review", q.qid, "invalid", f"{q.qid} is not reviewed: review takes self-tests that draw programs")
        )
    state = states[q.unit].questions[q.qid]
    if not (states[q.unit].passed and state.passed):
        return api._finish(
            Result(
                "review",
                q.qid,
                "invalid",
                f"{q.qid} comes up for review once unit {q.unit} is passed: until then, check('{q.qid}', answer)",
            )
        )
    entry = next((d for d in schedule.schedule(states) if d.qid == q.qid), None)
    if entry is None or entry.at > now:
        when = entry.when(now) if entry is not None else "later"
        return api._finish(
            Result("review", q.qid, "info", f"{q.qid} is not due for review yet ({when}); nothing recorded.")
        )
    variant = _program(q, state)
    rows = api._program_rows(variant, q, f"your review program ({variant.name})")
    if answer is _ASK or answer is Ellipsis:
        return api._finish(
            Result("review", q.qid, "unanswered", f"answer it with review({q.qid!r}, answer)", rows=rows)
        )
    if api.registry.SEALED:
        return api._finish(Result("review", q.qid, "info", "reviews are not graded in a grading run; nothing recorded"))
    result = api._check_value(q, plain_copy(answer), variant)
    result.action = "review"
    if result.verdict not in GRADED:
        return api._finish(result)
    detail = variant.detail(identity.fingerprint(identity.current()))
    store().append(q.unit, q.qid, "review", result.verdict, q.kind.encode(result.got), detail=detail)
    after = progress.course_state(store())
    nxt = next((d for d in schedule.schedule(after) if d.qid == q.qid), None)
    later = f" It comes back for review {nxt.when(now)}." if nxt is not None else ""
    result.message = api.then(
        result.message, ("Recorded as a review." if result.passed else "Your pass stands.") + later
    )
    return api._finish(result)
