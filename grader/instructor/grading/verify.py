"""Recompute every verdict of one submission from its recorded data, with live torch in the grading process.

The learner's kernel wrote the progress store, so nothing in it is a verdict:
each event is read as plain data (the answer as a JSON literal, its time and
order), every answer is re-read by its kind and compared with torch's live
answer computed here, where no submitted code has run; exercises are judged
from the per-case results that :mod:`grader.instructor.grading.learner_function` sent back
(values only: the truth is computed here). "Marked passed" then comes from
:meth:`grader.engine.progress.UnitState.missing` on the recomputed events, never from
a ``mark`` event. Anything the kernel recorded differently is a finding.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from grader.engine import progress
from grader.engine.kinds import BadAnswer, Function, Unanswered
from grader.engine.question import of_unit
from grader.engine.store import Event

LOCK = threading.Lock()  # torch's global state: one recomputation at a time
_TRUTHS: dict[Any, Any] = {}


def truth_of(q, *case, key=None):
    """torch's live answer for ``q`` (on ``case``), computed once per grading run."""
    k = (q.qid, key)
    if k not in _TRUTHS:
        with LOCK:
            _TRUTHS[k] = q.run(*case)
    return _TRUTHS[k]


@dataclass
class ExerciseVerdict:
    verdict: str  # correct, incorrect, unanswered, invalid, not recomputed
    note: str = ""
    case: int = -1  # the smallest failing case's index, where one failed
    got: Any = None  # what the learner's function returned on it (read by its kind), if it returned


@dataclass
class Recomputed:
    unit: str
    state: progress.UnitState
    missing: list
    passed: bool
    flags: dict = field(default_factory=dict)  # qid -> verdict override ("predicted after reveal")
    findings: list = field(default_factory=list)  # sentences for the gradebook
    attempts: dict = field(default_factory=dict)  # qid -> checks until correct (or all, if never)
    hints: dict = field(default_factory=dict)  # qid -> hints shown
    answers: dict = field(default_factory=dict)  # qid -> the learner's answer (JSON form): prediction or last check
    exercises: dict = field(default_factory=dict)  # qid -> ExerciseVerdict


def judge_exercise(q, lines: list) -> ExerciseVerdict:
    """Compare what the learner's function returned (serialised, per case) with torch's answer, case by case."""
    kind: Function = q.kind
    cases = kind.cases()
    seen: dict[int, dict] = {}
    for line in lines:
        if not isinstance(line, dict) or not isinstance(line.get("i"), int) or not 0 <= line["i"] < len(cases):
            return ExerciseVerdict("incorrect", "the exercise runner sent back something that is not a case result")
        if line["i"] in seen:
            return ExerciseVerdict("incorrect", "the exercise runner sent back a case twice")
        seen[line["i"]] = line
    if not seen:
        return ExerciseVerdict("incorrect", "no case ran")
    first = seen.get(0)
    if first is not None and first.get("not_written"):
        return ExerciseVerdict("unanswered")
    passed = 0
    for i in range(len(cases)):
        line = seen.get(i)
        if line is None:
            return ExerciseVerdict("incorrect", f"{passed} of {len(cases)} cases passed; case {i + 1} did not run")
        if line.get("problem") or line.get("not_written"):
            words = str(line.get("problem") or "it raised NotImplementedError")[:200]
            return ExerciseVerdict("incorrect", f"{passed} of {len(cases)} cases passed; case {i + 1}: {words}", case=i)
        try:
            value = kind.returns.read(line.get("value"))
        except (BadAnswer, Unanswered, Exception):
            return ExerciseVerdict(
                "incorrect", f"{passed} of {len(cases)} cases passed; case {i + 1}'s result could not be read", case=i
            )
        truth = truth_of(q, cases[i], key=i)
        if not kind.returns.agrees(truth, value):
            return ExerciseVerdict(
                "incorrect",
                f"{passed} of {len(cases)} cases passed; case {i + 1} differs from torch",
                case=i,
                got=value,
            )
        passed += 1
    return ExerciseVerdict("correct", f"passed all {len(cases)} cases")


def _read(q, answer):
    try:
        return q.kind.read(answer), ""
    except Unanswered:
        return None, "unanswered"
    except BadAnswer:
        return None, "invalid"
    except Exception:
        return None, "invalid"


