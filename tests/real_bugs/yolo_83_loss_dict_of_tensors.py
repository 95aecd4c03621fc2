"""MultimediaTechLab/YOLO#83: CPU memory leaks 1-2 MB per batch.

Symptom: memory rises steadily over an epoch.
Mechanism: carried-state. The per-name running losses are a defaultdict of tensors, and each step adds
the step's loss tensors to them, so every step's graph stays reachable from the dict.
Fix: keep floats: total_loss[name] += value.item() * batch_size.
"""

from collections import defaultdict

import torch
from torch import nn

THREAD = "MultimediaTechLab/YOLO#83"
MECHANISM = "carried-state"


def _run(item):
    torch.manual_seed(0)
    model = nn.Linear(5, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    total_loss = defaultdict(float) if item else defaultdict(lambda: torch.tensor(0.0))
    for _ in range(6):
        x = torch.randn(4, 5)
        out = model(x)
        parts = {"box": out[:, 0].pow(2).mean(), "cls": out[:, 1:].abs().mean()}
        loss = parts["box"] + parts["cls"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        for name, value in parts.items():
            total_loss[name] += value.item() * 4 if item else value * 4
    return [float(v) for v in total_loss.values()]


def bug():
    return _run(item=False)


def fixed():
    return _run(item=True)
