"""Grade a learner's function on generated cases, smallest first, against torch's live answer.

The verdict names how many cases passed and shows the smallest failing one:
its code, its graph as torch recorded it, the learner's result and torch's.
Each case runs under the kind's ``per_case_s`` and the whole check under its
``budget_s``, both scaled to this machine's pace (engine/pace.py, read once
per check); a case stopped for time (``Outcome.timed_out``) ends the check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from grader.engine import limits, pace, torch_state
from grader.engine.kinds import BadAnswer, Function, Unanswered, plain_copy, short
from grader.engine.results import Result

if TYPE_CHECKING:  # for the annotation only: the engine's modules load as they did
    from grader.engine.question import Question


@dataclass
class _Failure:
    """One case the learner's function failed: what went wrong (empty when it returned a wrong value), the
    value it returned, and the outcome of the call (what it printed)."""

    case: Any
    problem: str
    value: Any
    outcome: limits.Outcome


@dataclass
class _Tally:
    """The cases walked so far: how many ran, how many passed, and the failures in case order."""

    total: int
    checked: int = 0
    passed: int = 0
    failures: list[_Failure] = field(default_factory=list)

    def detail(self) -> dict[str, int]:
        return {"cases": self.total, "checked": self.checked, "passed": self.passed}


def _grader_failed(q: Question, case: Any, exc: Exception) -> Result:
    return Result(
        "check",
        q.qid,
        "error",
        f"the grader's own experiment failed on {case.label} ({type(exc).__name__}: {exc}); "
        "this is not your mistake, please report it",
    )


def run_exercise(q: Question, answer: Any, first_failure: bool = False) -> Result:
    """Check ``answer`` on every generated case; with ``first_failure``, stop at the first case it fails (the
    verdict is the same, the count of cases passed is not: a corpus of wrong answers is walked this way)."""
    kind = cast(Function, q.kind)  # every exercise's kind is a Function (question._declare checks it)
    rows = [("exercise", q.prompt)]
    try:
        fn = kind.read(answer)
    except Unanswered:
        return Result("check", q.qid, "unanswered", "write the function, then pass it here (not its result)", rows=rows)
    except BadAnswer as exc:
        return Result("check", q.qid, "invalid", str(exc), rows=rows)
    try:
        cases = list(kind.cases())
    except Exception as exc:
        return Result("check", q.qid, "error", f"the grader could not generate its cases ({exc}); please report it")
    scale = pace.scale()  # the machine's pace, read once: one check runs under one pair of limits
    tally = _Tally(len(cases))
    stopped = _walk_cases(q, kind, fn, cases, tally, scale, first_failure)
    if stopped is not None:
        return stopped
    if not tally.failures and tally.checked == tally.total:
        rows.append(("result", f"passed all {tally.total} generated cases"))
        return Result("check", q.qid, "correct", got=fn, rows=rows, explain=q.explain, detail=tally.detail())
    if not tally.failures:
        budget_s = kind.quiet_budget_s * scale
        return Result(
            "check",
            q.qid,
            "incorrect",
            f"only {tally.checked} of {tally.total} cases ran within {budget_s:.3g} s"
            + (f" (the limit on this machine, {scale:.3g}x the quiet one)" if scale > 1 else "")
            + ": make the function faster",
            got=fn,
            rows=rows,
            detail=tally.detail(),
        )
    return _first_failure_shown(q, kind, fn, rows, tally)


def _walk_cases(
    q: Question, kind: Function, fn: Any, cases: list[Any], tally: _Tally, scale: float, first_failure: bool
) -> Result | None:
    """Run the learner's function on the cases in order, within the check's budget, counting into ``tally``;
    a Result when the check ends early (the function is not written yet, or the grader's own run failed).

    torch's answer for a case is computed only after the learner's function has returned, and never kept
    while it runs: no frame the learner's function can walk up to holds one."""
    per_case_s, budget_s = kind.quiet_per_case_s * scale, kind.quiet_budget_s * scale
    started = time.monotonic()
    for index, case in enumerate(cases):
        if time.monotonic() - started > budget_s or (first_failure and tally.failures):
            break
        with torch_state.clean_room():  # the learner may be inside no_grad or inference_mode
            ns = case.fresh()
        outcome = limits.call(kind.call, fn, case, ns, seconds=per_case_s, scale=scale)
        tally.checked += 1
        if outcome.not_written and index == 0:
            return Result(
                "check",
                q.qid,
                "unanswered",
                "your function still raises NotImplementedError: replace that line with your code",
                rows=[("exercise", q.prompt)],
            )
        value, problem = _returned(kind, case, ns, outcome)
        if problem:
            tally.failures.append(_Failure(case, problem, None, outcome))
            if outcome.timed_out:
                break  # one endless loop is enough to report; do not spend the whole budget on it
            continue
        try:
            agrees = kind.returns.agrees(q.run(case), value)
        except Exception as exc:
            return _grader_failed(q, case, exc)
        if agrees:
            tally.passed += 1
        else:
            tally.failures.append(_Failure(case, "", value, outcome))
    return None


def _returned(kind: Function, case: Any, ns: Any, outcome: limits.Outcome) -> tuple[Any, str]:
    """The value the learner's function returned on ``case``, read as the kind reads an answer, and what went
    wrong instead (empty when nothing did)."""
    if outcome.not_written:
        return None, "it raised NotImplementedError"
    if outcome.problem:
        return None, outcome.problem
    try:
        return kind.returns.read(kind.convert(plain_copy(outcome.value), case, ns)), ""
    except Unanswered:
        return None, f"it returned {short(outcome.value)}; did you forget a return statement?"
    except BadAnswer as exc:
        return None, f"it returned {short(outcome.value)}: {exc}"
    except Exception as exc:
        return None, f"it returned {short(outcome.value)}, which could not be read ({type(exc).__name__})"


def _first_failure_shown(q: Question, kind: Function, fn: Any, rows: list[tuple[str, Any]], tally: _Tally) -> Result:
    """The verdict on a function that failed a case: the first failing case's code, its graph, what the
    function returned or did, and torch's answer."""
    failure = tally.failures[0]
    case = failure.case
    try:
        truth = q.run(case)
    except Exception as exc:
        return _grader_failed(q, case, exc)
    ran = "" if tally.checked == tally.total else f" ({tally.checked} run)"
    rows.append(("cases passed", f"{tally.passed} of {tally.total}{ran}"))
    rows.append(("smallest failing case", case.source))
    try:
        with torch_state.clean_room():
            rows.append((case.drawing_label or "its graph", case.drawing()))
    except Exception:
        pass
    if failure.problem:
        rows.append(("your function", failure.problem))
    else:
        rows.append(("your function returned", kind.returns.show(failure.value)))
    rows.append(("torch says", kind.returns.show(truth)))
    if failure.outcome.printed.strip():
        rows.append(("it printed", failure.outcome.printed.strip()[:300]))
    note = kind.returns.verdict_note(truth, failure.value) if failure.value is not None else ""
    return Result("check", q.qid, "incorrect", note, got=fn, rows=rows, detail=tally.detail())
