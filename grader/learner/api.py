"""The learner's loop: predict -> run -> reveal, check, mark_passed.

Every function returns a :class:`~grader.engine.results.Result` and never lets a
learner's mistake surface as a traceback from grader code. With
``AUTOGRAD_LAB_STRICT=1`` (the test suite sets it for solutions), anything
short of success raises :class:`~grader.engine.results.GraderCheckFailed`, so a
solution notebook whose own checks fail cannot pass nbval.

What happens to an answer once it is read is chosen in one place, :func:`judge`: in a learner's kernel a
:class:`LiveJudge` runs torch and gives the verdict; in a grading run (the answer key sealed) a
:class:`SealedRecorder` records the answer as given, with no verdict, for the gradebook to compute outside.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, Protocol, TypeVar

from grader.engine import env_vars, identity, order, progress, variants
from grader.engine import question as registry
from grader.engine.course import UNITS, VERSION, leads_to, unit_id
from grader.engine.exercises import run_exercise
from grader.engine.kinds import Function, plain_copy, short
from grader.engine.question import Question
from grader.engine.results import GraderCheckFailed, Result
from grader.engine.store import current as store
from grader.engine.variants import Generator, Listing, Variant
from grader.engine.verdicts import GRADED, Action, Reading, Verdict, graded, read_answer
from grader.learner import saved

_ASK = object()
OK: tuple[Verdict, ...] = ("recorded", "correct", "passed", "info")
_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass
class FrontEnd:
    """What a front end plugs in (grader.learner.widgets does, when it is imported): ``ask`` turns an
    unanswered question into an input the learner can fill in, or returns None where none can show;
    each of ``revealed`` hears the id of a question whose answer was just revealed; ``carry`` shows, in the
    notebook, the record of a question's locked prediction that batch grading reads (grader.engine.locked); each
    of ``reset`` hears the question id or unit id just reset (the inputs it drew for it close); ``waiting`` says
    whether an input for a question's prediction is open on screen with nothing locked in (None if none is; else
    what it holds, in words): a reveal then waits for it (:func:`reveal`); each of ``checked`` hears the id of a
    generated self-test whose program a graded answer moved on (the program shown is brought up to date)."""

    ask: Callable[..., Result | None] | None = None
    carry: Callable[[Any, progress.QuestionState], None] | None = None
    waiting: Callable[[str], str | None] | None = None
    revealed: list[Callable[[str], None]] = field(default_factory=list)
    reset: list[Callable[[str], None]] = field(default_factory=list)
    checked: list[Callable[[str], None]] = field(default_factory=list)


FRONT_END = FrontEnd()


def strict() -> bool:
    return env_vars.yes(os.environ.get(env_vars.STRICT))


def _finish(result: Result) -> Result:
    if strict() and result.verdict not in OK:
        raise GraderCheckFailed("\n" + str(result))
    return result


def _guarded(action: Action) -> Callable[[Callable[_P, _R]], Callable[_P, _R | Result]]:
    """Whatever goes wrong inside the grader, the learner gets a Result, not a traceback from our code."""

    def wrap(fn: Callable[_P, _R]) -> Callable[_P, _R | Result]:
        @functools.wraps(fn)
        def inner(*args: _P.args, **kwargs: _P.kwargs) -> _R | Result:
            subject = short(args[0]) if args and isinstance(args[0], (str, int)) else action
            try:
                return fn(*args, **kwargs)
            except GraderCheckFailed:
                raise
            except KeyboardInterrupt:
                return _finish(
                    Result(
                        action, subject, "unanswered", "stopped before it finished (interrupted); nothing was recorded"
                    )
                )
            except Exception as exc:  # a grader bug, or the progress file failing under us
                return _finish(
                    Result(
                        action,
                        subject,
                        "error",
                        f"the grader hit an internal error ({type(exc).__name__}: {str(exc)[:200]}); "
                        "nothing was recorded. This is not your mistake: please report it.",
                    )
                )

        return inner

    return wrap


def _question(qid: Any, action: Action) -> Question | Result:
    """The question ``qid`` names, or the Result that says there is none."""
    if not isinstance(qid, str):
        return Result(
            action, short(qid), "invalid", f"a question id is a string such as '01.pow-node', not {short(qid)}"
        )
    q = registry.get(qid.strip())
    if q is None:
        close = difflib.get_close_matches(qid.strip(), list(registry.load()), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `python -m grader questions` lists them"
        return Result(action, qid, "invalid", f"there is no question {qid!r}{hint}")
    return q


def _state(q: Question) -> progress.QuestionState:
    return progress.unit_state(q.unit, store().events(q.unit)).questions[q.qid]


def _read(q: Question, answer: Any) -> Reading:
    """``answer`` as ``q``'s kind reads it, from a plain copy (nothing the learner's object does later changes it)."""
    return read_answer(lambda: q.kind.read(plain_copy(answer)))


def _unread(q: Question, action: Action, reading: Reading, what: str = "answer", rows: list | None = None) -> Result:
    """The Result of an answer that has no value to grade: the placeholder (``unanswered``, with what to write
    instead: ``what``) or one the kind cannot read (``invalid``, with the kind's words)."""
    verdict = reading.unread or "invalid"
    message = f"replace ... with your {what}: {q.kind.describe()}" if verdict == "unanswered" else reading.why
    return Result(action, q.qid, verdict, message, rows=list(rows or []))


def _legacy(q: Question, answer: Any) -> Any:
    """``answer`` read as on the record in an older version's form (``Error.read_recorded``), or None."""
    try:
        value = q.kind.read_recorded(plain_copy(answer))
    except Exception:
        return None
    return value if getattr(value, "legacy", False) else None


# --- what happens to an answer: judged live, or recorded for the gradebook ------------------------------------


class Judge(Protocol):
    """What the API does with an answer once it has read it; :func:`judge` chooses the one in force."""

    def truth(self, q: Question, action: Action, variant: Variant | None = None) -> tuple[Any, Result | None]:
        """(torch's answer, None), or (None, the Result to show instead)."""
        ...

    def variant(self, q: Question, program: Generator, state: progress.QuestionState) -> Variant:
        """The program the generated self-test ``q`` asks now."""
        ...

    def old_form(self, q: Question, answer: Any) -> Any:
        """An answer the kind refused, read in an older version's form where this judge takes one; else None."""
        ...

    def reveal(self, q: Question, state: progress.QuestionState, without_prediction: bool) -> Result:
        """A predict-then-run question's reveal."""
        ...

    def check(self, q: Question, answer: Any, variant: Variant | None) -> Result:
        """A self-test's or an exercise's answer (not the placeholder), recorded with its verdict."""
        ...


_DRAWN: dict = {}  # (qid, identity, number, earlier answers) -> the Variant drawn (its experiments ran to draw it)


class LiveJudge:
    """A learner's kernel: torch runs here and every answer gets its verdict now."""

    def truth(self, q: Question, action: Action, variant: Variant | None = None) -> tuple[Any, Result | None]:
        try:
            return (q.run(variant.program) if variant is not None else q.run()), None
        except Exception as exc:  # torch changed, or a grader bug: say so, plainly
            import torch

            return None, Result(
                action,
                q.qid,
                "error",
                f"its live experiment raised {type(exc).__name__}: {exc} on torch {torch.__version__}. "
                "This is not your mistake; please report it to the course maintainers.",
            )

    def variant(self, q: Question, program: Generator, state: progress.QuestionState) -> Variant:
        """The state's program, never one that an answer the learner already gave is right on
        (:func:`variants.answered_before`)."""
        number, who = state.variant, identity.current()
        earlier = [a for n, a in state.answers if isinstance(n, int) and n < number]
        if not earlier:
            return variants.make(program, q.qid, who, number)
        key = (q.qid, who, number, repr(earlier))
        if key not in _DRAWN:
            avoid = variants.answered_before(q.kind, earlier, lambda v: q.run(v.program))
            _DRAWN[key] = variants.make(program, q.qid, who, number, avoid=avoid)
        return _DRAWN[key]

    def old_form(self, q: Question, answer: Any) -> Any:
        return None  # a learner answers in today's form: the message says how

    def reveal(self, q: Question, state: progress.QuestionState, without_prediction: bool) -> Result:
        return _reveal_live(q, state, without_prediction)

    def check(self, q: Question, answer: Any, variant: Variant | None) -> Result:
        if variant is not None:  # every self-test (question._declare): graded on the learner's own program
            return _check_generated(q, answer, variant)
        result = run_exercise(q, answer)  # an exercise: the learner's function on generated cases
        if result.verdict == "incorrect" and q.hints:
            result.message = then(result.message, f"hint('{q.qid}') gives a hint.")
            result.actions = [("hint", q.qid)]
        store().append(
            q.unit,
            q.qid,
            "check",
            result.verdict,
            q.kind.encode(result.got) if result.got is not None else None,
            detail=result.detail,
        )
        return result


SEALED_NOTE = "recorded for the gradebook, which computes torch's answer outside this run"
PINS_VAR = env_vars.VARIANTS  # a grading run: {qid: number} of the programs the copy's records say were in force


class SealedRecorder:
    """A grading run (the answer key sealed, :func:`seal_for_grading`): no experiment runs here. Every answer is
    recorded as given, with no verdict ("recorded"), and the gradebook computes torch's answer outside."""

    def truth(self, q: Question, action: Action, variant: Variant | None = None) -> tuple[Any, Result | None]:
        return None, Result(action, q.qid, "info", SEALED_NOTE)

    def variant(self, q: Question, program: Generator, state: progress.QuestionState) -> Variant:
        """The program in force when the learner saved (the gradebook pins it, :func:`_pinned`), drawn without
        avoiding earlier answers (that needs experiments: the gradebook draws it again itself)."""
        return variants.make(program, q.qid, identity.current(), _pinned(q))

    def old_form(self, q: Question, answer: Any) -> Any:
        return _legacy(q, answer)  # a copy handed out in 0.2.0's form: recorded, the gradebook decides

    def reveal(self, q: Question, state: progress.QuestionState, without_prediction: bool) -> Result:
        store().append(q.unit, q.qid, "reveal", "recorded", state.prediction if state.predicted else None)
        return Result("reveal", q.qid, "recorded", SEALED_NOTE)

    def check(self, q: Question, answer: Any, variant: Variant | None) -> Result:
        """The answer recorded as given, and the number of the program it answered (the gradebook regenerates that
        program from the identity it grades)."""
        detail = variant.detail(identity.fingerprint(identity.current())) if variant is not None else None
        if isinstance(q.kind, Function):
            store().append(q.unit, q.qid, "check", "recorded", None)
            return Result("check", q.qid, "recorded", SEALED_NOTE)
        reading = _read(q, answer)
        value = self.old_form(q, answer) if reading.unread == "invalid" else reading.value
        if reading.unread == "unanswered" or (reading.unread == "invalid" and value is None):
            refused = _unread(q, "check", reading)
            store().append(q.unit, q.qid, "check", refused.verdict, None, detail=detail)
            return refused
        store().append(q.unit, q.qid, "check", "recorded", q.kind.encode(value), detail=detail)
        return Result("check", q.qid, "recorded", SEALED_NOTE, got=value)


LIVE, SEALED = LiveJudge(), SealedRecorder()


def judge() -> Judge:
    """The one place a grading run's behaviour is chosen: the sealed recorder once the answer key is sealed in this
    process (:func:`grader.engine.question.seal`), else the live judge."""
    return SEALED if registry.SEALED else LIVE


def _pinned(q: Question) -> int:
    """In a grading run, the number of ``q``'s program the next check asks: the one in force when the learner
    saved (the gradebook reads it from the copy's records and pins it, so the re-run asks what the learner answered),
    moved on by one for each answer this run has recorded for it already (a sealed run cannot know a verdict, and a
    retry is a new program: the gradebook judges each answer on the program it was asked)."""
    try:
        pins = json.loads(os.environ.get(PINS_VAR, "") or "{}")
    except ValueError:
        pins = {}
    start = variants.number_in({"variant": pins.get(q.qid)}) if isinstance(pins, dict) else None
    answered = sum(
        1
        for e in store().events(q.unit)
        if e.qid == q.qid
        and e.action == "check"
        and e.verdict == "recorded"
        and variants.number_in(e.detail) is not None
    )
    return (start or 0) + answered


def variant_of(q: Question, state: progress.QuestionState | None = None) -> Variant | None:
    """The program this learner is asked now for the generated self-test ``q`` (None for any other question), as
    the judge in force draws it (:meth:`LiveJudge.variant`, :meth:`SealedRecorder.variant`)."""
    if q.program is None:
        return None
    return judge().variant(q, q.program, state if state is not None else _state(q))


def _carried(q: Question, state: progress.QuestionState) -> dict:
    """The record a generated self-test's cells carry for batch grading: the program in force, the answers given,
    and whose programs they were."""
    who = identity.current()
    payload = variants.record(
        q.qid, state.variant, [tuple(a) for a in state.answers], identity.fingerprint(who), drawn_for=who
    )
    return variants.bundle(payload)


def _program_rows(variant: Variant | None, q: Question, label: str = "your program") -> list[tuple[str, str]]:
    if variant is None:
        return [("question", q.prompt)]
    return [(label, variant.program.source.strip()), ("question", " ".join(variant.program.ask.split()))]


def seal_for_grading() -> None:
    """In a grading run: every experiment out of reach (engine.question.seal); an attempt to call one is recorded,
    and the gradebook names it. From then on :func:`judge` is the sealed recorder."""

    def attempted(qid: str) -> None:
        try:
            store().append(qid.split(".")[0], qid, "answer-key", "refused")
        except Exception:  # the refusal stands even if the store cannot take the note
            pass

    registry.seal(attempted)


# --- predict ---------------------------------------------------------------------------------------------------


@_guarded("predict")
def predict(qid: Any, answer: Any = _ASK) -> Any:
    """Lock in a prediction for a predict-then-run question. It may be replaced until the reveal.

    Without an answer, or with the notebook's placeholder ``...``, it shows an input that suits the
    question (in a Jupyter kernel with ipywidgets) whose "Lock in" button records the same event as
    ``predict(qid, answer)``, prefilled with the prediction locked so far; elsewhere it says what to
    write. Once torch's answer is revealed, the placeholder records nothing and shows the question as
    it stands (the locked prediction beside torch's answer), so re-running the notebook never changes
    the record; a real answer then is refused.
    """
    q = _question(qid, "predict")
    if isinstance(q, Result):
        return _finish(q)
    if q.role != "predict":
        return _finish(
            Result("predict", q.qid, "invalid", f"{q.qid} is a {q.role} question: answer it with check('{q.qid}', ...)")
        )
    state = _state(q)
    if (answer is _ASK or answer is Ellipsis) and state.revealed:
        return _finish(_as_it_stands(q, state))  # a re-run of the cell: it records nothing, it shows the record
    if answer is _ASK:
        asked = Result(
            "predict",
            q.qid,
            "unanswered",
            f"give your prediction as the second argument: predict('{q.qid}', answer), "
            f"where answer is {q.kind.describe()}",
            rows=[("question", q.prompt)],
        )
    elif state.revealed:
        return _finish(
            Result(
                "predict",
                q.qid,
                "locked",
                f"torch's answer to {q.qid} has already been revealed, so a prediction now would not "
                f"be a prediction. To start this question again: reset('{q.qid}') (your record will "
                "say the new prediction came after the reveal).",
                actions=[("reset", q.qid)],
            )
        )
    else:
        reading = _read(q, answer)
        if reading.unread is None:
            return _carried_if_late(q, commit_prediction(q, reading.value, replaced=state.predicted))
        old = judge().old_form(q, answer) if reading.unread == "invalid" else None
        if old is not None:  # a copy handed out in 0.2.0's form, in a grading run: recorded, the gradebook decides
            return commit_prediction(q, old, replaced=state.predicted)
        asked = _finish(_unread(q, "predict", reading, "prediction", rows=[("question", q.prompt)]))
        if reading.unread == "invalid":
            return asked
    # the same question as an input with a "Lock in" button, where a front end can draw one
    shown = FRONT_END.ask(q, state, asked) if FRONT_END.ask is not None else None
    return shown if shown is not None else _finish(asked)


def _carried_if_late(q: Question, result: Result) -> Result:
    """A prediction typed in code after a reveal (and a reset): the cell carries the record that says so, as a
    lock with the widget does, so batch grading replays it as the panel reads it ("predicted after reveal")."""
    if result.verdict == "recorded" and FRONT_END.carry is not None:
        now = _state(q)
        if now.predicted_after_reveal:
            FRONT_END.carry(q, now)
    return result


def _as_it_stands(q: Question, state: progress.QuestionState) -> Result:
    """What a predict cell shows when it runs again after the reveal: the record, and torch's answer."""
    if FRONT_END.carry is not None:  # the cell carries its record again, whatever follows
        FRONT_END.carry(q, state)
    rows = [("question", q.prompt)]
    value = None
    if state.predicted:
        reading = read_answer(lambda: q.kind.read_recorded(state.prediction))
        value = reading.value
        # a prediction stored by an older version, no longer readable, is shown as it was stored
        shown = q.kind.show(value) if reading.unread is None else short(state.prediction)
        rows.append(("you predicted after a reveal" if state.predicted_after_reveal else "your prediction", shown))
    truth, failed = judge().truth(q, "predict")
    if failed:
        return failed
    rows.append(("torch says", q.kind.show(truth)))
    message = f"Already revealed; your record reads: {state.record}. Running this cell again changes nothing."
    if not state.predicted_before_reveal:
        message += (
            f" To predict it anyway: reset('{q.qid}'), then run this cell again "
            "(your record will say the prediction came after the reveal)."
        )
    return Result("predict", q.qid, "info", message, expected=truth, got=value, rows=rows)


def commit_prediction(q: Question, value: Any, replaced: bool = False) -> Result:
    """Record a read prediction; shared by predict() and the prediction widget."""
    store().append(q.unit, q.qid, "predict", "recorded", q.kind.encode(value))
    note = "replaces your earlier prediction. " if replaced else ""
    return _finish(
        Result(
            "predict",
            q.qid,
            "recorded",
            f"{note}Run the experiment below, then reveal('{q.qid}'). You may change your prediction until the reveal.",
            got=value,
            rows=[("question", q.prompt), ("your prediction", q.kind.show(value))],
        )
    )


# --- reveal ----------------------------------------------------------------------------------------------------


@_guarded("reveal")
def reveal(qid: Any, without_prediction: bool = False) -> Result:
    """Run the live experiment and show torch's answer beside the locked-in prediction.

    While the question's prediction input is open on screen with nothing locked in (its predict cell ran in this
    kernel: Run All runs each reveal straight after it), nothing is revealed or recorded: the result says so and
    offers a button that reveals anyway. ``without_prediction=True`` (that button) reveals without a prediction on
    purpose; the record then says so, as it does for a reveal run with no input on screen.
    """
    q = _question(qid, "reveal")
    if isinstance(q, Result):
        return _finish(q)
    if q.role != "predict":
        return _finish(
            Result(
                "reveal",
                q.qid,
                "invalid",
                f"{q.qid} is a {q.role} question: it is graded with check('{q.qid}', ...), not revealed",
            )
        )
    return _finish(judge().reveal(q, _state(q), without_prediction))


def _reveal_live(q: Question, state: progress.QuestionState, without_prediction: bool) -> Result:
    """Torch's answer beside the prediction, or the reason it is not shown yet (an input waiting on screen, a
    prediction locked in an older form)."""
    if not (state.predicted or state.revealed or without_prediction):
        held = _held(q)
        if held is not None:
            return held
    old = _legacy(q, state.prediction) if state.predicted else None
    if old is not None:  # locked in an older form, before the reveal: it can still be predicted again
        return Result(
            "reveal",
            q.qid,
            "invalid",
            f"your prediction for {q.qid}, {q.kind.show(old)}, was locked in before this question asked "
            f"for the cause. Nothing is revealed or recorded: predict again, as {q.kind.describe()}, "
            "then reveal (it still comes before the reveal).",
            rows=[("question", q.prompt)],
        )
    truth, failed = judge().truth(q, "reveal")
    if failed:
        return failed
    if not state.predicted:
        return _revealed_alone(q, truth)
    return _revealed_beside(q, state, truth)


def _revealed_alone(q: Question, truth: Any) -> Result:
    """Torch's answer shown with no prediction before it: recorded as such."""
    store().append(q.unit, q.qid, "reveal", "revealed", None)
    _after_reveal(q.qid)
    return Result(
        "reveal",
        q.qid,
        "revealed",
        "recorded as revealed without a prediction: it counts as attempted, and your "
        "record shows that torch's answer came first.",
        expected=truth,
        rows=[("question", q.prompt), ("torch says", q.kind.show(truth))],
        explain=q.explain,
        records=order.record(q.qid, predicted=False),
    )


def _revealed_beside(q: Question, state: progress.QuestionState, truth: Any) -> Result:
    """Torch's answer beside the locked-in prediction, judged and recorded."""
    value = read_answer(lambda: q.kind.read(state.prediction)).value  # None: stored by an older version, unreadable
    verdict = graded(value is not None and q.kind.agrees(truth, value))
    store().append(q.unit, q.qid, "reveal", verdict, state.prediction)
    _after_reveal(q.qid)
    label = "you predicted after a reveal" if state.predicted_after_reveal else "you predicted"
    rows = [("question", q.prompt), ("torch says", q.kind.show(truth))]
    rows.append((label, q.kind.show(value) if value is not None else short(state.prediction)))
    ok = verdict == "correct"
    note = "" if ok else _wrong_note(q, truth, value)
    note = "" if repeats(note, q.explain) else note  # the why line below says it: once is enough
    return Result(
        "reveal",
        q.qid,
        verdict,
        note,
        expected=truth,
        got=value,
        rows=rows,
        explain=q.explain,
        actions=[("hint", q.qid)] if not ok and q.hints else [],  # every wrong answer offers the Hint button
        records=order.record(q.qid, predicted=not state.predicted_after_reveal),
    )


def _held(q: Question) -> Result | None:
    """A reveal that waits: the question's prediction input is open on screen with nothing locked in (None if it is
    not). Run All runs every reveal straight after its predict cell; without this, every question would read
    "revealed without prediction" before the learner could predict one (issue 44)."""
    chosen = FRONT_END.waiting(q.qid) if FRONT_END.waiting is not None else None
    if chosen is None:
        return None
    said = (
        f"you chose {chosen} in its input above but did not press Lock in"
        if chosen
        else "its input above has no prediction locked in yet"
    )
    return Result(
        "reveal",
        q.qid,
        "unanswered",
        f"Not revealed, and nothing recorded: {said}. Lock in your prediction there, then run this cell again. "
        "(Run All runs each reveal right after its question: run the cells one at a time.) To see torch's answer "
        f"without predicting, press the button below or run reveal('{q.qid}', without_prediction=True); your "
        "record will say it was revealed without a prediction.",
        rows=[("question", q.prompt)],
        actions=[("reveal", q.qid)],
    )


def _after_reveal(qid: str) -> None:
    """Inputs already on screen for this question stop taking a prediction."""
    for listener in FRONT_END.revealed:
        listener(qid)


def _wrong_note(q: Question, truth: Any, value: Any, program: Listing | None = None) -> str:
    """Why a wrong answer is wrong: the question's own misconception note if it matches, else the kind's."""
    if value is None:
        return ""
    return q.misconception(truth, value, program) or q.kind.verdict_note(truth, value)


def repeats(note: str, why: str) -> bool:
    """Whether a wrong answer's note says again what the why line beside it says: three quarters or more of its
    words of four letters or more are in the why line."""
    import re

    def words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z0-9_.]+", text.lower()) if len(w) >= 4}

    mine = words(note)
    return bool(mine) and len(mine & words(why)) >= 0.75 * len(mine)


