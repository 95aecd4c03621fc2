"""ronghuaiyang/arcface-pytorch#56: "element 0 of tensors does not require grad"; the reporter added
`loss.requires_grad = True` and then the loss never went down and the accuracy stayed at zero.

Symptom: training runs and learns nothing.
Mechanism: inert-loss-term. The loss had lost its graph (here: the logits go through numpy); setting
requires_grad on it makes it a leaf, so backward runs and reaches no parameter at all.
Fix: keep the loss in torch from the model's output on, and drop the requires_grad line.
"""

import torch
from torch import nn

THREAD = "ronghuaiyang/arcface-pytorch#56"
MECHANISM = "inert-loss-term"


def _run(in_torch):
    torch.manual_seed(0)
    model = nn.Linear(6, 4)
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data, label = torch.randn(8, 6), torch.randint(0, 4, (8,))
    losses = []
    for _ in range(3):
        output = model(data)
        if not in_torch:
            output = torch.from_numpy(output.detach().numpy().copy())  # a margin computed in numpy
        loss = criterion(output, label)
        if not in_torch:
            loss.requires_grad = True
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(in_torch=False)


def fixed():
    return _run(in_torch=True)
