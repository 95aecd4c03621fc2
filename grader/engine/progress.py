"""Status, derived from the event log: what each question and unit has reached.

:func:`replay` is the one reading of the log. The learner's panel, ``status`` and the class view call it
through :func:`unit_state` with a judge that trusts the recorded verdicts; the gradebook calls it with a
judge that recomputes each verdict with live torch. Both read resets, predictions after a reveal, hints
and attempts the same way.

A generated self-test (:mod:`grader.engine.variants`) is passed by ``mastery`` right answers in a row (1 unless the
instructor asks for more), each on a fresh program: every graded answer before the pass moves the number of the
program in force on (``variant``), a wrong one also ends the row. An answer recorded before the question had
variants (no program number in its event) is read as an answer to the canonical program, and keeps its verdict.
Reviews (:mod:`grader.engine.review`) are recorded like checks under the action ``review`` and never take a pass
away: they only move the question's place in the spaced schedule (``level``, ``seen``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from grader.engine import question as registry
from grader.engine import variants
from grader.engine.course import UNITS
from grader.engine.store import Event, Store
from grader.engine.verdicts import GRADED, Action, Role, Verdict

INTERVALS_DAYS = (1, 3, 7, 21)  # the spaced schedule of reviews: days after the last time a question was seen

# Where a predict-then-run question stands; its record (the words) and the panel's counts both come from it.
Standing = Literal["not attempted", "predicted", "predicted, revealed", "predicted after reveal", "revealed only"]


@dataclass
class QuestionState:
    qid: str
    role: Role
    prediction: Any = None  # the JSON form of the locked-in prediction, if any
    predicted: bool = False
    revealed: bool = False
    predicted_before_reveal: bool = False
    predicted_after_reveal: bool = False  # predicted once torch's answer had been shown (after a reset)
    reveal_verdict: Verdict | Literal[""] = ""  # 'correct', 'incorrect' or 'revealed' (without a prediction)
    passed: bool = False  # a check passed (self-test and exercises)
    last_check: Verdict | Literal[""] = ""  # the latest check verdict
    hints: int = 0  # how many hints were shown (kept across resets)
    attempts: int = 0  # graded checks, up to and including the first pass (kept across resets)
    peeked: bool = False  # a prediction was locked in after torch's answer had been shown, ever (kept across resets)
    generated: bool = False  # a self-test whose program is generated per learner and attempt
    variant: int = 0  # the number of the program in force (kept across resets): it moves on after each graded answer
    streak: int = 0  # right answers in a row, each on its own program, since the last wrong one
    answered: int | None = None  # the number of the program the passing (else the latest graded) answer was given on
    answers: list = field(default_factory=list)  # [program number or None, answer] of every graded check (kept)
    seen: float = 0.0  # when it was last answered and graded (check or review): the review schedule's clock
    wrong: int = 0  # wrong graded answers, checks and reviews, ever
    reviews: int = 0  # graded reviews (the number of the next review's program)
    review_verdict: Verdict | Literal[""] = ""  # the latest review's verdict
    level: int = 0  # the place in the review schedule (INTERVALS_DAYS), set when it is passed

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
    def standing(self) -> Standing:
        """Where a predict-then-run question stands (the record's words and the panel's counts read this)."""
        if self.revealed and not self.predicted_before_reveal:
            return "revealed only"
        if self.predicted_after_reveal:
            return "predicted after reveal"
        if self.revealed:
            return "predicted, revealed"
        return "predicted" if self.predicted else "not attempted"

    @property
    def record(self) -> str:
        """The honest record of this question, in words (panel, status and gradebook say the same)."""
        return self.words()

    def words(self, variant: bool = True) -> str:
        """The record; without the program it was answered on where ``variant`` is False (a class's counts)."""
        if self.role == "predict":
            standing = self.standing
            if standing == "revealed only":
                return "revealed without prediction"
            if standing == "predicted after reveal":
                return "predicted after reveal" + (f", {self.reveal_verdict}" if self.revealed else ", not revealed")
            if standing == "predicted, revealed":
                return f"predicted, {self.reveal_verdict}"
            return "predicted, not revealed yet" if standing == "predicted" else "not attempted"
        on = f"variant {self.answered + 1}" if variant and self.generated and self.answered is not None else ""
        if self.passed:
            text = f"correct on attempt {self.attempts}" if self.attempts > 1 else "correct"
            text += f" ({on})" if on else ""
        elif self.last_check in ("", "unanswered"):
            text = "not answered"
        else:
            text = f"{self.last_check} ({self.attempts} attempt{'s' if self.attempts != 1 else ''}"
            text += f"; last on {on})" if on else ")"
        if self.reviews:
            text += f", reviewed {self.reviews}x (last {self.review_verdict})"
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
            "predicted": sum(q.standing == "predicted, revealed" for q in qs if q.role == "predict"),
            "revealed": sum(q.revealed for q in qs if q.role == "predict"),
            "predict_total": sum(q.role == "predict" for q in qs),
            "checked": sum(q.passed for q in qs if q.role != "predict"),
            "check_total": sum(q.role != "predict" for q in qs),
        }


