"""Recompute every verdict of one submission from its recorded data, with live torch in the grading process.

The learner's kernel wrote the progress store, so nothing in it is a verdict:
each event is read as plain data (the answer as a JSON literal, its time and
order), every answer is re-read by its kind and compared with torch's live
answer computed here, where no submitted code has run; exercises are judged
from the per-case results that :mod:`grader.instructor.grading.learner_function` sent back
(values only: the truth is computed here). "Marked passed" then comes from
:meth:`grader.engine.progress.UnitState.missing` on the recomputed events, never from
a ``mark`` event. Anything the kernel recorded differently is a finding.

A generated self-test (:mod:`grader.engine.variants`) is judged on the learner's own programs, and the gradebook,
not the copy, decides which: the answers (those the copy's records carry, then the run's own) are replayed in
order, each judged on the program its place in that order asks (the first on program 0, the next on a fresh one
after every graded answer until the question is passed), regenerated here from the identity, never from a number
or seed the notebook carries. A record whose numbers do not follow its answers is a finding. Programs after the
first avoid the answers already given (:func:`grader.engine.variants.answered_before`), so a pass reached with an
answer given before earns nothing (:data:`grader.engine.variants.REPEATED`). A class handed a version from before
variants (``canonical``) is judged on the canonical programs.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from grader.engine import identity as identities
from grader.engine import progress, variants
from grader.engine.cases import fingerprint
from grader.engine.kinds import Function
from grader.engine.question import of_unit
from grader.engine.store import Event
from grader.engine.verdicts import GRADED, Reading, Verdict, graded, read_answer

# torch's global state: one recomputation at a time. Generating an exercise's cases is recomputation too (it runs
# torch, and some exercises' checks switch tools off while they run): a case list made while another thread's
# check had torch.func blocked came out with other cases, and a right function "differed from torch".
LOCK = threading.RLock()
_TRUTHS: dict[Any, Any] = {}
REPLAYED = "replayed"  # an event's detail key: its program number and seed were set by this gradebook's replay


def new_run() -> None:
    """Forget the answers computed so far: each grading run computes torch's answers afresh."""
    with LOCK:
        _TRUTHS.clear()


def truth_of(q, *case, key=None):
    """torch's live answer for ``q`` (on ``case``), computed once per grading run (see :func:`new_run`)."""
    k = (q.qid, key)
    with LOCK:
        if k not in _TRUTHS:
            _TRUTHS[k] = q.run(*case)
        return _TRUTHS[k]


def variant_of(q, e: Event | None, identity: str | None, canonical: bool = False) -> variants.Variant | None:
    """The program ``e`` answered, regenerated for ``identity`` from the program number the event names (0 where
    it names none); the canonical program where ``canonical`` or no identity is known; None if ``q`` draws none."""
    if q.program is None:
        return None
    if canonical or identity is None:
        return variants.make(q.program, q.qid, None, None)
    number = variants.number_in(e.detail if e is not None else None)
    seed = e.detail.get("seed") if e is not None and isinstance(e.detail, dict) and e.detail.get(REPLAYED) else None
    if isinstance(seed, int) and number is not None:  # drawn here by the replay (_Replay): its own seed, no copy's
        return variants.Variant(q.qid, number, seed, q.program(variants.Draw(seed)))
    return variants.make(q.program, q.qid, identity, number if number is not None else 0)


def truth_on(q, variant: variants.Variant | None):
    """torch's live answer for ``q`` on ``variant``'s program (the canonical one where None), once per run."""
    if variant is None:
        return truth_of(q)
    return truth_of(q, variant.program, key=("variant", variant.seed))


@dataclass
class ExerciseVerdict:
    verdict: Verdict  # correct, incorrect, unanswered, invalid, not recomputed
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
    attempts: dict = field(default_factory=dict)  # qid -> graded checks up to and including the first pass
    hints: dict = field(default_factory=dict)  # qid -> hints shown
    answers: dict = field(default_factory=dict)  # qid -> the learner's answer (JSON form): prediction or last check
    exercises: dict = field(default_factory=dict)  # qid -> ExerciseVerdict
    variants: dict = field(default_factory=dict)  # qid -> the Variant a generated self-test was last judged on
    events: list = field(default_factory=list)  # the events as judged: a self-test's numbered by the replay


