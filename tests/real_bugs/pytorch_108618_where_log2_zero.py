"""pytorch/pytorch#108618: backward bypassing for torch.where.

Symptom: y = where(x > 2, log2(x), 2 * x) with x[0] = 0: the forward is fine, x.grad[0] is nan where
the equivalent loop gives 2.
Mechanism: nan-masked-branch. log2(0) = -inf in the unselected branch; its backward, 1 / (0 * ln 2),
times where()'s zero gradient is nan.
Fix: log2(where(x > 2, x, 1)) inside the where.
"""

import torch

THREAD = "pytorch/pytorch#108618"
MECHANISM = "nan-masked-branch"


def _run(safe):
    x1 = torch.tensor([0.0, 2.0, 3.0], requires_grad=True)
    inner = torch.where(x1 > 2, x1, torch.ones_like(x1)) if safe else x1
    y1 = torch.where(x1 > 2, torch.log2(inner), 2 * x1)
    y1.sum().backward()
    return [x1.grad.clone()]


def bug():
    return _run(safe=False)


def fixed():
    return _run(safe=True)
