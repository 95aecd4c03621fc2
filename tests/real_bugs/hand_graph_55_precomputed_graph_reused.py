"""3d-hand-shape/hand-graph-cnn#55: "Trying to backward through the graph a second time" at the
training script's loss.backward().

Symptom: the second iteration's backward raises (the thread shows only the traceback; this program
reproduces that error by one common cause).
Mechanism: carried-state. A tensor with a graph (the normalised graph Laplacian, computed from a learned
edge weight) is computed once before the loop and carried into every iteration; the second iteration's
backward walks back into the first iteration's graph, whose saved values the first backward freed.
Fix: compute it inside the loop (every iteration builds its own graph).
"""

import torch
from torch import nn

THREAD = "3d-hand-shape/hand-graph-cnn#55"
MECHANISM = "carried-state"


class GraphConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.edge = nn.Parameter(torch.ones(4, 4))
        self.lin = nn.Linear(3, 3)

    def laplacian(self):
        a = torch.sigmoid(self.edge)
        return a / a.sum(1, keepdim=True)


def _run(inside):
    torch.manual_seed(0)
    conv = GraphConv()
    opt = torch.optim.SGD(conv.parameters(), lr=0.1)
    lap = conv.laplacian()
    losses = []
    for _ in range(2):
        if inside:
            lap = conv.laplacian()
        out = lap @ conv.lin(torch.randn(4, 3))
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(inside=False)


def fixed():
    return _run(inside=True)
