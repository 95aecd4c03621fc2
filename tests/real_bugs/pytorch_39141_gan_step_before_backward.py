"""pytorch/pytorch#39141: a simple GAN fitting sin(x) raises the in-place error on torch 1.5.

Symptom: G_loss.backward() raises "modified by an inplace operation ... is at version 2; expected
version 1".
Mechanism: optimizer-mismatch (a step that writes parameters between a forward and its backward). Both
losses come from one forward through D; opt_D.step() updates D's weights in place between that forward
and G's backward, and G's backward needs the old weights (torch's version check then raises).
Fix: call G_loss.backward() before opt_D.step() (or run D on the fake again after the step).
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#39141"
MECHANISM = "optimizer-mismatch"


def _run(order_fixed):
    torch.manual_seed(0)
    g = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 15))
    d = nn.Sequential(nn.Linear(15, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
    opt_d = torch.optim.Adam(d.parameters(), lr=1e-4)
    opt_g = torch.optim.Adam(g.parameters(), lr=1e-4)
    losses = []
    for _ in range(2):
        paintings = torch.sin(torch.linspace(-1, 1, 15) * 3.14).repeat(8, 1)
        g_paintings = g(torch.randn(8, 5))
        prob_real, prob_fake = d(paintings), d(g_paintings)
        d_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - prob_fake))
        g_loss = torch.mean(torch.log(1.0 - prob_fake))
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        if order_fixed:
            opt_g.zero_grad()
            g_loss.backward()
            opt_d.step()
            opt_g.step()
        else:
            opt_d.step()
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
        losses.append(d_loss.item())
    return losses


def bug():
    return _run(order_fixed=False)


def fixed():
    return _run(order_fixed=True)
