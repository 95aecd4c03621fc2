"""Unit 03's helpers: the running chain (w, x = 3w, y = x ** 2), reading ``.grad`` without the non-leaf
warning, and ``backward_order``, which logs the nodes in the order backward runs them."""

from __future__ import annotations

import warnings

import torch

from grader import probes


def chain(start=2.0):
    """The running example: w (a leaf, 2 unless told), x = 3w, y = x ** 2."""
    w = torch.tensor(start, requires_grad=True)
    x = w * 3
    y = x**2
    return w, x, y


def read_grad(t):
    """t.grad, without the warning a non-leaf gives."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad


def unhooked_grad(start):
    w, x, y = chain(start)
    y.backward()
    return w.grad.item()


def two_leaves():
    w1 = torch.tensor(2.0, requires_grad=True)
    w2 = torch.tensor(3.0, requires_grad=True)
    return w1, w2, (w1.exp() * w2).sin()


def backward_order(y, leaves=None):
    """The nodes in the order backward runs them, seen by a pre-hook on every node: a class name, or for an
    AccumulateGrad node the name of its leaf (from ``leaves``, a dict name -> tensor)."""
    by_id = {id(t): n for n, t in (leaves or {}).items()}
    ran = []
    for node in probes.nodes(y):
        label = by_id.get(id(getattr(node, "variable", None)), probes.node_name(node))
        node.register_prehook(lambda grad_outputs, label=label: ran.append(label))
    y.backward()
    return ran


def scaled():
    """The slip: requires_grad=True on the created tensor, then one more operation."""
    scale = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    return scale, (scale**2).sum()


def names_with_grad(named):
    return {name for name, t in named.items() if read_grad(t) is not None}
