"""pytorch/pytorch#1053: submodules defined in a list are not registered.

Symptom: after model.cuda() the Conv1d layers stayed on the CPU; their weights are not the model's.
Mechanism: unregistered-module. The three Conv1d of different widths live in a plain list, so .cuda(),
.parameters() and the optimizer all skip them (here on CPU: the optimizer never updates them).
Fix: nn.ModuleList.
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#1053"
MECHANISM = "unregistered-module"


class Net(nn.Module):
    def __init__(self, registered):
        super().__init__()
        convs = [nn.Conv1d(4, 1, k) for k in (3, 4, 5)]
        self.conv1d = nn.ModuleList(convs) if registered else convs
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        pooled = [conv(x).amax(dim=2) for conv in self.conv1d]
        return self.fc(torch.cat(pooled, dim=1))


def _run(registered):
    torch.manual_seed(0)
    net = Net(registered)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(6, 4, 9), torch.randn(6, 1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(registered=False)


def fixed():
    return _run(registered=True)
