"""Unit 08: the syllabus figures hold on this torch, the exercise's truth agrees with other routes,
other correct implementations pass, more bugs are refused, and odd returns get a clear message."""

import pytest
import torch

from grader import check, probes
from grader.units.unit08.cases import tbptt_cases
from grader.units.unit08.support import Recurrence, carried_loop, chunked_grads, depth_200, kept_bytes, the_loop
from tests.reference.unit08 import tbptt_grads


def test_syllabus_figures():
    depths = []
    w = carried_loop(retain=True, each=lambda step, loss: depths.append(probes.depth(loss)))
    assert depths == [4, 6, 8, 10, 12]
    assert round(w.grad.item(), 4) == 26.2882
    depths = []
    w = carried_loop(detach=True, each=lambda step, loss: depths.append(probes.depth(loss)))
    assert depths == [4] * 5
    assert round(w.grad.item(), 4) == 10.0
    assert depth_200() == 402


def _graded_right(qid, answer):
    from grader.engine import question as registry

    q = registry.get(qid)
    return q.kind.agrees(q.kind.truth(q.run()), q.kind.read(answer))


def test_the_replaced_questions_ask_what_the_unit_had_not_printed():
    # 08.detach-grad's 10.0000 was printed in section 2; the new question asks which sum detach computes
    assert _graded_right("08.detach-which-sum", "the own-step-only sum")
    assert not _graded_right("08.detach-which-sum", "the full-history sum")
    # 08.which-k was a row of the section 6 table; the new loop calls backward every step inside chunks of 3
    assert _graded_right("08.which-k-per-step", "k=3")
    for wrong in ("k=1", "k=6", "none of them"):
        assert not _graded_right("08.which-k-per-step", wrong)


def test_saved_bytes_grow_with_the_step_count():
    kept = []
    carried_loop(30, retain=True, each=lambda step, loss: kept.append(kept_bytes(loss)))
    steps = [b - a for a, b in zip(kept[2:], kept[3:])]
    assert set(steps) == {4} and kept[-1] > kept[0]


def _retained(seq):
    state = seq.h0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        seq.loss(state, t).backward(retain_graph=True)
    return [p.grad.clone() for p in seq.params.values()]


def _one_step(seq):
    state = seq.h0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state.detach(), x)
        seq.loss(state, t).backward()
    return [p.grad.clone() for p in seq.params.values()]


@pytest.mark.parametrize("case", tbptt_cases(), ids=lambda c: c.label)
def test_truth_matches_the_two_extremes_by_other_routes(case):
    """k = length equals the retained per-step loop; k = 1 equals detaching before every step."""
    truth_full = chunked_grads(case.fresh()["seq"], case.steps)
    for a, b in zip(truth_full, _retained(case.fresh()["seq"])):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)
    truth_one = chunked_grads(case.fresh()["seq"], 1)
    for a, b in zip(truth_one, _one_step(case.fresh()["seq"])):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)


def test_cases_are_seeded_and_cover_k():
    first, second = tbptt_cases(), tbptt_cases()
    assert [c.source for c in first] == [c.source for c in second]
    assert [c.size for c in first] == sorted(c.size for c in first)
    assert any(c.k == 1 for c in first) and any(c.k == c.steps > 1 for c in first)
    assert any(1 < c.k < c.steps and c.steps % c.k for c in first)


def test_unit_loop_through_chunks():
    assert round(chunked_grads(the_loop(), 1)[0].item(), 4) == 10.0
    assert round(chunked_grads(the_loop(), 5)[0].item(), 4) == 26.2882


# --- other correct ways to write it ---------------------------------------------------------


def per_step_backward_with_retain(seq, k):
    """Backward every step's loss, retain_graph inside a chunk, detach at boundaries: also correct."""
    state = seq.h0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        seq.loss(state, t).backward(retain_graph=True)
        if (t + 1) % k == 0:
            state = state.detach()
    return {name: p.grad for name, p in seq.params.items()}


def with_autograd_grad_as_list(seq, k):
    params = list(seq.params.values())
    totals = [torch.zeros_like(p) for p in params]
    state = seq.h0
    for start in range(0, len(seq.inputs), k):
        state = state.detach()
        loss = 0
        for t in range(start, min(start + k, len(seq.inputs))):
            state = seq.step(state, seq.inputs[t])
            loss = loss + seq.loss(state, t)
        totals = [a + g for a, g in zip(totals, torch.autograd.grad(loss, params))]
    return totals


@pytest.mark.parametrize("fn", [tbptt_grads, per_step_backward_with_retain, with_autograd_grad_as_list])
def test_correct_variants_pass(fn):
    assert check("08.tbptt", fn).passed


# --- more bugs ---------------------------------------------------------------------------------


def last_loss_of_each_chunk(seq, k):
    state = seq.h0
    last = len(seq.inputs) - 1
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        loss = seq.loss(state, t)
        if (t + 1) % k == 0 or t == last:
            loss.backward()
            state = state.detach()
    return {name: p.grad for name, p in seq.params.items()}


def detach_before_the_step(seq, k):
    """Detaches the state on entering every step's computation, then still chunks the losses."""
    state, pending = seq.h0, 0
    last = len(seq.inputs) - 1
    for t, x in enumerate(seq.inputs):
        state = seq.step(state.detach(), x)
        pending = pending + seq.loss(state, t)
        if (t + 1) % k == 0 or t == last:
            pending.backward()
            pending = 0
    return {name: p.grad for name, p in seq.params.items()}


def returns_the_parameters(seq, k):
    tbptt_grads(seq, k)
    return dict(seq.params)


@pytest.mark.parametrize("fn", [last_loss_of_each_chunk, detach_before_the_step, returns_the_parameters])
def test_more_bugs_are_refused(fn):
    result = check("08.tbptt", fn)
    assert result.verdict == "incorrect", str(result)
    assert "smallest failing case" in dict(result.rows)


@pytest.mark.parametrize(
    "raw, words",
    [
        (None, "expected a dict"),
        ("grads", "expected a dict"),
        ([None, None], "is None"),
        ({"nope": 1}, "no entry for"),
        ({"W": 1.0, "b": 1.0}, "has shape"),
        ([object(), object()], "should be a tensor"),
    ],
)
def test_odd_returns_get_a_clear_message(raw, words):
    result = check("08.tbptt", lambda seq, k: raw)
    assert result.verdict == "incorrect"
    text = str(result)
    assert words in text and "Traceback" not in text


def test_the_reference_passes_on_a_loaded_machine(busy_machine):
    """Within its per-case limits with two CPU-bound processes beside it (the speed figure: bench/run.py)."""
    assert check("08.tbptt", tbptt_grads).passed


def test_recurrence_repr_and_len():
    seq = the_loop()
    assert len(seq) == 5 and "5 steps" in repr(seq)
    assert isinstance(seq, Recurrence)
