"""nianticlabs/monodepth2#24: "element 0 of tensors does not require grad and does not have a grad_fn"
after changing the code; the maintainers: the torch.no_grad() block is for validation only.

Symptom: loss.backward() raises the grad_fn error.
Mechanism: no-grad-root. The changed code computes the training loss inside the validation's
torch.no_grad() block, so no graph is recorded and the loss has no grad_fn.
Fix: compute the loss that trains outside no_grad; keep no_grad for validation.
"""

import torch
from torch import nn

THREAD = "nianticlabs/monodepth2#24"
MECHANISM = "no-grad-root"


def _run(outside):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 3, padding=1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    images = torch.rand(2, 3, 8, 8)
    if outside:
        loss = model(images).abs().mean()
    else:
        with torch.no_grad():
            loss = model(images).abs().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return [loss.item()]


def bug():
    return _run(outside=False)


def fixed():
    return _run(outside=True)
