"""Unit 13's exercises: known-good implementations, written the way a learner would, and plausible buggy ones,
each refused on its smallest failing case."""

import torch
from torch.func import functional_call, grad, vmap

# --- 13.per-sample-grads ---------------------------------------------------------------------------------


def per_sample_grads(model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return ((functional_call(model, p, (xi,)) - yi) ** 2).sum()

    return vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)


def batch_grad_repeated(model, x, y):
    """The batch's gradient, copied for every sample: no vmap, one grad of the whole batch's loss."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    g = grad(lambda p: ((functional_call(model, p, (x,)) - y) ** 2).sum())(params)
    return {k: v.expand(x.shape[0], *v.shape) for k, v in g.items()}


def mean_over_batch(model, x, y):
    """Divides each sample's loss by the batch size, as a batch-mean loss would."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return ((functional_call(model, p, (xi,)) - yi) ** 2).sum() / x.shape[0]

    return vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)


def mean_over_outputs(model, x, y):
    """Averages the squared error over the outputs instead of summing it."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return ((functional_call(model, p, (xi,)) - yi) ** 2).mean()

    return vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)


# --- 13.per-sample-by-hooks ------------------------------------------------------------------------------


def per_sample_by_hooks(model, x, y):
    inputs, grads, handles = {}, {}, []
    linears = {name: m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)}

    def keep(name):
        def forward_hook(module, args, out):
            inputs[name] = args[0].detach()
            out.register_hook(lambda g: grads.__setitem__(name, g.detach()))

        return forward_hook

    for name, m in linears.items():
        handles.append(m.register_forward_hook(keep(name)))
    try:
        ((model(x) - y) ** 2).sum().backward()
    finally:
        for h in handles:
            h.remove()
    out = {}
    for name, m in linears.items():
        out[f"{name}.weight"] = torch.einsum("bo,bi->boi", grads[name], inputs[name])
        if m.bias is not None:
            out[f"{name}.bias"] = grads[name]
    return out


def _hooked(model, x, y, loss_scale=1.0, use_model_input=False):
    inputs, grads, handles = {}, {}, []
    linears = {name: m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    for name, m in linears.items():

        def forward_hook(module, args, out, name=name):
            inputs[name] = x if use_model_input else args[0].detach()
            out.register_hook(lambda g: grads.__setitem__(name, g.detach()))

        handles.append(m.register_forward_hook(forward_hook))
    try:
        (((model(x) - y) ** 2).sum() * loss_scale).backward()
    finally:
        for h in handles:
            h.remove()
    out = {}
    for name, m in linears.items():
        out[f"{name}.weight"] = torch.einsum("bo,bi->boi", grads[name], inputs[name])
        if m.bias is not None:
            out[f"{name}.bias"] = grads[name]
    return out


def hooks_batch_mean(model, x, y):
    """A batch-mean loss: every sample's gradient comes out divided by the batch size."""
    return _hooked(model, x, y, loss_scale=1.0 / x.shape[0])


def hooks_model_input_everywhere(model, x, y):
    """Pairs every layer's output gradient with the model's input, not the layer's own input."""
    return _hooked(model, x, y, use_model_input=True)


def weight_grad_split_evenly(model, x, y):
    """One backward, then the batch's .grad shared out equally: not what each sample contributed."""
    ((model(x) - y) ** 2).sum().backward()
    return {k: (p.grad / x.shape[0]).expand(x.shape[0], *p.shape).clone() for k, p in model.named_parameters()}


def outer_product_reversed(model, x, y):
    """The outer product taken the wrong way round, then reshaped to fit: the right numbers in the wrong places."""
    full = per_sample_by_hooks(model, x, y)
    out = {}
    for k, v in full.items():
        if v.dim() == 3:
            b, o, i = v.shape
            out[k] = v.transpose(1, 2).reshape(b, o, i)
        else:
            out[k] = v
    return out


REFERENCE = {"13.per-sample-grads": per_sample_grads, "13.per-sample-by-hooks": per_sample_by_hooks}
BUGGY = {
    "13.per-sample-grads": [batch_grad_repeated, mean_over_batch, mean_over_outputs],
    "13.per-sample-by-hooks": [
        hooks_batch_mean,
        hooks_model_input_everywhere,
        weight_grad_split_evenly,
        outer_product_reversed,
    ],
}
