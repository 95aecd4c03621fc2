"""pytorch/pytorch#156212: torch.where() can produce nan values for the unselected branch during backward.

Symptom: x_out = torch.where(x <= x_th, torch.exp(x), b) is meant to protect against overflow; the
forward is finite, but the gradient with respect to x is nan where x is huge (or nan), in the branch
where() did not select.
Mechanism: nan-masked-branch: exp overflows to inf in the unselected branch; where's backward sends it a
zero gradient, and ExpBackward0 computes 0 * inf = nan.
Fix: make the input of exp safe first: torch.exp(torch.where(x <= x_th, x, 0)) inside the where.
"""

import torch

THREAD = "pytorch/pytorch#156212"
MECHANISM = "nan-masked-branch"


def _run(safe):
    x_th = torch.tensor(10.0)
    grads = []
    for scale in (1.0, 2.0):  # two batches of inputs, each with one huge entry; the gradient is what is used
        x = torch.tensor([1.0, 0.5, 1e10]) * scale
        x.requires_grad_()
        inner = torch.where(x <= x_th, x, torch.zeros_like(x)) if safe else x
        x_out = torch.where(x <= x_th, torch.exp(inner), torch.ones_like(x))
        x_out.sum().backward()
        grads.append(x.grad.clone())
    return grads


def bug():
    return _run(safe=False)


def fixed():
    return _run(safe=True)
