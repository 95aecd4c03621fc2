"""pytorch/pytorch#7617: checkpoint(function, *args) should have the same requires_grad as function(*args).

Symptom: z1 = checkpoint(lambda x: m(x), x) has requires_grad False while m(x) has True, although m
has trainable parameters; a loss made from z1 cannot be backpropagated.
Mechanism: hooks-checkpoint. The reentrant checkpoint is an autograd Function of its tensor inputs
only; with no input requiring grad it records no graph at all (torch warns, and the program's
warning filter hides it).
Fix: use_reentrant=False.
"""

import warnings

import torch
from torch.utils.checkpoint import checkpoint

THREAD = "pytorch/pytorch#7617"
MECHANISM = "hooks-checkpoint"


def _run(reentrant):
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 3)
    x = torch.randn(10, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z1 = checkpoint(lambda inp: m(inp), x, use_reentrant=reentrant)
    z1.pow(2).mean().backward()
    return [m.weight.grad.clone()]


def bug():
    return _run(reentrant=True)


def fixed():
    return _run(reentrant=False)
