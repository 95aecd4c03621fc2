"""pytorch/pytorch#121416: backpropagating a masked MSE loss produces NaN where it should not.

Symptom: targets with missing values (NaN) are masked after the elementwise loss, L(pred, y)[mask].sum();
the loss is finite, but the prediction's gradient is NaN at the masked entries (masking the inputs
first, L(pred[mask], y[mask]), gives finite gradients).
Mechanism: nan-masked-branch: indexing sends a zero gradient to the masked entries, and MSE's backward
multiplies it by 2 * (pred - nan) = nan; 0 * nan = nan reaches the model's parameters.
Fix: select before the loss: L(pred[mask], y[mask]).
"""

import torch
from torch import nn

THREAD = "pytorch/pytorch#121416"
MECHANISM = "nan-masked-branch"


def _run(mask_first):
    torch.manual_seed(7)
    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss(reduction="none")
    x = torch.randn(4, 3)
    y = torch.randn(4, 2)
    y[1, 0] = y[3, 1] = float("nan")  # labels missing
    mask = ~torch.isnan(y)
    grads = []
    for _ in range(2):
        opt.zero_grad()
        pred = model(x)
        loss = loss_fn(pred[mask], y[mask]).mean() if mask_first else loss_fn(pred, y)[mask].mean()
        loss.backward()
        grads.append(model.weight.grad.clone())
        opt.step()
    return grads


def bug():
    return _run(mask_first=False)


def fixed():
    return _run(mask_first=True)
