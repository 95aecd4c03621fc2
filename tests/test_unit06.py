"""Unit 06: the syllabus figures hold live, and the exercises answer any learner input with a clear line."""

import pytest
import torch

from grader import check, probes
from grader.engine.kinds import Number
from grader.engine.question import get
from grader.units.unit06 import cases, support
from tests.reference import unit06 as reference


def test_a_first_gradient_has_a_graph_only_when_recorded_and_it_reads_the_input():
    """Issue 29: the question is which gradients are recorded, not the arithmetic of sin(x^2)'s derivatives."""
    q = get("06.which-grads-recorded")
    assert not isinstance(q.kind, Number)
    assert q.run() == {"sin(x ** 2), create_graph", "x * x, create_graph"}
    wrong = q.kind.read({"sin(x ** 2), create_graph", "x * x, create_graph", "3 * x + 1, create_graph"})
    assert "3 * x + 1 is 3" in q.misconception(q.run(), wrong)
    assert get("06.sin-derivatives") is None, "replaced (issue 29)"


def test_second_backward_words_and_what_survives():
    outcome = get("06.second-backward").run()
    assert outcome.where == "at the second backward"
    assert "backward through the graph a second time" in outcome.message
    assert get("06.saved-after-backward").run() == "freed"
    assert get("06.nothing-saved").run().where == "no error"


def test_stale_graph_gradient_never_changes_while_w_moves():
    grads, values = support.run_stale_loop(steps=5)
    assert len(set(grads)) == 1 and len(set(values)) == 5


def test_a_stale_graph_that_kept_a_parameter_is_caught_at_the_second_step():
    outcome = get("06.stale-mlp").run()
    assert outcome.where == "at iteration 2" and "modified by an inplace operation" in outcome.message


@pytest.mark.filterwarnings("ignore:Using backward")
def test_create_graph_cycle_and_its_two_ways_out():
    assert support.survives("backward") is True
    assert support.survives("autograd.grad") is False
    assert support.survives("backward, then grad = None") is False


@pytest.mark.filterwarnings("ignore:Using backward")
def test_a_module_cycle_holds_every_leaf_its_gradients_reach():
    """Issue 29: the closed-book cycle question is a program no cell runs: clearing one .grad is not enough."""
    assert get("06.closed-book-module-cycle").run() == {
        "nothing cleared",
        "only lin.weight.grad = None",
        "only lin.bias.grad = None",
    }
    assert get("06.closed-book-grad-cycle") is None, "replaced (issue 29)"


def test_a_second_order_pass_frees_the_forward_nodes_it_goes_through():
    outcome = get("06.closed-book-second-pass").run()
    assert outcome.where == "at z.backward()" and "second time" in outcome.message
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    z = (x.cos() ** 2).sum()
    (g,) = torch.autograd.grad(z, x, create_graph=True)
    torch.autograd.grad(g.sum(), x, retain_graph=True)
    z.backward()  # kept by the second pass: no error, so the failure is the second pass's freeing
    assert x.grad is not None
    assert get("06.closed-book-cube") is None, "replaced (issue 29)"


def test_a_running_loss_keeps_every_step_on_one_accumulate_grad():
    q = get("06.running-loss-holds")
    assert q.run() == {"its graph reaches w", "200 steps hold more nodes than 100"}
    truth = q.run()
    assert "0.0 + a tensor is a tensor" in q.misconception(truth, q.kind.read({"running_loss is a Python float"}))
    assert get("06.running-loss-nodes") is None, "replaced (issue 29)"


@pytest.mark.filterwarnings("ignore:Using backward")
def test_the_leak_keeps_activations_and_grows_while_grad_is_not_cleared():
    import gc
    import weakref

    w = torch.randn(100, requires_grad=True)
    h = w.sin()
    refs = weakref.ref(w), weakref.ref(h)
    (h**2).sum().backward(create_graph=True)
    del w, h
    gc.collect()
    assert all(r() is not None for r in refs)
    refs[0]().grad = None
    w = torch.randn(100, requires_grad=True)
    sizes = []
    for _ in range(4):
        (w.sin() ** 2).sum().backward(create_graph=True)
        sizes.append(probes.size(w.grad))
    steps = {b - a for a, b in zip(sizes, sizes[1:])}
    assert len(steps) == 1 and steps.pop() > 0
    w.grad = None


def test_cases_are_seeded_and_smallest_first():
    for make in (cases.two_loss_cases, cases.smooth_cases):
        first, again = make(), make()
        assert [c.source for c in first] == [c.source for c in again]
        assert [c.size for c in first] == sorted(c.size for c in first)
        assert len(first) >= 20


