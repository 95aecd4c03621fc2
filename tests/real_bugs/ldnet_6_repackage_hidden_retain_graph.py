"""LiyuanLucasLiu/LD-Net#6: what repackage_hidden is for.

Symptom: without detaching the hidden state "the backpropagation would have some error"; the usual
workaround, retain_graph=True, makes the error go and every step slower and bigger instead.
Mechanism: carried-state. The GRU state carried across batches chains every step's graph to the last;
with retain_graph=True each backward walks all earlier steps again (and here the optimizer's in-place
update of the weights those old nodes saved makes it fail after all).
Fix: repackage (detach) the hidden state before each batch; no retain_graph.
"""

import torch
from torch import nn

THREAD = "LiyuanLucasLiu/LD-Net#6"
MECHANISM = "carried-state"


def _run(repackage):
    torch.manual_seed(0)
    gru, head = nn.GRU(4, 6), nn.Linear(6, 1)
    params = list(gru.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.05)
    hidden = torch.zeros(1, 3, 6)
    losses = []
    for _ in range(4):
        x, y = torch.randn(5, 3, 4), torch.randn(5, 3, 1)
        if repackage:
            hidden = hidden.detach()
        out, hidden = gru(x, hidden)
        loss = nn.functional.mse_loss(head(out), y)
        opt.zero_grad()
        loss.backward(retain_graph=not repackage)
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(repackage=False)


def fixed():
    return _run(repackage=True)
