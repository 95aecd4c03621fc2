"""TRI-ML/packnet-sfm#51: fix memory leak by detaching the loss before appending it to the outputs.

Symptom: memory grows over the epoch until the run is killed.
Mechanism: carried-state. Each step's loss tensor is appended to the list of training outputs, which
keeps every step's graph alive to the end of the epoch.
Fix: append loss.detach().
"""

import torch
from torch import nn

THREAD = "TRI-ML/packnet-sfm#51"
MECHANISM = "carried-state"


def _run(detach):
    torch.manual_seed(0)
    depth = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 3, padding=1))
    opt = torch.optim.Adam(depth.parameters(), lr=1e-3)
    outputs = []
    for _ in range(6):
        img = torch.rand(2, 1, 8, 8)
        loss = (depth(img) - img).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        outputs.append({"loss": loss.detach() if detach else loss})
    return [float(o["loss"]) for o in outputs]


def bug():
    return _run(detach=False)


def fixed():
    return _run(detach=True)
