"""Unit 13's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim, sweeps
from grader.units.unit13.support import (
    counting_backend,
    graphs_with_hook,
    graphs_with_retain_grad,
    kept_by_compile,
    ops_compiled_around_retain_grad,
    quiet_dynamo,
)


def _pure_double(g):
    return g * 2


def _pure_shift(g):
    return g + 1


def _eager_grad(hook, x: torch.Tensor) -> torch.Tensor:
    x = x.detach().requires_grad_()
    h = x * 2
    h.register_hook(hook)
    (h * h).sum().backward()
    return x.grad


@claim(
    "13.pure-hooks-are-traced",
    sentence="On this torch (2.13) Dynamo traces a hook with no Python side effects into the graph (one graph, and "
    "the hook still runs at backward); a hook with a side effect, such as appending to a list, breaks the graph",
    holds_when="the hook has no Python side effects (it only computes a new gradient); one that appends to a "
    "list or counts its calls in a dict makes Dynamo break the graph",
    not_swept="about torch.compile, torch.func or hooks on a whole function, not what one eager operation records",
)
def pure_hooks_are_traced():
    seen: list = []
    calls: dict = {"n": 0}

    def appends(g):
        seen.append(g)

    def counts(g):
        calls["n"] += 1

    for index, (label, hook, pure) in enumerate(
        [
            ("g * 2", _pure_double, True),
            ("g + 1", _pure_shift, True),
            ("seen.append(g)", appends, False),
            ("calls['n'] += 1", counts, False),
        ]
    ):
        torch.manual_seed(index)
        x = torch.randn(3 + index, requires_grad=True)
        graphs = graphs_with_hook(hook, x)
        ran = torch.allclose(x.grad, _eager_grad(hook, x))  # the hook's effect on the gradient is there
        yield Trial(f"hook {label}: {graphs} graph(s)", condition=pure, holds=graphs == 1 and ran)


_ONE_OP = ("x * 2", "x.sin()", "x + 1", "x.exp()")
_MORE_OPS = ("x.sin() * 2", "x.sin().cos() * 2", "(x + 1).exp()")


@claim(
    "13.retain-grad-after-one-op",
    sentence="Here a single op comes before it, and Dynamo compiles no graph for the frame at all and runs it "
    "eagerly, so `h.grad` is still filled in",
    holds_when="exactly one op makes h before h.retain_grad(); with two or more ops before it (x.sin() * 2) "
    "Dynamo compiles them into a graph",
    not_swept="about torch.compile, torch.func or hooks on a whole function, not what one eager operation records",
)
def retain_grad_after_one_op():
    for index, prefix in enumerate(_ONE_OP + _MORE_OPS):
        torch.manual_seed(index)
        graphs, h_grad = graphs_with_retain_grad(prefix, torch.randn(2 + index, requires_grad=True))
        yield Trial(
            f"h = {prefix}: {graphs} graph(s)", condition=prefix in _ONE_OP, holds=graphs == 0 and h_grad is not None
        )


_READ_OWN_OUTPUT = ("exp", "tanh", "sigmoid")
_BEFORE = ("", ".sin()", ".cos()", " * 2")
_AFTER = ("", ".sin()", " * 3")


@claim(
    "13.partitioner-keeps-self-read-outputs",
    sentence="where a pointwise op's backward reads its own output (`exp`, `tanh`, `sigmoid`), the partitioner "
    "keeps that output rather than recomputing it",
)
def partitioner_keeps_self_read_outputs():
    for seed in range(5):
        rng = random.Random(seed)
        op, before, after = rng.choice(_READ_OWN_OUTPUT), rng.choice(_BEFORE), rng.choice(_AFTER)
        source = f"(((x @ w){before}).{op}(){after}).sum()"
        f = eval(f"lambda x, w: {source}")  # a program of the family, written out so the label can show it
        n, k, m = rng.randint(2, 5), rng.randint(2, 6), rng.randint(2, 4)
        kept = kept_by_compile(f, torch.randn(n, k), torch.randn(k, m, requires_grad=True))
        yield Trial(f"seed {seed}: {source} keeps {kept}", condition=True, holds=op in kept)


# op_db's pointwise operations whose eager node keeps its own output (checked again by the sweep itself)
_OWN_OUTPUT_OPS = ("exp", "exp2", "expm1", "reciprocal", "rsqrt", "sigmoid", "sqrt", "tan", "tanh")


@sweeps("13.partitioner-keeps-self-read-outputs", ops=_OWN_OUTPUT_OPS, per_op=1)
def partitioner_keeps_self_read_outputs_on(sample):
    """Each of those operations alone, ``op(x).sum()`` compiled with AOTAutograd's min-cut partitioner: does
    the compiled forward keep the op's output? Only where the eager node reads its own output."""
    plain = sample.shared()
    if plain is None or not plain.recorded or not hasattr(plain.recorded[0].grad_fn, "_saved_result"):
        return None
    args, kwargs, _ = sample.arguments()
    kept = kept_by_compile(lambda *a: sample.function(*a, **kwargs).sum(), *args)
    name = sample.op.rsplit(".", 1)[-1]
    return Trial(f"{sample.label}: keeps {kept}", True, name in kept, op=sample.op)


