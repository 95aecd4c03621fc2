"""leftthomas/SRGAN#89: g_loss.backward() raises after optimizerD.step().

Symptom: the discriminator's loss is backpropagated with retain_graph=True and optimizerD.step() runs;
then the generator's loss, computed from the same discriminator output, raises "modified by an inplace
operation ... [1, 1024, 1, 1] is at version 2; expected version 1".
Mechanism: optimizer-mismatch (a step that writes parameters between a forward and its backward): the
discriminator's forward saved its weights; optimizerD.step() wrote them in place before the generator's
backward went back through that forward.
Fix: call both backward passes before either step (or run the discriminator on the fake again after its step).
"""

import torch
from torch import nn

THREAD = "leftthomas/SRGAN#89"
MECHANISM = "optimizer-mismatch"


def _run(steps_last):
    torch.manual_seed(2)
    net_g = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.PReLU(), nn.Conv2d(4, 1, 3, padding=1))
    net_d = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2), nn.LeakyReLU(0.2), nn.AdaptiveAvgPool2d(1), nn.Conv2d(4, 1, 1))
    opt_g = torch.optim.Adam(net_g.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(net_d.parameters(), lr=1e-3)
    losses = []
    for _ in range(2):
        low, high = torch.rand(2, 1, 8, 8), torch.rand(2, 1, 8, 8)
        fake = net_g(low)
        real_out = torch.sigmoid(net_d(high)).mean()
        fake_out = torch.sigmoid(net_d(fake)).mean()
        d_loss = 1 - real_out + fake_out
        net_d.zero_grad()
        d_loss.backward(retain_graph=True)
        if not steps_last:
            opt_d.step()
        net_g.zero_grad()
        g_loss = nn.functional.mse_loss(fake, high) + 1e-3 * (1 - fake_out)
        g_loss.backward()
        if steps_last:
            opt_d.step()
        opt_g.step()
        losses.append(g_loss.item())
    return losses


def bug():
    return _run(steps_last=False)


def fixed():
    return _run(steps_last=True)
