"""Unit 08: the syllabus figures hold on this torch, the exercise's truth agrees with other routes,
other correct implementations pass, more bugs are refused, and odd returns get a clear message."""

import pytest
import torch

from grader import check, probes
from grader.units.unit08.cases import window_cases
from grader.units.unit08.support import (
    Recurrence,
    carried_loop,
    chunked_grads,
    depth_200,
    detached,
    kept_bytes,
    the_loop,
    window_grads,
)
from tests.reference.unit08 import window_grads as window_grads_ref


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
        state = seq.step(detached(state), x)
        seq.loss(state, t).backward()
    return [p.grad.clone() for p in seq.params.values()]


def _window_by_hand_chained_state_grads(seq, k):
    """TBPTT(1, k) another way: one recorded step per step, on a detached copy of the state that requires grad;
    each loss's gradient with respect to the state that entered its step is pushed back one step at a time, as
    the seed of the step before, k steps in all (the route the literature's implementations take)."""
    params = list(seq.params.values())
    totals = [torch.zeros_like(p) for p in params]

    def flat(state):
        return list(state) if isinstance(state, tuple) else [state]

    ins, outs = [], []
    state = detached(seq.h0)
    for t, x in enumerate(seq.inputs):
        entering = (
            tuple(s.detach().requires_grad_() for s in state)
            if isinstance(state, tuple)
            else state.detach().requires_grad_()
        )
        state = seq.step(entering, x)
        ins.append(flat(entering))
        outs.append(flat(state))
        got = torch.autograd.grad(seq.loss(state, t), params + ins[t], allow_unused=True, retain_graph=True)
        for j in range(t - 1, max(-1, t - k), -1):
            totals = [a if g is None else a + g for a, g in zip(totals, got[: len(params)])]
            pairs = [(o, g) for o, g in zip(outs[j], got[len(params) :]) if g is not None]
            got = torch.autograd.grad(
                [o for o, _ in pairs], params + ins[j], [g for _, g in pairs], allow_unused=True, retain_graph=True
            )
        totals = [a if g is None else a + g for a, g in zip(totals, got[: len(params)])]
    return totals


@pytest.mark.parametrize("case", window_cases(), ids=lambda c: c.label)
def test_truth_matches_other_routes(case):
    """k = length equals the retained per-step loop; k = 1 equals detaching before every step; every k equals the
    state gradients chained by hand through k steps."""
    truth_full = window_grads(case.fresh()["seq"], case.steps)
    for a, b in zip(truth_full, _retained(case.fresh()["seq"])):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)
    truth_one = window_grads(case.fresh()["seq"], 1)
    for a, b in zip(truth_one, _one_step(case.fresh()["seq"])):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)
    truth = window_grads(case.fresh()["seq"], case.k)
    for a, b in zip(truth, _window_by_hand_chained_state_grads(case.fresh()["seq"], case.k)):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)


def test_cases_are_seeded_and_cover_k_and_pair_states():
    first, second = window_cases(), window_cases()
    assert [c.source for c in first] == [c.source for c in second]
    assert [c.size for c in first] == sorted(c.size for c in first)
    assert any(c.k == 1 for c in first) and any(c.k == c.steps > 1 for c in first)
    assert sum(1 < c.k < c.steps for c in first) >= 18, "the window and the chunks differ only there"
    assert sum("lstm" in c.features for c in first) >= 8, "a pair state (h, c)"


def test_unit_loop_through_chunks_and_windows():
    assert round(chunked_grads(the_loop(), 1)[0].item(), 4) == 10.0
    assert round(chunked_grads(the_loop(), 5)[0].item(), 4) == 26.2882
    assert round(window_grads(the_loop(), 1)[0].item(), 4) == 10.0
    assert round(window_grads(the_loop(), 5)[0].item(), 4) == 26.2882
    assert window_grads(the_loop(), 2)[0].item() > chunked_grads(the_loop(), 2)[0].item(), "every loss sees 2 steps"


# --- other correct ways to write it ---------------------------------------------------------


def window_by_autograd_grad_as_list(seq, k):
    params = list(seq.params.values())
    totals = [torch.zeros_like(p) for p in params]
    for t in range(len(seq.inputs)):
        state = detached(seq.h0)
        start = max(0, t - k + 1)
        with torch.no_grad():
            for j in range(start):
                state = seq.step(state, seq.inputs[j])
        for j in range(start, t + 1):
            state = seq.step(state, seq.inputs[j])
        grads = torch.autograd.grad(seq.loss(state, t), params, allow_unused=True)
        totals = [a if g is None else a + g for a, g in zip(totals, grads)]
    return totals


def window_by_hand_chained(seq, k):
    return _window_by_hand_chained_state_grads(seq, k)


@pytest.mark.parametrize("fn", [window_grads_ref, window_by_autograd_grad_as_list, window_by_hand_chained])
def test_correct_variants_pass(fn):
    assert check("08.sliding-window", fn).passed


# --- more bugs ---------------------------------------------------------------------------------


def recomputes_without_detaching(seq, k):
    """Runs each window again, but from the state the recorded forward made: the window's start still carries
    its history."""
    states = [seq.h0]
    for x in seq.inputs:
        states.append(seq.step(states[-1], x))
    for t in range(len(seq.inputs)):
        start = max(0, t - k + 1)
        state = states[start]
        for j in range(start, t + 1):
            state = seq.step(state, seq.inputs[j])
        seq.loss(state, t).backward(retain_graph=True)
    return {name: p.grad for name, p in seq.params.items()}


def returns_the_parameters(seq, k):
    window_grads_ref(seq, k)
    return dict(seq.params)


@pytest.mark.parametrize("fn", [recomputes_without_detaching, returns_the_parameters])
def test_more_bugs_are_refused(fn):
    result = check("08.sliding-window", fn)
    assert result.verdict == "incorrect", str(result)
    assert "smallest failing case" in dict(result.rows)


@pytest.mark.parametrize(
    "raw, words",
    [
        (None, "expected a dict"),
        ("grads", "expected a dict"),
        ([None, None], "is None"),
        ({"nope": 1}, "no entry for"),
        ("zeros of the wrong shape", "has shape"),
        ([object(), object()], "should be a tensor"),
    ],
)
def test_odd_returns_get_a_clear_message(raw, words):
    if raw == "zeros of the wrong shape":
        result = check("08.sliding-window", lambda seq, k: {n: torch.zeros(7) for n in seq.params})
    else:
        result = check("08.sliding-window", lambda seq, k: raw)
    assert result.verdict == "incorrect"
    text = str(result)
    assert words in text and "Traceback" not in text


def test_the_reference_passes_on_a_loaded_machine(busy_machine):
    """Within its per-case limits with two CPU-bound processes beside it (the speed figure: bench/run.py)."""
    assert check("08.sliding-window", window_grads_ref).passed


def test_recurrence_repr_and_len():
    seq = the_loop()
    assert len(seq) == 5 and "5 steps" in repr(seq)
    assert isinstance(seq, Recurrence)
