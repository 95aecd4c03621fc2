"""f-dangel/singd#56: full backward hooks incompatible with in-place activations.

Symptom: an optimizer that installs register_full_backward_hook on every layer it preconditions (to
read each layer's output gradient) makes model(X) raise for a Conv2d followed by ReLU(inplace=True):
"Output 0 of BackwardHookFunctionBackward is a view and is being modified inplace".
Mechanism: hooks-checkpoint (full hooks followed by in-place ops): the hook wraps the layer's output in a
view made by BackwardHookFunction; the in-place activation writes that view.
Fix: out-of-place activations in models trained with such an optimizer (ReLU(inplace=False)).
"""

import torch
from torch import nn

THREAD = "f-dangel/singd#56"
MECHANISM = "hooks-checkpoint"


class HookedSGD(torch.optim.SGD):
    """A stand-in for a preconditioning optimizer: it records every layer's output-gradient norm."""

    def __init__(self, model, lr):
        super().__init__(model.parameters(), lr=lr)
        self.seen = []
        self.handles = [
            m.register_full_backward_hook(lambda m, gin, gout: self.seen.append(float(gout[0].norm())))
            for m in model.modules()
            if isinstance(m, (nn.Conv2d, nn.Linear))
        ]


def _run(inplace):
    torch.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(inplace=inplace), nn.Flatten(), nn.Linear(18, 1))
    opt = HookedSGD(model, lr=0.1)
    try:
        for _ in range(2):
            opt.zero_grad()
            loss = model(torch.rand(2, 1, 5, 5)).pow(2).mean()
            loss.backward()
            opt.step()
    finally:
        for h in opt.handles:
            h.remove()
    return opt.seen


def bug():
    return _run(inplace=True)


def fixed():
    return _run(inplace=False)
