"""Unit 06's general rules, each checked on generated programs (see grader.engine.claims)."""

import gc
import random
import warnings
import weakref

import torch

from grader import probes
from grader.engine.claims import Trial, claim

# losses of w, and whether each is linear in w (its gradient then does not depend on w)
_LOSSES = {
    "(w.sin() ** 2).sum()": (lambda w, c: (w.sin() ** 2).sum(), False),
    "(w * w * c).sum()": (lambda w, c: (w * w * c).sum(), False),
    "w.exp().sum()": (lambda w, c: w.exp().sum(), False),
    "(w.tanh() * c).sum()": (lambda w, c: (w.tanh() * c).sum(), False),
    "(w * c).sum()": (lambda w, c: (w * c).sum(), True),
    "(3 * w + c).sum()": (lambda w, c: (3 * w + c).sum(), True),
    "(w @ c)": (lambda w, c: w @ c, True),
}


@claim(
    "06.create-graph-ends-at-w",
    sentence="when the loss is not linear in `w`, that graph ends at `w`'s `AccumulateGrad` node, which holds `w`",
    holds_when="the loss is not linear in w; for a loss linear in w (`(w * c).sum()`) the gradient does not "
    "depend on w and its graph does not reach w",
)
def create_graph_ends_at_w():
    for seed in range(14):
        rng = random.Random(seed)
        name = sorted(_LOSSES)[seed % len(_LOSSES)]
        loss, linear = _LOSSES[name]
        n = rng.randint(2, 20)
        w, c = torch.randn(n, requires_grad=True), torch.randn(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns once about the cycle backward(create_graph=True) makes
            loss(w, c).backward(create_graph=True)
        ends = w.grad.grad_fn is not None and any(leaf is w for leaf in probes.reachable_leaves(w.grad))
        w.grad = None  # break the cycle
        yield Trial(f"seed {seed}: {name}, {n} elements", condition=not linear, holds=ends)


def _a_hook_closure(n: int) -> torch.Tensor:
    w = torch.randn(n, requires_grad=True)
    w.register_hook(lambda g: g * w.detach().sign())  # the closure holds w, w holds its hooks
    return w


def _a_hook_default(n: int) -> torch.Tensor:
    w = torch.randn(n, requires_grad=True)
    keep = [w]
    w.register_hook(lambda g, keep=keep: g)
    return w


def _create_graph(n: int) -> torch.Tensor:
    w = torch.randn(n, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (w.sin() ** 2).sum().backward(create_graph=True)
    return w


@claim(
    "06.python-cycles-are-collected",
    sentence="A cycle that passes through a Python object, such as a hook's closure, is one `gc.collect()` finds "
    "and frees.",
    holds_when="the cycle passes through a Python object; the cycle `backward(create_graph=True)` makes runs "
    "through C++ references only and survives `gc.collect()`",
)
def python_cycles_are_collected():
    makers = [("a hook's closure", _a_hook_closure, True), ("a hook's default argument", _a_hook_default, True)]
    makers.append(("backward(create_graph=True)", _create_graph, False))
    made = []
    for seed in range(9):
        label, make, through_python = makers[seed % len(makers)]
        made.append((f"seed {seed}: a cycle through {label}", through_python, weakref.ref(make(seed + 2))))
    gc.collect()  # once for all of them: a collection takes a while in a process that imported torch
    for label, through_python, gone in made:
        kept = gone()
        if kept is not None:  # leave nothing behind: break the cycle by hand
            kept.grad = None
        yield Trial(label, condition=through_python, holds=kept is None)


@claim(
    "06.create-graph-gives-a-graph",
    sentence="With `create_graph=True`, the backward pass records its own operations, so a gradient that depends "
    "on the input gets a graph and can be differentiated again",
    holds_when="the gradient depends on the input (the loss is not linear in it); the gradient of a loss linear in "
    "`w`, such as `(w * c).sum()`, is a constant with no graph",
)
def create_graph_gives_a_graph():
    for seed in range(14):
        rng = random.Random(seed)
        name = sorted(_LOSSES)[seed % len(_LOSSES)]
        loss, linear = _LOSSES[name]
        n = rng.randint(2, 20)
        w, c = torch.randn(n, requires_grad=True), torch.randn(n)
        (g,) = torch.autograd.grad(loss(w, c), w, create_graph=True)
        again = False
        if g.grad_fn is not None:
            (h,) = torch.autograd.grad(g.sum(), w, allow_unused=True)
            again = h is not None
        yield Trial(f"seed {seed}: {name}, {n} elements", condition=not linear, holds=g.grad_fn is not None and again)


def _stale_loop(seed: int) -> tuple[str, bool, bool]:
    """One forward pass kept with retain_graph=True while an optimizer steps: (label, the graph saved a tensor the
    step writes, the second backward raised)."""
    from torch import nn

    rng = random.Random(seed)
    torch.manual_seed(seed)
    width = rng.choice([2, 3, 4])
    depth = 1 + seed % 3  # one Linear keeps no weight (its input needs no gradient); two or three keep one
    act = rng.choice([nn.Tanh, nn.ReLU, nn.Sigmoid])
    layers: list[nn.Module] = []
    for i in range(depth):
        layers += [nn.Linear(width, width if i < depth - 1 else 1)] + ([act()] if i < depth - 1 else [])
    model = nn.Sequential(*layers)
    x, target = torch.randn(rng.randint(2, 5), width), torch.randn(1)
    saved: list[torch.Tensor] = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        ((model(x) - target) ** 2).mean()  # the same forward once more, only to see what it saves
    # (the loop's own graph is recorded without hooks: a hook's unpack would skip the version check)
    loss = ((model(x) - target) ** 2).mean()
    storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept_a_parameter = any(t.untyped_storage().data_ptr() in storages for t in saved)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    raised = False
    try:
        for _ in range(2):
            opt.zero_grad()
            loss.backward(retain_graph=True)
            opt.step()
    except RuntimeError:
        raised = True
    return f"seed {seed}: {depth} Linear layer(s) with {act.__name__}, width {width}", kept_a_parameter, raised


@claim(
    "06.stale-graph-silent-unless-it-kept-a-parameter",
    sentence="So `retain_graph=True` hides a stale graph silently only when the graph kept nothing that is written "
    "later; keep a parameter, and the version check",
)
def stale_graph_silent_unless_it_kept_a_parameter():
    for seed in range(12):
        label, kept, raised = _stale_loop(seed)
        yield Trial(label, True, raised == kept)