# --- check -----------------------------------------------------------------------------------------------------


@_guarded("check")
def check(qid: Any, answer: Any = _ASK) -> Result:
    """Grade a self-test answer or an exercise function against live torch."""
    q = _question(qid, "check")
    if isinstance(q, Result):
        return _finish(q)
    if q.role == "predict":
        return _finish(
            Result(
                "check",
                q.qid,
                "invalid",
                f"{q.qid} is a predict-then-run question: predict('{q.qid}', ...) then reveal('{q.qid}')",
            )
        )
    variant = variant_of(q) if q.program is not None else None
    if answer is _ASK or (q.role == "self-test" and answer is Ellipsis):
        return _finish(_asked(q, variant))
    return _finish(judge().check(q, answer, variant))


def _asked(q: Question, variant: Variant | None) -> Result:
    """What a check without an answer shows: an input with a Check button where one can show (a self-test), else
    what to pass."""
    if q.role == "self-test" and FRONT_END.ask is not None:  # an input with a Check button, where one can show
        shown = FRONT_END.ask(q.asked(variant.program if variant else None), _state(q))
        if shown is not None:
            return shown
    return Result(
        "check",
        q.qid,
        "unanswered",
        f"pass your answer: check('{q.qid}', answer), where answer is {q.kind.describe()}",
        rows=_program_rows(variant, q),
        records=_carried(q, _state(q)) if variant is not None else {},
    )


