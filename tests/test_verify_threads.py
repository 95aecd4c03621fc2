"""Batch grading judges several notebooks in threads of one process: torch's work there is one at a time.

The loaded CI run of stop 37 graded unit 06's solution "0 of 24 cases passed; case 1 differs from torch": its
cases were generated in one thread while another thread's reference check of 06.hvp had torch.func switched off
(unit06.cases.autograd_grad_only), so that thread's case list held other programs than the learner's run.
"""

from __future__ import annotations

from types import SimpleNamespace

from grader.instructor.grading import verify


class _Kind:
    def __init__(self):
        self.owned = []

    def cases(self):
        self.owned.append(verify.LOCK._is_owned())
        return []


def test_an_exercises_cases_are_made_under_the_recomputation_lock():
    kind = _Kind()
    q = SimpleNamespace(qid="99.fake", kind=kind)
    assert verify.judge_exercise(q, []).note == "no case ran"
    assert kind.owned == [True]


def test_a_truth_is_computed_under_the_lock_that_case_generation_takes():
    seen = []
    q = SimpleNamespace(qid="99.fake-truth", run=lambda *case: seen.append(verify.LOCK._is_owned()) or 42)
    assert verify.truth_of(q, key=0) == 42 and verify.truth_of(q, key=0) == 42
    assert seen == [True]  # computed once, holding the lock
