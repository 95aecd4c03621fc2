"""pytorch/pytorch#47175: zero_grad called at the beginning of each epoch instead of each iteration.

Symptom: training is unstable, and nothing warns; the report asks torch to warn when step() runs twice
without zero_grad() between.
Mechanism: accumulated-grad. Within an epoch every step applies the gradients of all the earlier batches
of that epoch again, added to its own.
Fix: clear inside the loop over batches (or, to accumulate on purpose, step and clear every k batches).
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#47175"
MECHANISM = "accumulated-grad"


def _run(per_batch):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    batches = [(torch.randn(5, 3), torch.randn(5, 1)) for _ in range(3)]
    losses = []
    for _epoch in range(2):
        if not per_batch:
            opt.zero_grad()
        for x, y in batches:
            if per_batch:
                opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def bug():
    return _run(per_batch=False)


def fixed():
    return _run(per_batch=True)
