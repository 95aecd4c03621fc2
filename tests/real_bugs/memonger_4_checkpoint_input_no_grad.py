"""Lyken17/pytorch-memonger#4: "None of the inputs have requires_grad=True. Gradients will be None" on a
checkpointed ResNet.

Symptom: the warning, and the first layer's parameters are never optimised.
Mechanism: hooks-checkpoint. Each stage is run through a reentrant checkpoint; the images do not
require grad, so the first checkpoint's output has no graph and nothing before the next stage that
requires grad gets a gradient.
Fix: checkpoint(..., use_reentrant=False), which records the graph through the block's parameters.
"""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

THREAD = "Lyken17/pytorch-memonger#4"
MECHANISM = "hooks-checkpoint"


class Net(nn.Module):
    def __init__(self, reentrant):
        super().__init__()
        self.reentrant = reentrant
        self.layer1 = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU())
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        out = checkpoint(self.layer1, x, use_reentrant=self.reentrant)
        out = checkpoint(self.layer2, out, use_reentrant=self.reentrant)
        return self.fc(out.mean((2, 3)))


def _run(reentrant):
    torch.manual_seed(0)
    net = Net(reentrant)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(2, 3, 6, 6), torch.randint(0, 2, (2,))
    losses = []
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(reentrant=True)


def fixed():
    return _run(reentrant=False)
