"""Unit 02's own pieces: the LeafGrads kind, and the generated cases its exercises need.

The cases must keep showing what the exercises are about, or the buggy implementations in
tests/reference/unit02.py would pass for the wrong reason: leaves with no gradient next to
leaves with zeros, and outputs that are transposed views.
"""

import pytest
import torch

from grader import check
from grader.engine.kinds import BadAnswer, Error, ErrorOutcome, Unanswered
from grader.units.unit02 import cases as unit02_cases
from grader.units.unit02 import kinds as unit02_kinds
from grader.units.unit02 import questions as unit02
from tests.reference import unit02 as reference


def test_leaf_grads_reads_tensors_lists_numbers_and_none():
    kind = unit02_kinds.LeafGrads()
    value = kind.read({"a": torch.tensor([[1.0, 2.0]]), "b": None, "c": 3, "d": [[1, 2], [3, 4]]})
    assert value == {"a": (1.0, 2.0), "b": None, "c": (3.0,), "d": (1.0, 2.0, 3.0, 4.0)}


@pytest.mark.parametrize(
    "answer, words",
    [
        ([1, 2], "dict"),
        ({"a": "1"}, "string"),
        ({1: None}, "strings"),
        ({"a": True}, "boolean"),
        ({"a": torch.zeros(20_000)}, "too many"),
    ],
)
def test_leaf_grads_refuses_what_is_not_gradients(answer, words):
    with pytest.raises(BadAnswer, match=words):
        unit02_kinds.LeafGrads().read(answer)
    with pytest.raises(Unanswered):
        unit02_kinds.LeafGrads().read(...)


def test_zeros_are_not_none_and_steps_are_compared_in_order():
    kind = unit02_kinds.LeafGrads(steps=unit02.TIMELINE_STEPS)
    truth = kind.read({"a": [torch.zeros(2), torch.zeros(2), None]})
    assert kind.agrees(truth, kind.read({"a": [[0, 0], [0.0, 0.0], None]}))
    assert not kind.agrees(truth, kind.read({"a": [[0, 0], [0, 0], [0, 0]]}))
    assert not kind.agrees(truth, kind.read({"a": [None, [0, 0], None]}))
    assert not kind.agrees(truth, kind.read({"a": [[0, 0], [0, 0], None], "b": [None, None, None]}))
    note = kind.verdict_note(truth, kind.read({"a": [[0, 0], [0, 0], [0, 0]]}))
    assert "after zero_grad()" in note and "None" in note
    for wrong in kind.wrong_answers(truth):
        assert not kind.agrees(truth, kind.read(wrong))


def test_error_place_encodes_torchs_own_observation():
    from grader.units.causes import FREED, NO_GRAD_FN, NOT_SCALAR

    kind = Error("at backward", causes=(NO_GRAD_FN, NOT_SCALAR, FREED))
    seen = ErrorOutcome("at backward", "RuntimeError", "grad can be implicitly created only for scalar outputs")
    assert kind.encode(seen) == ["at backward", "not scalar"]  # the cause torch's live message carries
    assert kind.agrees(seen, kind.read(kind.encode(seen)))
    assert kind.encode(ErrorOutcome("no error")) == "no error"


def test_timeline_cases_hold_every_kind_of_leaf():
    cases = unit02_cases.timeline_cases()
    assert [c.size for c in cases] == sorted(c.size for c in cases)
    kinds = set()
    for case in cases:
        ns = case.fresh()
        ns["forward"]().backward()
        for t in ns["leaves"].values():
            if not t.requires_grad:
                kinds.add("needs no gradient")
            elif t.grad is None:
                kinds.add("unreached")
            elif (t.grad == 0).any():
                kinds.add("reached, with zeros")
            else:
                kinds.add("reached")
    assert kinds == {"needs no gradient", "unreached", "reached, with zeros", "reached"}


def test_timeline_forward_reuses_the_same_leaves():
    case = unit02_cases.timeline_cases()[0]
    ns = case.fresh()
    first, second = ns["forward"](), ns["forward"]()
    assert first is not second
    reached = {id(t) for t in (fn.variable for fn in _accumulate_nodes(second))}
    assert reached <= {id(t) for t in ns["leaves"].values()}


