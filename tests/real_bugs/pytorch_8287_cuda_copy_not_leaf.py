"""pytorch/pytorch#8287: no gradient for x after `x = torch.randn(2, 2, requires_grad=True).cuda(0)`.

Symptom: x.grad is None after backward (the report blamed CUDA; on CPU it happened too).
Mechanism: nonleaf-grad. `.cuda()` (here, on CPU, `.double()`) returns a new tensor computed from the
leaf; the gradient accumulates in the hidden leaf and the name x holds a non-leaf whose .grad stays None.
Fix: make the tensor on the device (and dtype) it is used at: torch.randn(..., requires_grad=True,
dtype=..., device=...).
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#8287"
MECHANISM = "nonleaf-grad"


def _run(leaf):
    torch.manual_seed(0)
    if leaf:
        x = torch.randn(2, 2, requires_grad=True, dtype=torch.float64)
    else:
        x = torch.randn(2, 2, requires_grad=True).double()
    layers = nn.Sequential(*[nn.Linear(2, 2) for _ in range(3)]).double()
    loss = layers(x).pow(2).sum()
    loss.backward()
    return [x.grad]


def bug():
    return _run(leaf=False)


def fixed():
    return _run(leaf=True)
