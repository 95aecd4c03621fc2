"""facebookresearch/dinov2#472: the notebook's depth model cannot train: "Inference tensors cannot be
saved for backward"; the fix reported there was to remove an inference decorator.

Symptom: the forward of the trainable head raises at once.
Mechanism: no-grad-root. A helper decorated with @torch.inference_mode() makes the backbone's features;
they are inference tensors, and the head's first layer cannot save them for its backward.
Fix: use torch.no_grad() for the frozen backbone (its outputs are ordinary tensors).
"""

import torch
from torch import nn

THREAD = "facebookresearch/dinov2#472"
MECHANISM = "no-grad-root"


def _run(decorator):
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(8, 8), nn.GELU())
    head = nn.Linear(8, 1)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)

    @decorator()
    def features(x):
        return backbone(x)

    x, y = torch.randn(4, 8), torch.randn(4, 1)
    opt.zero_grad()
    loss = nn.functional.mse_loss(head(features(x)), y)
    loss.backward()
    opt.step()
    return [loss.item()]


def bug():
    return _run(torch.inference_mode)


def fixed():
    return _run(torch.no_grad)
