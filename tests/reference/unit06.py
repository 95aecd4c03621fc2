"""Unit 06's exercises: known-good implementations, written as a learner would, and plausible bugs."""

import threading

import torch
from torch.func import grad as func_grad  # captured before any check, so switching torch.func off misses them
from torch.func import jacrev, jvp

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


def one_call_by_jacrev(forward, w, way):
    """Issue 29's shortcut: torch.func's Jacobian, no torch.autograd.grad call at all."""
    if way == "one_call":
        jac = torch.func.jacrev(lambda w: torch.stack(forward(w)))(w)
        return jac[0], jac[1]
    return two_gradients(forward, w, way)


def one_call_by_captured_jacrev(forward, w, way):
    """The same through a name imported before the check, which switching torch.func off cannot reach."""
    if way == "one_call":
        jac = jacrev(lambda w: torch.stack(forward(w)))(w)
        return jac[0], jac[1]
    return two_gradients(forward, w, way)


def in_a_thread(fn):
    """fn() run in a thread the learner starts, its result (or exception) handed back."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def one_call_by_jacrev_in_a_thread(forward, w, way):
    """torch.func.jacrev called from a thread of the learner's own, which a check of one thread would miss."""
    if way == "one_call":
        jac = in_a_thread(lambda: torch.func.jacrev(lambda w: torch.stack(forward(w)))(w))
        return jac[0], jac[1]
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


def hvp_by_torch_func(f, x, v):
    """Issue 29's shortcut, copied from the cell above the exercise: forward-over-reverse with torch.func."""
    return torch.func.jvp(torch.func.grad(f), (x.detach(),), (v,))[1]


def hvp_by_captured_torch_func(f, x, v):
    """The same through names imported before the check."""
    return jvp(func_grad(f), (x.detach(),), (v,))[1]


def hvp_by_torch_func_in_a_thread(f, x, v):
    """The shortcut from a thread the learner starts."""
    return in_a_thread(lambda: torch.func.jvp(torch.func.grad(f), (x.detach(),), (v,))[1])


def hvp_by_finite_differences(f, x, v):
    """Central differences of the gradient in float64, with torch.autograd.grad twice: close, but no second order."""
    eps = 1e-5
    x64, v64 = x.detach().double(), v.double()
    ends = []
    for sign in (1, -1):
        point = (x64 + sign * eps * v64).requires_grad_()
        (g,) = torch.autograd.grad(f(point), point)
        ends.append(g)
    return ((ends[0] - ends[1]) / (2 * eps)).float()


def hvp_by_finite_differences_at_x(f, x, v):
    """Finite differences whose gradients do reach x, each with create_graph=True, never differentiated again."""
    eps = 1e-3
    (g_plus,) = torch.autograd.grad(f(x + eps * v), x, create_graph=True)
    (g_minus,) = torch.autograd.grad(f(x - eps * v), x, create_graph=True)
    return ((g_plus - g_minus) / (2 * eps)).detach()


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
        one_call_by_jacrev,
        one_call_by_captured_jacrev,
        one_call_by_jacrev_in_a_thread,
        swaps_the_pair,
    ],
    "06.hvp": [
        hvp_without_create_graph,
        hvp_with_retain_graph,
        hvp_returns_the_gradient,
        hvp_detached_then_silenced,
        hvp_ignores_v,
        hvp_through_dot_grad,
        hvp_by_torch_func,
        hvp_by_captured_torch_func,
        hvp_by_torch_func_in_a_thread,
        hvp_by_finite_differences,
        hvp_by_finite_differences_at_x,
    ],
}
