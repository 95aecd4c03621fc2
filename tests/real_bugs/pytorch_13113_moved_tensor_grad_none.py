"""pytorch/pytorch#13113: `a = a.cuda()` after making a with requires_grad, then a.grad prints None.

Symptom: a.grad is None; setting requires_grad after the move works.
Mechanism: nonleaf-grad. Rebinding the name to the moved copy leaves it pointing at a non-leaf (here
the CPU analogue: a dtype conversion). The program silences warnings, so torch's UserWarning about the
non-leaf .grad read is never shown; the doctor still reports it.
Fix: move first, then set requires_grad (or create it on the device).
"""

import warnings

import torch

THREAD = "pytorch/pytorch#13113"
MECHANISM = "nonleaf-grad"


def _run(move_first):
    warnings.simplefilter("ignore")
    if move_first:
        a = torch.tensor([1.0, 2.0, 3.0]).double()
        a.requires_grad = True
    else:
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a = a.double()
    c = (a**2).mean(0)
    c.backward()
    return [a.grad]


def bug():
    with warnings.catch_warnings():
        return _run(move_first=False)


def fixed():
    with warnings.catch_warnings():
        return _run(move_first=True)
