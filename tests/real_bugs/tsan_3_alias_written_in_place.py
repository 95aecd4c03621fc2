"""Jee-King/TSAN#3: "one of the variables needed for gradient computation has been modified by an
inplace operation"; the reporter's fix was `out = x` -> `out = x.clone()`.

Symptom: backward raises the version-counter error.
Mechanism: inplace-on-saved. `out = x` is the same tensor, not a copy; the block then adds to `out` in
place, which also writes `x`, which an earlier op saved for backward.
Fix: out = x.clone() (or an out-of-place add).
"""

import torch
from torch import nn

THREAD = "Jee-King/TSAN#3"
MECHANISM = "inplace-on-saved"


class Block(nn.Module):
    def __init__(self, clone):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)
        self.clone = clone

    def forward(self, x):
        x = torch.sigmoid(self.conv(x))  # sigmoid saves its output, x
        out = x.clone() if self.clone else x
        out += 0.5 * x.mean()
        return out


def _run(clone):
    torch.manual_seed(0)
    block = Block(clone)
    opt = torch.optim.SGD(block.parameters(), lr=0.1)
    img = torch.randn(1, 2, 5, 5)
    opt.zero_grad()
    loss = block(img).pow(2).mean()
    loss.backward()
    opt.step()
    return [loss.item()]


def bug():
    return _run(clone=False)


def fixed():
    return _run(clone=True)
