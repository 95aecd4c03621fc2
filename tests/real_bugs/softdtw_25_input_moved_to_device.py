"""Maghoumi/pytorch-softdtw-cuda#25: "Gradients are gone when moving the code to CUDA".

Symptom: x.grad is empty after loss.mean().backward(), with torch's warning about a non-leaf .grad.
Mechanism: nonleaf-grad. `x = x.to(device)` rebinds x to a copy computed from the leaf; the copy is
not a leaf, so its .grad is never filled (here, on CPU, the move is a dtype change).
Fix: create x on the device with requires_grad=True, or call x.retain_grad() on the moved copy.
"""

import torch

THREAD = "Maghoumi/pytorch-softdtw-cuda#25"
MECHANISM = "nonleaf-grad"


def _soft_distance(x, y, gamma=0.1):
    d = torch.cdist(x, y) ** 2
    return -gamma * torch.logsumexp(-d / gamma, dim=-1).sum(-1)


def _run(on_device):
    torch.manual_seed(0)
    if on_device:
        x = torch.rand((4, 7, 3), requires_grad=True, dtype=torch.float64)
    else:
        x = torch.rand((4, 7, 3), requires_grad=True)
        x = x.to(torch.float64)
    y = torch.rand((4, 6, 3), dtype=torch.float64)
    loss = _soft_distance(x, y)
    loss.mean().backward()
    return [x.grad]


def bug():
    return _run(on_device=False)


def fixed():
    return _run(on_device=True)
