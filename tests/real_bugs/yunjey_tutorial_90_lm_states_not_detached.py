"""yunjey/pytorch-tutorial#90: why the language model detaches its LSTM states every step.

Symptom: without `states = detach(states)` the second training step raises "Trying to backward through
the graph a second time".
Mechanism: carried-state. The hidden and cell states carried into the next step keep the previous
step's graph; the next backward walks into it (and its buffers were already freed).
Fix: detach the states at the step boundary (truncated backpropagation through time).
"""

import torch
from torch import nn

THREAD = "yunjey/pytorch-tutorial#90"
MECHANISM = "carried-state"


class RNNLM(nn.Module):
    def __init__(self, vocab=11, embed=6, hidden=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.linear = nn.Linear(hidden, vocab)

    def forward(self, x, h):
        out, h = self.lstm(self.embed(x), h)
        return self.linear(out.reshape(-1, out.size(2))), h


def _run(detach):
    torch.manual_seed(0)
    model = RNNLM()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    ids = torch.randint(0, 11, (2, 25))
    states = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
    losses = []
    for i in range(0, ids.size(1) - 5, 5):
        inputs, targets = ids[:, i : i + 5], ids[:, i + 1 : i + 6]
        if detach:
            states = tuple(s.detach() for s in states)
        outputs, states = model(inputs, states)
        loss = nn.functional.cross_entropy(outputs, targets.reshape(-1))
        model.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(detach=False)


def fixed():
    return _run(detach=True)