def recompute(unit: str, events: list[Event], exercises: dict[str, ExerciseVerdict]) -> Recomputed:
    """The unit's verdicts from the recorded data alone (see the module's text)."""
    questions = {q.qid: q for q in of_unit(unit)}
    findings: list[str] = []
    flags: dict[str, str] = {}
    differs: set[str] = set()
    attempts: dict[str, int] = {}
    solved: set[str] = set()
    hints: dict[str, int] = {}
    answers: dict[str, Any] = {}
    ever_revealed: set[str] = set()
    prediction: dict[str, Any] = {}  # the prediction in force, per question
    revealed: set[str] = set()  # revealed since the last reset
    rebuilt: list[Event] = []
    kernel_marked = False
    exercise_seen: set[str] = set()
    last_time = None
    sessions = set()

    def emit(e: Event, verdict: str, answer=None):
        rebuilt.append(Event(e.id, e.time, unit, e.qid, e.action, answer, verdict, e.torch, e.session, {}))

    for e in events:
        if e.unit != unit:
            continue
        sessions.add(e.session)
        if last_time is not None and e.time < last_time:
            findings.append("events out of order: a later event carries an earlier time")
        last_time = e.time if last_time is None else max(last_time, e.time)
        if e.action == "mark":
            kernel_marked = kernel_marked or e.verdict == "passed"
            continue
        if e.action == "reset":
            if e.qid is None:
                prediction.clear()
                revealed.clear()
            else:
                prediction.pop(e.qid, None)
                revealed.discard(e.qid)
            emit(e, "recorded")
            continue
        q = questions.get(e.qid)
        if q is None:
            if e.qid is not None:
                findings.append(f"an event names {str(e.qid)[:40]!r}, not a question of this unit")
            continue
        if e.action == "hint":
            hints[q.qid] = hints.get(q.qid, 0) + 1
            emit(e, "recorded", e.answer)
        elif e.action == "predict" and q.role == "predict":
            if e.verdict != "recorded":
                continue
            if q.qid in ever_revealed:
                flags[q.qid] = "predicted after reveal"
                continue
            if q.qid in revealed:
                continue
            value, bad = _read(q, e.answer)
            if bad:
                differs.add(q.qid)
                continue
            prediction[q.qid] = answers[q.qid] = e.answer
            emit(e, "recorded", e.answer)
        elif e.action == "reveal" and q.role == "predict":
            ever_revealed.add(q.qid)
            if q.qid in prediction:
                value, bad = _read(q, prediction[q.qid])
                verdict = "incorrect" if bad else ("correct" if q.kind.agrees(truth_of(q), value) else "incorrect")
            else:
                verdict = "revealed"
            if q.qid not in revealed and verdict != e.verdict and e.verdict != "recorded":  # recorded: sealed run
                differs.add(q.qid)
            revealed.add(q.qid)
            emit(e, verdict, prediction.get(q.qid))
        elif e.action == "check" and q.role == "self-test":
            answers[q.qid] = e.answer
            if e.answer is None:
                verdict = e.verdict if e.verdict in ("unanswered", "invalid", "error") else "unanswered"
            else:
                value, bad = _read(q, e.answer)
                verdict = bad or ("correct" if q.kind.agrees(truth_of(q), value) else "incorrect")
            if verdict != e.verdict and e.verdict != "recorded":  # recorded: a sealed run gives no verdict
                differs.add(q.qid)
            if q.qid not in solved:
                attempts[q.qid] = attempts.get(q.qid, 0) + 1
                if verdict == "correct":
                    solved.add(q.qid)
            emit(e, verdict, e.answer)
        elif e.action == "check" and q.role == "exercise":
            mine = exercises.get(q.qid, ExerciseVerdict("not recomputed"))
            if (
                mine.verdict != e.verdict
                and e.verdict in ("correct", "incorrect")
                and mine.verdict in ("correct", "incorrect")
            ):
                differs.add(q.qid)
            if q.qid not in solved:
                attempts[q.qid] = attempts.get(q.qid, 0) + 1
                if mine.verdict == "correct":
                    solved.add(q.qid)
            exercise_seen.add(q.qid)
            emit(e, mine.verdict)
        elif e.action == "answer-key":
            findings.append(f"a cell called the experiment of {q.qid} (its answer key), sealed while grading")
        else:
            findings.append(f"an event {str(e.action)[:20]!r} that {q.qid} does not take")
    for qid, mine in exercises.items():
        if qid in questions and qid not in exercise_seen and mine.verdict == "correct":
            # the check cell never recorded (the kernel died or was stopped first): the function still counts
            rebuilt.append(Event(0, 0.0, unit, qid, "check", None, mine.verdict, "", "", {}))
    state = progress.unit_state(unit, rebuilt)
    missing = state.missing()
    if differs:
        findings.append("verdict recomputed: differs from the kernel's record for " + ", ".join(sorted(differs)))
    if kernel_marked and missing:
        findings.append("the kernel's record says marked passed; the recomputed verdicts do not")
    if len(sessions) > 1:
        findings.append(f"events from {len(sessions)} kernel sessions (one run has one)")
    for qid, q in questions.items():
        st = state.questions[qid]
        if q.role == "predict" and qid not in flags and st.revealed and not st.predicted_before_reveal:
            flags[qid] = "revealed without prediction"
    if any(f == "predicted after reveal" for f in flags.values()):
        findings.append(
            "predicted after reveal: " + ", ".join(q for q, f in flags.items() if f == "predicted after reveal")
        )
    return Recomputed(
        unit,
        state,
        missing,
        passed=not missing,
        flags=flags,
        findings=list(dict.fromkeys(findings)),
        attempts=attempts,
        hints=hints,
        answers=answers,
        exercises=dict(exercises),
    )


def decode_lines(raw: bytes, limit: int = 100_000) -> tuple[dict, list[str]]:
    """The exercise runner's report: one JSON object per line; anything else is a finding."""
    out: dict[str, list] = {}
    problems = []
    for line in raw.splitlines()[:limit]:
        try:
            item = json.loads(line)
        except ValueError:
            problems.append("the exercise runner's report has a line that is not JSON")
            continue
        if not isinstance(item, dict) or not isinstance(item.get("qid"), str):
            problems.append("the exercise runner's report has a line without a question")
            continue
        out.setdefault(item["qid"], []).append(item)
    return out, problems
