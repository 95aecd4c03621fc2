"""pytorch/pytorch#62471: torch.utils.checkpoint around a block with BatchNorm changes its running average.

Symptom: a toy model whose forward is checkpoint(self.block, x), the block a BatchNorm1d then a Linear,
ends with running statistics (and num_batches_tracked) unlike the same model without checkpoint, though
losses and gradients match.
Mechanism: hooks-checkpoint (state updated twice by recomputation): backward re-runs the checkpointed
forward to rebuild what it did not save, and BatchNorm in training mode updates its running statistics
on that second run too.
Fix: keep BatchNorm out of the checkpointed block (checkpoint only the layers without state).
"""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

THREAD = "pytorch/pytorch#62471"
MECHANISM = "hooks-checkpoint"


class Model(nn.Module):
    def __init__(self, bn_inside):
        super().__init__()
        self.bn_inside = bn_inside
        self.bn = nn.BatchNorm1d(10, momentum=0.1)
        self.linear = nn.Linear(10, 1)

    def forward(self, x):
        if self.bn_inside:
            return checkpoint(lambda t: self.linear(self.bn(t)), x, use_reentrant=False)
        return checkpoint(self.linear, self.bn(x), use_reentrant=False)


def _run(bn_inside):
    torch.manual_seed(5)
    model = Model(bn_inside)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(3):
        x = torch.randn(4, 10) + i
        opt.zero_grad()
        model(x).mean().backward()
        opt.step()
    return [model.bn.running_mean.clone(), model.bn.num_batches_tracked.clone()]


def bug():
    return _run(bn_inside=True)


def fixed():
    return _run(bn_inside=False)
