"""pytorch/pytorch#187297: torch.where backward propagates a NaN gradient from the inactive sqrt branch.

Symptom: every input is negative, so where() selects the identity branch, yet x.grad is nan.
Mechanism: nan-masked-branch. sqrt is still computed on the negative inputs; where() sends a zero
gradient into that branch, and sqrt's backward turns 0 / sqrt(negative) into nan.
Fix: make the masked branch safe before the op: sqrt(where(x > 0, x, 1)).
"""

import torch

THREAD = "pytorch/pytorch#187297"
MECHANISM = "nan-masked-branch"


def _run(safe):
    xt = torch.tensor([-1.0, -4.0], requires_grad=True)
    inner = torch.where(xt > 0, xt, torch.ones_like(xt)) if safe else xt
    y = torch.where(xt > 0, torch.sqrt(inner), xt).sum()
    y.backward()
    return [xt.grad.clone()]


def bug():
    return _run(safe=False)


def fixed():
    return _run(safe=True)
