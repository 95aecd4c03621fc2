"""automl/ConfigurableOptimizer#27: widening a convolution by building a new one.

Symptom: after the channel change the new convolution never learns.
Mechanism: optimizer-mismatch. A new Conv2d replaces the old one inside the supernet after the
optimizer received the old parameters; the forward uses the new object, the optimizer updates the old.
Fix: give the optimizer the parameters the forward uses (build it again after the surgery).
"""

import torch
from torch import nn

THREAD = "automl/ConfigurableOptimizer#27"
MECHANISM = "optimizer-mismatch"


class Supernet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.head = nn.Linear(2 * 4 * 4, 1)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        return self.head(h.flatten(1)[:, : 2 * 4 * 4])


def _run(register: bool):
    torch.manual_seed(0)
    net = Supernet()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    wider = nn.Conv2d(1, 3, 3, padding=1)  # more filters, freshly made
    net.conv = wider
    if register:
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(8, 1, 4, 4), torch.randn(8, 1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(register=False)


def fixed():
    return _run(register=True)
