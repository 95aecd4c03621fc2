"""Status, derived from the event log: what each question and unit has reached."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import question as registry
from .course import UNITS
from .store import Event, Store


@dataclass
class QuestionState:
    qid: str
    role: str
    prediction: Any = None          # the JSON form of the locked-in prediction, if any
    predicted: bool = False
    revealed: bool = False
    predicted_before_reveal: bool = False
    reveal_verdict: str = ""        # 'correct', 'incorrect' or 'revealed' (without a prediction)
    passed: bool = False            # a check passed (self-test and exercises)
    last_check: str = ""            # the latest check verdict
    hints: int = 0                  # how many hints were shown

    @property
    def done(self) -> bool:
        if self.role == "predict":
            return self.revealed and self.predicted_before_reveal
        return self.passed

    def todo(self) -> str:
        """What is still missing, in the learner's words; '' when done."""
        if self.done:
            return ""
        if self.role == "predict":
            if self.revealed:
                return (f"{self.qid} was revealed before a prediction was locked in: "
                        f"run reset('{self.qid}'), then predict and reveal it again")
            if self.predicted:
                return f"{self.qid}: prediction locked in, not revealed yet: run reveal('{self.qid}')"
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
    state = UnitState(unit)

    def fresh():
        state.questions = {q.qid: QuestionState(q.qid, q.role) for q in registry.of_unit(unit)}
    fresh()
    for e in events:
        if e.unit != unit:
            continue
        if e.action == "reset":
            if e.qid is None:
                fresh()
                state.passed = state.started = False
            elif e.qid in state.questions:
                q = state.questions[e.qid]
                state.questions[e.qid] = QuestionState(q.qid, q.role)
            continue
        state.started = True
        if e.action == "mark":
            state.passed = state.passed or e.verdict == "passed"
            continue
        q = state.questions.get(e.qid)
        if q is None:
            continue
        if e.action == "predict" and e.verdict == "recorded" and not q.revealed:
            q.prediction, q.predicted = e.answer, True
        elif e.action == "reveal":
            if not q.revealed:
                q.revealed = True
                q.reveal_verdict = e.verdict
                q.predicted_before_reveal = e.verdict in ("correct", "incorrect")
        elif e.action == "hint":
            q.hints = max(q.hints, int(e.answer or 0))
        elif e.action == "check":
            q.last_check = e.verdict
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