def then(message: str, more: str) -> str:
    """``more`` after ``message`` as a sentence of its own: a full stop between them where the message has none."""
    message = message.rstrip()
    if message and not message.endswith((".", "!", "?", ":")):
        message += "."
    return f"{message} {more}".strip()


def _check_generated(q: Question, answer: Any, variant: Variant) -> Result:
    """A generated self-test's check: graded on the learner's own program, recorded with its number; a graded
    answer before the pass brings a new program, shown in the result (the record then carried by the cell)."""
    result = _check_value(q, answer, variant)
    detail = {**result.detail, **variant.detail(identity.fingerprint(identity.current()))}
    got = q.kind.encode(result.got) if result.got is not None else None
    store().append(q.unit, q.qid, "check", result.verdict, got, detail=detail)
    state = _state(q)
    result.records = _carried(q, state)
    if result.verdict in GRADED:
        _program_moved(q.qid)  # the program shown elsewhere (program(qid)'s cell) is brought up to date
        result.rows[0] = (f"your program ({variant.name})", result.rows[0][1])
        if not state.passed:
            nxt = variant_of(q, state)
            if nxt is not None and nxt.number != variant.number:
                k = variants.mastery()
                why = (
                    f"Right: {state.streak} of the {k} in a row this self-test asks for. "
                    if result.verdict == "correct"
                    else ""
                )
                result.message = then(why + result.message, retry_words(q.qid))
                result.rows += _program_rows(nxt, q, f"your next program ({nxt.name})")
    return result


