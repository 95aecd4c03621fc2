"""leftthomas/SRGAN#43: GPU memory explodes during validation.

Symptom: training fits in memory; the validation loop that follows runs out of memory a fifth of the
way through. Adding ``with torch.no_grad():`` around the whole validation loop fixes it.
Mechanism: held-graph. Without no_grad every validation batch records a graph, and the running total of
loss tensors holds each of them: memory grows with the loop, and no backward ever frees them.
Fix: validate under torch.no_grad() and keep numbers (loss.item()) in the total.
"""

import torch
from torch import nn

THREAD = "leftthomas/SRGAN#43"
MECHANISM = "held-graph"


def _run(no_grad):
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    model.eval()
    batches = [(torch.randn(2, 6), torch.randn(2, 6)) for _ in range(40)]
    val_loss = 0
    with torch.no_grad() if no_grad else torch.enable_grad():
        for vx, vy in batches:
            val_loss += nn.functional.mse_loss(model(vx), vy)
    return float(val_loss) / len(batches)


def bug():
    return _run(no_grad=False)


def fixed():
    return _run(no_grad=True)
