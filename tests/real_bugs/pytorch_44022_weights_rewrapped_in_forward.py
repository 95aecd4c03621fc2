"""pytorch/pytorch#44022: TypeError: cannot assign 'torch.FloatTensor' as parameter 'layer_weights'.

Symptom: a forward that normalises its own learned mixing weights, ``self.layer_weights =
F.softmax(self.layer_weights, dim=0)``, raises that TypeError; wrapping the softmax in a new nn.Parameter
makes it run, and the mixing weights then never learn.
Mechanism: parameter-rebound. Each forward binds the name to a new nn.Parameter; the optimizer, built
before, holds the first one, which the loss no longer reaches.
Fix: keep the normalised weights in a local variable: weights = F.softmax(self.layer_weights, dim=0).
"""

import torch
import torch.nn.functional as F
from torch import nn

THREAD = "pytorch/pytorch#44022"
MECHANISM = "parameter-rebound"


class Mixer(nn.Module):
    def __init__(self, rewrap):
        super().__init__()
        self.rewrap = rewrap
        self.layer_weights = nn.Parameter(torch.zeros(3))
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        if self.rewrap:
            self.layer_weights = nn.Parameter(F.softmax(self.layer_weights, dim=0))
            weights = self.layer_weights
        else:
            weights = F.softmax(self.layer_weights, dim=0)
        return sum(w * layer(x) for w, layer in zip(weights, self.layers))


def _run(rewrap):
    torch.manual_seed(5)
    model = Mixer(rewrap)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(5, 4), torch.randn(5, 4)
    for _ in range(3):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return F.softmax(model.layer_weights.detach(), dim=0)


def bug():
    return _run(rewrap=True)


def fixed():
    return _run(rewrap=False)
