"""pytorch/pytorch#18287: the gradient of torch.where does not handle nan correctly.

Symptom: x = [0, inf], y = where(x < 1, cos(x), 0): the gradient for the unused inf entry is nan
instead of 0 (a model's training turned to nan after an update).
Mechanism: nan-masked-branch. cos(inf) is computed in the branch where() drops; cos's backward gives
-sin(inf) * 0 = nan. Autograd does not tell "no gradient" from "zero gradient".
Fix: replace the dropped entries before the op: cos(where(x < 1, x, 0)).
"""

import math

import torch

THREAD = "pytorch/pytorch#18287"
MECHANISM = "nan-masked-branch"


def _run(safe):
    x = torch.tensor([0.0, math.inf], requires_grad=True)
    inner = torch.where(x < 1.0, x, torch.zeros_like(x)) if safe else x
    y = torch.where(x < 1.0, torch.cos(inner), torch.zeros_like(x))
    y.sum().backward()
    return [x.grad.clone()]


def bug():
    return _run(safe=False)


def fixed():
    return _run(safe=True)
