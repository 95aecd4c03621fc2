"""pytorch/pytorch#598: a backward hook on a module with three inputs gets a grad_input of two elements.

Symptom: the hook's grad_input does not match the module's inputs (x, y, z).
Mechanism: hooks-checkpoint. The (legacy) module hook is registered on the last function the module
created, here the second addition of x + y + z, whose inputs are (x + y) and z.
Fix: register_full_backward_hook, whose grad_input are the module's inputs.
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#598"
MECHANISM = "hooks-checkpoint"


class M(nn.Module):
    def forward(self, x, y, z):
        return x + y + z


def _run(full):
    torch.manual_seed(0)
    sizes = []

    def hook(module, grad_input, grad_output):
        sizes.append(len(grad_input))

    mod = M()
    (mod.register_full_backward_hook if full else mod.register_backward_hook)(hook)
    x, y, z = (torch.randn(1, 5, requires_grad=True) for _ in range(3))
    out = mod(x, y, z)
    loss = nn.functional.mse_loss(out, torch.randn(1, 5))
    loss.backward()
    return sizes


def bug():
    return _run(full=False)


def fixed():
    return _run(full=True)
