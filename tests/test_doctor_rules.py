"""The doctor's rules at the thresholds docs/doctor.md states (issue 47's independent planter found them
named from other sizes than the page said): each rule just below its threshold gets no finding, just at
it the mechanism is named, and the correct program it could be confused with gets none.

Each case is a small loop; ``_found`` runs it under ``with doctor()`` and returns the findings.
"""

from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F
from torch import nn

from grader.probes.doctor import Mechanism, doctor


def _found(run) -> list:
    with doctor(report=False) as d:
        run()
    return d.findings


def _mechanisms(run) -> list[Mechanism]:
    return [f.mechanism for f in _found(run)]


def _line(fn, text: str) -> str:
    """``file:line`` of the line of ``fn``'s source that contains ``text``."""
    lines, first = inspect.getsourcelines(fn)
    (at,) = [first + i for i, line in enumerate(lines) if text in line]
    return f"{inspect.getsourcefile(fn).rsplit('/', 1)[-1]}:{at}"


def _net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))


# -- loss graphs kept after their backward (carried-state): 3 earlier calls of the line alive together --------


def _running_loss(batches, epochs=2):
    model = _net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        running = 0.0  # a number each epoch, a tensor once a loss is added
        for _ in range(batches):
            loss = F.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            running += loss * 4  # the mistake: the tensor, not loss.item()


def test_a_running_loss_is_named_once_three_earlier_calls_are_alive_together_at_a_backward():
    assert _found(lambda: _running_loss(batches=3)) == []  # at the 3rd backward, 2 earlier losses are alive
    found = _found(lambda: _running_loss(batches=4))
    assert [f.mechanism for f in found] == [Mechanism.CARRIED_STATE]
    assert found[0].line == _line(_running_loss, "running += loss * 4")  # where the total takes the loss in


def _maml(keep_inner: bool, second_order: bool):
    torch.manual_seed(0)
    w = torch.randn(3, 1, requires_grad=True)  # a plain leaf, as functorch's MAML example has them
    opt = torch.optim.Adam([w], lr=1e-3)
    kept = []
    for _ in range(3):
        opt.zero_grad()
        outer = []
        for _ in range(4):  # four tasks: the inner line runs four times a step
            x, y = torch.randn(8, 3), torch.randn(8, 1)
            inner = F.mse_loss(x @ w, y)
            (g,) = torch.autograd.grad(inner, w, create_graph=second_order)
            outer.append(F.mse_loss(x @ (w - 0.1 * g), y))
            if keep_inner:
                kept.append(inner)  # the mistake: every inner loss kept with its graph
        loss = sum(outer) / len(outer)
        loss.backward()
        opt.step()


def test_inner_losses_an_outer_backward_walks_are_not_kept_graphs():
    """MAML: the inner graphs of one step are alive until the outer backward walks them (create_graph), and
    the last outer loss keeps them until the next step: no finding."""
    assert _found(lambda: _maml(keep_inner=False, second_order=True)) == []
    assert _found(lambda: _maml(keep_inner=False, second_order=False)) == []
    # first order: no outer backward walks the inner graphs, and a list keeps them all
    assert _mechanisms(lambda: _maml(keep_inner=True, second_order=False)) == [Mechanism.CARRIED_STATE]


# -- graphs no backward walks (held-graph): 8 outputs alive together, each through 16 later calls --------------


def _evaluate(batches):
    model = _net()
    total = 0
    for _ in range(batches):
        total += F.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1))  # the mistake: no no_grad, a tensor
    return total.item() / batches


def test_an_evaluation_loop_keeping_its_graphs_is_named_from_24_calls():
    """Call k's output outlives 16 later calls when k + 16 <= the number of calls: 8 of them at 24."""
    assert _found(lambda: _evaluate(23)) == []
    found = _found(lambda: _evaluate(24))
    assert [f.mechanism for f in found] == [Mechanism.HELD_GRAPH]
    assert found[0].evidence.startswith("8 outputs")
    assert found[0].line == _line(_evaluate, "total += F.mse_loss")


def test_outputs_kept_through_one_prediction_and_dropped_are_no_held_graph():
    """Forward-forward's predict without no_grad: each label's outputs kept until the last label's (20 calls),
    then dropped; over two predictions 8 outputs outlive 16 later calls, never more than 4 at once."""
    layers = [nn.Linear(3, 3), nn.Linear(3, 3)]

    def predict(x):
        per_label = []
        for _ in range(10):
            h, goodness = x, []
            for layer in layers:  # top-level calls: the layers are in a plain list
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            per_label += [sum(goodness).unsqueeze(1)]
        return torch.cat(per_label, 1).argmax(1)

    assert _found(lambda: [predict(torch.randn(2, 3)) for _ in range(2)]) == []


# -- gradients of leaves updated by hand, never cleared (accumulated-grad) --------------------------------------


def _by_hand(clear: str, steps=3):
    torch.manual_seed(0)
    a, b = torch.zeros((), requires_grad=True), torch.ones((), requires_grad=True)
    x = torch.linspace(-1, 1, 20)
    for _ in range(steps):
        loss = (a + b * x - x.sin()).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            a -= 1e-3 * a.grad
            b -= 1e-3 * b.grad
            if clear == "none":
                a.grad = None
                b.grad = None
            elif clear == "zero":
                a.grad.zero_()
                b.grad.zero_()


def test_a_hand_written_update_that_never_clears_is_named_and_one_that_clears_is_not():
    assert _found(lambda: _by_hand("none")) == []
    assert _found(lambda: _by_hand("zero")) == []
    assert _found(lambda: _by_hand("none", steps=2)) == []
    found = _found(lambda: _by_hand("never"))
    assert [f.mechanism for f in found] == [Mechanism.ACCUMULATED_GRAD]
    assert found[0].line == _line(_by_hand, "loss.backward()")
    # two steps: the sum is applied by the second update, but no third backward shows it applied
    assert _found(lambda: _by_hand("never", steps=2)) == []


def _module_by_hand(zero_grad: bool, micro_batches=1, through_data=False):
    model = _net()
    for _ in range(3):
        if zero_grad:
            model.zero_grad()
        for _ in range(micro_batches):  # accumulating on purpose between two clears
            F.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
        with torch.no_grad():
            for p in model.parameters():
                if through_data:
                    p.data.add_(p.grad, alpha=-0.1)  # .data: the version does not move
                else:
                    p.add_(p.grad, alpha=-0.1)


def test_parameters_updated_by_hand_accumulate_between_clears_and_a_missing_clear_is_named():
    assert _found(lambda: _module_by_hand(zero_grad=True, micro_batches=2)) == []
    assert _mechanisms(lambda: _module_by_hand(zero_grad=False)) == [Mechanism.ACCUMULATED_GRAD]
    # the documented limit: an update through .data leaves the version alone, and is not seen
    assert _found(lambda: _module_by_hand(zero_grad=False, through_data=True)) == []


def test_a_gradient_zeroed_through_data_is_cleared_for_an_optimizer_and_by_hand():
    """``p.grad.data.zero_()`` leaves the gradient's version alone; what it holds, zeros, is applied once."""

    def with_optimizer():
        model = _net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.data.zero_()
            F.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
            opt.step()

    def by_hand():
        torch.manual_seed(0)
        w = torch.randn(3, 1, requires_grad=True)
        for _ in range(3):
            F.mse_loss(torch.randn(4, 3) @ w, torch.randn(4, 1)).backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
            w.grad.data.zero_()

    assert _found(with_optimizer) == []
    assert _found(by_hand) == []
