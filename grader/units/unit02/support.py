"""Unit 02's helpers: the small programs its experiments run backward through, and what they read off
the leaves afterwards."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from grader import probes
from grader.units.unit02.kinds import fmt_number


def leaf_grads(leaves: Mapping[str, torch.Tensor]) -> dict:
    """A copy of every named leaf's .grad at this moment (None where it has none)."""
    return {n: (None if t.grad is None else t.grad.detach().clone()) for n, t in leaves.items()}


def chain():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    y = x**2
    return w, x, y


def record_arrivals(out):
    """Register a pre-hook on every node under ``out``; returns {node: [gradients it received]}."""
    received: dict = {}
    for node in probes.nodes(out):
        received[node] = []
        node.register_prehook(lambda grads, node=node: received[node].append(grads[0].detach().clone()))
    return received


def squares():
    v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return v, v**2


def three_of_five(x):
    return torch.stack([x.sum(), (x * x).sum(), x.prod()])


def two_route_loss():
    w = torch.tensor(2.0, requires_grad=True)
    a = 3 * w
    b = w**2
    return w, a, b, a + b


def accumulate_nodes(loss):
    left = loss.grad_fn.next_functions[0][0].next_functions[0][0]
    right = loss.grad_fn.next_functions[1][0].next_functions[0][0]
    return left, right


def backward_step(w):
    (3 * w + w**2).backward()


def grad_word(t: torch.Tensor) -> str:
    return "None" if t.grad is None else fmt_number(t.grad.item())


def straight_through_input():
    """The values 02.flat-steps rounds, floors and signs; the straight-through trick runs on them too."""
    return torch.tensor([0.4, 1.6, -2.3])


def microbatch_data():
    """A batch of 8 samples (X, Y) and a starting weight for a linear model, fixed by a seed."""
    gen = torch.Generator().manual_seed(0)
    return torch.randn(8, 3, generator=gen), torch.randn(8, generator=gen), torch.randn(3, generator=gen)


def microbatch_grad(X, Y, w0, pieces, divide):
    """w.grad after one backward per micro-batch (X.chunk(pieces)), none cleared, each mean loss / pieces if told."""
    w = w0.clone().requires_grad_()
    for xb, yb in zip(X.chunk(pieces), Y.chunk(pieces)):
        loss = ((xb @ w - yb) ** 2).mean()
        (loss / pieces if divide else loss).backward()
    return w.grad
