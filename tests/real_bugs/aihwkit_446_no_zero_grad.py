"""IBM/aihwkit#446: the simple-layer examples never clear the gradients.

Symptom: over ten iterations the loss falls, then climbs again; with ``opt.zero_grad()`` it keeps falling.
Mechanism: accumulated-grad. Each backward adds its gradient into ``.grad``, which still holds every
earlier step's: each step applies the sum of all the gradients so far.
Fix: call opt.zero_grad() once per step, before the backward.
"""

import torch
from torch import nn

THREAD = "IBM/aihwkit#446"
MECHANISM = "accumulated-grad"


def _run(clear):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.rand(8, 4), torch.rand(8, 2)
    losses = []
    for _ in range(4):
        if clear:
            opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(clear=False)


def fixed():
    return _run(clear=True)
