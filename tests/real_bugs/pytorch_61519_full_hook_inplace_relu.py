"""pytorch/pytorch#61519: in-place ReLU incompatible with a full backward hook.

Symptom: after register_full_backward_hook on a Sequential that ends in nn.ReLU(inplace=True) (or on a
layer followed by one), the forward raises "Output 0 of BackwardHookFunctionBackward is a view and is
being modified inplace ... This behavior is forbidden".
Mechanism: hooks-checkpoint (full hooks followed by in-place ops). A full backward hook passes the
module's inputs and outputs through BackwardHookFunction; its outputs are views that autograd forbids
writing in place, and the in-place ReLU writes one.
Fix: nn.ReLU(inplace=False) after (and inside) a hooked module.
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#61519"
MECHANISM = "hooks-checkpoint"


def _run(inplace):
    torch.manual_seed(3)
    features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1))
    model = nn.Sequential(features, nn.ReLU(inplace=inplace), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    grads = []
    handle = features.register_full_backward_hook(lambda m, gin, gout: grads.append(gout[0].norm().item()))
    try:
        out = model(torch.rand(2, 3, 6, 6))
        out[:, 0].sum().backward()
    finally:
        handle.remove()
    return grads


def bug():
    return _run(inplace=True)


def fixed():
    return _run(inplace=False)
