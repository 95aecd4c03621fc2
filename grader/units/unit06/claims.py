"""Unit 06's general rules, each checked on generated programs (see grader.engine.claims)."""

import gc
import random
import warnings
import weakref

import torch

from grader import probes
from grader.engine.claims import Trial, claim, sweeps
from grader.probes import saves

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


_PIECEWISE = {
    "w.clamp(-1, 1).sum()": lambda w, c: w.clamp(-1, 1).sum(),
    "w.floor().sum()": lambda w, c: w.floor().sum(),
    "w.sign().sum()": lambda w, c: w.sign().sum(),
    "torch.where(w > 0, w, c).sum()": lambda w, c: torch.where(w > 0, w, c).sum(),
    "w.relu().sum()": lambda w, c: w.relu().sum(),
    "(w.abs() * c).sum()": lambda w, c: (w.abs() * c).sum(),
    "torch.maximum(w, c).sum()": lambda w, c: torch.maximum(w, c).sum(),
}


@claim(
    "06.create-graph-ends-at-w",
    sentence="that gradient has a graph when its backward computation read a value that requires grad; here the only "
    "tensor requiring grad is `w`, so such a graph ends at `w`'s `AccumulateGrad` node, which holds `w`",
    holds_when="`w.grad` has a graph (its backward read a value that requires grad) and `w` is the only tensor "
    "that requires grad; a loss linear in `w` with a constant coefficient, or one whose backward only compares "
    "`w` (`clamp`, `floor`, `sign`, `where`), leaves `w.grad` with no graph at all",
    not_swept="about the graph backward records under create_graph for a whole loss, which the rule splits by the loss's shape in w, not by one operation",
)
def create_graph_ends_at_w():
    losses = {name: loss for name, (loss, _linear) in _LOSSES.items()} | _PIECEWISE
    for seed in range(21):
        rng = random.Random(seed)
        name = sorted(losses)[seed % len(losses)]
        n = rng.randint(2, 20)
        w, c = torch.randn(n, requires_grad=True), torch.randn(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns once about the cycle backward(create_graph=True) makes
            losses[name](w, c).backward(create_graph=True)
        has_graph = w.grad.grad_fn is not None
        ends = has_graph and any(leaf is w for leaf in probes.reachable_leaves(w.grad))
        w.grad = None  # break the cycle
        yield Trial(f"seed {seed}: {name}, {n} elements", condition=has_graph, holds=ends)


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


def _a_named_self(n: int) -> torch.Tensor:
    w = torch.randn(n, requires_grad=True)
    w.me = w  # a Python attribute of the tensor that holds the tensor
    return w


def _a_kept_gradient(n: int) -> torch.Tensor:
    w = torch.randn(n, requires_grad=True)
    (w.kept,) = torch.autograd.grad((w.sin() ** 2).sum(), w, create_graph=True)  # an attribute, then C++ links
    return w


@claim(
    "06.python-cycles-are-collected",
    sentence="A cycle whose every link is one the collector can follow, such as a tensor, a hook it holds and the "
    "hook's closure that holds the tensor, is one `gc.collect()` finds and frees.",
    holds_when="every link of the cycle is a Python reference; the cycle `backward(create_graph=True)` makes runs "
    "through C++ references and survives `gc.collect()`, and so does a cycle with one Python link among C++ ones "
    "(a gradient with a graph kept as an attribute of its own parameter)",
    not_swept="about Python's garbage collector and hooks' closures",
)
def python_cycles_are_collected():
    makers = [("a hook's closure", _a_hook_closure, True), ("a hook's default argument", _a_hook_default, True)]
    makers.append(("a tensor's attribute", _a_named_self, True))
    makers.append(("backward(create_graph=True)", _create_graph, False))
    makers.append(("a kept gradient's graph", _a_kept_gradient, False))
    made = []
    for seed in range(10):
        label, make, through_python = makers[seed % len(makers)]
        made.append((f"seed {seed}: a cycle through {label}", through_python, weakref.ref(make(seed + 2))))
    gc.collect()  # once for all of them: a collection takes a while in a process that imported torch
    for label, through_python, gone in made:
        kept = gone()
        if kept is not None:  # leave nothing behind: break the cycle by hand
            kept.grad = None
            getattr(kept, "__dict__", {}).clear()
        yield Trial(label, condition=through_python, holds=kept is None)


@claim(
    "06.create-graph-gives-a-graph",
    sentence="With `create_graph=True`, the backward pass records its own operations, so a gradient its backward "
    "computes from a value that requires grad gets a graph and can be differentiated again",
    holds_when="the backward computes from the input (a smooth loss not linear in it: sin, exp, powers; a piecewise one "
    "such as clamp, floor, sign or where only compares the input and passes the seed on, and its gradient has no "
    "graph, section 7); the gradient of a loss linear in "
    "`w` does not depend on `w` (06.linear-gradient-does-not-depend-on-x): for `(w * c).sum()` it has no graph when "
    "`c` is a constant, and when `c` requires grad (a weight) its graph leads to `c`, not to `w`",
    not_swept="about the graph backward records under create_graph for a whole loss, which the rule splits by the loss's shape in w, not by one operation",
)
def create_graph_gives_a_graph():
    for seed in range(14):
        rng = random.Random(seed)
        name = sorted(_LOSSES)[seed % len(_LOSSES)]
        loss, linear = _LOSSES[name]
        n = rng.randint(2, 20)
        w, c = torch.randn(n, requires_grad=True), torch.randn(n, requires_grad=linear and seed % 2 == 1)
        (g,) = torch.autograd.grad(loss(w, c), w, create_graph=True)
        again = False
        if g.grad_fn is not None:
            (h,) = torch.autograd.grad(g.sum(), w, allow_unused=True)
            again = h is not None
        label = f"seed {seed}: {name}, {n} elements" + (", c requires grad" if c.requires_grad else "")
        yield Trial(label, condition=not linear, holds=g.grad_fn is not None and again)


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
    not_swept="about a training loop's optimizer steps between backward passes",
)
def stale_graph_silent_unless_it_kept_a_parameter():
    for seed in range(12):
        label, kept, raised = _stale_loop(seed)
        yield Trial(label, True, raised == kept)


