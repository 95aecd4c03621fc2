"""pytorch/pytorch#7335: no gradients for torch.tensor(np.array(...), requires_grad=True).cuda().

Symptom: a.grad is None after l.backward().
Mechanism: nonleaf-grad. The leaf made by torch.tensor is lost; `.cuda()` (on CPU here: `.to(float64)`)
gives the non-leaf that the name keeps.
Fix: torch.tensor(..., dtype=..., device=..., requires_grad=True) in one call.
"""

import numpy as np
import torch

THREAD = "pytorch/pytorch#7335"
MECHANISM = "nonleaf-grad"


def _run(one_call):
    if one_call:
        a = torch.tensor(np.array([1.0, 2.0, 3.0]), dtype=torch.float64, requires_grad=True)
    else:
        a = torch.tensor(np.array([1.0, 2.0, 3.0]), dtype=torch.float, requires_grad=True).to(torch.float64)
    b = torch.ones(3, dtype=torch.float64)
    loss = a @ b
    loss.backward()
    return [a.grad]


def bug():
    return _run(one_call=False)


def fixed():
    return _run(one_call=True)