_KEEP_THEIR_INPUT = ("t.sin()", "t.cos()", "t * t", "t ** 3")


@claim(
    "13.compiled-keeps-version-checks",
    sentence="Compiling changes *what* is kept, never whether a kept tensor is checked.",
)
def compiled_keeps_version_checks():
    import torch._dynamo

    from grader.units.unit13.support import quiet_dynamo

    for index, source in enumerate(_KEEP_THEIR_INPUT):
        f = eval(f"lambda t: {source}")  # a program whose compiled forward keeps its input t
        torch.manual_seed(index)
        b = torch.randn(2 + index, requires_grad=True) * 1
        torch._dynamo.reset()
        with quiet_dynamo():
            y = torch.compile(f, backend="aot_eager")(b)
            b.add_(1)
            try:
                y.sum().backward()
                raised = False
            except RuntimeError as exc:
                raised = "inplace" in str(exc)
        torch._dynamo.reset()
        yield Trial(f"compiled {source}, its input written after the call", condition=True, holds=raised)


@sweeps("13.compiled-keeps-version-checks", ops=("sin", "cos", "exp", "tanh", "sigmoid", "mul", "pow"), per_op=1)
def compiled_keeps_version_checks_on(sample):
    """Each operation compiled (aot_eager) on tensors of the graph; its first argument written after the call:
    backward raises exactly when the compiled forward kept that tensor (a kept tensor sharing its counter)."""
    import torch._dynamo

    from grader import probes
    from grader.probes import saves
    from grader.units.unit13.support import quiet_dynamo

    args, kwargs, tensors = sample.arguments()
    if not tensors or not tensors[0].requires_grad or args[0] is not tensors[0]:
        return None
    first = args[0] * 1  # a tensor of the graph, so that it may be written
    torch._dynamo.reset()
    try:
        with quiet_dynamo():
            y = torch.compile(lambda *a: sample.function(*a, **kwargs), backend="aot_eager")(first, *args[1:])
            # what the compiled node keeps, read without the check: does the write move one of them?
            versions = [(t, t._version) for fn in probes.nodes(y) for t in saves.raw_saved(fn)]
            first.add_(1)
            kept = any(t._version != v for t, v in versions)
            try:
                y.sum().backward()
                raised = False
            except RuntimeError as exc:
                raised = "inplace" in str(exc)
    finally:
        torch._dynamo.reset()
    return Trial(f"{sample.label}: input kept {kept}, backward raised {raised}", True, kept == raised, op=sample.op)


_FUNCS = (
    ("(t ** 3).sum()", lambda t, p: (t**3).sum()),
    ("(t.sin() * p).sum()", lambda t, p: (t.sin() * p).sum()),
    ("(t * t).mean()", lambda t, p: (t * t).mean()),
    ("(t.exp() + p).sum()", lambda t, p: (t.exp() + p).sum()),
)