# losses that keep something for backward, each of one leaf w
_SAVING = {
    "(w * 3) ** 2": lambda w: ((w * 3) ** 2).sum(),
    "w.sin() * w": lambda w: (w.sin() * w).sum(),
    "w.exp().tanh()": lambda w: w.exp().tanh().sum(),
    "(w.relu() * w).mean()": lambda w: (w.relu() * w).mean(),
}


@claim(
    "06.backward-frees-values-keeps-nodes",
    sentence="The nodes and their edges survive; the values they kept do not.",
    holds_when="backward runs without retain_graph (and without create_graph); retain_graph=True keeps the values",
)
def backward_frees_values_keeps_nodes():
    for seed in range(12):
        rng = random.Random(seed)
        name = sorted(_SAVING)[seed % len(_SAVING)]
        retain = seed % 3 == 2
        w = torch.randn(rng.randint(1, 5), requires_grad=True)
        loss = _SAVING[name](w)
        nodes = probes.node_names(loss)
        loss.backward(retain_graph=retain)
        states = {s.state for s in probes.saved_tensors(loss)}
        yield Trial(
            f"seed {seed}: {name}{', retain_graph=True' if retain else ''}",
            not retain,
            probes.node_names(loss) == nodes and states == {"freed"},
        )


def _saved_states(run) -> list[str]:
    """The state of every value the run's nodes saved: 'ok', 'stale' or 'freed' (wrapped numbers included)."""
    return [entry.state for fn in run.nodes() for entry in probes.saved_in(fn)]


def _backward(run, **options) -> bool:
    """Backward from every recorded output with a seed of ones; False when torch has no derivative for it."""
    try:
        torch.autograd.backward(run.recorded, [torch.ones_like(t) for t in run.recorded], **options)
    except RuntimeError:
        return False
    return True


