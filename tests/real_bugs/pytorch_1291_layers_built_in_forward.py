"""pytorch/pytorch#1291: list(model.parameters()) is empty when the layers are made in forward.

Symptom: a three-layer network defined inside forward has no parameters, and training does nothing.
Mechanism: unregistered-module. Each call of forward builds new Linear layers that the module never
registers; an optimizer (here over a registered output scale) cannot hold them, and they are new
objects every step.
Fix: build the layers once in __init__ as attributes.
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#1291"
MECHANISM = "unregistered-module"

D_IN, H, D_OUT = 5, 7, 2


class ThreeLayerNet(nn.Module):
    def __init__(self, in_init):
        super().__init__()
        self.in_init = in_init
        self.scale = nn.Parameter(torch.ones(1))
        if in_init:
            self.linear1, self.linear2, self.linear3 = nn.Linear(D_IN, H), nn.Linear(H, H), nn.Linear(H, D_OUT)

    def forward(self, x):
        if self.in_init:
            l1, l2, l3 = self.linear1, self.linear2, self.linear3
        else:
            l1, l2, l3 = nn.Linear(D_IN, H), nn.Linear(H, H), nn.Linear(H, D_OUT)
        h = l1(x).clamp(min=0)
        h = l2(h).clamp(min=0)
        return l3(h) * self.scale


def _run(in_init):
    torch.manual_seed(0)
    model = ThreeLayerNet(in_init)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(12, D_IN), torch.randn(12, D_OUT)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = (model(x) - y).pow(2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(in_init=False)


def fixed():
    return _run(in_init=True)
