"""pytorch/pytorch#68425: torch.where produces nan in backward for a differentiable forward pass.

Symptom: a = 100, b = where(a <= 0, exp(a), 1 + a): b is right (101) but a.grad is nan, not 1.
Mechanism: nan-masked-branch. exp(100) overflows to inf in the unselected branch; its backward
multiplies where()'s zero gradient by inf, and 0 * inf is nan.
Fix: clamp the input of the unselected branch: exp(where(a <= 0, a, 0)).
"""

import torch

THREAD = "pytorch/pytorch#68425"
MECHANISM = "nan-masked-branch"


def _run(safe):
    a = torch.tensor(100.0, requires_grad=True)
    inner = torch.where(a <= 0, a, torch.zeros_like(a)) if safe else a
    b = torch.where(a <= 0, torch.exp(inner), 1 + a)
    b.backward()
    return [a.grad.clone()]


def bug():
    return _run(safe=False)


def fixed():
    return _run(safe=True)
