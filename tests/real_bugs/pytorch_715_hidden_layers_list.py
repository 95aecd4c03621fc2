"""pytorch/pytorch#715: parameters are not included if the module is initialised in a list.

Symptom: model.parameters() lists only the classifier; the hidden layers never change.
Mechanism: unregistered-module. Hidden blocks (a Linear and its activation) are kept as lists inside a
list; the parent registers only the classifier.
Fix: wrap each block in nn.Sequential and the blocks in nn.ModuleList.
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#715"
MECHANISM = "unregistered-module"


class SNLINet(nn.Module):
    def __init__(self, n_layers, n_hid, registered):
        super().__init__()
        blocks = [[nn.Linear(n_hid, n_hid), nn.Tanh()] for _ in range(n_layers)]
        self.hids = nn.ModuleList(nn.Sequential(*b) for b in blocks) if registered else blocks
        self.classifier = nn.Linear(n_hid, 3)

    def forward(self, x):
        for block in self.hids:
            if isinstance(block, list):
                for m in block:
                    x = m(x)
            else:
                x = block(x)
        return self.classifier(x)


def _run(registered):
    torch.manual_seed(0)
    net = SNLINet(2, 6, registered)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(10, 6), torch.randint(0, 3, (10,))
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(registered=False)


def fixed():
    return _run(registered=True)