@sweeps("06.backward-frees-values-keeps-nodes")
def backward_frees_values_keeps_nodes_on(sample):
    """Every operation whose nodes saved something, backward run once without and once with retain_graph."""
    for retain in (False, True):
        run = sample.run()
        if run is None or not run.recorded or not _saved_states(run):
            return
        nodes = [probes.node_name(fn) for fn in run.nodes()]
        if not _backward(run, retain_graph=retain):
            return
        states = set(_saved_states(run))
        rule = [probes.node_name(fn) for fn in run.nodes()] == nodes and states == {"freed"}
        label = f"{sample.label}{', retain_graph=True' if retain else ''}: {sorted(states)}"
        yield Trial(label, not retain, rule, op=sample.op)


@claim(
    "06.grad-of-several-outputs-adds",
    sentence="`autograd.grad([loss_a, loss_b], w)`, which adds the gradients of its outputs",
    not_swept="about autograd.grad's outputs, the same for every graph",
)
def grad_of_several_outputs_adds():
    for seed in range(12):
        rng = random.Random(seed)
        w = torch.randn(rng.randint(1, 5), requires_grad=True)
        names = rng.sample(sorted(_SAVING), rng.randint(2, 3))
        losses = [_SAVING[n](w) for n in names]
        (together,) = torch.autograd.grad(losses, w, retain_graph=True)
        apart = sum(torch.autograd.grad(loss, w, retain_graph=True)[0] for loss in losses)
        yield Trial(f"seed {seed}: " + ", ".join(names), True, torch.allclose(together, apart, atol=1e-6))


@claim(
    "06.retain-graph-follows-create-graph",
    sentence="since `retain_graph` defaults to the value of `create_graph`",
    not_swept="about backward's options, the same for every graph",
)
def retain_graph_follows_create_graph():
    for seed in range(12):
        rng = random.Random(seed)
        name = sorted(_SAVING)[seed % len(_SAVING)]
        create = seed % 2 == 0
        w = torch.randn(rng.randint(1, 5), requires_grad=True)
        loss = _SAVING[name](w)
        torch.autograd.grad(loss, w, create_graph=create)
        try:
            torch.autograd.grad(loss, w)
            kept = True
        except RuntimeError:
            kept = False
        yield Trial(f"seed {seed}: {name}, create_graph={create}", True, kept == create)


@claim(
    "06.backward-inputs-only-listed",
    sentence="only the tensors listed accumulate a `.grad`",
    not_swept="about backward's inputs= option, the same for every graph",
)
def backward_inputs_only_listed():
    for seed in range(12):
        rng = random.Random(seed)
        leaves = [torch.randn(rng.randint(1, 4), requires_grad=True) for _ in range(rng.randint(2, 4))]
        listed = rng.sample(range(len(leaves)), rng.randint(1, len(leaves)))
        loss = sum(_SAVING[sorted(_SAVING)[i % len(_SAVING)]](t) for i, t in enumerate(leaves))
        loss.backward(inputs=[leaves[i] for i in listed])
        got = {i for i, t in enumerate(leaves) if t.grad is not None}
        yield Trial(f"seed {seed}: {len(listed)} of {len(leaves)} leaves listed", True, got == set(listed))


