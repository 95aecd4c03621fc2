"""dreamgonfly/GAN-tutorial#1: D_loss.backward() raises the in-place error; the answer: remove inplace=True
from LeakyReLU and Dropout.

Symptom: the discriminator's backward raises "modified by an inplace operation".
Mechanism: inplace-on-saved. An in-place LeakyReLU right after an op that saved its output (here Tanh)
overwrites the value Tanh's backward needs.
Fix: inplace=False.
"""

import torch
from torch import nn

THREAD = "dreamgonfly/GAN-tutorial#1"
MECHANISM = "inplace-on-saved"


def _discriminator(inplace):
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.LeakyReLU(0.2, inplace=inplace), nn.Linear(8, 1))


def _run(inplace):
    torch.manual_seed(0)
    d = _discriminator(inplace)
    opt = torch.optim.Adam(d.parameters(), lr=1e-3)
    real, fake = torch.randn(4, 6), torch.randn(4, 6)
    opt.zero_grad()
    d_loss = nn.functional.softplus(-d(real)).mean() + nn.functional.softplus(d(fake)).mean()
    d_loss.backward()
    opt.step()
    return [d_loss.item()]


def bug():
    return _run(inplace=True)


def fixed():
    return _run(inplace=False)
