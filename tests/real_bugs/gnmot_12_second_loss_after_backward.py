"""yinizhizhu/GNMOT#12: "Trying to backward through the graph a second time (or directly access saved
tensors after they have already been freed)" while training.

Symptom: a backward raises the freed-graph error within one training step (the thread shows only the
message; this program reproduces it by one common cause).
Mechanism: freed-graph. The step calls backward on the matching loss, then builds a second loss from
the same forward's outputs (a consistency term) and calls backward again: the first backward freed the
saved values the second needs.
Fix: add the terms and call backward once.
"""

import torch
from torch import nn

THREAD = "yinizhizhu/GNMOT#12"
MECHANISM = "freed-graph"


def _run(once):
    torch.manual_seed(0)
    edge_net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.Adam(edge_net.parameters(), lr=1e-3)
    pairs, match = torch.randn(10, 6), torch.randint(0, 2, (10, 1)).float()
    opt.zero_grad()
    scores = torch.sigmoid(edge_net(pairs))
    match_loss = nn.functional.binary_cross_entropy(scores, match)
    consistency = (scores.sum() - match.sum()).pow(2) / 100
    if once:
        (match_loss + consistency).backward()
    else:
        match_loss.backward()
        consistency.backward()
    opt.step()
    return [match_loss.item(), consistency.item()]


def bug():
    return _run(once=False)


def fixed():
    return _run(once=True)