def _create_graph_run(seed: int, input_grad: bool) -> bool:
    """A small model, backward(create_graph=True), opt.zero_grad(), everything deleted: is anything left alive?"""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    width = rng.randint(2, 5)
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(), torch.nn.Linear(width, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(rng.randint(2, 4), width, requires_grad=input_grad)
    refs = [weakref.ref(p) for p in model.parameters()] + [weakref.ref(x)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (model(x) ** 2).sum().backward(create_graph=True)
    opt.zero_grad()
    del model, opt, x
    gc.collect()
    alive = any(r() is not None for r in refs)
    for r in refs:  # break what is left, so that the check itself leaks nothing
        if r() is not None:
            r().grad = None
    return alive


@claim(
    "06.zero-grad-breaks-every-cycle",
    sentence="`optimizer.zero_grad()` (which sets `.grad = None` since torch 2.0) breaks every cycle",
    holds_when="every leaf that backward(create_graph=True) wrote a .grad into is one of the optimizer's parameters; "
    "an input that requires grad keeps its own cycle, and with it the parameters its gradient's graph reaches",
    not_swept="about an optimizer's zero_grad and the .grad cycle",
)
def zero_grad_breaks_every_cycle():
    for seed in range(8):
        input_grad = seed % 2 == 1
        yield Trial(
            f"seed {seed}: Linear-Tanh-Linear{', input requires grad' if input_grad else ''}",
            not input_grad,
            not _create_graph_run(seed, input_grad),
        )


@claim(
    "06.materialize-grads-gives-zeros",
    sentence="`torch.autograd.grad(..., materialize_grads=True)` returns zeros for the inputs the graph does not reach",
    not_swept="about autograd.grad's option, the same for every graph",
)
def materialize_grads_gives_zeros():
    for seed in range(12):
        rng = random.Random(seed)
        leaves = [torch.randn(rng.randint(1, 4), requires_grad=True) for _ in range(rng.randint(2, 4))]
        used = set(rng.sample(range(len(leaves)), rng.randint(1, len(leaves) - 1)))
        loss = sum(_SAVING[sorted(_SAVING)[i % len(_SAVING)]](leaves[i]) for i in used)
        zeros = torch.autograd.grad(loss, leaves, retain_graph=True, materialize_grads=True)
        plain = torch.autograd.grad(loss, leaves, allow_unused=True)
        rule = all(
            (torch.equal(z, torch.zeros_like(t)) if i not in used else torch.equal(z, plain[i]))
            for i, (z, t) in enumerate(zip(zeros, leaves))
        )
        yield Trial(f"seed {seed}: {len(leaves) - len(used)} of {len(leaves)} inputs unused", True, rule)


@claim(
    "06.autograd-grad-makes-no-cycle",
    sentence="`torch.autograd.grad` returns the gradient instead of storing it on `w`, so no cycle forms",
    not_swept="about where autograd.grad puts its result, the same for every graph",
)
def autograd_grad_makes_no_cycle():
    for seed in range(8):
        rng = random.Random(seed)
        name = sorted(_SAVING)[seed % len(_SAVING)]
        w = torch.randn(rng.randint(1, 50), requires_grad=True)
        ref = weakref.ref(w)
        (g,) = torch.autograd.grad(_SAVING[name](w), w, create_graph=True)
        stored = w.grad is None and g.grad_fn is not None
        del g, w
        gc.collect()
        yield Trial(f"seed {seed}: {name}", True, stored and ref() is None)


# losses of w, some whose nodes keep nothing, some that keep a tensor or a wrapped Python number
_SECOND_PASS = {
    "(w + 1).sum()": lambda w: (w + 1).sum(),
    "w.view(-1).sum()": lambda w: w.view(-1).sum(),
    "(w - w.t()).sum()": lambda w: (w - w.t()).sum(),
    "w.t().mean()": lambda w: w.t().mean(),
    "(w * 3).sum()": lambda w: (w * 3).sum(),
    "(w * w.detach()).sum()": lambda w: (w * w.detach()).sum(),
    "w.relu().sum()": lambda w: w.relu().sum(),
    "(w ** 2).sum()": lambda w: (w**2).sum(),
    "y[1:] = w, then y.sum()": lambda w: _written_into(w),
}


def _written_into(w: torch.Tensor) -> torch.Tensor:
    """A loss through an in-place write into a slice of a tensor that needs no gradient: a CopySlices node."""
    y = torch.zeros(w.shape[0] + 1, w.shape[1])
    y[1:] = w
    return y.sum()


@claim(
    "06.second-pass-fails-on-freed-values",
    sentence="The error is about freed values, not about the graph, with one exception: a write into a slice "
    "(`y[1:] = w`) records a `CopySlices` node, which backward releases, and a second pass through it fails "
    "though nothing was saved (the cell after this one).",
    holds_when="the graph has no in-place write into a slice or view (no `CopySlices` node); backward releases "
    "the node such a write wraps, so after `y[:2] = w` the second pass raises the same error although nothing "
    "was saved",
)
def second_pass_fails_on_freed_values():
    for seed in range(16):
        rng = random.Random(seed)
        name = sorted(_SECOND_PASS)[seed % len(_SECOND_PASS)]
        n = rng.randint(1, 4)
        w = torch.randn(n, n, requires_grad=True)
        loss = _SECOND_PASS[name](w)
        saved = bool(probes.saved_tensors(loss))  # wrapped Python numbers included: they are freed too
        copies = "CopySlices" in probes.node_names(loss)
        loss.backward()
        try:
            loss.backward()
            raised = False
        except RuntimeError as exc:
            raised = "second time" in str(exc)
        yield Trial(f"seed {seed}: {name} on {n}x{n}", not copies, raised == saved)


@sweeps("06.second-pass-fails-on-freed-values")
def second_pass_fails_on_freed_values_on(sample):
    """Every operation, backward run twice: the second pass raises exactly when some node saved a value."""
    run = sample.run()
    if run is None or not run.recorded:
        return None
    saved = bool(_saved_states(run))
    copies = any(probes.node_name(fn) == "CopySlices" for fn in run.nodes())
    if not _backward(run):
        return None
    try:
        torch.autograd.backward(run.recorded, [torch.ones_like(t) for t in run.recorded])
        raised = False
    except RuntimeError as exc:
        raised = "second time" in str(exc)
    label = f"{sample.label}: saved {saved}, second pass raised {raised}{', a CopySlices node' if copies else ''}"
    return Trial(label, not copies, raised == saved, op=sample.op)


@claim(
    "06.retain-graph-records-nothing",
    sentence="`retain_graph` keeps the *forward* graph's saved values for another pass over it; it records nothing "
    "new.",
)
def retain_graph_records_nothing():
    for seed in range(12):
        rng = random.Random(seed)
        name = sorted(_SAVING)[seed % len(_SAVING)]
        w = torch.randn(rng.randint(1, 5), requires_grad=True)
        loss = _SAVING[name](w)
        (g,) = torch.autograd.grad(loss, w, retain_graph=True)
        kept = {s.state for s in probes.saved_tensors(loss)} == {"ok"}
        yield Trial(f"seed {seed}: {name}", True, g.grad_fn is None and not g.requires_grad and kept)


# losses linear in x: label -> (the loss from x and its coefficient c, whether the gradient reads c)
# losses linear in x, with a coefficient c (that may require grad), and some that are not
_LINEAR = {
    "(c * x).sum()": lambda x, c: (c * x).sum(),
    "(x * c + 1).mean()": lambda x, c: (x * c + 1).mean(),
    "(x @ c)": lambda x, c: x @ c,
    "(c * x).sum() * 3": lambda x, c: (c * x).sum() * 3,
    "(x - c).sum()": lambda x, c: (x - c).sum(),
    "(2 * x + c).sum()": lambda x, c: (2 * x + c).sum(),
    "conv1d(x, c).sum()": lambda x, c: torch.nn.functional.conv1d(x.view(1, 1, -1), c[:1].view(1, 1, 1)).sum(),
    "avg_pool1d(x * c)": lambda x, c: (torch.nn.functional.avg_pool1d((x * c).view(1, 1, -1), 1) * c).sum(),
}
_NOT_LINEAR = {
    "(x * x * c).sum()": lambda x, c: (x * x * c).sum(),
    "(x.sin() * c).sum()": lambda x, c: (x.sin() * c).sum(),
}


@claim(
    "06.linear-gradient-does-not-depend-on-x",
    sentence="the gradient of a loss linear in `x` does not depend on `x`: differentiated again with respect to "
    "`x`, it gives zero, or nothing at all",
    holds_when="the loss is linear (affine) in x; a loss that is not, such as `(x * x).sum()`, has a gradient "
    "that moves with x",
)
def linear_gradient_does_not_depend_on_x():
    forms = {**_LINEAR, **_NOT_LINEAR}
    for seed in range(18):
        rng = random.Random(seed)
        label = sorted(forms)[seed % len(forms)]
        loss = forms[label]
        n = rng.randint(1, 5)
        coefficient_grad = rng.random() < 0.5
        c = torch.randn(n, requires_grad=coefficient_grad)
        x = torch.randn(n, requires_grad=True)
        (g,) = torch.autograd.grad(loss(x, c), x, create_graph=True)
        moved = torch.randn(n, requires_grad=True)
        (elsewhere,) = torch.autograd.grad(loss(moved, c), moved)
        second = None
        if g.requires_grad:
            (second,) = torch.autograd.grad(g.sum(), x, allow_unused=True)
        flat = second is None or not bool(second.abs().gt(1e-6).any())
        holds = torch.allclose(g.detach(), elsewhere) and flat
        yield Trial(f"seed {seed}: {label}, c requires grad: {coefficient_grad}", label in _LINEAR, holds)


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float64 rounding, both finite."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.numel():
        return True
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return False
    return torch.allclose(a, b, rtol=1e-7, atol=1e-9 * (1 + float(b.abs().max())))


@sweeps("06.linear-gradient-does-not-depend-on-x")
def linear_gradient_does_not_depend_on_x_on(sample):
    """Every operation, as a function of its first argument that requires grad (the others held fixed), in
    float64: affine where f(a x + (1 - a) y) = a f(x) + (1 - a) f(y) at a = 2, -1.5 and 0.3. The gradient for the
    same seed at x and at y, and the second derivative through the create_graph gradient's graph."""
    from torch.utils._pytree import tree_flatten, tree_map

    from grader.probes import opdb

    if sample.dtype != torch.float64:
        return None
    run = sample.run(prepare=opdb.without_grad(range(1, 1000)))
    if run is None or not run.recorded or len(run.leaves) != 1:
        return None
    x = run.leaves[0]
    base = x.detach()
    if not base.numel() or not torch.isfinite(base).all():  # nansum of a NaN: linear only where x is finite
        return None

    def call(z):
        args, kwargs = tree_map(lambda v: z if v is x else v, (run.args, run.kwargs))
        torch.manual_seed(sample.index)  # dropout draws the same mask
        out = sample.function(*args, **kwargs)
        return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.is_floating_point()]

    gen = torch.Generator().manual_seed(sample.index)
    y = torch.randn(base.shape, generator=gen, dtype=base.dtype)
    try:
        with torch.no_grad():
            at = {a: call(a * base + (1 - a) * y) for a in (0.0, 1.0, 2.0, -1.5, 0.3)}
        outs = [t for t in run.recorded if t.is_floating_point()]
        seeds = [torch.randn(t.shape, generator=gen, dtype=t.dtype) for t in outs]
        (g,) = torch.autograd.grad(outs, x, seeds, create_graph=True, allow_unused=True)
        moved = y.clone().requires_grad_()
        (elsewhere,) = torch.autograd.grad([t for t in call(moved) if t.requires_grad], moved, seeds, allow_unused=True)
        second = None
        if g is not None and g.requires_grad:
            u = torch.randn(g.shape, generator=gen, dtype=g.dtype)
            (second,) = torch.autograd.grad(g, x, u, allow_unused=True)
    except (RuntimeError, ValueError, TypeError, IndexError):  # a derivative torch does not implement, a refusal
        return None
    if g is None or len(outs) != len(at[1.0]):
        return None
    affine = bool(at[1.0]) and all(
        len(at[a]) == len(at[1.0])
        and all(_close(p, a * f1 + (1 - a) * f0) for p, f1, f0 in zip(at[a], at[1.0], at[0.0]))
        for a in (2.0, -1.5, 0.3)
    )
    flat = second is None or float(second.abs().max()) <= 1e-7 * (1 + float(g.detach().abs().max()))
    holds = elsewhere is not None and _close(elsewhere, g.detach()) and flat
    return Trial(f"{sample.label}: in its first argument", affine, holds, op=sample.op)


@sweeps("06.retain-graph-records-nothing")
def retain_graph_records_nothing_on(sample):
    """Every operation: autograd.grad with retain_graph=True gives gradients with no graph, and every saved
    value is still there."""
    run = sample.run()
    if run is None or not run.recorded or not run.leaves:
        return None
    seeds = [torch.ones_like(t) for t in run.recorded]
    try:
        grads = torch.autograd.grad(run.recorded, run.leaves, seeds, retain_graph=True, allow_unused=True)
    except RuntimeError:  # a derivative torch does not implement
        return None
    plain = all(g is None or (g.grad_fn is None and not g.requires_grad) for g in grads)
    kept = set(_saved_states(run)) <= {"ok"}
    return Trial(f"{sample.label}: {len(grads)} gradient(s)", True, plain and kept, op=sample.op)


# two-part losses: a part from a, a part from b (each a function of its leaf)
_PARTS = {
    "exp": lambda t: t.exp().sum(),
    "sin ** 2": lambda t: (t.sin() ** 2).sum(),
    "tanh * 3": lambda t: (t.tanh() * 3).sum(),
    "square": lambda t: (t * t).mean(),
}
_ASKS = ("grad a", "grad b", "grad a, b", "backward inputs=[a]", "backward")


def _prehooked(nodes: list, ran: set) -> None:
    for fn in nodes:
        fn.register_prehook(lambda grad_outputs, fn=fn: ran.add(fn))


@claim(
    "06.a-pass-runs-only-the-nodes-on-a-path-to-its-inputs",
    sentence="A pass runs only the nodes on a path from its output to the tensors it computes gradients for: the "
    "inputs of `torch.autograd.grad`, or of `backward(inputs=...)` (every leaf that requires grad, for a plain "
    "`backward()`). The others never run: their hooks stay silent and their saved values stay `ok`.",
)
def a_pass_runs_only_the_nodes_on_a_path():
    for seed in range(15):
        rng = random.Random(seed)
        a = torch.randn(rng.randint(1, 4), requires_grad=True)
        b = torch.randn(rng.randint(1, 4), requires_grad=True)
        name_a, name_b = rng.choice(sorted(_PARTS)), rng.choice(sorted(_PARTS))
        part_a, part_b = _PARTS[name_a](a), _PARTS[name_b](b)
        ask = _ASKS[seed % len(_ASKS)]
        side = {"a": [fn for fn in probes.nodes(part_a) if not hasattr(fn, "variable")]}
        side["b"] = [fn for fn in probes.nodes(part_b) if not hasattr(fn, "variable")]
        before = {key: sum(len(saves.saved_values(fn)) for fn in nodes) for key, nodes in side.items()}
        ran: set = set()
        _prehooked(side["a"] + side["b"], ran)
        loss = part_a + part_b
        if ask.startswith("grad"):
            torch.autograd.grad(loss, [a, b] if ask == "grad a, b" else [a if ask == "grad a" else b])
        else:
            loss.backward(inputs=[a] if "inputs" in ask else None)
        wanted = {"a"} if ask in ("grad a", "backward inputs=[a]") else {"b"} if ask == "grad b" else {"a", "b"}
        holds = True
        for key, nodes in side.items():
            left = sum(len(saves.saved_values(fn)) for fn in nodes)
            holds &= all((fn in ran) == (key in wanted) for fn in nodes) and (key in wanted or left == before[key])
        yield Trial(f"seed {seed}: {name_a}(a) + {name_b}(b), {ask}", True, holds)


@sweeps("06.a-pass-runs-only-the-nodes-on-a-path-to-its-inputs")
def a_pass_runs_only_the_nodes_on_a_path_on(sample):
    """Every operation's graph beside a part that does not lead to its inputs: asked for the operation's inputs
    alone, the other part's node never runs; asked for the other part's leaf alone, none of the operation's nodes
    runs, and what they saved can still be read."""
    run = sample.run()
    outs = [t for t in run.recorded if t.is_floating_point()] if run is not None else []
    if not outs or not run.leaves:
        return None
    other = torch.randn(3, dtype=outs[0].dtype, requires_grad=True)
    side = other.sin()
    own = [fn for fn in run.nodes() if not hasattr(fn, "variable")]
    readable = sum(len(saves.saved_values(fn)) for fn in own)
    ran: set = set()
    _prehooked(own + [side.grad_fn], ran)
    loss = sum((t * 1).sum() for t in outs) + side.sum()
    try:
        torch.autograd.grad(loss, other, retain_graph=True)
        skipped_own = not (ran & set(own)) and sum(len(saves.saved_values(fn)) for fn in own) == readable
        ran.clear()
        torch.autograd.grad(loss, run.leaves, allow_unused=True)
    except RuntimeError:  # a derivative torch does not implement
        return None
    skipped_side = side.grad_fn not in ran
    return Trial(f"{sample.label}: beside other.sin()", True, skipped_own and skipped_side, op=sample.op)


@claim(
    "06.gradient-graph-enters-forward-nodes-through-kept-values",
    sentence="A gradient's graph enters the forward graph's nodes only where one of them kept a value the forward "
    "pass computed: a gradient whose nodes kept only leaves (`3x²` for `x ** 3`) stays out of it.",
    holds_when="no node of the forward graph kept a value it computed; where one did, the gradient's graph "
    "usually enters (the cosine above), though not always (max keeps its result only to compare with it)",
)
def gradient_graph_enters_forward_nodes():
    forms = {
        "x.cos() ** 2": lambda x: (x.cos() ** 2).sum(),
        "x ** 3": lambda x: (x**3).sum(),
        "x.exp() * x": lambda x: (x.exp() * x).sum(),
        "x * x": lambda x: (x * x).sum(),
        "x.sin()": lambda x: x.sin().sum(),
        "x.sin() ** 2": lambda x: (x.sin() ** 2).sum(),
        "(x * 2).tanh()": lambda x: (x * 2).tanh().sum(),
        "x.sigmoid() * 3": lambda x: (x.sigmoid() * 3).sum(),
    }
    for seed in range(16):
        rng = random.Random(seed)
        name = sorted(forms)[seed % len(forms)]
        x = torch.randn(rng.randint(1, 4), requires_grad=True)
        z = forms[name](x)
        yield _entering(f"seed {seed}: {name}", z, [x])


def _entering(label: str, z, leaves: list, op: str = "") -> Trial | None:
    """Whether z's forward nodes kept a value the forward pass computed, and whether the create_graph gradient's
    graph holds one of those nodes."""
    outs = z if isinstance(z, list) else [z]
    forward = [fn for t in outs for fn in probes.nodes(t) if not hasattr(fn, "variable")]
    kept = any(t.grad_fn is not None for fn in forward for _, t in saves.saved_values(fn))
    seeds = [torch.ones_like(t) for t in outs]
    try:
        grads = torch.autograd.grad(outs, leaves, seeds, create_graph=True, allow_unused=True)
    except RuntimeError:  # a derivative torch does not implement
        return None
    inside = {fn for g in grads if g is not None and g.grad_fn is not None for fn in probes.nodes(g)}
    return Trial(label, not kept, not (inside & set(forward)), op=op)


@sweeps("06.gradient-graph-enters-forward-nodes-through-kept-values")
def gradient_graph_enters_forward_nodes_on(sample):
    """Every operation: its create_graph gradients (for a ones seed) against what its nodes kept."""
    run = sample.run()
    outs = [t for t in run.recorded if t.is_floating_point()] if run is not None else []
    if not outs or not run.leaves:
        return None
    return _entering(f"{sample.label}", outs, run.leaves, op=sample.op)
