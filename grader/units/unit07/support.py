"""Unit 07's programs: the small forward passes the experiments write into, and a GAN round (an optimizer
step between a forward pass and its backward) run in the orders the notebook compares (``tests/test_unit07.py``
checks the notebook's claims with :func:`gan_round`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def consumer(op: str):
    w = torch.tensor([2.0], requires_grad=True)
    u = w * 3
    v = u + 1 if op == "add" else u**2
    return w, u, v


def gan_models():
    torch.manual_seed(0)
    G = nn.Linear(2, 2)
    D = nn.Linear(2, 1)
    opt_D = torch.optim.SGD(D.parameters(), lr=0.1)
    fake = G(torch.randn(4, 2))
    d_loss = D(fake.detach()).mean()
    g_loss = -D(fake).mean()
    return G, D, opt_D, d_loss, g_loss


def _gan_with_g_opt():
    G, D, opt_D, d_loss, g_loss = gan_models()
    opt_G = torch.optim.SGD(G.parameters(), lr=0.1)
    return G, D, opt_D, opt_G, d_loss, g_loss


def gan_reference() -> dict[str, torch.Tensor]:
    """The gradients each loss alone gives its own player, from a fresh build: d_loss for D, g_loss for G,
    both at the parameters the round starts from (what the program means to compute)."""
    G, D, _, _, d_loss, g_loss = _gan_with_g_opt()
    grads = dict(zip(("D.weight", "D.bias"), torch.autograd.grad(d_loss, list(D.parameters()))))
    grads.update(zip(("G.weight", "G.bias"), torch.autograd.grad(g_loss, list(G.parameters()))))
    return grads


def gan_round(order: str) -> dict[str, Any]:
    """One round from the same start: what each parameter's .grad holds when its optimizer steps, and how
    far each parameter moved. ``order``: 'both backward first' (the tempting repair that is wrong),
    'inputs=' (g_loss.backward(inputs=G's parameters) first), or 'autograd.grad' (G's gradients returned)."""
    G, D, opt_D, opt_G, d_loss, g_loss = _gan_with_g_opt()
    before = {
        name: p.detach().clone()
        for name, p in (("D.weight", D.weight), ("D.bias", D.bias), ("G.weight", G.weight), ("G.bias", G.bias))
    }
    opt_G.zero_grad()
    opt_D.zero_grad()
    if order == "both backward first":
        d_loss.backward()
        g_loss.backward()
    elif order == "inputs=":
        g_loss.backward(inputs=list(G.parameters()))
        d_loss.backward()
    elif order == "autograd.grad":
        for p, g in zip(G.parameters(), torch.autograd.grad(g_loss, list(G.parameters()))):
            p.grad = g
        d_loss.backward()
    else:
        raise ValueError(order)
    grads = {"D.weight": D.weight.grad, "D.bias": D.bias.grad, "G.weight": G.weight.grad, "G.bias": G.bias.grad}
    grads = {k: (None if g is None else g.detach().clone()) for k, g in grads.items()}
    opt_D.step()
    opt_G.step()
    after = {"D.weight": D.weight, "D.bias": D.bias, "G.weight": G.weight, "G.bias": G.bias}
    moved = {k: bool((after[k].detach() != before[k]).any()) for k in before}
    return {"grads": grads, "moved": moved}


def inplace_block(inplace: bool):
    torch.manual_seed(0)
    fc1, fc2 = nn.Linear(3, 3), nn.Linear(3, 1)
    relu = nn.ReLU(inplace=inplace)
    x = torch.randn(2, 3)
    h = relu(fc1(x))
    return fc1, fc2, h


def keep_saved(t):
    """A saved-tensor hook that stores the tensor itself and gives it back unchanged."""
    return t


def keeper_program():
    a = torch.tensor([0.5, 1.0], requires_grad=True)
    c = torch.tensor([2.0, 3.0])
    t = a.sin()
    y = t * c
    return {"a": a, "t": t, "c": c, "y": y}
