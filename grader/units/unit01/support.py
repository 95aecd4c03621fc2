"""Unit 01's helpers: the running examples its experiments build (the chain w -> 3w -> squared, the
neuron, the closed-book graph) and ``branchy``, the function whose graph records the branch that ran."""

import torch


def chain():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    y = x**2
    return w, x, y


def shared_chain():
    """w used twice (in w * 3 and in the subtraction) and u = w * 3 used twice (u * u): one node each."""
    w = torch.tensor(2.0, requires_grad=True)
    u = w * 3
    y = u * u - w
    return w, u, y


def walk_every_edge(y):
    """The walk that forgets what it has seen: a node listed each time an edge reaches it."""
    found = []

    def visit(fn):
        if fn is None:
            return
        found.append(type(fn).__name__)
        for child, _ in fn.next_functions:
            visit(child)

    visit(y.grad_fn)
    return found


def branchy(x):
    """A function whose formula depends on its input's sign: the graph records the branch that ran."""
    if x.item() > 0:
        return x**2 + 2 * x
    return (x + 3).abs()


def recorded_results(v):
    return {
        "argmax": v.argmax(),
        "max": v.max(),
        "gt": v > 0,
        "long": v.long(),
        "double": v.double(),
        "round": v.round(),
    }


def neuron(x_value=1.0, w_value=2.0):
    x = torch.tensor(x_value, requires_grad=True)
    w = torch.tensor(w_value, requires_grad=True)
    z = w * x - 0.5
    s = torch.sigmoid(z)
    return x, w, z, s


def mm_as_addmm(truth):
    """The walk a learner writes who expects one fused node for x @ W + b."""
    out = [n for n in truth if n != "MmBackward0"]
    return ["AddmmBackward0" if n == "AddBackward0" else n for n in out]