@claim(
    "13.func-grad-writes-nothing",
    sentence="nothing is written into `.grad` and nothing accumulates",
    not_swept="about torch.compile, torch.func or hooks on a whole function, not what one eager operation records",
)
def func_grad_writes_nothing():
    for seed in range(8):
        rng = random.Random(seed)
        label, f = _FUNCS[seed % len(_FUNCS)]
        n = rng.randint(1, 4)
        w = torch.tensor([rng.uniform(-2, 2) for _ in range(n)], requires_grad=True)
        p = torch.tensor([rng.uniform(-1, 1) for _ in range(n)], requires_grad=True)  # a tensor f closes over
        preset = seed >= len(_FUNCS)
        if preset:  # a .grad already there, from an ordinary backward
            f(w, p).backward()
        before = [None if t.grad is None else t.grad.clone() for t in (w, p)]
        for _ in range(2):
            torch.func.grad(lambda t, f=f, p=p: f(t, p))(w)
        after = [t.grad for t in (w, p)]
        same = all(
            (b is None and a is None) or (b is not None and a is not None and torch.equal(a, b))
            for b, a in zip(before, after)
        )
        yield Trial(f"seed {seed}: grad of {label}, twice{', .grad set before' if preset else ''}", True, same)


def _item_graphs(fn, x: torch.Tensor, capture: bool) -> int:
    import torch._dynamo

    graphs: list = []
    torch._dynamo.reset()
    with quiet_dynamo(), torch._dynamo.config.patch(capture_scalar_outputs=capture):
        torch.compile(fn, backend=counting_backend(graphs))(x)
    torch._dynamo.reset()
    return len(graphs)


_ITEM_BEFORE = (("x.sin()", torch.sin), ("x * 2", lambda t: t * 2), ("x.exp() - 1", lambda t: t.exp() - 1))
_ITEM_AFTER = (
    ("h * s", lambda h, s: h * s),
    ("(h + s).cos()", lambda h, s: (h + s).cos()),
    ("h / (1 + s * s)", lambda h, s: h / (1 + s * s)),
)


@claim(
    "13.item-breaks-the-graph",
    sentence="`.item()` makes a Python number, which a tensor graph cannot hold by default: the graph ends there, "
    "Python runs `.item()`, and a second graph does the rest",
    holds_when="torch._dynamo.config.capture_scalar_outputs is False (the default); set True, Dynamo keeps the "
    "number in the graph as a symbolic value and makes one graph",
    not_swept="about torch.compile, torch.func or hooks on a whole function, not what one eager operation records",
)
def item_breaks_the_graph():
    for seed in range(4):
        rng = random.Random(seed)
        (bname, before), (aname, after) = rng.choice(_ITEM_BEFORE), rng.choice(_ITEM_AFTER)
        capture = seed == 3

        def f(x, before=before, after=after):
            h = before(x)
            s = h.sum().item()
            return after(h, s)

        count = _item_graphs(f, torch.randn(rng.randint(2, 5), requires_grad=True), capture)
        label = f"seed {seed}: h = {bname}; s = h.sum().item(); {aname}, capture_scalar_outputs={capture}"
        yield Trial(label, condition=not capture, holds=count == 2)