def retry_words(qid: str) -> str:
    """What a wrong (or not yet enough) answer to a generated self-test says of the next program, shown below it."""
    return f"A retry is a new program: answer the one below with check('{qid}', answer)."


def _program_moved(qid: str) -> None:
    """Every front end listening hears that ``qid``'s program moved on (the program it shows is out of date)."""
    for listener in FRONT_END.checked:
        try:
            listener(qid)
        except Exception:  # the answer is recorded; a front end that fails must not hide that
            pass


def _check_value(q: Question, answer: Any, variant: Variant) -> Result:
    """An answer to ``q`` on ``variant``'s program, judged against torch's answer on it (nothing recorded)."""
    rows = _program_rows(variant, q)
    reading = _read(q, answer)
    if reading.unread is not None:
        return _unread(q, "check", reading, rows=rows)
    value = reading.value
    truth, failed = judge().truth(q, "check", variant)
    if failed:
        return failed
    rows.append(("your answer", q.kind.show(value)))
    verdict = graded(q.kind.agrees(truth, value))
    if verdict == "correct":
        rows.insert(len(rows) - 1, ("torch says", q.kind.show(truth)))
        return Result("check", q.qid, "correct", expected=truth, got=value, rows=rows, explain=q.explain)
    note = _wrong_note(q, truth, value, variant.program)
    more = f" hint('{q.qid}') gives a hint." if q.hints else ""
    return Result(
        "check",
        q.qid,
        verdict,
        (note.rstrip(".") + "." if note else "Not torch's answer.") + more,
        got=value,
        rows=rows,
        actions=[("hint", q.qid)] if q.hints else [],
    )


