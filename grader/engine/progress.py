"""Status, derived from the event log: what each question and unit has reached."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.engine import question as registry
from grader.engine.course import UNITS
from grader.engine.store import Event, Store


@dataclass
class QuestionState:
    qid: str
    role: str
    prediction: Any = None  # the JSON form of the locked-in prediction, if any
    predicted: bool = False
    revealed: bool = False
    predicted_before_reveal: bool = False
    predicted_after_reveal: bool = False  # predicted once torch's answer had been shown (after a reset)
    reveal_verdict: str = ""  # 'correct', 'incorrect' or 'revealed' (without a prediction)
    passed: bool = False  # a check passed (self-test and exercises)
    last_check: str = ""  # the latest check verdict
    hints: int = 0  # how many hints were shown (kept across resets)
    attempts: int = 0  # graded checks, up to and including the first pass (kept across resets)

    @property
    def attempted(self) -> bool:
        """A predict-then-run question counts once it was predicted or revealed."""
        return self.predicted or self.revealed

    @property
    def done(self) -> bool:
        if self.role == "predict":
            return self.attempted
        return self.passed

    @property
    def record(self) -> str:
        """The honest record of this question, in words (panel, status and gradebook say the same)."""
        if self.role == "predict":
            if self.revealed and not self.predicted_before_reveal:
                return "revealed without prediction"
            if self.predicted_after_reveal:
                return "predicted after reveal" + (f", {self.reveal_verdict}" if self.revealed else ", not revealed")
            if self.revealed:
                return f"predicted, {self.reveal_verdict}"
            return "predicted, not revealed yet" if self.predicted else "not attempted"
        if self.passed:
            text = f"correct on attempt {self.attempts}" if self.attempts > 1 else "correct"
        elif self.last_check in ("", "unanswered"):
            text = "not answered"
        else:
            text = f"{self.last_check} ({self.attempts} attempt{'s' if self.attempts != 1 else ''})"
        return text + (f", {self.hints} hint{'s' if self.hints != 1 else ''}" if self.hints else "")

    def todo(self) -> str:
        """What is still missing, in the learner's words; '' when done."""
        if self.done:
            return ""
        if self.role == "predict":
            return f"{self.qid}: predict, then reveal"
        if self.last_check in ("", "unanswered"):
            return f"{self.qid}: not answered yet ({self.role})"
        return f"{self.qid}: not passed yet, the last answer was {self.last_check} ({self.role})"


@dataclass
class UnitState:
    unit: str
    questions: dict[str, QuestionState] = field(default_factory=dict)
    passed: bool = False
    started: bool = False

    @property
    def status(self) -> str:
        if self.passed:
            return "passed"
        return "in progress" if self.started else "not started"

    def missing(self) -> list[str]:
        return [q.todo() for q in self.questions.values() if not q.done]

    def counts(self) -> dict[str, int]:
        qs = list(self.questions.values())
        return {
            "questions": len(qs),
            "done": sum(q.done for q in qs),
            "predicted": sum(q.predicted_before_reveal for q in qs if q.role == "predict"),
            "revealed": sum(q.revealed for q in qs if q.role == "predict"),
            "predict_total": sum(q.role == "predict" for q in qs),
            "checked": sum(q.passed for q in qs if q.role != "predict"),
            "check_total": sum(q.role != "predict" for q in qs),
        }


def unit_state(unit: str, events: list[Event]) -> UnitState:
    """Replay the log. Resets forget answers, never history: a reveal, the hints shown and the
    attempts made stay on the record, so a reset cannot launder a reveal into a prediction."""
    state = UnitState(unit)
    shown: set[str] = set()  # questions whose answer torch has shown, ever
    hints: dict[str, int] = {}
    attempts: dict[str, int] = {}

    def blank(q: registry.Question | QuestionState) -> QuestionState:
        return QuestionState(q.qid, q.role, hints=hints.get(q.qid, 0), attempts=attempts.get(q.qid, 0))

    def fresh() -> None:
        state.questions = {q.qid: blank(q) for q in registry.of_unit(unit)}

    fresh()
    for e in events:
        if e.unit != unit:
            continue
        if e.action == "reset":
            if e.qid is None:
                fresh()
                state.passed = state.started = False
            elif e.qid in state.questions:
                state.questions[e.qid] = blank(state.questions[e.qid])
            continue
        if e.action == "mark":
            if e.verdict == "passed":
                state.passed = state.started = True
            continue
        if e.qid is None:  # a unit-wide event other than reset and mark: no question to update
            continue
        q = state.questions.get(e.qid)
        if q is None:
            continue
        state.started = True
        if e.action == "predict" and e.verdict == "recorded" and not q.revealed:
            q.prediction, q.predicted = e.answer, True
            q.predicted_after_reveal = q.predicted_after_reveal or e.qid in shown
        elif e.action == "reveal":
            shown.add(e.qid)
            if not q.revealed:
                q.revealed = True
                q.reveal_verdict = e.verdict
                q.predicted_before_reveal = e.verdict in ("correct", "incorrect")
        elif e.action == "hint":
            hints[e.qid] = q.hints = max(q.hints, int(e.answer or 0))
        elif e.action == "check":
            q.last_check = e.verdict
            if e.verdict in ("correct", "incorrect") and not q.passed:
                attempts[e.qid] = q.attempts = q.attempts + 1
            q.passed = q.passed or e.verdict == "correct"
    return state


def course_state(store: Store) -> dict[str, UnitState]:
    events = store.events()
    return {u: unit_state(u, events) for u in UNITS}


def prerequisites_note(uid: str, states: dict[str, UnitState]) -> str:
    waiting = [n for n in UNITS[uid].needs if not states[n].passed]
    if not waiting:
        return ""
    return "needs " + ", ".join(waiting) + " passed first"
