"""Every exercise's result survives the trip the gradebook sends it on: the learner's function runs in a
contained process, its result is encoded, crosses as JSON, and is read and judged in the grading process.

A kind whose ``encode`` writes something its ``read`` refuses makes every case "could not be read" in the
gradebook while ``check`` passes it in the notebook (03.nonfinite-watch and unit 11's three exercises did).
"""

from __future__ import annotations

import json

import pytest

from grader.engine import limits, torch_state
from grader.engine.cases import fingerprint
from grader.engine.kinds import Function
from grader.engine.question import all_questions
from grader.instructor.grading.verify import judge_exercise
from tests.reference import REFERENCE

EXERCISES = [q for q in all_questions() if isinstance(q.kind, Function)]


def _lines(q, fn, cases: int) -> list[dict]:
    """What learner_function.main sends back for ``fn`` on the first ``cases`` cases, as the JSON it writes."""
    kind = q.kind
    lines = []
    for i, case in enumerate(kind.cases()[:cases]):
        with torch_state.clean_room():
            ns = case.fresh()
        outcome = limits.call(kind.call, fn, case, ns, seconds=60)
        assert outcome.ok, f"{q.qid} case {i + 1}: {outcome.problem}"
        value = kind.returns.encode(kind.returns.read(kind.convert(outcome.value, case, ns)))
        lines.append(json.loads(json.dumps({"qid": q.qid, "i": i, "case": fingerprint(case), "value": value})))
    return lines


def test_every_exercise_has_a_reference():
    assert {q.qid for q in EXERCISES} <= set(REFERENCE)


@pytest.mark.parametrize("q", EXERCISES, ids=lambda q: q.qid)
def test_the_reference_result_reads_back_and_agrees(q):
    kind = q.kind
    n = min(4, len(kind.cases()))
    lines = _lines(q, REFERENCE[q.qid], n)
    # judge_exercise wants every case; judge the first n through the same reading and agreement
    for line in lines:
        value = kind.returns.read(line["value"])
        truth = q.run(kind.cases()[line["i"]])
        assert kind.returns.agrees(truth, value), f"{q.qid} case {line['i'] + 1}: {kind.returns.show(value)}"


@pytest.mark.parametrize(
    "q", [q for q in EXERCISES if q.qid in ("03.nonfinite-watch", "11.round-ste")], ids=lambda q: q.qid
)
def test_the_whole_judgement_passes_the_reference(q):
    lines = _lines(q, REFERENCE[q.qid], len(q.kind.cases()))
    verdict = judge_exercise(q, lines)
    assert verdict.verdict == "correct", verdict.note


def test_a_result_computed_on_another_case_is_not_compared_and_says_whose_fault_it_is():
    """The runner names each result's case: a case list that differs between the two processes is a grader
    fault, never "differs from torch" against the learner (the CI of stop 37 graded 06.hvp 0 of 24)."""
    q = next(q for q in EXERCISES if q.qid == "03.nonfinite-watch")
    lines = _lines(q, REFERENCE[q.qid], len(q.kind.cases()))
    lines[0], lines[1] = dict(lines[0], case=lines[1]["case"]), dict(lines[1], case=lines[0]["case"])
    verdict = judge_exercise(q, lines)
    assert verdict.verdict == "not recomputed" and "the grader's fault" in verdict.note
    unnamed = [{k: v for k, v in line.items() if k != "case"} for line in _lines(q, REFERENCE[q.qid], 1)]
    assert judge_exercise(q, unnamed).verdict == "incorrect"


def test_a_case_list_bent_in_the_graders_own_process_is_made_again_before_anything_is_blamed():
    """A state left behind in the grading process (a learner's check, a test) may have bent the case list it
    cached; the runner's cases are made in a fresh process. The judge makes its own list once more before it
    gives up, and a mismatch that remains names both cases."""
    q = next(q for q in EXERCISES if q.qid == "03.nonfinite-watch")
    good = list(q.kind.cases())
    lines = _lines(q, REFERENCE[q.qid], len(good))
    try:
        q.kind._cases = list(reversed(good))  # what a bent generation would have cached
        assert judge_exercise(q, lines).verdict == "correct"
        assert [c.label for c in q.kind.cases()] == [c.label for c in good]
        lines[0] = dict(lines[0], case="0" * 16, label="another program")
        verdict = judge_exercise(q, lines)
        assert verdict.verdict == "not recomputed"
        assert "another program" in verdict.note and good[0].label in verdict.note
    finally:
        q.kind._cases = good