# --- program ---------------------------------------------------------------------------------------------------


@dataclass
class YourProgram(Result):
    """What ``program(qid)`` shows: this learner's program for a generated self-test, and the question about it.
    ``.source`` is the code; ``.run()`` runs it in torch's clean state and returns its names (what a learner may
    always do with the code shown: the answer is torch's, on this program); ``.run(until="backward")`` stops
    before the step of that name, where the program has one."""

    program: Listing | None = None

    @property
    def source(self) -> str:
        return self.program.source if self.program is not None else ""

    def run(self, until: str | None = None) -> dict:
        if self.program is None:
            raise ValueError(f"{self.subject} has no program of yours to run: {self.message}")
        return self.program.run(until)


@_guarded("program")
def program(qid: Any) -> Result:
    """Show this learner's program for the self-test ``qid`` (generated for them, on this attempt) and what it asks;
    ``check(qid, answer)`` grades the answer on it. A wrong answer brings a new program."""
    q = _question(qid, "program")
    if isinstance(q, Result):
        return _finish(q)
    if q.role != "self-test":
        verb = f"predict('{q.qid}', ...)" if q.role == "predict" else f"check('{q.qid}', your_function)"
        return _finish(Result("program", q.qid, "invalid", f"{q.qid} is a {q.role} question: answer it with {verb}"))
    state = _state(q)
    variant = variant_of(q, state)
    if variant is None:  # never: every self-test draws its program (question._declare refuses one without)
        raise ValueError(f"{q.qid} is a self-test without a program generator")
    if state.passed:
        then_ = f"passed ({state.record}): this is the program you answered."
    elif state.answered is not None or state.attempts:
        then_ = f"a new program after your last answer: answer it with check('{q.qid}', answer)."
    else:
        then_ = f"your own program: answer it with check('{q.qid}', answer). A wrong answer brings a new one."
    return _finish(
        YourProgram(
            "program",
            q.qid,
            "info",
            then_[0].upper() + then_[1:],
            rows=_program_rows(variant, q, f"your program ({variant.name})"),
            records=_carried(q, state),
            program=variant.program,
        )
    )


