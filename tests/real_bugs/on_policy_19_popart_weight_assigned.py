"""marlbenchmark/on-policy#19: TypeError: cannot assign 'torch.FloatTensor' as parameter 'stddev'.

Symptom: PopArt's update rescales its output layer with ``self.weight = self.weight * old_stddev /
self.stddev``, and training stops with that TypeError; the fix proposed in the thread wraps each result in
a new nn.Parameter.
Mechanism: parameter-rebound. A name the module registered as a Parameter takes only an nn.Parameter:
assigning the product raises; wrapping it in a new nn.Parameter would leave the optimizer with the old one.
Fix: rescale in place under no_grad (self.weight.mul_(...)).
"""

import torch
from torch import nn

THREAD = "marlbenchmark/on-policy#19"
MECHANISM = "parameter-rebound"


class PopArt(nn.Module):
    def __init__(self, in_place):
        super().__init__()
        self.in_place = in_place
        self.weight = nn.Parameter(torch.randn(1, 4) * 0.1)
        self.bias = nn.Parameter(torch.zeros(1))
        self.register_buffer("stddev", torch.ones(1))

    def forward(self, x):
        return x @ self.weight.t() + self.bias

    def update(self, targets):
        old = self.stddev.clone()
        self.stddev = targets.std().clamp(min=1e-4).reshape(1)
        if self.in_place:
            with torch.no_grad():
                self.weight.mul_(old / self.stddev)
        else:
            self.weight = self.weight * old / self.stddev


def _run(in_place):
    torch.manual_seed(4)
    head = PopArt(in_place)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    losses = []
    for _ in range(3):
        x, target = torch.randn(6, 4), torch.randn(6, 1) * 3
        head.update(target)
        loss = (head(x) - target / head.stddev).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(in_place=False)


def fixed():
    return _run(in_place=True)