def judge_exercise(q, lines: list) -> ExerciseVerdict:
    """Compare what the learner's function returned (serialised, per case) with torch's answer, case by case."""
    kind: Function = q.kind
    with LOCK:  # made once and cached in the kind, never beside another thread's recomputation
        cases = kind.cases()
        if _differ(cases, lines):  # this process's cached list may be stale: make it once more, afresh
            cases = kind.remake_cases()
    seen: dict[int, dict] = {}
    for line in lines:
        if not isinstance(line, dict) or not isinstance(line.get("i"), int) or not 0 <= line["i"] < len(cases):
            return ExerciseVerdict("incorrect", "the exercise runner sent back something that is not a case result")
        if line["i"] in seen:
            return ExerciseVerdict("incorrect", "the exercise runner sent back a case twice")
        if "case" in line and line["case"] != fingerprint(cases[line["i"]]):
            # the runner's case list is not this process's: comparing would blame the learner for the grader
            return ExerciseVerdict(
                "not recomputed",
                f"case {line['i'] + 1} of the exercise runner ({str(line.get('label', '?'))[:80]}) is not the "
                f"grader's case {line['i'] + 1} ({cases[line['i']].label}): the two processes made different case "
                "lists, so nothing was compared (the grader's fault, not the learner's)",
            )
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
        if line.get("case") is None:
            return ExerciseVerdict(
                "incorrect", f"{passed} of {len(cases)} cases passed; case {i + 1} came back unnamed"
            )
        try:
            value = kind.returns.read(line.get("value"))
        except Exception:  # BadAnswer, Unanswered, or anything else the data makes it raise
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


def _differ(cases: list, lines: list) -> bool:
    """Whether a runner's line names a case other than the one at its index in ``cases``."""
    return any(
        isinstance(line, dict)
        and isinstance(line.get("i"), int)
        and 0 <= line["i"] < len(cases)
        and "case" in line
        and line["case"] != fingerprint(cases[line["i"]])
        for line in lines
    )


def _read(q, answer) -> tuple[Any, Verdict | None]:
    """A recorded answer as the kind reads it: (its value, None), or (None, why it has none: "unanswered" or
    "invalid"; an answer the reading fails on in any other way, being data, is "invalid" too)."""
    try:
        reading = read_answer(lambda: q.kind.read_recorded(answer))
    except Exception:
        reading = Reading(unread="invalid")
    return reading.value, reading.unread


def _legacy(value) -> bool:
    return bool(getattr(value, "legacy", False))


