"""cybertronai/autograd-hacks#10: "Using a non-full backward hook when the forward contains multiple
autograd Nodes is deprecated ... This hook will be missing some grad_input".

Symptom: the warning, and the per-layer gradients the library collects are not the layer's.
Mechanism: hooks-checkpoint. register_backward_hook attaches to the last autograd node the module's
forward made; for a block of several ops grad_input belongs to that last op only.
Fix: register_full_backward_hook.
"""

import torch
from torch import nn

THREAD = "cybertronai/autograd-hacks#10"
MECHANISM = "hooks-checkpoint"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        return torch.tanh(self.fc(x)) * 2


def _run(full):
    torch.manual_seed(0)
    block = Block()
    seen = []

    def capture(module, grad_input, grad_output):
        seen.append([None if g is None else tuple(g.shape) for g in grad_input])

    if full:
        block.register_full_backward_hook(capture)
    else:
        block.register_backward_hook(capture)
    x = torch.randn(3, 5, requires_grad=True)
    block(x).sum().backward()
    return seen


def bug():
    return _run(full=False)


def fixed():
    return _run(full=True)
