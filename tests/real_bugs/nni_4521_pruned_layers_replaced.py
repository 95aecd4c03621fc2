"""microsoft/nni#4521: after pruning "speedup", fine-tuning leaves the parameters unchanged.

Symptom: the loss does not move during fine-tuning; the weights stay what they were.
Mechanism: optimizer-mismatch. The speedup step swaps layers for new (smaller) ones after the optimizer
was built, so the optimizer still holds the old layers' parameters and the loss reaches new ones.
Fix: build the optimizer again after the model's layers were replaced.
"""

import torch
from torch import nn

THREAD = "microsoft/nni#4521"
MECHANISM = "optimizer-mismatch"


def _run(rebuild: bool):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model[0] = nn.Linear(6, 4)  # "speedup": a smaller layer in place of the pruned one
    model[2] = nn.Linear(4, 1)
    if rebuild:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 6), torch.randn(32, 1)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(rebuild=False)


def fixed():
    return _run(rebuild=True)