@pytest.mark.parametrize(
    "bug, words",
    [
        (reference.forgets_retain_graph, "retain_graph=True"),
        (reference.one_call_that_is_two_calls, "walks the graph once"),
    ],
)
def test_two_losses_bugs_get_a_hint(bug, words):
    result = check("06.two-losses", bug)
    assert result.verdict == "incorrect"
    assert words in str(result)


@pytest.mark.parametrize(
    "bug, words",
    [
        (reference.hvp_without_create_graph, "create_graph=True"),
        (reference.hvp_with_retain_graph, "retain_graph=True records nothing"),
        (reference.hvp_returns_the_gradient, "gradient of f at x"),
        (reference.hvp_detached_then_silenced, "all zeros"),
        (reference.hvp_ignores_v, "H @ ones"),
        (reference.hvp_through_dot_grad, "x.grad still held"),
    ],
)
def test_hvp_bugs_get_a_hint(bug, words):
    result = check("06.hvp", bug)
    assert result.verdict == "incorrect"
    assert words in str(result)


@pytest.mark.parametrize(
    "bug, words",
    [
        (reference.one_call_by_jacrev, "torch.func.jacrev is switched off"),
        (reference.one_call_by_captured_jacrev, "made never torch.autograd.grad call(s)"),
        (reference.one_call_by_jacrev_in_a_thread, "torch.func.jacrev is switched off"),
    ],
)
def test_one_call_must_be_one_autograd_grad_call(bug, words):
    """Issue 29: 'one_call' was accepted through torch.func.jacrev, with no torch.autograd.grad call."""
    result = check("06.two-losses", bug)
    assert result.verdict == "incorrect" and words in str(result), str(result)


@pytest.mark.parametrize(
    "bug, words",
    [
        (reference.hvp_by_torch_func, "torch.func.grad is switched off"),
        (reference.hvp_by_captured_torch_func, "no gradient of f with respect to x carried a graph"),
        (reference.hvp_by_torch_func_in_a_thread, "torch.func.grad is switched off"),
        (reference.hvp_by_finite_differences, "no gradient of f with respect to x carried a graph"),
        (reference.hvp_by_finite_differences_at_x, "nothing was differentiated through it"),
    ],
)
def test_hvp_must_differentiate_a_gradient_with_autograd_grad(bug, words):
    """Issue 29: torch.func copied from the cell above, and finite differences, were accepted."""
    result = check("06.hvp", bug)
    assert result.verdict == "incorrect" and words in str(result), str(result)
    assert f"0 of {len(cases.smooth_cases())}" in str(result), "no case passes: " + str(result)


def test_the_tools_switched_off_during_a_check_come_back_and_passes_are_counted():
    before = torch.func.jvp, torch.autograd.functional.hvp, torch.autograd._engine_run_backward
    with cases.autograd_grad_only() as runs:
        x = torch.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        from torch.autograd import grad

        grad((x * 3).sum(), x)
        with pytest.raises(cases.BlockedTool):
            torch.func.jvp(torch.sin, (x,), (x,))
    assert (runs.counted, runs.grad_calls, runs.backward_calls) == (True, 1, 1)
    assert (torch.func.jvp, torch.autograd.functional.hvp, torch.autograd._engine_run_backward) == before
    assert check("06.hvp", reference.hvp).passed and check("06.two-losses", reference.two_gradients).passed


def _returns(value):
    def learner(*args):
        return value

    return learner


def _raises_placeholder(*args):
    raise NotImplementedError()


def _turns_grad_off(f, x, v):
    torch.set_grad_enabled(False)
    return x


@pytest.mark.parametrize("qid", ["06.two-losses", "06.hvp"])
@pytest.mark.parametrize(
    "answer, verdict",
    [
        (..., "unanswered"),
        (_raises_placeholder, "unanswered"),
        (3, "invalid"),
        ("hvp", "invalid"),
        (_returns(None), "incorrect"),
        (_returns("text"), "incorrect"),
        (_returns((torch.ones(2),)), "incorrect"),
        (_returns(torch.ones(7, 7)), "incorrect"),
        (_returns([torch.ones(2), None]), "incorrect"),
        (_turns_grad_off, "incorrect"),
    ],
)
def test_any_learner_input_gets_a_verdict_not_a_traceback(qid, answer, verdict):
    result = check(qid, answer)
    assert result.verdict == verdict, str(result)
    assert "Traceback" not in str(result)
    assert torch.is_grad_enabled()
