"""The learner's loop: predict -> run -> reveal, check, mark_passed.

Every function returns a :class:`~grader.engine.results.Result` and never lets a
learner's mistake surface as a traceback from grader code. With
``AUTOGRAD_LAB_STRICT=1`` (the test suite sets it for solutions), anything
short of success raises :class:`~grader.engine.results.GraderCheckFailed`, so a
solution notebook whose own checks fail cannot pass nbval.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from grader.engine import identity, order, progress, variants
from grader.engine import question as registry
from grader.engine.course import UNITS, VERSION, leads_to, unit_id
from grader.engine.exercises import run_exercise
from grader.engine.kinds import BadAnswer, Function, Unanswered, plain_copy, short
from grader.engine.results import GraderCheckFailed, Result
from grader.engine.store import current as store
from grader.engine.variants import Listing, Variant
from grader.learner import saved

_ASK = object()
OK = ("recorded", "correct", "passed", "info")


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
    return os.environ.get("AUTOGRAD_LAB_STRICT", "").strip().lower() in ("1", "true", "yes", "on")


def _finish(result: Result) -> Result:
    if strict() and result.verdict not in OK:
        raise GraderCheckFailed("\n" + str(result))
    return result


def _guarded(action: str):
    """Whatever goes wrong inside the grader, the learner gets a Result, not a traceback from our code."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
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