class Recomputing(progress.Judge):
    """The gradebook's judge for :func:`grader.engine.progress.replay`: every verdict recomputed with live
    torch from the recorded answer; where it differs from the kernel's record, the question is noted."""

    def __init__(
        self,
        exercises: dict[str, ExerciseVerdict],
        legacy_ok: bool = False,
        identity: str | None = None,
        canonical: bool = False,
    ):
        self.exercises = exercises
        self.legacy_ok = legacy_ok  # the class was handed a version whose error questions took words
        self.identity = identity  # whose programs a generated self-test's answers are judged on
        self.canonical = canonical  # the class was handed a version from before variants
        self.variants: dict[str, variants.Variant] = {}  # qid -> the program its latest graded answer was judged on
        self.differs: set[str] = set()
        self.findings: list[str] = []
        self.answers: dict[str, Any] = {}
        self.kernel_marked = False

    def prediction(self, q, e: Event) -> bool:
        if e.verdict != "recorded":
            return False
        if _read(q, e.answer)[1]:  # the kernel never records a prediction it cannot read
            self.differs.add(q.qid)
            return False
        self.answers[q.qid] = e.answer
        return True

    def reveal(self, q, e: Event, state: progress.QuestionState) -> Verdict:
        verdict: Verdict = "revealed"
        if state.predicted:
            value, bad = _read(q, state.prediction)
            verdict = graded(not bad and self._agrees(q, value))
            if _legacy(value):  # an older form: its kernel judged it by older rules, which is no finding
                return verdict
        if verdict != e.verdict and e.verdict != "recorded":  # a sealed grading run records, it does not judge
            self.differs.add(q.qid)
        return verdict

    def check(self, q, e: Event) -> Verdict:
        if q.role == "exercise":
            mine = self.exercises.get(q.qid, ExerciseVerdict("not recomputed"))
            if mine.verdict != e.verdict and e.verdict in GRADED and mine.verdict in GRADED:
                self.differs.add(q.qid)
            return mine.verdict
        self.answers[q.qid] = e.answer
        variant = variant_of(q, e, self.identity, self.canonical)
        verdict: Verdict
        if e.answer is None:
            verdict = e.verdict if e.verdict in ("unanswered", "invalid", "error") else "unanswered"
        else:
            value, bad = _read(q, e.answer)
            verdict = bad or graded(self._agrees(q, value, variant))
            if variant is not None and verdict in GRADED:
                self.variants[q.qid] = variant
            if _legacy(value):
                return verdict
        if verdict != e.verdict and e.verdict != "recorded":  # a sealed grading run records, it does not judge
            self.differs.add(q.qid)
        return verdict

    def review(self, q, e: Event) -> Verdict:
        """A review is no part of a unit's grade: the gradebook never counts one."""
        return "unknown"

    def _agrees(self, q, value, variant: variants.Variant | None = None) -> bool:
        """Whether ``value`` agrees with torch's live answer (on ``variant``'s program, for a generated self-test);
        an answer in an older form (``legacy``) earns what it earned under the question it answered only for a
        class handed that version."""
        truth = truth_on(q, variant)
        if _legacy(value) and self.legacy_ok:
            return bool(q.kind.agrees_as_answered(truth, value))
        return bool(q.kind.agrees(truth, value))

    def mark(self, e: Event) -> bool:
        """A mark event is never a pass here: "marked passed" comes from what is missing."""
        self.kernel_marked = self.kernel_marked or e.verdict == "passed"
        return False

    def stray(self, e: Event, q) -> None:
        if e.action == "answer-key":
            self.findings.append(f"a cell called the experiment of {e.qid} (its answer key), sealed while grading")
        elif q is not None:
            self.findings.append(f"an event {str(e.action)[:20]!r} that {q.qid} does not take")
        elif e.qid is not None:
            self.findings.append(f"an event names {str(e.qid)[:40]!r}, not a question of this unit")


def recompute(
    unit: str,
    events: list[Event],
    exercises: dict[str, ExerciseVerdict],
    legacy_ok: bool = False,
    identity: str | None = None,
    carried: dict[str, variants.Carried] | None = None,
    mastery: int | None = None,
    canonical: bool = False,
    revealed_first: dict[str, str] | None = None,
) -> Recomputed:
    """The unit's verdicts from the recorded data alone (see the module's text): the learner's own replay
    of the log (:func:`grader.engine.progress.replay`) with the :class:`Recomputing` judge. ``legacy_ok``:
    the class was handed a version whose error questions took words (``versions.BEFORE_CAUSES``). ``identity``:
    whose programs the generated self-tests are judged on; ``carried``: the answers the copy's records say were
    given before (each judged on that learner's program of its number, before the run's own); ``mastery``: right
    answers in a row that pass; ``canonical``: the class was handed a version from before variants;
    ``revealed_first``: the predictions the copy shows were made after torch's answer (:mod:`.prediction_order`),
    whatever the run's own order: "predicted" is never read against what the copy shows."""
    questions = {q.qid: q for q in of_unit(unit)}
    mine = [e for e in events if e.unit == unit]
    findings = _out_of_order(mine)
    repeated: dict[str, str] = {}
    if not canonical and identity is not None:
        mine, found, repeated = _own_programs(questions, mine, identity, carried or {}, variants.mastery(mastery))
        findings += found
    elif canonical:  # every answer is to the one program the version asked: no program numbers in its record
        mine = [_without_number(questions, e) for e in mine]
    sessions = {e.session for e in events if e.unit == unit and e.session}  # the run's own, not a record's answers
    mine += _exercises_not_recorded(unit, questions, mine, exercises)
    judge = Recomputing(exercises, legacy_ok, identity, canonical)
    state = progress.replay(unit, mine, judge, mastery)
    findings += judge.findings
    missing = state.missing()
    if judge.differs:
        findings.append("verdict recomputed: differs from the kernel's record for " + ", ".join(sorted(judge.differs)))
    if judge.kernel_marked and missing:
        findings.append("the kernel's record says marked passed; the recomputed verdicts do not")
    if len(sessions) > 1:
        findings.append(f"events from {len(sessions)} kernel sessions (one run has one)")
    flags = _flags(state, revealed_first or {}, repeated, findings)
    return Recomputed(
        unit,
        state,
        missing,
        passed=not missing,
        flags=flags,
        findings=list(dict.fromkeys(findings)),
        attempts={qid: st.attempts for qid, st in state.questions.items() if st.attempts},
        hints={qid: st.hints for qid, st in state.questions.items() if st.hints},
        answers=judge.answers,
        exercises=dict(exercises),
        variants=dict(judge.variants),
        events=mine,
    )


