"""pytorch/pytorch#14467: the optimizer's parameters and the model's silently disagree.

Symptom: after a refactor into a base class, the RNN stopped learning; nothing warned.
Mechanism: optimizer-mismatch. The optimizer was built from one model object while the loop trains
another (built again by the refactored code), so the loss reaches parameters no optimizer holds.
Fix: build the optimizer from the model object the loop actually runs.
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#14467"
MECHANISM = "optimizer-mismatch"


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(3, 5, batch_first=True)
        self.out = nn.Linear(5, 2)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h[:, -1])


def _run(same: bool):
    torch.manual_seed(0)
    model = Tagger()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if not same:
        model = Tagger()  # the refactored setup builds the network a second time
    x, y = torch.randn(8, 6, 3), torch.randint(0, 2, (8,))
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(same=False)


def fixed():
    return _run(same=True)
