"""Unit 06's programs: the small graphs, loops and create_graph passes the experiments run, and the numeric
helpers the exercises compare gradients with.
"""

from __future__ import annotations

import gc
import math
import weakref

import torch
from torch import nn

from grader import probes

# --- the programs the questions run ---------------------------------------------------------------


def state_label(t) -> str:
    """One word for the states of every tensor the graph under ``t`` saved."""
    states = {s.state for s in probes.saved_tensors(t)}
    if not states:
        return "nothing saved"
    return states.pop() if len(states) == 1 else "mixed"


def chain():
    w = torch.tensor(2.0, requires_grad=True)
    u = w * 3
    loss = u**2
    return w, u, loss


def two_losses_graph():
    w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    c = torch.tensor([3.0, -1.0, 0.5])
    h = (w * c).tanh()
    return w, c, h, (h**2).sum(), (h * c).sum()


def run_stale_loop(steps=5, lr=0.02):
    x = torch.tensor([1.0, 2.0, 3.0])
    target = 3 * x
    w = torch.tensor(0.0, requires_grad=True)
    loss = ((w * x - target) ** 2).mean()
    grads, values = [], []
    for _ in range(steps):
        loss.backward(retain_graph=True)
        grads.append(w.grad.item())
        values.append(w.item())
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return grads, values


def mlp_stale(iterations=3):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    loss = ((model(x) - y) ** 2).mean()  # recorded once, before the loop
    for i in range(1, iterations + 1):
        opt.zero_grad()
        yield f"at iteration {i}"
        loss.backward(retain_graph=True)
        opt.step()


def training(steps, keep):
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    running_loss = 0.0
    for _ in range(steps):
        X, Y = torch.randn(16, 4), torch.randn(16)
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.01 * w.grad
        w.grad = None
        running_loss += keep(loss)
    return running_loss


def sin_square(value=2.0):
    x = torch.tensor(value, requires_grad=True)
    return x, torch.sin(x**2)


def differentiable_again(flag: str) -> bool:
    x, z = sin_square()
    options = {"plain": {}, "retain_graph": {"retain_graph": True}, "create_graph": {"create_graph": True}}
    (g,) = torch.autograd.grad(z, x, **options[flag])
    if g.grad_fn is None:
        return False
    torch.autograd.grad(g, x)
    return True


def survives(how: str) -> bool:
    """Does a parameter outlive its last name and a gc.collect() after a create_graph pass?"""
    w = torch.randn(1000, requires_grad=True)
    ref = weakref.ref(w)
    loss = (w.sin() ** 2).sum()
    if how == "backward":
        loss.backward(create_graph=True)
    elif how == "autograd.grad":
        (g,) = torch.autograd.grad(loss, w, create_graph=True)
        del g
    elif how == "backward, then grad = None":
        loss.backward(create_graph=True)
        w.grad = None
    del w, loss
    gc.collect()
    return ref() is not None


# labels of 06.which-grads-recorded: a first gradient of x = 2.0, and whether it was taken with create_graph
FIRST_GRADIENTS = {
    "sin(x ** 2), create_graph": (lambda x: torch.sin(x**2), True),
    "sin(x ** 2), plain": (lambda x: torch.sin(x**2), False),
    "3 * x + 1, create_graph": (lambda x: 3 * x + 1, True),
    "x * x, create_graph": (lambda x: x * x, True),
}


def first_gradient_recorded(label: str) -> bool:
    """Does the first gradient named by label have a grad_fn?"""
    fn, create = FIRST_GRADIENTS[label]
    x = torch.tensor(2.0, requires_grad=True)
    (g,) = torch.autograd.grad(fn(x), x, create_graph=create)
    return g.grad_fn is not None


# --- comparing gradients (the exercises' kind and cases) ----------------------------------------------


def close_enough(a, b, tol=1e-4, rel=1e-4) -> bool:
    return len(a) == len(b) and all(
        math.isfinite(x) and math.isfinite(y) and abs(x - y) <= tol + rel * abs(x) for x, y in zip(a, b)
    )


def as_numbers(t) -> tuple:
    return tuple(float(v) for v in t.detach().reshape(-1).tolist())
