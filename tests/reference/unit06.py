"""Unit 06's exercises: known-good implementations, written as a learner would, and plausible bugs."""

import torch

# --- 06.two-losses ----------------------------------------------------------------------------


def two_gradients(forward, w, way):
    if way == "retain_graph":
        loss_a, loss_b = forward(w)
        loss_a.backward(retain_graph=True)
        grad_a = w.grad.clone()
        w.grad = None
        loss_b.backward()
        return grad_a, w.grad
    if way == "two_forwards":
        loss_a, _ = forward(w)
        (grad_a,) = torch.autograd.grad(loss_a, w)
        _, loss_b = forward(w)
        (grad_b,) = torch.autograd.grad(loss_b, w)
        return grad_a, grad_b
    loss_a, loss_b = forward(w)
    (rows,) = torch.autograd.grad(torch.stack([loss_a, loss_b]), w, grad_outputs=torch.eye(2), is_grads_batched=True)
    return rows[0], rows[1]


def forgets_retain_graph(forward, w, way):
    if way == "retain_graph":
        loss_a, loss_b = forward(w)
        loss_a.backward()
        grad_a = w.grad.clone()
        w.grad = None
        loss_b.backward()
        return grad_a, w.grad
    return two_gradients(forward, w, way)


def never_clears_the_grad(forward, w, way):
    if way == "retain_graph":
        loss_a, loss_b = forward(w)
        loss_a.backward(retain_graph=True)
        grad_a = w.grad.clone()
        loss_b.backward()
        return grad_a, w.grad.clone()
    return two_gradients(forward, w, way)


def zeroes_instead_of_cloning(forward, w, way):
    if way == "retain_graph":
        loss_a, loss_b = forward(w)
        loss_a.backward(retain_graph=True)
        grad_a = w.grad
        w.grad.zero_()
        loss_b.backward()
        return grad_a, w.grad
    return two_gradients(forward, w, way)


def one_call_sums_the_losses(forward, w, way):
    if way == "one_call":
        loss_a, loss_b = forward(w)
        (grad,) = torch.autograd.grad([loss_a, loss_b], w)
        return grad, grad
    return two_gradients(forward, w, way)


def one_call_that_is_two_calls(forward, w, way):
    if way == "one_call":
        loss_a, loss_b = forward(w)
        (grad_a,) = torch.autograd.grad(loss_a, w, retain_graph=True)
        (grad_b,) = torch.autograd.grad(loss_b, w)
        return grad_a, grad_b
    return two_gradients(forward, w, way)


def swaps_the_pair(forward, w, way):
    grad_a, grad_b = two_gradients(forward, w, way)
    if way == "two_forwards":
        return grad_b, grad_a
    return grad_a, grad_b


# --- 06.hvp ----------------------------------------------------------------------------------------


def hvp(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    (hv,) = torch.autograd.grad((g * v).sum(), x)
    return hv


def hvp_without_create_graph(f, x, v):
    (g,) = torch.autograd.grad(f(x), x)
    (hv,) = torch.autograd.grad((g * v).sum(), x)
    return hv


def hvp_with_retain_graph(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, retain_graph=True)
    (hv,) = torch.autograd.grad((g * v).sum(), x)
    return hv


def hvp_returns_the_gradient(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    return g


def hvp_detached_then_silenced(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    g = g.detach().requires_grad_()
    (hv,) = torch.autograd.grad((g * v).sum(), x, allow_unused=True, materialize_grads=True)
    return hv


def hvp_ignores_v(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    (hv,) = torch.autograd.grad(g.sum(), x)
    return hv


def hvp_through_dot_grad(f, x, v):
    f(x).backward(create_graph=True)
    (x.grad * v).sum().backward()
    return x.grad


REFERENCE = {
    "06.two-losses": two_gradients,
    "06.hvp": hvp,
}

BUGGY = {
    "06.two-losses": [
        forgets_retain_graph,
        never_clears_the_grad,
        zeroes_instead_of_cloning,
        one_call_sums_the_losses,
        one_call_that_is_two_calls,
        swaps_the_pair,
    ],
    "06.hvp": [
        hvp_without_create_graph,
        hvp_with_retain_graph,
        hvp_returns_the_gradient,
        hvp_detached_then_silenced,
        hvp_ignores_v,
        hvp_through_dot_grad,
    ],
}
