"""Unit 13's shortcuts: per-sample gradients without the transform (13.per-sample-grads) and without the hooks
over one backward pass (13.per-sample-by-hooks)."""

import torch
from torch.func import functional_call, grad, vmap  # bound before any check: the switch must still catch them

from tests.shortcuts._around import RUN_BACKWARD, graders_answer, restored


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


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------

_TRANSFORMS = ("torch.func", "torch._functorch.apis", "torch._functorch.eager_transforms", "torch._vmap_internals")


def _names_and_params(model):
    names = [name for name, _ in model.named_parameters()]
    return names, tuple(p for _, p in model.named_parameters())


def _per_sample_by_the_engine(model, losses):
    """One engine call per sample's loss (retain_graph), under the wrapped _engine_run_backward."""
    names, params = _names_and_params(model)
    rows = {name: [] for name in names}
    for loss in losses:
        grads = RUN_BACKWARD((loss,), (torch.ones_like(loss),), True, False, params, False, False)
        for name, g in zip(names, grads):
            rows[name].append(g)
    return {name: torch.stack(gs) for name, gs in rows.items()}


def _cut_per_sample(model, batch, flat):
    grads = {}
    for name, p in model.named_parameters():
        n = batch * p.numel()
        grads[name] = torch.tensor(flat[:n], dtype=p.dtype).view(batch, *p.shape)
        flat = flat[n:]
    return grads


def engine_per_sample_one_forward(model, x, y):
    """[switch] The loop the check switches off, through autograd's engine called directly (the switch wraps
    torch.autograd._engine_run_backward, not the engine under it), after one forward pass of the batch."""
    return _per_sample_by_the_engine(model, ((model(x) - y) ** 2).flatten(1).sum(1))


def engine_per_sample_one_forward_per_sample(model, x, y):
    """[switch] The same engine, one forward pass a sample (refused: the check counts the model's runs)."""
    return _per_sample_by_the_engine(model, [((model(x[i]) - y[i]) ** 2).sum() for i in range(len(x))])


@restored("torch.autograd")
def _the_graders_truth():
    return graders_answer()


def per_sample_from_the_grader(model, x, y):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack, with torch.autograd's
    attributes put back (the grader's loop of autograd.grad runs inside the learner's function), cut into a dict."""
    return _cut_per_sample(model, len(x), list(_the_graders_truth()))


def one_backward_then_the_engine(model, x, y):
    """[switch] The one backward pass of the batch the check counts, and the per-sample gradients from autograd's
    engine called directly, once a sample: no hook at all."""
    losses = ((model(x) - y) ** 2).flatten(1).sum(1)
    grads = _per_sample_by_the_engine(model, losses)
    losses.sum().backward()
    return grads


@restored(*_TRANSFORMS)
def vmap_grad_switched_back_on(model, x, y):
    """[switch] torch.func's vmap over grad, with torch.func's modules (its internals too) put back for the call,
    after the one backward pass the check counts."""
    ((model(x) - y) ** 2).sum().backward()
    params = {name: p.detach() for name, p in model.named_parameters()}

    def loss(p, xi, yi):
        return ((torch.func.functional_call(model, p, (xi,)) - yi) ** 2).sum()

    return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


@restored("torch.func")
def vmap_grad_with_torch_func_only_put_back(model, x, y):
    """[switch] The same with only torch.func's own attributes put back (refused: the switch replaces the
    internals torch.func calls)."""
    ((model(x) - y) ** 2).sum().backward()
    params = {name: p.detach() for name, p in model.named_parameters()}

    def loss(p, xi, yi):
        return ((torch.func.functional_call(model, p, (xi,)) - yi) ** 2).sum()

    return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


def by_hooks_from_the_grader(model, x, y):
    """[stack] The one counted backward pass, and the gradients from torch's answer up the call stack."""
    ((model(x) - y) ** 2).sum().backward()
    return per_sample_from_the_grader(model, x, y)


SHORTCUTS["13.per-sample-grads"] += [engine_per_sample_one_forward_per_sample]
SHORTCUTS["13.per-sample-by-hooks"] += [vmap_grad_with_torch_func_only_put_back]
OPEN = {
    "13.per-sample-grads": [engine_per_sample_one_forward, per_sample_from_the_grader],
    "13.per-sample-by-hooks": [one_backward_then_the_engine, vmap_grad_switched_back_on, by_hooks_from_the_grader],
}
