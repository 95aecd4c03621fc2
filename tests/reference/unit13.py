"""Unit 13's exercises: known-good implementations, written the way a learner would, and plausible buggy ones,
each refused on its smallest failing case."""

import torch
from torch.func import functional_call, grad, vmap

from grader import probes

# --- 13.per-sample-grads ---------------------------------------------------------------------------------


def per_sample_grads(model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return ((functional_call(model, p, (xi,)) - yi) ** 2).sum()

    return vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)


def per_sample_grads_loop(model, x, y):
    """Also right: the loop the grader compares against, with autograd.grad (nothing accumulates)."""
    params = list(model.parameters())
    rows = [torch.autograd.grad(((model(x[i]) - y[i]) ** 2).sum(), params) for i in range(x.shape[0])]
    return {name: torch.stack([r[k] for r in rows]) for k, (name, _) in enumerate(model.named_parameters())}


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


def loop_without_zeroing(model, x, y):
    """A loop of .backward() that never clears .grad: each row holds the sum of the samples so far."""
    rows = []
    for i in range(x.shape[0]):
        ((model(x[i]) - y[i]) ** 2).sum().backward()
        rows.append({k: p.grad.clone() for k, p in model.named_parameters()})
    return {k: torch.stack([r[k] for r in rows]) for k in rows[0]}


# --- 13.eager-vs-compiled -----------------------------------------------------------------------------


def kept_bytes(f, args):
    eager = probes.bill(lambda: f(*args)).total
    compiled = torch.compile(f, backend="aot_eager")
    compiled(*args)
    return [eager, probes.bill(lambda: compiled(*args)).total]


def _saves_bytes(run):
    """Every save counted, at its tensor's size: a storage saved twice is counted twice."""
    total = []

    def pack(t):
        total.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return sum(total)


def counts_saves_not_storages(f, args):
    compiled = torch.compile(f, backend="aot_eager")
    compiled(*args)
    return [_saves_bytes(lambda: f(*args)), _saves_bytes(lambda: compiled(*args))]


def eager_backend(f, args):
    """backend='eager' runs Dynamo's graph without AOTAutograd: each op records its own node, as eagerly."""
    eager = probes.bill(lambda: f(*args)).total
    compiled = torch.compile(f, backend="eager")
    compiled(*args)
    return [eager, probes.bill(lambda: compiled(*args)).total]


def compiled_under_no_grad(f, args):
    """Measures the compiled run inside no_grad: nothing is kept at all."""
    eager = probes.bill(lambda: f(*args)).total
    compiled = torch.compile(f, backend="aot_eager")
    with torch.no_grad():
        compiled(*args)
        kept = probes.bill(lambda: compiled(*args)).total
    return [eager, kept]


REFERENCE = {"13.per-sample-grads": per_sample_grads, "13.eager-vs-compiled": kept_bytes}
ALSO_RIGHT = {"13.per-sample-grads": [per_sample_grads_loop]}
BUGGY = {
    "13.per-sample-grads": [batch_grad_repeated, mean_over_batch, mean_over_outputs, loop_without_zeroing],
    "13.eager-vs-compiled": [counts_saves_not_storages, eager_backend, compiled_under_no_grad],
}
