"""zhanhz/PC-NBV_pytorch#3: GPU memory grows through inference until it runs out.

Symptom: in the inference process, without ``with torch.no_grad()``, memory use keeps increasing.
Mechanism: held-graph. Reduced here to a recurrent model run step by step at inference: each step's
state is computed from the last one with grad recording on, so the state holds the graph of every step
so far, and no backward ever walks (or frees) it.
Fix: run inference under torch.no_grad() (or detach the state each step).
"""

import torch
from torch import nn

THREAD = "zhanhz/PC-NBV_pytorch#3"
MECHANISM = "held-graph"


def _run(no_grad):
    torch.manual_seed(3)
    cell = nn.GRUCell(3, 5)
    readout = nn.Linear(5, 1)
    h = torch.zeros(1, 5)
    outputs = []
    with torch.no_grad() if no_grad else torch.enable_grad():
        for t in range(36):
            h = cell(torch.full((1, 3), float(t % 5)), h)
            outputs.append(readout(h).item())
    return outputs


def bug():
    return _run(no_grad=False)


def fixed():
    return _run(no_grad=True)
