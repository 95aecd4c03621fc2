"""Unit 13's shortcuts: per-sample gradients without the transform (13.per-sample-grads) and without the hooks
over one backward pass (13.per-sample-by-hooks)."""

import torch
from torch.func import functional_call, grad, vmap  # bound before any check: the switch must still catch them


def autograd_grad_loop(model, x, y):
    """[wrapper] The loop the grader compares against: one torch.autograd.grad per sample, no torch.func."""
    params = list(model.parameters())
    rows = [torch.autograd.grad(((model(x[i]) - y[i]) ** 2).sum(), params) for i in range(x.shape[0])]
    return {name: torch.stack([r[k] for r in rows]) for k, (name, _) in enumerate(model.named_parameters())}


def backward_loop(model, x, y):
    """[wrapper] One .backward() per sample, reading and clearing .grad each time."""
    rows = []
    for i in range(x.shape[0]):
        model.zero_grad()
        ((model(x[i]) - y[i]) ** 2).sum().backward()
        rows.append({k: p.grad.clone() for k, p in model.named_parameters()})
    return {k: torch.stack([r[k] for r in rows]) for k in rows[0]}


def func_grad_loop(model, x, y):
    """[heuristic] torch.func.grad, but in a Python loop over the samples instead of vmap."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return ((functional_call(model, p, (xi,)) - yi) ** 2).sum()

    rows = [grad(loss)(params, x[i], y[i]) for i in range(x.shape[0])]
    return {k: torch.stack([r[k] for r in rows]) for k in params}


def vmap_grad(model, x, y):
    """[wrapper] 13.per-sample-grads' transform, where one backward pass with hooks is asked for."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return ((functional_call(model, p, (xi,)) - yi) ** 2).sum()

    return vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)


def batched_seeds(model, x, y):
    """[wrapper] One autograd.grad call with one one-hot seed per sample, batched (is_grads_batched=True)."""
    per_sample = ((model(x) - y) ** 2).sum(1)
    params = list(model.parameters())
    rows = torch.autograd.grad(per_sample, params, torch.eye(x.shape[0]), is_grads_batched=True)
    return {name: r for (name, _), r in zip(model.named_parameters(), rows)}


def jacobian_of_losses(model, x, y):
    """[wrapper] torch.autograd.functional.jacobian of the per-sample losses with respect to the parameters."""
    names = [n for n, _ in model.named_parameters()]
    params = tuple(p.detach() for _, p in model.named_parameters())

    def losses(*ps):
        out = functional_call(model, dict(zip(names, ps)), (x,))
        return ((out - y) ** 2).sum(1)

    jac = torch.autograd.functional.jacobian(losses, params)
    return dict(zip(names, jac))


SHORTCUTS = {
    "13.per-sample-grads": [autograd_grad_loop, backward_loop, func_grad_loop, jacobian_of_losses],
    "13.per-sample-by-hooks": [vmap_grad, autograd_grad_loop, backward_loop, batched_seeds, jacobian_of_losses],
}
