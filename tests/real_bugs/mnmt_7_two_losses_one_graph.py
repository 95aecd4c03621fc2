"""Eurus-Holmes/MNMT#7: "Trying to backward through the graph a second time, but the buffers have
already been freed"; the answer given: retain_graph=True.

Symptom: the second of two backward calls in one step raises.
Mechanism: freed-graph. Two losses share the encoder's graph; the first backward frees the encoder's
saved tensors, and the second needs them.
Fix: one backward on the sum of the losses (or retain_graph=True on the first).
"""

import torch
from torch import nn

THREAD = "Eurus-Holmes/MNMT#7"
MECHANISM = "freed-graph"


def _run(summed):
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(6, 8), nn.Tanh())
    text_head, image_head = nn.Linear(8, 3), nn.Linear(8, 2)
    params = [*encoder.parameters(), *text_head.parameters(), *image_head.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3)
    x = torch.randn(5, 6)
    opt.zero_grad()
    h = encoder(x)
    text_loss = nn.functional.cross_entropy(text_head(h), torch.randint(0, 3, (5,)))
    image_loss = image_head(h).pow(2).mean()
    if summed:
        (text_loss + image_loss).backward()
    else:
        text_loss.backward()
        image_loss.backward()
    opt.step()
    return [text_loss.item(), image_loss.item()]


def bug():
    return _run(summed=False)


def fixed():
    return _run(summed=True)