def _out_of_order(events: list[Event]) -> list[str]:
    last_time = None
    for e in events:
        if last_time is not None and e.time < last_time:
            return ["events out of order: a later event carries an earlier time"]
        last_time = e.time if last_time is None else max(last_time, e.time)
    return []


def _exercises_not_recorded(unit: str, questions: dict, events: list[Event], exercises: dict) -> list[Event]:
    """A check for each exercise whose function the runner found correct but whose check cell never recorded (the
    kernel died or was stopped first): the function still counts."""
    checked = {e.qid for e in events if e.action == "check"}
    return [
        Event(0, 0.0, unit, qid, "check", None, "correct", "", "", {})
        for qid, verdict in exercises.items()
        if (q := questions.get(qid)) is not None
        and q.role == "exercise"
        and qid not in checked
        and verdict.verdict == "correct"
    ]


def _flags(state: progress.UnitState, revealed_first: dict, repeated: dict, findings: list[str]) -> dict[str, str]:
    """Per question, what the gradebook says over the record: a prediction after the reveal (the replay's, or what
    the copy shows: :mod:`.prediction_order`), a reveal with none before it, a self-test passed by an answer given
    before. Findings are added for each."""
    flags: dict[str, str] = {}
    for qid, st in state.questions.items():
        if st.role == "predict" and st.peeked:
            flags[qid] = "predicted after reveal"
        elif st.role == "predict" and st.revealed and not st.predicted_before_reveal:
            flags[qid] = "revealed without prediction"
    for qid, why in revealed_first.items():
        shown = state.questions.get(qid)
        if shown is None or shown.role != "predict" or flags.get(qid) == "predicted after reveal":
            continue
        flags[qid] = "predicted after reveal" if shown.predicted else "revealed without prediction"
        findings.append(f"{qid}: the copy shows torch's answer before the prediction ({why})")
    for qid, note in repeated.items():
        passed = state.questions.get(qid)
        if passed is not None and passed.passed:
            flags[qid] = f"{passed.record}; {note}"
    late = [qid for qid, flag in flags.items() if flag == "predicted after reveal"]
    if late:
        findings.append("predicted after reveal: " + ", ".join(late))
    return flags


def _without_number(questions: dict, e: Event) -> Event:
    q = questions.get(e.qid) if e.qid else None
    if q is None or q.program is None or not isinstance(e.detail, dict) or "variant" not in e.detail:
        return e
    detail = {k: v for k, v in e.detail.items() if k not in ("variant", "seed")}
    return Event(e.id, e.time, e.unit, e.qid, e.action, e.answer, e.verdict, e.torch, e.session, detail)


