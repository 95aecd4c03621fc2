"""openvinotoolkit/nncf#327: an initialisation that replaces a parameter object breaks training.

Symptom: after range initialisation the quantizer's scale never changes during training.
Mechanism: parameter-rebound. The initialisation runs after the optimizer got the model's parameters
and binds the parameter's name to a brand-new nn.Parameter; the optimizer keeps updating the old object,
tracked by identity, and the model computes with the new one.
Fix: write the initial value into the existing parameter (under no_grad, with copy_) instead.
"""

import torch
from torch import nn

THREAD = "openvinotoolkit/nncf#327"
MECHANISM = "parameter-rebound"


class Quantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return torch.round(x / self.scale).detach() * self.scale + (x - x.detach())


def _run(in_place: bool):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), Quantizer(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    init = x.abs().max() / 8
    if in_place:
        with torch.no_grad():
            model[1].scale.copy_(init)
    else:
        model[1].scale = nn.Parameter(init.reshape(1).clone())
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(in_place=False)


def fixed():
    return _run(in_place=True)
