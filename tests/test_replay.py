"""One replay of the event log: the learner's view and the gradebook agree wherever the verdicts agree.

Random logs over one unit's questions (predictions right and wrong, reveals, checks of every verdict,
hints, resets of a question and of the unit, marks; in random order, from fixed seeds) are replayed
twice: as the learner's panel does (``progress.unit_state``, trusting the recorded verdicts) and as the
gradebook does (``verify.recompute``, every verdict recomputed with live torch). The recorded verdicts
are the ones the learner's API would have recorded, so the two readings must agree on every question.
"""

import random

import pytest

from grader import predict, reset, reveal
from grader.engine import progress
from grader.engine.question import of_unit
from grader.engine.store import Event
from grader.instructor.grading import verify
from grader.learner.panels import UnitPanel

UNITS = ["00", "01"]
LOGS = 150


def _answers(q):
    """(the stored form of torch's answer, stored wrong answers) for a question, from one live truth."""
    truth = verify.truth_of(q)
    right = q.kind.encode(truth)
    assert q.kind.agrees(truth, q.kind.read(right)), f"{q.qid}: torch's own answer does not read back"
    wrong = []
    for answer in q.kind.wrong_answers(truth):
        try:
            value = q.kind.read(answer)
        except Exception:
            continue
        if not q.kind.agrees(truth, value):
            wrong.append(q.kind.encode(value))
    assert wrong, f"{q.qid}: no readable wrong answer"
    return right, wrong


@pytest.fixture(scope="module")
def answers():
    return {q.qid: _answers(q) for u in UNITS for q in of_unit(u) if q.role != "exercise"}


def _log(unit: str, rng: random.Random, answers: dict, exercise_verdict: str) -> list[Event]:
    """A random log whose recorded verdicts are those the learner's API records (judged as it judges)."""
    questions = of_unit(unit)
    events: list[Event] = []

    def add(qid, action, verdict, answer=None):
        events.append(Event(len(events) + 1, float(len(events)), unit, qid, action, answer, verdict, "", "s", {}))

    for _ in range(rng.randint(1, 45)):
        state = progress.unit_state(unit, events)
        roll = rng.random()
        if roll < 0.05:
            add(None, "reset", "recorded")
            continue
        if roll < 0.10:
            add(None, "mark", "refused" if state.missing() else "passed")
            continue
        q = rng.choice(questions)
        st = state.questions[q.qid]
        if roll < 0.18:
            add(q.qid, "reset", "recorded")
        elif q.role == "predict":
            right, wrong = answers[q.qid]
            if rng.random() < 0.5:
                answer = right if rng.random() < 0.5 else rng.choice(wrong)
                add(q.qid, "predict", "locked" if st.revealed and rng.random() < 0.5 else "recorded", answer)
            else:
                verdict = "revealed"
                if st.predicted:
                    verdict = "correct" if st.prediction == right else "incorrect"
                add(q.qid, "reveal", verdict, st.prediction if st.predicted else None)
        elif rng.random() < 0.2:
            if st.hints < len(q.hints):
                add(q.qid, "hint", "recorded", st.hints + 1)
        elif q.role == "exercise":
            add(q.qid, "check", exercise_verdict)
        else:
            right, wrong = answers[q.qid]
            kind = rng.random()
            if kind < 0.35:
                add(q.qid, "check", "correct", right)
            elif kind < 0.7:
                add(q.qid, "check", "incorrect", rng.choice(wrong))
            else:
                add(q.qid, "check", rng.choice(["unanswered", "invalid"]))
    return events


@pytest.mark.parametrize("unit", UNITS)
def test_the_learner_and_the_gradebook_read_every_log_alike(unit, answers):
    rng = random.Random(2026 + int(unit))
    seen_records: set[str] = set()
    for n in range(LOGS):
        verdict = rng.choice(["correct", "incorrect"])
        events = _log(unit, rng, answers, verdict)
        exercises = {
            q.qid: verify.ExerciseVerdict(verdict)
            for q in of_unit(unit)
            if q.role == "exercise" and any(e.qid == q.qid and e.action == "check" for e in events)
        }
        mine = progress.unit_state(unit, events)
        graded = verify.recompute(unit, events, exercises)
        why = f"log {n} of unit {unit}: " + "; ".join(f"{e.qid} {e.action} {e.verdict} {e.answer!r}" for e in events)
        assert not any("verdict recomputed" in f for f in graded.findings), why
        assert mine.counts() == graded.state.counts(), why
        assert mine.missing() == graded.missing and graded.passed == (not mine.missing()), why
        for qid, ours in mine.questions.items():
            theirs = graded.state.questions[qid]
            assert (ours.record, ours.done, ours.passed, ours.attempts, ours.hints) == (
                theirs.record,
                theirs.done,
                theirs.passed,
                theirs.attempts,
                theirs.hints,
            ), f"{qid}: {why}"
            assert graded.attempts.get(qid, 0) == ours.attempts and graded.hints.get(qid, 0) == ours.hints, why
            if graded.flags.get(qid) == "predicted after reveal":
                assert ours.peeked, why
            seen_records.add(ours.record)
        if mine.passed and mine.missing():
            assert "the kernel's record says marked passed; the recomputed verdicts do not" in graded.findings
    # the logs reached the records that matter (not only "not attempted")
    wanted = {"predicted, correct", "predicted, incorrect", "revealed without prediction", "not answered"}
    assert wanted <= seen_records, seen_records
    assert any(r.startswith("predicted after reveal") for r in seen_records), seen_records
    assert any("attempt" in r for r in seen_records), seen_records


def test_an_unanswered_or_unreadable_check_is_not_an_attempt():
    q = next(q for q in of_unit("00") if q.role == "self-test")
    right, wrong = _answers(q)
    rows = [("unanswered", None), ("invalid", None), ("incorrect", wrong[0]), ("unanswered", None), ("correct", right)]
    rows += [("incorrect", wrong[0])]  # after the pass: not an attempt either
    events = [Event(i, float(i), "00", q.qid, "check", a, v, "", "s", {}) for i, (v, a) in enumerate(rows)]
    graded = verify.recompute("00", events, {})
    assert graded.attempts == {q.qid: 2} and graded.state.questions[q.qid].record == "correct on attempt 2"
    assert progress.unit_state("00", events).questions[q.qid].record == "correct on attempt 2"


def test_the_panel_header_agrees_with_its_rows_after_a_reset_of_a_revealed_question():
    """Issue 27: "predicted before the reveal 1/2" beside "predicted after reveal, correct"."""
    predict("00.warmup-add", 5)
    first = reveal("00.warmup-add")
    answer = first.expected
    reset("00.warmup-add")
    predict("00.warmup-add", answer)
    assert reveal("00.warmup-add").verdict == "correct"
    predict("00.warmup-flag", True)
    reveal("00.warmup-flag")
    panel = UnitPanel("00", interactive=False)
    state = panel.state()
    assert state.questions["00.warmup-add"].record == "predicted after reveal, correct"
    honest = [q for q in state.questions.values() if q.record.startswith("predicted, ")]
    assert state.counts()["predicted"] == len(honest) == 1
    assert "predicted before the reveal 1/2" in panel.text() and "predicted before the reveal 1/2" in panel.html()
