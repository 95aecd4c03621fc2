"""pytorch/pytorch#666: nn.Module does not pick up parameters of layers kept in a Python list.

Symptom: print(model) shows one layer; the layers in the list are never trained.
Mechanism: unregistered-module. A plain list hides its modules from the parent, so they are missing
from model.parameters() and from the optimizer built from it, although the forward runs them.
Fix: keep them in nn.ModuleList.
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#666"
MECHANISM = "unregistered-module"


class Net(nn.Module):
    def __init__(self, num_layers, registered):
        super().__init__()
        self.layer = nn.Linear(1, 1)
        layers = [nn.Linear(1, 1) for _ in range(num_layers)]
        self.list_of_layers = nn.ModuleList(layers) if registered else layers

    def forward(self, x):
        x = self.layer(x)
        for layer in self.list_of_layers:
            x = layer(x)
        return x


def _run(registered):
    torch.manual_seed(0)
    net = Net(3, registered)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    x = torch.randn(16, 1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = (net(x) - 2 * x).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(registered=False)


def fixed():
    return _run(registered=True)
