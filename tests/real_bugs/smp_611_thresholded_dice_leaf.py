"""qubvel-org/segmentation_models.pytorch#611: a threshold added to the Dice loss.

Symptom: with the threshold, backward raised "element 0 of tensors does not require grad and does not
have a grad_fn". The pull request made it go away by returning the thresholded mask as
`torch.tensor(..., requires_grad=True)`. The error is gone, and the Dice term of a BCE + Dice loss no
longer trains anything.
Mechanism: inert-loss-term. A comparison with the threshold has no derivative, so the mask had no graph.
Rebuilding it as a new leaf that requires grad gives the Dice term a graph, but that graph ends at the new
leaf and reaches none of the model's parameters. Only the BCE term trains the model; the Dice term adds to
the loss's value and to no gradient.
Fix: compute the Dice loss on the probabilities (no threshold in the loss; threshold the metric only).
"""

import torch
from torch import nn

THREAD = "qubvel-org/segmentation_models.pytorch#611"
MECHANISM = "inert-loss-term"


def _threshold(x, threshold):
    if threshold is None:
        return x
    return torch.tensor((x > threshold).to(x.dtype), requires_grad=True)  # the PR's way past the error


def dice_loss(pr, gt, threshold, eps=1.0):
    pr = _threshold(pr, threshold)
    tp = (pr * gt).sum()
    return 1 - (2 * tp + eps) / (pr.sum() + gt.sum() + eps)


def _run(threshold):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    bce = nn.BCEWithLogitsLoss()
    images = torch.randn(2, 1, 8, 8)
    masks = (images > 0.3).float()
    losses = []
    for _ in range(3):
        logits = model(images)
        loss = dice_loss(torch.sigmoid(logits), masks, threshold) + bce(logits, masks)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def bug():
    return _run(threshold=0.5)


def fixed():
    return _run(threshold=None)
