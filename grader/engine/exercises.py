"""Grade a learner's function on generated cases, smallest first, against torch's live answer.

The verdict names how many cases passed and shows the smallest failing one:
its code, its graph as torch recorded it, the learner's result and torch's.
Each case runs under the kind's ``per_case_s`` and the whole check under its
``budget_s``, both scaled to this machine's pace (engine/pace.py, read once
per check); a case stopped for time (``Outcome.timed_out``) ends the check.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from grader.engine import limits, pace, torch_state
from grader.engine.kinds import BadAnswer, Function, Unanswered, plain_copy, short
from grader.engine.results import Result

if TYPE_CHECKING:  # for the annotation only: the engine's modules load as they did
    from grader.engine.question import Question


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


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
    per_case_s, budget_s = kind.quiet_per_case_s * scale, kind.quiet_budget_s * scale
    started = time.monotonic()
    passed, checked = 0, 0
    failures: list[tuple[Any, str, Any, Any]] = []
    # torch's answer for a case is computed only after the learner's function has returned, and never kept
    # while it runs: no frame the learner's function can walk up to holds one.
    for index, case in enumerate(cases):
        if time.monotonic() - started > budget_s or (first_failure and failures):
            break
        with torch_state.clean_room():  # the learner may be inside no_grad or inference_mode
            ns = case.fresh()
        outcome = limits.call(kind.call, fn, case, ns, seconds=per_case_s, scale=scale)
        checked += 1
        if outcome.not_written:
            if index == 0:
                return Result(
                    "check",
                    q.qid,
                    "unanswered",
                    "your function still raises NotImplementedError: replace that line with your code",
                    rows=rows,
                )
            failures.append((case, "it raised NotImplementedError", None, outcome))
            continue
        if outcome.problem:
            failures.append((case, outcome.problem, None, outcome))
            if outcome.timed_out:
                break  # one endless loop is enough to report; do not spend the whole budget on it
            continue
        try:
            value = kind.returns.read(kind.convert(plain_copy(outcome.value), case, ns))
        except Unanswered:
            failures.append(
                (case, f"it returned {short(outcome.value)}; did you forget a return statement?", None, outcome)
            )
            continue
        except BadAnswer as exc:
            failures.append((case, f"it returned {short(outcome.value)}: {exc}", None, outcome))
            continue
        except Exception as exc:
            failures.append(
                (
                    case,
                    f"it returned {short(outcome.value)}, which could not be read ({type(exc).__name__})",
                    None,
                    outcome,
                )
            )
            continue
        try:
            agrees = kind.returns.agrees(q.run(case), value)
        except Exception as exc:
            return Result(
                "check",
                q.qid,
                "error",
                f"the grader's own experiment failed on {case.label} ({type(exc).__name__}: {exc}); "
                "this is not your mistake, please report it",
            )
        if agrees:
            passed += 1
        else:
            failures.append((case, "", value, outcome))
    total = len(cases)
    detail = {"cases": total, "checked": checked, "passed": passed}
    if not failures and checked == total:
        rows.append(("result", f"passed all {total} generated cases"))
        return Result("check", q.qid, "correct", got=fn, rows=rows, explain=q.explain, detail=detail)
    if not failures:
        return Result(
            "check",
            q.qid,
            "incorrect",
            f"only {checked} of {total} cases ran within {budget_s:.3g} s"
            + (f" (the limit on this machine, {scale:.3g}x the quiet one)" if scale > 1 else "")
            + ": make the function faster",
            got=fn,
            rows=rows,
            detail=detail,
        )
    case, problem, value, outcome = failures[0]
    try:
        truth = q.run(case)
    except Exception as exc:
        return Result(
            "check",
            q.qid,
            "error",
            f"the grader's own experiment failed on {case.label} ({type(exc).__name__}: {exc}); "
            "this is not your mistake, please report it",
        )
    rows.append(("cases passed", f"{passed} of {total}" + ("" if checked == total else f" ({checked} run)")))
    rows.append(("smallest failing case", case.source))
    try:
        with torch_state.clean_room():
            rows.append((case.drawing_label or "its graph", case.drawing()))
    except Exception:
        pass
    if problem:
        rows.append(("your function", problem))
    else:
        rows.append(("your function returned", kind.returns.show(value)))
    rows.append(("torch says", kind.returns.show(truth)))
    if outcome.printed.strip():
        rows.append(("it printed", outcome.printed.strip()[:300]))
    note = kind.returns.verdict_note(truth, value) if value is not None else ""
    return Result("check", q.qid, "incorrect", note, got=fn, rows=rows, detail=detail)
