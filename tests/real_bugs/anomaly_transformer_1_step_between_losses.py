"""thuml/Anomaly-Transformer#1: loss2.backward() raises after the first optimizer step (minimax training).

Symptom: loss1.backward(retain_graph=True); optimizer.step(); loss2.backward() raises "one of the
variables needed for gradient computation has been modified by an inplace operation ... is at version 2;
expected version 1"; removing the first step makes it run.
Mechanism: optimizer-mismatch (a step that writes parameters between a forward and its backward). Both
losses come from one forward; the step between the two backward calls overwrites in place the weights
that forward saved, and the second backward needs the old ones.
Fix: run both backward calls first, then step once (or recompute the forward after the first step).
"""

import torch
from torch import nn

THREAD = "thuml/Anomaly-Transformer#1"
MECHANISM = "optimizer-mismatch"


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 8)
        self.out = nn.Linear(8, 6)

    def forward(self, x):
        h = torch.tanh(self.proj(x))
        return self.out(h), h.softmax(-1)


def _run(step_between):
    torch.manual_seed(1)
    model = Encoder()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(2):
        x = torch.randn(5, 6)
        recon, assoc = model(x)
        prior = torch.full_like(assoc, 1 / assoc.shape[-1])
        discrepancy = (assoc * (assoc.log() - prior.log())).sum(-1).mean()
        loss1 = nn.functional.mse_loss(recon, x) - 0.1 * discrepancy
        loss2 = nn.functional.mse_loss(recon, x) + 0.1 * discrepancy
        opt.zero_grad()
        loss1.backward(retain_graph=True)
        if step_between:
            opt.step()
        loss2.backward()
        opt.step()
        losses.append(loss1.item())
    return losses


def bug():
    return _run(step_between=True)


def fixed():
    return _run(step_between=False)