# --- hint, mark_passed, reset, status --------------------------------------------------------------------------


@_guarded("hint")
def hint(qid: Any) -> Result:
    """The next of a question's hints, from a nudge to the mechanism; each one shown is recorded."""
    q = _question(qid, "hint")
    if isinstance(q, Result):
        return _finish(q)
    if not q.hints:
        return Result("hint", q.qid, "info", f"{q.qid} has no hints: it asks for your own prediction.")
    shown = _state(q).hints
    n = min(shown + 1, len(q.hints))
    if shown < len(q.hints):
        store().append(q.unit, q.qid, "hint", "recorded", n)
    rows = [(f"hint {i + 1} of {len(q.hints)}", q.hints[i]) for i in range(n)]
    more = "" if n == len(q.hints) else f" Run hint('{q.qid}') again for the next one."
    return Result("hint", q.qid, "info", f"hints are recorded in your progress.{more}", rows=rows)


def _written_by() -> dict:
    """The course version a unit-wide event is written by: read with it, a mark or reset of a unit split later
    names both halves, one written after the split only the unit it says (:mod:`grader.engine.moves`)."""
    return {"course": VERSION}


@_guarded("mark")
def mark_passed(unit: Any) -> Result:
    """Record the unit as passed, or refuse and list exactly what is missing. Passed, it also says which answers
    the notebook as saved does not hold yet (:mod:`grader.learner.saved`): the file is what is handed in."""
    try:
        uid = unit_id(unit)
    except ValueError as exc:
        return _finish(Result("mark", short(unit), "invalid", str(exc)))
    state = progress.unit_state(uid, store().events(uid))
    missing = state.missing()
    title = f"unit {uid} ({UNITS[uid].title})"
    if missing:
        store().append(uid, None, "mark", "refused", None, detail={"missing": missing, **_written_by()})
        return _finish(
            Result(
                "mark",
                uid,
                "refused",
                f"{title} cannot be marked passed yet. Missing:\n" + "\n".join("  - " + m for m in missing),
            )
        )
    store().append(uid, None, "mark", "passed", None, detail=_written_by())
    nxt = leads_to(uid)
    if nxt:
        then = " Next: " + ", ".join(f"{n} ({UNITS[n].title})" for n in nxt)
    else:
        states = progress.course_state(store())
        left = [u for u in UNITS if not states[u].passed]
        then = (
            (" Not passed yet: " + ", ".join(left) + ".") if left else " Every unit is passed: the course is complete."
        )
    unsaved = saved.note(uid)  # the notebook as saved lacks answers the store holds: say so now, before it is handed in
    return _finish(
        Result("mark", uid, "passed", f"{title} is recorded as passed.{then}" + (f"\n{unsaved}" if unsaved else ""))
    )


