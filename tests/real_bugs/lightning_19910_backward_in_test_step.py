"""Lightning-AI/pytorch-lightning#19910: "element 0 of tensors does not require grad" in test_step and
validation_step (closed as working as intended: those steps run with grad disabled).

Symptom: a backward inside the evaluation step raises the grad_fn error.
Mechanism: no-grad-root. The evaluation loop runs under torch.inference_mode(); the loss made there is
an inference tensor without a graph.
Fix: do not backward in evaluation (or, for a step that really needs gradients, enable them for it).
"""

import torch
from torch import nn

THREAD = "Lightning-AI/pytorch-lightning#19910"
MECHANISM = "no-grad-root"


def _test_step(model, batch, wants_grad):
    x, y = batch
    loss = nn.functional.mse_loss(model(x), y)
    if wants_grad:
        loss.backward()
    return loss.item()


def _run(wants_grad):
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    batch = (torch.randn(5, 3), torch.randn(5, 1))
    with torch.inference_mode():  # what the trainer's test loop does around test_step
        return [_test_step(model, batch, wants_grad)]


def bug():
    return _run(wants_grad=True)


def fixed():
    return _run(wants_grad=False)