@claim(
    "13.vmap-chunk-size-calls",
    sentence="`vmap(f, chunk_size=k)` runs the batch `k` samples at a time, one call of `f` per chunk",
    not_swept="about torch.compile, torch.func or hooks on a whole function, not what one eager operation records",
)
def vmap_chunk_size_calls():
    for seed in range(8):
        rng = random.Random(seed)
        batch, chunk = rng.randint(1, 12), rng.randint(1, 6)
        calls: list = []

        def f(t, calls=calls):
            calls.append(1)
            return t.sin() * t.sum()

        x = torch.randn(batch, rng.randint(1, 4), generator=torch.Generator().manual_seed(seed))
        chunked = torch.func.vmap(f, chunk_size=chunk)(x)
        expected_calls = -(-batch // chunk)
        holds = len(calls) == expected_calls and torch.allclose(chunked, torch.func.vmap(f)(x))
        yield Trial(f"seed {seed}: batch {batch}, chunk_size {chunk}", condition=True, holds=holds)


@claim(
    "13.multi-grad-hook-gets-all",
    sentence="`torch.autograd.graph.register_multi_grad_hook(tensors, fn)` calls `fn` with a tuple of all their "
    'gradients, or with the first one computed when `mode="any"`',
    not_swept="about torch.compile, torch.func or hooks on a whole function, not what one eager operation records",
)
def multi_grad_hook_gets_all():
    for seed in range(8):
        rng = random.Random(seed)
        tensors = [torch.rand(rng.randint(1, 3), requires_grad=True) for _ in range(rng.randint(2, 4))]
        used = [i for i in range(len(tensors)) if rng.random() < 0.6] or [0]
        mode = "any" if seed % 3 == 2 else "all"
        got: list = []
        handle = torch.autograd.graph.register_multi_grad_hook(tensors, got.append, mode=mode)
        sum((tensors[i] * (i + 2)).sum() for i in used).backward()
        handle.remove()
        if mode == "all":
            grads = got[0] if len(got) == 1 else ()
            holds = len(grads) == len(tensors) and all(
                (g is None) == (i not in used) and (g is None or bool((g == i + 2).all())) for i, g in enumerate(grads)
            )
        else:
            holds = len(got) == 1 and isinstance(got[0], torch.Tensor)
        yield Trial(
            f"seed {seed}: {len(tensors)} tensors, loss uses {used}, mode={mode!r}", condition=True, holds=holds
        )


@claim(
    "13.mean-loss-backward-is-the-average",
    sentence="A batch-mean loss's `.backward()` gives only their average",
    not_swept="about torch.compile, torch.func or hooks on a whole function, not what one eager operation records",
)
def mean_loss_backward_is_the_average():
    from torch import nn
    from torch.func import functional_call, grad, vmap

    for seed in range(5):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        width, batch = rng.randint(2, 5), rng.randint(2, 6)
        model = nn.Sequential(nn.Linear(3, width), nn.Tanh(), nn.Linear(width, 2))
        x, y = torch.randn(batch, 3), torch.randn(batch, 2)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def sample_loss(p, xi, yi, model=model):
            return ((functional_call(model, p, (xi,)) - yi) ** 2).sum()

        per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, x, y)
        ((model(x) - y) ** 2).sum(dim=1).mean().backward()
        holds = all(torch.allclose(p.grad, per_sample[k].mean(0), atol=1e-6) for k, p in model.named_parameters())
        yield Trial(f"seed {seed}: Linear(3, {width})-Tanh-Linear, batch {batch}", condition=True, holds=holds)


# what runs before h.retain_grad() (with its number of operations) and what comes after it
_PREFIXES = (("x * 2", 1), ("x.exp()", 1), ("x.sin() * 2", 2), ("x.sin().cos() * 2", 3), ("(x + 1).exp()", 2))
# what comes after it, with its number of operations
_SUFFIXES = (("(h * h).sin().cos().sum()", 4), ("(h.exp() * h).sum()", 3), ("h.tanh().sum() * 3", 3))


@claim(
    "13.retain-grad-leaves-the-rest-eager",
    sentence="after `retain_grad` it compiles only what came before (nothing, when a single op did) and runs the "
    "rest of that function's own code eagerly, in no graph at all; a function of your own that it calls is a frame "
    "of its own, which Dynamo compiles when it is called",
    not_swept="about where torch.compile breaks its graph, not what an eager operation records",
)
def retain_grad_leaves_the_rest_eager():
    for seed in range(8):
        rng = random.Random(seed)
        (prefix, before), (suffix, after) = rng.choice(_PREFIXES), rng.choice(_SUFFIXES)
        helper = seed % 2 == 1
        x = torch.randn(rng.randint(2, 5), requires_grad=True)
        ops = ops_compiled_around_retain_grad(prefix, suffix, x, through_helper=helper)
        expected = ([before] if before >= 2 else []) + ([after] if helper else [])
        shown = f"tail(h) with tail returning {suffix}" if helper else suffix
        yield Trial(f"h = {prefix}; h.retain_grad(); return {shown}: ops per graph {ops}", True, ops == expected)
