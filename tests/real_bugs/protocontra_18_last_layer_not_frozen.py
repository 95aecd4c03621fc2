"""CSCYQJ/MICCAI23-ProtoContra-SFDA#18: the segmentation head that adaptation should keep fixed moves.

Symptom: during source-free adaptation the code keeps the last layer (the head that holds the source
prototypes) fixed with `self.model.outc.requires_grad = False`; comparing the source model with the adapted
one showed the head's weights changed (a maintainer agreed; listing the trainable parameters in the
optimizer worked).
Mechanism: unregistered-module. `outc` is an nn.Module, so the assignment stores a plain attribute and
leaves its parameters' requires_grad True; the optimizer, built from model.parameters(), updates them.
Fix: `outc.requires_grad_(False)` (or build the optimizer from the parameters meant to adapt only).
"""

import torch
from torch import nn

THREAD = "CSCYQJ/MICCAI23-ProtoContra-SFDA#18"
MECHANISM = "unregistered-module"


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.inc = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.ReLU())
        self.down = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(6, 6, 3, padding=1), nn.ReLU())
        self.up = nn.Upsample(scale_factor=2)
        self.outc = nn.Conv2d(12, 3, 1)

    def forward(self, x):
        a = self.inc(x)
        b = self.up(self.down(a))
        return self.outc(torch.cat([a, b], dim=1))


def _run(freeze_parameters: bool):
    torch.manual_seed(0)
    model = TinyUNet()
    if freeze_parameters:
        model.outc.requires_grad_(False)
    else:
        model.outc.requires_grad = False
    head_before = model.outc.weight.detach().clone()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    target_images = torch.randn(2, 1, 8, 8)
    losses = []
    for _ in range(3):
        probs = model(target_images).softmax(dim=1)
        loss = -(probs * probs.clamp_min(1e-6).log()).sum(dim=1).mean()  # entropy on the target domain
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, (model.outc.weight.detach() - head_before).abs().max()


def bug():
    return _run(freeze_parameters=False)


def fixed():
    return _run(freeze_parameters=True)