def _lookup(qid: Any, action: str):
    if not isinstance(qid, str):
        return None, Result(
            action, short(qid), "invalid", f"a question id is a string such as '01.pow-node', not {short(qid)}"
        )
    q = registry.get(qid.strip())
    if q is None:
        close = difflib.get_close_matches(qid.strip(), list(registry.load()), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `python -m grader questions` lists them"
        return None, Result(action, qid, "invalid", f"there is no question {qid!r}{hint}")
    return q, None


def _state(q) -> progress.QuestionState:
    return progress.unit_state(q.unit, store().events(q.unit)).questions[q.qid]


def _run_truth(q, action, variant: Variant | None = None):
    if registry.SEALED:  # a grading run: torch's answer is the gradebook's to compute (never an answer-key call)
        return None, Result(action, q.qid, "info", SEALED_NOTE)
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


PINS_VAR = "AGL_VARIANTS"  # a grading run: {qid: number} of the programs the copy's records say were in force


def _pinned(q) -> int | None:
    """In a grading run, the number of ``q``'s program the next check asks: the one in force when the learner
    saved (the gradebook reads it from the copy's records and pins it, so the re-run asks what the learner answered),
    moved on by one for each answer this run has recorded for it already (a sealed run cannot know a verdict, and a
    retry is a new program: the gradebook judges each answer on the program it was asked); None elsewhere."""
    if not registry.SEALED:
        return None
    import json

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


_DRAWN: dict = {}  # (qid, identity, number, earlier answers) -> the Variant drawn (its experiments ran to draw it)


def variant_of(q, state: progress.QuestionState | None = None) -> Variant | None:
    """The program this learner is asked now for the generated self-test ``q`` (None for any other question): never
    one that an answer they already gave is right on (:func:`variants.answered_before`; not in a sealed grading
    run, which runs no experiment: the gradebook draws it again itself)."""
    if q.program is None:
        return None
    state = state if state is not None else _state(q)
    pinned = _pinned(q)
    number = pinned if pinned is not None else state.variant
    who = identity.current()
    earlier = [a for n, a in state.answers if isinstance(n, int) and n < number]
    if registry.SEALED or not earlier:
        return variants.make(q.program, q.qid, who, number)
    key = (q.qid, who, number, repr(earlier))
    if key not in _DRAWN:
        avoid = variants.answered_before(q.kind, earlier, lambda v: q.run(v.program))
        _DRAWN[key] = variants.make(q.program, q.qid, who, number, avoid=avoid)
    return _DRAWN[key]


def _carried(q, state: progress.QuestionState) -> dict:
    """The record a generated self-test's cells carry for batch grading: the program in force, the answers given,
    and whose programs they were."""
    who = identity.current()
    payload = variants.record(
        q.qid, state.variant, [tuple(a) for a in state.answers], identity.fingerprint(who), drawn_for=who
    )
    return variants.bundle(payload)


def _program_rows(variant: Variant | None, q, label: str = "your program") -> list[tuple[str, str]]:
    if variant is None:
        return [("question", q.prompt)]
    return [(label, variant.program.source.strip()), ("question", " ".join(variant.program.ask.split()))]


def seal_for_grading() -> None:
    """In a grading run: every experiment out of reach (engine.question.seal); an attempt to call one is recorded,
    and the gradebook names it."""

    def attempted(qid: str) -> None:
        try:
            store().append(qid.split(".")[0], qid, "answer-key", "refused")
        except Exception:  # the refusal stands even if the store cannot take the note
            pass

    registry.seal(attempted)


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
    q, bad = _lookup(qid, "predict")
    if bad:
        return _finish(bad)
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
        try:
            value = q.kind.read(plain_copy(answer))
        except Unanswered:
            asked = _finish(
                Result(
                    "predict",
                    q.qid,
                    "unanswered",
                    f"replace ... with your prediction: {q.kind.describe()}",
                    rows=[("question", q.prompt)],
                )
            )
        except BadAnswer as exc:
            legacy = _legacy(q, answer) if registry.SEALED else None
            if legacy is not None:  # a copy handed out in 0.2.0's form: recorded, the gradebook decides
                return commit_prediction(q, legacy, replaced=state.predicted)
            return _finish(Result("predict", q.qid, "invalid", str(exc), rows=[("question", q.prompt)]))
        else:
            return _carried_if_late(q, commit_prediction(q, value, replaced=state.predicted))
    # the same question as an input with a "Lock in" button, where a front end can draw one
    shown = FRONT_END.ask(q, state, asked) if FRONT_END.ask is not None else None
    return shown if shown is not None else _finish(asked)


def _carried_if_late(q, result: Result) -> Result:
    """A prediction typed in code after a reveal (and a reset): the cell carries the record that says so, as a
    lock with the widget does, so batch grading replays it as the panel reads it ("predicted after reveal")."""
    if result.verdict == "recorded" and FRONT_END.carry is not None:
        now = _state(q)
        if now.predicted_after_reveal:
            FRONT_END.carry(q, now)
    return result


def _legacy(q, answer) -> Any:
    """``answer`` read as on the record in an older version's form (``Error.read_recorded``), or None."""
    try:
        value = q.kind.read_recorded(plain_copy(answer))
    except Exception:
        return None
    return value if getattr(value, "legacy", False) else None


def _as_it_stands(q, state: progress.QuestionState) -> Result:
    """What a predict cell shows when it runs again after the reveal: the record, and torch's answer."""
    if FRONT_END.carry is not None:  # the cell carries its record again, whatever follows
        FRONT_END.carry(q, state)
    rows = [("question", q.prompt)]
    value = None
    if state.predicted:
        try:
            value = q.kind.read_recorded(state.prediction)
            shown = q.kind.show(value)
        except (BadAnswer, Unanswered):  # a prediction stored by an older version, no longer readable
            shown = short(state.prediction)
        rows.append(("you predicted after a reveal" if state.predicted_after_reveal else "your prediction", shown))
    truth, failed = _run_truth(q, "predict")
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


def commit_prediction(q, value, replaced: bool = False) -> Result:
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


@_guarded("reveal")
def reveal(qid: Any, without_prediction: bool = False) -> Result:
    """Run the live experiment and show torch's answer beside the locked-in prediction.

    While the question's prediction input is open on screen with nothing locked in (its predict cell ran in this
    kernel: Run All runs each reveal straight after it), nothing is revealed or recorded: the result says so and
    offers a button that reveals anyway. ``without_prediction=True`` (that button) reveals without a prediction on
    purpose; the record then says so, as it does for a reveal run with no input on screen.
    """
    q, bad = _lookup(qid, "reveal")
    if bad:
        return _finish(bad)
    if q.role != "predict":
        return _finish(
            Result(
                "reveal",
                q.qid,
                "invalid",
                f"{q.qid} is a {q.role} question: it is graded with check('{q.qid}', ...), not revealed",
            )
        )
    if registry.SEALED:  # a grading run: the gradebook computes torch's answer, outside this process
        state = _state(q)
        store().append(q.unit, q.qid, "reveal", "recorded", state.prediction if state.predicted else None)
        return _finish(Result("reveal", q.qid, "recorded", SEALED_NOTE))
    state = _state(q)
    if not (state.predicted or state.revealed or without_prediction):
        held = _held(q)
        if held is not None:
            return _finish(held)
    old = _legacy(q, state.prediction) if state.predicted else None
    if old is not None:  # locked in an older form, before the reveal: it can still be predicted again
        return _finish(
            Result(
                "reveal",
                q.qid,
                "invalid",
                f"your prediction for {q.qid}, {q.kind.show(old)}, was locked in before this question asked "
                f"for the cause. Nothing is revealed or recorded: predict again, as {q.kind.describe()}, "
                "then reveal (it still comes before the reveal).",
                rows=[("question", q.prompt)],
            )
        )
    truth, failed = _run_truth(q, "reveal")
    if failed:
        return _finish(failed)
    rows = [("question", q.prompt), ("torch says", q.kind.show(truth))]
    if not state.predicted:
        store().append(q.unit, q.qid, "reveal", "revealed", None)
        _after_reveal(q.qid)
        return _finish(
            Result(
                "reveal",
                q.qid,
                "revealed",
                "recorded as revealed without a prediction: it counts as attempted, and your "
                "record shows that torch's answer came first.",
                expected=truth,
                rows=rows,
                explain=q.explain,
                records=order.record(q.qid, predicted=False),
            )
        )
    try:
        value = q.kind.read(state.prediction)
    except (BadAnswer, Unanswered):  # a prediction stored by an older version, no longer readable
        value = None
    ok = value is not None and q.kind.agrees(truth, value)
    verdict = "correct" if ok else "incorrect"
    store().append(q.unit, q.qid, "reveal", verdict, state.prediction)
    _after_reveal(q.qid)
    label = "you predicted after a reveal" if state.predicted_after_reveal else "you predicted"
    rows.append((label, q.kind.show(value) if value is not None else short(state.prediction)))
    note = "" if ok else _wrong_note(q, truth, value)
    note = "" if repeats(note, q.explain) else note  # the why line below says it: once is enough
    actions = [("hint", q.qid)] if not ok and q.hints else []  # every wrong answer offers the Hint button
    before = not state.predicted_after_reveal
    return _finish(
        Result(
            "reveal",
            q.qid,
            verdict,
            note,
            expected=truth,
            got=value,
            rows=rows,
            explain=q.explain,
            actions=actions,
            records=order.record(q.qid, predicted=before),
        )
    )


def _held(q) -> Result | None:
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


def _wrong_note(q, truth, value, program: Listing | None = None) -> str:
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


@_guarded("check")
def check(qid: Any, answer: Any = _ASK) -> Result:
    """Grade a self-test answer or an exercise function against live torch."""
    q, bad = _lookup(qid, "check")
    if bad:
        return _finish(bad)
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
    carried = _carried(q, _state(q)) if variant is not None else {}
    if answer is _ASK or (q.role == "self-test" and answer is Ellipsis):
        asked = Result(
            "check",
            q.qid,
            "unanswered",
            f"pass your answer: check('{q.qid}', answer), where answer is {q.kind.describe()}",
            rows=_program_rows(variant, q),
            records=carried,
        )
        if q.role == "self-test" and FRONT_END.ask is not None:  # an input with a Check button, where one can show
            shown = FRONT_END.ask(q.asked(variant.program if variant else None), _state(q))
            if shown is not None:
                return _finish(shown)
        return _finish(asked)
    if registry.SEALED:
        return _finish(_record_sealed(q, answer, variant))
    if variant is not None:
        return _finish(_check_generated(q, answer, variant))
    if isinstance(q.kind, Function):
        result = run_exercise(q, answer)
        if result.verdict == "incorrect" and q.hints:
            result.message = then(result.message, f"hint('{q.qid}') gives a hint.")
            result.actions = [("hint", q.qid)]
    else:
        result = _check_value(q, answer)
    store().append(
        q.unit,
        q.qid,
        "check",
        result.verdict,
        q.kind.encode(result.got) if result.got is not None else None,
        detail=result.detail,
    )
    return _finish(result)


def then(message: str, more: str) -> str:
    """``more`` after ``message`` as a sentence of its own: a full stop between them where the message has none."""
    message = message.rstrip()
    if message and not message.endswith((".", "!", "?", ":")):
        message += "."
    return f"{message} {more}".strip()


SEALED_NOTE = "recorded for the gradebook, which computes torch's answer outside this run"


def _record_sealed(q, answer, variant: Variant | None = None) -> Result:
    """A check in a grading run: the answer is recorded as given, with no verdict (the gradebook computes it), and
    the number of the program it answered (the gradebook regenerates that program from the identity it grades)."""
    detail = variant.detail(identity.fingerprint(identity.current())) if variant is not None else None
    if isinstance(q.kind, Function):
        store().append(q.unit, q.qid, "check", "recorded", None)
        return Result("check", q.qid, "recorded", SEALED_NOTE)
    try:
        value = q.kind.read(plain_copy(answer))
    except Unanswered:
        store().append(q.unit, q.qid, "check", "unanswered", None, detail=detail)
        return Result("check", q.qid, "unanswered", f"replace ... with your answer: {q.kind.describe()}")
    except BadAnswer as exc:
        value = _legacy(q, answer)  # a copy handed out in 0.2.0's form: recorded, the gradebook decides
        if value is None:
            store().append(q.unit, q.qid, "check", "invalid", None, detail=detail)
            return Result("check", q.qid, "invalid", str(exc))
    store().append(q.unit, q.qid, "check", "recorded", q.kind.encode(value), detail=detail)
    return Result("check", q.qid, "recorded", SEALED_NOTE, got=value)


def _check_generated(q, answer, variant: Variant) -> Result:
    """A generated self-test's check: graded on the learner's own program, recorded with its number; a graded
    answer before the pass brings a new program, shown in the result (the record then carried by the cell)."""
    result = _check_value(q, answer, variant)
    detail = {**result.detail, **variant.detail(identity.fingerprint(identity.current()))}
    got = q.kind.encode(result.got) if result.got is not None else None
    store().append(q.unit, q.qid, "check", result.verdict, got, detail=detail)
    state = _state(q)
    result.records = _carried(q, state)
    if result.verdict in ("correct", "incorrect"):
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


def _check_value(q, answer, variant: Variant | None = None) -> Result:
    rows = _program_rows(variant, q)
    try:
        value = q.kind.read(plain_copy(answer))
    except Unanswered:
        return Result("check", q.qid, "unanswered", f"replace ... with your answer: {q.kind.describe()}", rows=rows)
    except BadAnswer as exc:
        return Result("check", q.qid, "invalid", str(exc), rows=rows)
    truth, failed = _run_truth(q, "check", variant)
    if failed:
        return failed
    ok = q.kind.agrees(truth, value)
    rows.append(("your answer", q.kind.show(value)))
    if ok:
        rows.insert(len(rows) - 1, ("torch says", q.kind.show(truth)))
        return Result("check", q.qid, "correct", expected=truth, got=value, rows=rows, explain=q.explain)
    note = _wrong_note(q, truth, value, variant.program if variant is not None else None)
    more = f" hint('{q.qid}') gives a hint." if q.hints else ""
    return Result(
        "check",
        q.qid,
        "incorrect",
        (note.rstrip(".") + "." if note else "Not torch's answer.") + more,
        got=value,
        rows=rows,
        actions=[("hint", q.qid)] if q.hints else [],
    )


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
    q, bad = _lookup(qid, "program")
    if bad:
        return _finish(bad)
    if q.role != "self-test":
        verb = f"predict('{q.qid}', ...)" if q.role == "predict" else f"check('{q.qid}', your_function)"
        return _finish(Result("program", q.qid, "invalid", f"{q.qid} is a {q.role} question: answer it with {verb}"))
    state = _state(q)
    variant = variant_of(q, state)
    if variant is None:  # a self-test that states its one program (not generated yet)
        return _finish(
            YourProgram(
                "program", q.qid, "info", "this self-test asks one program, stated here", rows=[("question", q.prompt)]
            )
        )
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


@_guarded("hint")
def hint(qid: Any) -> Result:
    """The next of a question's hints, from a nudge to the mechanism; each one shown is recorded."""
    q, bad = _lookup(qid, "hint")
    if bad:
        return _finish(bad)
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
        q, bad = _lookup(target, "reset")
        if bad:
            return bad
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
