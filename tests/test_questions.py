"""Every question: wrong answers are refused, with the note of a known misconception.

That torch's own answer passes every question (and the reference implementation every exercise) is
tested in tests/test_isolation.py, in two unusual learner states at once with the state's survival.

Wrong answers are derived from the live truth by each kind (every other choice, numbers outside
tolerance, a name added or removed, a sequence cut or reordered, the opposite boolean, the wrong
place of an error). Exercises are tried with plausible bugs, each of which must be refused.
"""

import pytest

from grader import check, predict, reveal
from grader.engine.kinds import BadAnswer, Function
from grader.engine.question import all_questions, wrong_answer
from grader.learner.api import repeats, variant_of
from tests.reference import BUGGY, REFERENCE
from tests.truths import asked_now, truth_of

QUESTIONS = [q for q in all_questions() if not isinstance(q.kind, Function)]
EXERCISES = [q for q in all_questions() if isinstance(q.kind, Function)]


def _reads(q, answer) -> bool:
    try:
        q.kind.read(answer)
    except BadAnswer:
        return False
    return True


def grade(q, answer):
    if q.role == "predict":
        predict(q.qid, answer)
        return reveal(q.qid)
    return check(q.qid, answer)


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.qid)
def test_wrong_answers_derived_from_the_truth_are_refused(q):
    truth = truth_of(q)
    wrong = q.kind.wrong_answers(truth)
    assert wrong, f"{q.qid}: no wrong answers could be derived"
    for answer in wrong:
        try:
            q.kind.read(answer)
        except BadAnswer:
            continue
        assert not q.kind.agrees(truth, q.kind.read(answer)), f"{q.qid} accepted {answer!r}"
    if q.role != "predict":  # through the whole check path too, once (each check runs the experiment again)
        if q.program is not None:  # a generated self-test: wrong answers on the program this learner is asked
            wrong = q.kind.wrong_answers(asked_now(q))
        readable = [a for a in wrong if _reads(q, a)]
        assert readable and not check(q.qid, readable[0]).passed


def test_every_exercise_has_known_good_and_known_bad_implementations():
    assert {q.qid for q in EXERCISES} == set(REFERENCE) == set(BUGGY)


@pytest.mark.parametrize(
    "case", [(q, bug) for q in EXERCISES for bug in BUGGY.get(q.qid, [])], ids=lambda c: f"{c[0].qid}:{c[1].__name__}"
)
def test_exercise_buggy_implementations_are_refused(case):
    q, bug = case
    result = check(q.qid, bug)
    assert result.verdict == "incorrect", str(result)
    labels = dict(result.rows)
    assert "smallest failing case" in labels and "torch says" in labels


# --- declarations a learner can trust: self-tests not guessable, hints, misconception notes ------------

SELF_TESTS = [q for q in all_questions() if q.role == "self-test"]
WITH_NOTES = [q for q in all_questions() if q.misconceptions]


@pytest.mark.parametrize("q", SELF_TESTS, ids=lambda q: q.qid)
def test_self_test_is_not_guessable_by_retrying(q):
    from grader.engine.kinds import Boolean, Choice, Error

    assert not isinstance(q.kind, Boolean), f"{q.qid}: a True/False self-test is passed by retrying"
    if isinstance(q.kind, Choice):
        assert len(q.kind.options) >= 4, f"{q.qid}: a choice self-test needs at least four options"
    if isinstance(q.kind, Error):
        assert q.kind.causes or len(q.kind.places) >= 4, (
            f"{q.qid}: an error self-test needs four places or a choice of causes"
        )


@pytest.mark.parametrize("q", [q for q in all_questions() if q.role != "predict"], ids=lambda q: q.qid)
def test_exercises_and_self_tests_have_graded_hints(q):
    assert len(q.hints) >= 2, f"{q.qid}: give at least two hints, from a nudge to the mechanism"
    assert len(set(q.hints)) == len(q.hints)


@pytest.mark.parametrize("q", WITH_NOTES, ids=lambda q: q.qid)
def test_misconception_answers_are_wrong_and_get_their_note(q):
    truth = truth_of(q)
    from grader import reset

    for wrong, note in q.misconceptions:
        reset(q.qid)
        program = variant_of(q).program if q.program is not None else None  # the program this learner is asked
        truth = asked_now(q) if program is not None else truth
        answer = wrong_answer(q, wrong, truth, program)
        if answer is None:  # a trap this learner's program does not set (tests/test_variants.py draws them all)
            continue
        value = q.kind.read_misconception(answer)
        if getattr(value, "cause", "") is None and getattr(q.kind, "causes", ()) and value.where != "no error":
            value = q.kind.read((value.where, q.kind.causes[0].label))  # a place's note holds for any cause
        assert not q.kind.agrees(truth, value), f"{q.qid}: the misconception {answer!r} is torch's answer"
        result = grade(q, q.kind.encode(value))
        # a note the why line already says is shown once, as the why line (grader.learner.api.repeats)
        said = note in result.message or (repeats(note, q.explain) and q.explain in str(result))
        assert result.verdict == "incorrect" and said, (q.qid, str(result))
