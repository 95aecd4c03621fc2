"""Unit 03's helpers: the running chain (w, x = 3w, y = x ** 2), reading ``.grad`` without the non-leaf
warning, ``backward_order``, which logs the nodes in the order backward runs them, and the programs the
unit's questions run."""

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


def detached_copy_program():
    """w a leaf, c a constant, x = w * c, h a detached copy of x made a leaf of its own; y.backward() has run."""
    w = torch.tensor(2.0, requires_grad=True)
    c = torch.tensor(3.0)
    x = w * c
    h = x.detach().requires_grad_()
    y = x**2 + h**2
    y.backward()
    return {"w": w, "c": c, "x": x, "h": h, "y": y}


def sin_cos_product():
    """q = w.cos() is created before p = w.sin(), but is the product's first input."""
    w = torch.tensor(2.0, requires_grad=True)
    q = w.cos()
    p = w.sin()
    return w, q * p


def _label(node, w):
    return "w" if getattr(node, "variable", None) is w else probes.node_name(node)


def ready_order_by_inputs():
    """The order a learner expects who runs ready nodes in the product's input order."""
    w, y = sin_cos_product()
    inputs = [node for node, _ in y.grad_fn.next_functions]
    return [_label(y.grad_fn, w), *(_label(n, w) for n in inputs), "w"]


def ready_order_walked():
    """Unit 01's depth-first walk of the same graph."""
    w, y = sin_cos_product()
    return [_label(n, w) for n in probes.nodes(y)]


def hooks_registered_in_a_loop(steps, remove=False):
    """The calls made by a hook registered on one leaf at every step; with remove, each removed after its step."""
    w = torch.tensor(1.0, requires_grad=True)
    calls = []
    for step in range(steps):
        handle = w.register_hook(lambda g, step=step: calls.append(step))
        (w * 2).backward()
        if remove:
            handle.remove()
    return calls


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
