"""pytorch/pytorch#140469: ValueError: can't optimize a non-leaf Tensor.

Symptom: synthetic images made with ``torch.randn(..., requires_grad=True) * 0.01`` and handed to
torch.optim.SGD are refused with that ValueError.
Mechanism: nonleaf-grad. The multiplication records a node: its result is not a leaf, so backward would
never fill its .grad, and the optimizer refuses it (the leaf it came from is not kept).
Fix: scale first, then make the result require grad: (torch.randn(...) * 0.01).requires_grad_().
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#140469"
MECHANISM = "nonleaf-grad"


def _run(scale_first):
    torch.manual_seed(6)
    net = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    if scale_first:
        images = (torch.randn(3, 8) * 0.01).requires_grad_()
    else:
        images = torch.randn(3, 8, requires_grad=True) * 0.01
    opt = torch.optim.SGD([images], lr=0.5)
    target = torch.tensor([0, 1, 1])
    for _ in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(net(images), target).backward()
        opt.step()
    return images.detach()


def bug():
    return _run(scale_first=False)


def fixed():
    return _run(scale_first=True)