def _own_programs(
    questions: dict, events: list[Event], identity: str, carried: dict[str, variants.Carried], mastery: int
) -> tuple[list[Event], list[str], dict[str, str]]:
    """The events of the generated self-tests as the gradebook reads them: the answers the copy's records carry
    first, then the run's own, each numbered here by replaying them in order (see the module's text); a record
    answered under another identity, or whose numbers were not the replay's, is a finding. Also, per self-test passed
    with an answer given before (right on a program drawn to avoid it only where no draw could), the note that
    earns it nothing."""
    mine = identities.fingerprint(identity)
    findings: list[str] = []
    first_time = min((e.time for e in events), default=0.0)
    ordered: list[Event] = []
    for qid, c in sorted(carried.items()):
        q = questions.get(qid)
        if q is None or q.program is None:
            continue
        if c.fingerprint != mine:  # answers to someone else's programs: only the cell's answer, re-run, counts
            findings.append(
                f"{qid}: the copy's record was answered under another identity (its answers there are not counted; "
                "the cell's answer is judged on this learner's own program)"
            )
            continue
        avoiding = bool(c.drawn_for)  # a record made before programs avoided earlier answers draws as it did then
        for number, answer in c.answers:
            detail = {"variant": number, "carried": True, "avoiding": avoiding}
            ordered.append(Event(0, first_time, q.unit, qid, "check", answer, "recorded", "", "", detail))
    ordered += events
    replays = {qid: _Replay(q, identity, mastery) for qid, q in questions.items() if q.program is not None}
    out = []
    for e in ordered:
        q = questions.get(e.qid) if e.qid else None
        if q is not None and q.program is not None and e.action == "check":
            e, finding = replays[q.qid].number(e)
            if finding:
                findings.append(f"{q.qid}: {finding}")
        out.append(e)
    repeated = {qid: r.repeated for qid, r in replays.items() if r.repeated}
    return out, list(dict.fromkeys(findings)), repeated


class _Replay:
    """One generated self-test's answers, numbered in order as the learner's kernel numbers them: program 0 first,
    a fresh one after each graded answer until ``mastery`` right answers in a row pass it (then it stays)."""

    def __init__(self, q, identity: str, mastery: int):
        self.q, self.identity, self.mastery = q, identity, mastery
        self.n = self.streak = 0
        self.passed = False
        self.given: list = []  # the graded answers so far, as recorded, in order
        self.values: list = []  # the same, read by the kind
        self.repeated = ""

    def number(self, e: Event) -> tuple[Event, str]:
        """``e`` with the program number the replay asks (and its seed); a finding where its own number differs."""
        claimed = variants.number_in(e.detail)
        avoid = None
        if self.n and (e.detail or {}).get("avoiding", True) and self.given:
            avoid = variants.answered_before(self.q.kind, self.given, lambda v: truth_on(self.q, v))
        v = variants.make(self.q.program, self.q.qid, self.identity, self.n, avoid=avoid)
        detail = {k: val for k, val in dict(e.detail or {}).items() if k not in ("variant", "seed", "avoiding")}
        detail.update(variant=self.n, seed=v.seed, **{REPLAYED: True})
        numbered = Event(e.id, e.time, e.unit, e.qid, e.action, e.answer, e.verdict, e.torch, e.session, detail)
        finding = ""
        if (e.detail or {}).get("carried") and claimed is not None and claimed != self.n and not self.passed:
            finding = "the copy's record numbers its answers otherwise than their order does: judged in their order"
        value, bad = _read(self.q, e.answer) if e.answer is not None else (None, "unanswered")
        if bad or self.passed:
            return numbered, finding
        right = _agrees_safely(self.q, truth_on(self.q, v), value)
        self.given.append(e.answer)
        self.values.append(value)
        self.streak = self.streak + 1 if right else 0
        if not right or self.streak < self.mastery:
            self.n += 1
            return numbered, finding
        self.passed = True
        start = len(self.values) - self.streak  # the row of right answers that passed it
        if any(
            _agrees_safely(self.q, earlier, mine)
            for i, mine in enumerate(self.values[start:], start)
            for earlier in self.values[:i]
        ):
            self.repeated = f"{variants.REPEATED}: no points"
        return numbered, finding


def _agrees_safely(q, truth, value) -> bool:
    try:
        return bool(q.kind.agrees(truth, value))
    except Exception:  # noqa: BLE001 - an answer that cannot be compared is not right
        return False


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
