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


def test_a_check_that_switches_torch_func_off_leaves_other_threads_and_the_graders_answers_alone():
    """unit06.autograd_grad_only refuses torch.func only to the thread running the learner's function; the
    grader's own answers call torch as it was when the unit was imported."""
    import threading

    import torch

    from grader.units.unit06 import cases

    case = cases.smooth_cases()[0]
    expected = cases.hvp_truth(case)
    seen = {}
    with cases.autograd_grad_only() as runs:
        try:
            torch.func.grad(lambda t: (t * t).sum())(torch.ones(2))
        except cases.BlockedTool:
            seen["here"] = "blocked"
        other = threading.Thread(target=lambda: seen.update(there=cases.hvp_truth(case), grad=torch.func.grad))
        other.start()
        other.join()
        seen["truth"] = cases.hvp_truth(case)
    assert seen["here"] == "blocked" and runs.blocked == ["torch.func.grad"]
    assert seen["there"] == seen["truth"] == expected
    assert torch.func.grad is cases.ORIGINAL["torch.func.grad"]


def test_each_grading_run_computes_torchs_answers_afresh():
    q = SimpleNamespace(qid="99.fake-run", run=lambda *case: object())
    first = verify.truth_of(q, key=0)
    verify.new_run()
    assert verify.truth_of(q, key=0) is not first
