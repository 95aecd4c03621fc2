"""Every question: its live experiment runs, torch's answer is accepted, and wrong answers are refused.

Wrong answers are derived from the live truth by each kind (every other choice, numbers outside
tolerance, a name added or removed, a sequence cut or reordered, the opposite boolean, the wrong
place of an error). Exercises are tried with a known-good implementation and with plausible bugs.
"""
import pytest

from grader import check, predict, reveal
from grader.kinds import BadAnswer, Function
from grader.question import all_questions
from tests.reference import BUGGY, REFERENCE

QUESTIONS = [q for q in all_questions() if not isinstance(q.kind, Function)]
EXERCISES = [q for q in all_questions() if isinstance(q.kind, Function)]


def grade(q, answer):
    if q.role == "predict":
        predict(q.qid, answer)
        return reveal(q.qid)
    return check(q.qid, answer)


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.qid)
def test_torchs_own_answer_passes(q):
    truth = q.run()
    assert grade(q, q.kind.encode(truth)).passed


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.qid)
def test_wrong_answers_derived_from_the_truth_are_refused(q):
    truth = q.run()
    wrong = q.kind.wrong_answers(truth)
    assert wrong, f"{q.qid}: no wrong answers could be derived"
    for answer in wrong:
        try:
            q.kind.read(answer)
        except BadAnswer:
            continue
        assert not q.kind.agrees(truth, q.kind.read(answer)), f"{q.qid} accepted {answer!r}"
    if q.role != "predict":
        assert not any(check(q.qid, a).passed for a in wrong)


def test_every_exercise_has_known_good_and_known_bad_implementations():
    assert {q.qid for q in EXERCISES} == set(REFERENCE) == set(BUGGY)


@pytest.mark.parametrize("q", EXERCISES, ids=lambda q: q.qid)
def test_exercise_reference_passes(q):
    result = check(q.qid, REFERENCE[q.qid])
    assert result.passed, str(result)


@pytest.mark.parametrize("case", [(q, bug) for q in EXERCISES for bug in BUGGY.get(q.qid, [])],
                         ids=lambda c: f"{c[0].qid}:{c[1].__name__}")
def test_exercise_buggy_implementations_are_refused(case):
    q, bug = case
    result = check(q.qid, bug)
    assert result.verdict == "incorrect", str(result)
    labels = dict(result.rows)
    assert "smallest failing case" in labels and "torch says" in labels