@_guarded("reset")
def reset(target: Any) -> Result:
    """Forget progress on a unit ('01') or one question ('01.pow-node'); the log keeps the history."""
    if isinstance(target, str) and "." in target:
        q = _question(target, "reset")
        if isinstance(q, Result):
            return q
        store().append(q.unit, q.qid, "reset", "recorded")
        _after_reset(q.qid)
        if q.role == "predict":
            then = f"run its predict cell, predict('{q.qid}', ...), again for a new input, then its reveal."
        else:
            then = f"run its cell, check('{q.qid}', ...), again for a new input."
        return Result("reset", q.qid, "info", f"{q.qid} starts again: {then}")
    try:
        uid = unit_id(target)
    except ValueError as exc:
        return Result("reset", short(target), "invalid", str(exc))
    store().append(uid, None, "reset", "recorded", detail=_written_by())
    _after_reset(uid)
    return Result("reset", uid, "info", f"unit {uid} starts again from nothing: run its cells again from the top.")


def _after_reset(target: str) -> None:
    """Inputs already on screen for what was reset stop taking answers (they say to run their cell again)."""
    for listener in FRONT_END.reset:
        try:
            listener(target)
        except Exception:  # the reset is recorded; a front end that fails must not hide that
            pass


@_guarded("status")
def status() -> Result:
    """The course map: every unit's state and what it waits for."""
    states = progress.course_state(store())
    rows = []
    for uid, unit in UNITS.items():
        s = states[uid]
        c = s.counts()
        parts = [s.status]
        if c["questions"]:
            parts.append(f"{c['done']}/{c['questions']} done")
        note = progress.prerequisites_note(uid, states)
        if note and not s.passed:
            parts.append(note)
        rows.append((f"{uid} {unit.title}", ", ".join(parts)))
    done = sum(s.passed for s in states.values())
    return Result("status", "course map", "info", f"{done} of {len(UNITS)} units passed.", rows=rows)
