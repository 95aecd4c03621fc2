"""catalyst-team/catalyst#79: ResnetEncoder(frozen=True) does not freeze the encoder.

Symptom: the reporter printed one weight of the encoder's first convolution before and after a single
Adam step on model.parameters(), with frozen=True, and the two values differed.
Mechanism: unregistered-module. The encoder "froze" its feature network with an assignment to
`requires_grad` on the nn.Module itself. A module has no such switch: the assignment stores a plain
Python attribute, every parameter keeps requires_grad=True, and the optimizer trains them with the rest.
Fix: set the flag on the parameters (the fix, catalyst#81, loops over them; `requires_grad_(False)` on
the module does the same).
"""

import torch
from torch import nn

THREAD = "catalyst-team/catalyst#79"
MECHANISM = "unregistered-module"


class Encoder(nn.Module):
    def __init__(self, frozen: bool, per_parameter: bool):
        super().__init__()
        self.feature_net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        if frozen and per_parameter:
            self.feature_net.requires_grad_(False)
        elif frozen:
            self.feature_net.requires_grad = False  # a plain attribute: no parameter changes
        self.out_features = 4

    def forward(self, x):
        return self.feature_net(x)


class Net(nn.Module):
    def __init__(self, per_parameter: bool):
        super().__init__()
        self.enc = Encoder(frozen=True, per_parameter=per_parameter)
        self.logits = nn.Linear(self.enc.out_features, 1)

    def forward(self, x):
        return self.logits(self.enc(x))


def _run(per_parameter: bool):
    torch.manual_seed(0)
    model = Net(per_parameter)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    criterion = nn.BCEWithLogitsLoss()
    inputs, targets = torch.randn(4, 3, 8, 8), torch.ones(4, 1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model.enc.feature_net[0].weight.detach().clone()


def bug():
    return _run(per_parameter=False)


def fixed():
    return _run(per_parameter=True)
