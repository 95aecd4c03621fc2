"""gpleiss/efficient_densenet_pytorch#73: BN running mean and variance with torch.utils.checkpoint.

Symptom: a memory-efficient DenseNet checkpoints each dense layer's concat-BatchNorm-ReLU-Conv bottleneck;
the BatchNorm is computed twice per step (forward, then recomputation in backward) and its running
mean and variance are updated twice.
Mechanism: hooks-checkpoint (state updated twice by recomputation), here with the reentrant checkpoint.
Fix: checkpoint only the stateless part of the bottleneck (the concatenation and the convolution), with
the BatchNorm run once outside it.
"""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

THREAD = "gpleiss/efficient_densenet_pytorch#73"
MECHANISM = "hooks-checkpoint"


class DenseLayer(nn.Module):
    def __init__(self, channels, growth, bn_checkpointed):
        super().__init__()
        self.bn_checkpointed = bn_checkpointed
        self.norm = nn.BatchNorm2d(channels)
        self.conv = nn.Conv2d(channels, growth, 1)

    def forward(self, *features):
        if self.bn_checkpointed:
            bottleneck = lambda *f: self.conv(torch.relu(self.norm(torch.cat(f, 1))))  # noqa: E731
            new = checkpoint(bottleneck, *features, use_reentrant=True)
        else:
            normed = torch.relu(self.norm(torch.cat(features, 1)))
            new = checkpoint(self.conv, normed, use_reentrant=True)
        return [*features, new]


def _run(bn_checkpointed):
    torch.manual_seed(6)
    layers = nn.ModuleList([DenseLayer(2, 2, bn_checkpointed), DenseLayer(4, 2, bn_checkpointed)])
    head = nn.Linear(6, 1)
    opt = torch.optim.SGD([*layers.parameters(), *head.parameters()], lr=0.01)
    for _ in range(2):
        features = [torch.randn(2, 2, 4, 4, requires_grad=True)]
        for layer in layers:
            features = layer(*features)
        loss = head(torch.cat(features, 1).mean((2, 3))).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [layers[0].norm.running_mean.clone(), layers[1].norm.num_batches_tracked.clone()]


def bug():
    return _run(bn_checkpointed=True)


def fixed():
    return _run(bn_checkpointed=False)
