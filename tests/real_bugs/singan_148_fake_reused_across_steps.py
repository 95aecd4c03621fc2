"""tamarott/SinGAN#148: a runtime error (variables modified in-place) in the generator's loop.

Symptom: on newer torch the second pass of the generator loop raises "one of the variables needed for
gradient computation has been modified by an inplace operation".
Mechanism: carried-state. The fake image made once, before the generator loop, is reused by every pass
of that loop: each pass's backward goes back into the graph of a generator forward made in an earlier
step, whose saved weights optimizerG.step() has overwritten since.
Fix: make a new fake image (a new generator forward) in every pass of the loop.
"""

import torch
from torch import nn

THREAD = "tamarott/SinGAN#148"
MECHANISM = "carried-state"


def _run(regenerate):
    torch.manual_seed(0)
    net_g = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
    net_d = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    opt_g = torch.optim.Adam(net_g.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(net_d.parameters(), lr=1e-3)
    noise, real = torch.randn(6, 4), torch.randn(6, 4)
    # the discriminator's loop (one pass here), which ends with a fake image
    opt_d.zero_grad()
    fake = net_g(noise)
    err_d = net_d(fake.detach()).mean() - net_d(real).mean()
    err_d.backward()
    opt_d.step()
    losses = []
    for _ in range(3):
        if regenerate:
            fake = net_g(noise)
        opt_g.zero_grad()
        err_g = -net_d(fake).mean()
        err_g.backward(retain_graph=True)
        opt_g.step()
        losses.append(err_g.item())
    return losses


def bug():
    return _run(regenerate=False)


def fixed():
    return _run(regenerate=True)