class Judge:
    """How a replay decides each event: this one trusts the verdicts the learner's own kernel recorded
    (the learner's panel, ``status``, the class view). The gradebook's judge recomputes each one with
    live torch (:mod:`grader.instructor.grading.verify`). The replay calls ``prediction`` for each
    prediction that could be locked in, ``reveal`` for each reveal that counts (the first since a
    reset), ``check`` for every check, ``mark`` for every mark and ``stray`` for an event no question
    of the unit takes."""

    def prediction(self, q: registry.Question, e: Event) -> bool:
        """Whether ``e`` locks a prediction in."""
        return e.verdict == "recorded"

    def reveal(self, q: registry.Question, e: Event, state: QuestionState) -> Verdict:
        """The reveal's verdict, given the prediction in force (``state.prediction``, if ``state.predicted``)."""
        return e.verdict

    def check(self, q: registry.Question, e: Event) -> Verdict:
        return e.verdict

    def review(self, q: registry.Question, e: Event) -> Verdict:
        """A review's verdict (:mod:`grader.engine.review`): a check of a fresh program of a passed self-test."""
        return e.verdict

    def mark(self, e: Event) -> bool:
        """Whether ``e`` marks the unit passed."""
        return e.verdict == "passed"

    def stray(self, e: Event, q: registry.Question | None) -> None:
        """An event that names no question of the unit (``q`` is None), or one its question does not take."""


TRUST = Judge()
TAKES: dict[Role, tuple[Action, ...]] = {
    "predict": ("predict", "reveal", "hint"),
    "self-test": ("check", "hint", "review"),
    "exercise": ("check", "hint"),
}


KEPT = ("hints", "attempts", "peeked", "variant", "answers", "seen", "wrong", "reviews", "review_verdict", "level")


