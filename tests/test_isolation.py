"""After any reveal, check or exercise run, the learner's global torch state is exactly as it was."""
import pytest
import torch

from grader import check, predict, reveal
from grader.isolation import snapshot
from grader.kinds import Function
from grader.question import all_questions
from tests.reference import REFERENCE


def run_one(q):
    if isinstance(q.kind, Function):
        return check(q.qid, REFERENCE[q.qid])
    truth = q.run()
    if q.role == "predict":
        predict(q.qid, q.kind.encode(truth))
        return reveal(q.qid)
    return check(q.qid, q.kind.encode(truth))


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "anomaly+float64+hooks"])
def test_learner_state_survives_every_question(mode):
    mine = torch.ones(3, requires_grad=True)
    (mine * 2).sum().backward()
    mine_grad = mine.grad.clone()
    counters = []
    hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: counters.append(1) or t, lambda t: t)
    torch.manual_seed(1234)
    rng = torch.get_rng_state()
    if mode == "no_grad":
        context = torch.no_grad()
    elif mode == "inference_mode":
        context = torch.inference_mode()
    else:
        context = hooks
        torch.set_anomaly_enabled(True, False)
        torch.set_default_dtype(torch.float64)
    try:
        with context:
            before = snapshot()
            version = mine._version
            for q in all_questions():
                result = run_one(q)
                assert result.passed, str(result)
                assert snapshot() == before, f"{q.qid} changed global torch state"
            assert counters == [], "a grader experiment ran under the learner's saved-tensor hooks"
            assert torch.equal(torch.get_rng_state(), rng), "the learner's RNG stream moved"
            assert mine._version == version and torch.equal(mine.grad, mine_grad)
    finally:
        torch.set_anomaly_enabled(False)
        torch.set_default_dtype(torch.float32)
