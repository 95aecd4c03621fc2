"""After any reveal, check or exercise run, the learner's global torch state is exactly as it was."""

import contextlib

import pytest
import torch

from grader import check, predict, reveal
from grader.engine.kinds import Function
from grader.engine.question import all_questions
from grader.engine.torch_state import snapshot
from tests.reference import REFERENCE
from tests.truths import asked_now, truth_of


def run_one(q):
    if isinstance(q.kind, Function):
        return check(q.qid, REFERENCE[q.qid])
    # computed once per process (a generated self-test's on this learner's program); the reveal or check below
    # runs the experiment live
    truth = asked_now(q) if q.program is not None else truth_of(q)
    if q.role == "predict":
        predict(q.qid, q.kind.encode(truth))
        return reveal(q.qid)
    return check(q.qid, q.kind.encode(truth))


# Every question in two learner states: grad mode off together with anomaly mode, float64 and saved-tensor
# hooks, then inference mode. Each run gives torch's own answer (exercises: the reference implementation)
# through the learner's API, so this is also the test that torch's answer passes every question.
MODES = ["no_grad+anomaly+float64+hooks", "inference_mode"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("q", all_questions(), ids=lambda q: q.qid)
def test_torchs_answer_passes_and_the_learners_state_survives(q, mode):
    mine = torch.ones(3, requires_grad=True)
    (mine * 2).sum().backward()
    mine_grad = mine.grad.clone()
    counters = []
    hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: counters.append(1) or t, lambda t: t)
    torch.manual_seed(1234)
    rng = torch.get_rng_state()
    if mode == "inference_mode":
        context, hooked = torch.inference_mode(), contextlib.nullcontext()
    else:
        context, hooked = torch.no_grad(), hooks
        torch.set_anomaly_enabled(True, False)
        torch.set_default_dtype(torch.float64)
    try:
        with context, hooked:
            before = snapshot()
            version = mine._version
            result = run_one(q)
            assert result.passed, str(result)
            assert snapshot() == before, f"{q.qid} changed global torch state"
            assert counters == [], "a grader experiment ran under the learner's saved-tensor hooks"
            assert torch.equal(torch.get_rng_state(), rng), "the learner's RNG stream moved"
            assert mine._version == version and torch.equal(mine.grad, mine_grad)
    finally:
        torch.set_anomaly_enabled(False)
        torch.set_default_dtype(torch.float32)


def test_autocast_modes_hooks_switch_and_warn_only_do_not_reach_the_truth():
    from torch.overrides import TorchFunctionMode

    from grader.engine.question import get

    class FortyTwo(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return 42.0 if func is torch.Tensor.item else func(*args, **(kwargs or {}))

    square, walk = get("00.warmup-square"), get("01.closed-book-walk")
    plain = walk.run()
    with FortyTwo():
        assert square.run() == 6.0
        assert torch.tensor(1.0).item() == 42.0  # the learner's mode is back afterwards
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert walk.run() == plain
        assert torch.is_autocast_enabled("cpu")
    with torch.autograd.graph.disable_saved_tensors_hooks("mine"):
        assert square.run() == 6.0
        assert not torch._C._autograd._saved_tensors_hooks_is_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        square.run()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)


def test_loading_the_questions_leaves_the_learners_random_streams_alone():
    """... and imports nothing a learner's kernel did not ask for: building a first optimizer imports torch's
    compiler (torch._dynamo, and sympy with it), about a second of CPU in every kernel and grading process."""
    import subprocess
    import sys

    code = (
        "import random, sys, torch; torch.manual_seed(7); random.seed(7); a, b = torch.get_rng_state(), random.getstate();"
        "from grader.engine.question import all_questions; all_questions();"
        "print(torch.equal(a, torch.get_rng_state()) and b == random.getstate());"
        "print(sorted(m for m in ('torch._dynamo', 'sympy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split("\n")[:2] == ["True", "[]"], (out.stdout, out.stderr[-2000:])


def test_an_experiment_collects_its_own_garbage_and_leaves_the_collector_as_it_found_it():
    """clean_room freezes what was alive before it (so an experiment's gc.collect() costs what it made, not the
    whole process): a cycle made inside is still collected, nothing stays frozen afterwards, and a process that
    froze objects itself keeps them frozen."""
    import gc
    import weakref

    from grader.engine.torch_state import clean_room

    class Node:
        pass

    def cycle():
        a, b = Node(), Node()
        a.other, b.other = b, a
        return weakref.ref(a)

    assert gc.get_freeze_count() == 0
    with clean_room():
        assert gc.get_freeze_count() > 0
        ref = cycle()
        gc.collect()
        assert ref() is None, "a reference cycle made inside the block was not collected"
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with clean_room():
            ref = cycle()
            gc.collect()
            assert ref() is None
        assert gc.get_freeze_count() > frozen // 2  # still frozen (a few frozen objects died meanwhile)
    finally:
        gc.unfreeze()