def replay(unit: str, events: Iterable[Event], judge: Judge = TRUST, mastery: int | None = None) -> UnitState:
    """The one reading of the log, for the learner and the gradebook alike. Resets forget answers, never
    history: a reveal, the hints shown, the attempts made and the programs asked stay on the record, so a reset
    cannot launder a reveal into a prediction nor bring a program back. Attempts are graded checks (correct or
    incorrect) up to and including the pass. ``mastery``: right answers in a row that pass a generated self-test
    (:func:`grader.engine.variants.mastery` reads the instructor's setting when None)."""
    questions = {q.qid: q for q in registry.of_unit(unit)}
    in_a_row = variants.mastery(mastery)
    state = UnitState(unit)
    shown: set[str] = set()  # questions whose answer torch has shown, ever
    kept: dict[str, dict] = {}  # qid -> what a reset keeps (KEPT)

    def blank(q: registry.Question | QuestionState) -> QuestionState:
        found = questions.get(q.qid)
        out = QuestionState(q.qid, q.role, generated=found is not None and found.program is not None)
        for name, value in kept.get(q.qid, {}).items():
            setattr(out, name, list(value) if isinstance(value, list) else value)
        return out

    def fresh() -> None:
        state.questions = {qid: blank(q) for qid, q in questions.items()}

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
            else:
                judge.stray(e, None)
            continue
        if e.action == "mark":
            if judge.mark(e):
                state.passed = state.started = True
            continue
        if e.qid is None:  # a unit-wide event other than reset and mark: no question to update
            continue
        s, q = state.questions.get(e.qid), questions.get(e.qid)
        if s is None or q is None:
            judge.stray(e, None)
            continue
        if e.action not in TAKES.get(q.role, ()):
            judge.stray(e, q)
            continue
        state.started = True
        if e.action == "predict":
            if not judge.prediction(q, e):
                continue
            s.peeked = s.peeked or q.qid in shown
            if not s.revealed:
                s.prediction, s.predicted = e.answer, True
                s.predicted_after_reveal = s.predicted_after_reveal or q.qid in shown
        elif e.action == "reveal":
            shown.add(q.qid)
            if not s.revealed:
                s.reveal_verdict = judge.reveal(q, e, s)
                s.revealed = True
                s.predicted_before_reveal = s.reveal_verdict in GRADED
        elif e.action == "hint":
            number = e.answer if isinstance(e.answer, int) and not isinstance(e.answer, bool) else s.hints + 1
            s.hints = max(s.hints, min(number, len(q.hints)))
        elif e.action == "check":
            s.last_check = verdict = judge.check(q, e)
            if verdict in GRADED:
                _graded_check(s, e, verdict, in_a_row)
        elif e.action == "review":
            verdict = judge.review(q, e)
            if verdict in GRADED:
                s.reviews += 1
                s.review_verdict, s.seen = verdict, e.time
                s.level = min(s.level + 1, len(INTERVALS_DAYS) - 1) if verdict == "correct" else 0
                s.wrong += verdict == "incorrect"
        kept[q.qid] = {name: getattr(s, name) for name in KEPT}
    return state


def _graded_check(s: QuestionState, e: Event, verdict: Verdict, in_a_row: int) -> None:
    """A check graded correct or incorrect: the attempt, the program it answered, and (a generated self-test) the
    row of right answers and the program in force next."""
    number = variants.number_in(e.detail) if s.generated else None
    if s.generated and number is not None and number < s.variant and not s.passed:
        return  # an answer to a program already answered (the gradebook reads a copy's record beside its re-run)
    s.seen = e.time
    s.wrong += verdict == "incorrect"
    s.answers = [*s.answers, [number, e.answer]][-variants.CARRIED_ANSWERS :]
    if s.passed:
        return
    s.attempts += 1
    if s.generated:
        s.answered = number
        s.streak = s.streak + 1 if verdict == "correct" else 0
        if s.streak < in_a_row:  # not passed yet: the next answer is asked on a fresh program
            s.variant = max(s.variant, (number if number is not None else s.variant) + 1)
            return
        if number is not None:
            s.variant = number
    elif verdict != "correct":
        return
    s.passed = True
    s.level = 0 if s.wrong else 1  # a question got wrong on the way comes back for review sooner


def unit_state(unit: str, events: list[Event]) -> UnitState:
    """The learner's reading of the log: :func:`replay` trusting the recorded verdicts."""
    return replay(unit, events, TRUST)


def course_state(store: Store) -> dict[str, UnitState]:
    events = store.events()
    return {u: unit_state(u, events) for u in UNITS}


def prerequisites_note(uid: str, states: dict[str, UnitState]) -> str:
    """The units recommended before ``uid`` that are not passed yet, in words ("" when none).

    A recommendation, not a rule: a unit's questions, its Mark passed and the gradebook never wait for
    another unit (an instructor may hand out one unit alone), so the words say "recommended after"."""
    waiting = [n for n in UNITS[uid].needs if not states[n].passed]
    if not waiting:
        return ""
    return "recommended after " + ", ".join(waiting) + ": not passed yet"
