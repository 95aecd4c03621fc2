"""google/brax#152: a "memory leak" in the PyTorch training example.

Symptom: memory use grows with the number of training steps.
Mechanism: carried-state. `total_loss += loss` adds the loss tensor itself, so the running total keeps
every step's graph alive after its backward (the FAQ's "don't accumulate history across your loop").
Fix: accumulate a number: total_loss += loss.item() (or float(loss.detach())).
"""

import torch
from torch import nn

THREAD = "google/brax#152"
MECHANISM = "carried-state"


def _run(as_number):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    total_loss = 0
    for _ in range(8):
        x = torch.randn(8, 4)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        total_loss += loss.item() if as_number else loss
    return [float(total_loss.detach()) if torch.is_tensor(total_loss) else total_loss]


def bug():
    return _run(as_number=False)


def fixed():
    return _run(as_number=True)