def test_two_steps_are_not_one_step_twice():
    """Each call of forward() is a new batch: the issue's shortcut (one step, doubled, no zero_grad) is refused."""
    cases = unit02_cases.timeline_cases()
    assert all(case.weights[1] not in (1.0, 2.0) for case in cases)
    assert all(f"{case.weights[1]} on its second" in case.source for case in cases)
    result = check("02.grad-timeline", reference.timeline_doubling_one_step)
    assert result.verdict == "incorrect" and "forward() 1 time(s)" in str(result), str(result)
    tidied = check("02.grad-timeline", reference.timeline_doubling_and_clearing)
    assert tidied.verdict == "incorrect", str(tidied)
    kept = check("02.grad-timeline", _without_zero_grad)
    assert kept.verdict == "incorrect" and "still held a .grad" in str(kept), str(kept)
    assert check("02.grad-timeline", reference.grad_timeline).passed


def _without_zero_grad(leaves, forward):
    """Two real steps, but None typed in for the third moment: zero_grad() never ran."""
    moments = []
    for _ in range(2):
        forward().backward()
        moments.append({n: None if t.grad is None else t.grad.clone() for n, t in leaves.items()})
    return {n: [moments[0][n], moments[1][n], None] for n in leaves}


def _accumulate_nodes(out):
    from grader import probes

    return [fn for fn in probes.nodes(out) if type(fn).__name__ == "AccumulateGrad"]


def test_seed_cases_are_non_scalar_some_transposed_some_non_square():
    cases = unit02_cases.seed_cases()
    assert all(c.size > 1 for c in cases)
    shapes = {c.shape for c in cases}
    assert {1, 2, 3} <= {len(s) for s in shapes}
    assert any(len(s) == 2 and s[0] != s[1] for s in shapes)
    transposed = 0
    for case in cases:
        out = case.fresh()["out"]
        assert tuple(out.shape) == case.shape and 0 <= case.index < out.numel()
        transposed += not out.is_contiguous()
    assert transposed >= 3


def test_seed_case_names_the_element_it_isolates():
    for case in unit02_cases.seed_cases():
        out = case.fresh()["out"]
        assert eval(case.element, {"out": out}).item() == out.flatten()[case.index].item()


def _refused_with(qid, answer, words):
    from grader import predict, reset, reveal

    reset(qid)
    predict(qid, answer)
    result = reveal(qid)
    # the learner reads the note, or the why line where the note would only repeat it (api.repeats)
    assert result.verdict == "incorrect" and words in str(result), str(result)


def test_the_straight_through_question_needs_the_cut_and_the_saved_value():
    """Issue 29: 02.kink-conventions asked for a convention of torch's formulas. Its replacement needs two
    mechanisms: detach() leaves the addition's identity edge as the only route, and the square reads q, not x."""
    from grader import predict, reset, reveal
    from grader.engine.question import get
    from grader.units.unit02.support import straight_through_input

    truth = get("02.straight-through").run()["x"]
    x = straight_through_input()
    assert list(truth) == (2 * x.round()).tolist() and list(truth) != (2 * x).tolist()
    _refused_with("02.straight-through", {"x": (2 * x).tolist()}, "that is 2x")
    _refused_with("02.straight-through", {"x": [0.0, 0.0, 0.0]}, "detach() cut that path")
    reset("02.straight-through")
    predict("02.straight-through", {"x": list(truth)})
    assert reveal("02.straight-through").verdict == "correct"
    assert get("02.kink-conventions") is None


def test_undivided_micro_batches_are_as_many_times_the_batch_gradient_as_there_are_micro_batches():
    """Issue 29's practitioner addition: accumulating on purpose, and why each loss is divided by their number."""
    from grader.engine.question import get
    from grader.units.unit02.support import microbatch_data, microbatch_grad

    X, Y, w0 = microbatch_data()
    full = microbatch_grad(X, Y, w0, pieces=1, divide=False)
    for pieces in (2, 4, 8):
        assert torch.allclose(microbatch_grad(X, Y, w0, pieces, divide=False), pieces * full, atol=1e-5)
        assert torch.allclose(microbatch_grad(X, Y, w0, pieces, divide=True), full, atol=1e-6)
    assert abs(get("02.microbatch-undivided").run() - 4.0) < 1e-4
    _refused_with("02.microbatch-undivided", 1.0, "not 8")


def test_the_repeated_accumulate_grad_question_is_gone():
    """Issue 29's second reader: 02.same-accumulate asked again unit 01's rule (a leaf used twice is one
    AccumulateGrad node, 01.walk-shared); the section now cites 01's claim and asks only where the adding happens."""
    from grader.engine.question import get

    assert get("02.same-accumulate") is None
    assert get("02.accumulate-runs").run() == (1, 7.0)
