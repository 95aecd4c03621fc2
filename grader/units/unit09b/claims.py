"""Unit 09b's general rules about checkpointing, each checked on generated programs (see grader.engine.claims)."""

import random

import torch
from torch.autograd.graph import save_on_cpu

from grader.engine.claims import Trial, claim
from grader.units.unit09.support import noting_pack


def _checkpointed_fn(rng: random.Random):
    """A function of k tensors (1 to 3) made of a few ops, and its inputs (the first needs grad)."""
    k = rng.randint(1, 3)
    ops = [rng.choice(("exp", "sin", "tanh", "sigmoid")) for _ in range(rng.randint(1, 3))]

    def fn(*args):
        h = args[0]
        for other in args[1:]:
            h = h * other
        for op in ops:
            h = getattr(h, op)()
        return h

    n = rng.randint(1, 6)
    inputs = [torch.randn(n, requires_grad=i == 0 or rng.random() < 0.5) for i in range(k)]
    return fn, inputs, f"{k} input(s), then {'.'.join(ops)}"


@claim(
    "09b.checkpoint-hands-its-inputs",
    sentence="a pair around `checkpoint(fn, ..., use_reentrant=False)` is handed each tensor input of `fn` once, "
    "and nothing that `fn`'s operations save",
    not_swept="about checkpointing a block of code, not what one operation records",
)
def checkpoint_hands_its_inputs():
    from torch.utils.checkpoint import checkpoint

    for seed in range(6):
        rng = random.Random(seed)
        fn, inputs, label = _checkpointed_fn(rng)
        handed: list = []
        with torch.autograd.graph.saved_tensors_hooks(noting_pack(handed), lambda kept: kept):
            out = checkpoint(fn, *inputs, use_reentrant=False)
        out.sum().backward()
        same = len(handed) == len(inputs) and all(h is i for h, i in zip(handed, inputs))
        yield Trial(f"seed {seed}: {label}: pack handed {len(handed)} tensor(s)", condition=True, holds=same)


def _installs(kind: str, p: torch.Tensor):
    """A callable that runs a little backward through code that installs a saved-tensor pair (or none)."""
    from torch.utils.checkpoint import checkpoint

    def with_pair(make):
        def run():
            with make():
                p.exp().sum().backward()

        return run

    return {
        "a pair of your own": with_pair(lambda: torch.autograd.graph.saved_tensors_hooks(noting_pack([]), lambda k: k)),
        "save_on_cpu()": with_pair(save_on_cpu),
        "save_on_cpu(pin_memory=True)": with_pair(lambda: save_on_cpu(pin_memory=True)),
        "checkpoint(use_reentrant=False)": lambda: checkpoint(torch.exp, p, use_reentrant=False).sum().backward(),
        "checkpoint(use_reentrant=True)": lambda: checkpoint(torch.exp, p, use_reentrant=True).sum().backward(),
    }[kind]


_INSTALLERS = (
    "a pair of your own",
    "save_on_cpu()",
    "save_on_cpu(pin_memory=True)",
    "checkpoint(use_reentrant=False)",
    "checkpoint(use_reentrant=True)",
)


@claim(
    "09b.disable-refuses-every-pair",
    sentence="While `disable_saved_tensors_hooks(message)` is in force, whatever installs a pair raises a "
    "`RuntimeError` with that message: a pair of your own, `save_on_cpu`, `checkpoint(..., use_reentrant=False)`",
    holds_when="the code installs a saved-tensor pair; the reentrant checkpoint installs none and runs",
    not_swept="about checkpointing a block of code, not what one operation records",
)
def disable_refuses_every_pair():
    for seed in range(10):
        kind = _INSTALLERS[seed % len(_INSTALLERS)]
        message = f"refused {seed}: this code keeps its own saved tensors"
        p = torch.randn(random.Random(seed).randint(1, 6), requires_grad=True)
        try:
            with torch.autograd.graph.disable_saved_tensors_hooks(message):
                _installs(kind, p)()
            refused = False
        except RuntimeError as exc:
            refused = str(exc) == message
        yield Trial(f"seed {seed}: {kind}", condition=kind != "checkpoint(use_reentrant=True)", holds=refused)


def _autocast_rerun(rng: random.Random):
    """dtypes fn's first Linear computed in (forward, then checkpoint's rerun with backward outside autocast), and
    whether the gradients equal those of the same program without checkpoint."""
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    width, hidden = rng.randint(2, 8), rng.randint(2, 16)
    act = rng.choice(("GELU", "Tanh", "Sigmoid", "ReLU"))
    seed = rng.randrange(1000)

    def run(use_checkpoint):
        torch.manual_seed(seed)
        net = nn.Sequential(nn.Linear(width, hidden), getattr(nn, act)(), nn.Linear(hidden, 1))
        x = torch.randn(rng_batch, width)
        dtypes = []

        def fn(t):
            h = net[0](t)
            dtypes.append(h.dtype)
            return net[2](net[1](h))

        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = checkpoint(fn, x, use_reentrant=False) if use_checkpoint else fn(x)
        out.float().sum().backward()
        return dtypes, [p.grad for p in net.parameters()]

    rng_batch = rng.randint(1, 5)
    _, plain = run(False)
    dtypes, ckpt = run(True)
    return f"Linear({width}, {hidden}), {act}, Linear({hidden}, 1), batch {rng_batch}", dtypes, plain, ckpt


@claim(
    "09b.checkpoint-reruns-under-forward-autocast",
    sentence="`checkpoint` records the autocast state of the forward pass and restores it for the rerun, so a "
    "backward called outside `torch.autocast` recomputes in bfloat16 and the gradients equal the run without "
    "checkpoint",
    not_swept="about checkpointing a block of code, not what one operation records",
)
def checkpoint_reruns_under_forward_autocast():
    for seed in range(6):
        label, dtypes, plain, ckpt = _autocast_rerun(random.Random(seed))
        same = all(torch.equal(a, b) for a, b in zip(plain, ckpt))
        yield Trial(
            f"seed {seed}: {label}: dtypes {dtypes}", condition=True, holds=dtypes == [torch.bfloat16] * 2 and same
        )


# --- checkpoint -----------------------------------------------------------------------------------------------------


@claim(
    "09b.reentrant-output-needs-an-input-that-requires-grad",
    sentence="The reentrant version wraps the block in an autograd Function whose output requires grad only if a "
    "tensor *input* does.",
    holds_when="use_reentrant=True; use_reentrant=False records the block normally, so its parameters make the "
    "output require grad",
    not_swept="about checkpointing a block of code, not what one operation records",
)
def reentrant_output_needs_an_input_that_requires_grad():
    import warnings

    from torch import nn
    from torch.utils.checkpoint import checkpoint

    for seed in range(8):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        block = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        reentrant = seed % 4 != 3
        # outside the condition, an input without grad: the block's parameters alone make the output need grad
        x = torch.randn(2, 3, requires_grad=reentrant and rng.random() < 0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "None of the inputs have requires_grad=True"
            out = checkpoint(block, x, use_reentrant=reentrant)
        label = f"seed {seed}: use_reentrant={reentrant}, input requires grad {x.requires_grad}"
        yield Trial(label, condition=reentrant, holds=out.requires_grad == x.requires_grad)


_INPUT_OPS = {
    "exp": torch.exp,
    "sin": torch.sin,
    "tanh": torch.tanh,
    "* 2": lambda t: t * 2,
    "+ 1": lambda t: t + 1,
    "neg": torch.neg,
    "sum": torch.sum,
}


def _written_input(seed: int, reentrant: bool) -> tuple[str, bool, bool]:
    """Checkpoint a chain of 1 to 3 ops, write into its input, backward: (label, the chain saves, raised)."""
    import warnings

    from torch.utils.checkpoint import checkpoint

    rng = random.Random(seed)
    names = [rng.choice(sorted(_INPUT_OPS)) for _ in range(rng.randint(1, 3))]

    def fn(t):
        for name in names:
            t = _INPUT_OPS[name](t)
        return t

    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        fn(torch.randn(4, requires_grad=True))
    h = torch.randn(rng.randint(1, 6), requires_grad=True) * 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = checkpoint(fn, h, use_reentrant=reentrant)
    h.add_(1)
    try:
        y.sum().backward()
        raised = False
    except RuntimeError:
        raised = True
    return f"seed {seed}: fn = {' then '.join(names)}", bool(packed), raised


@claim(
    "09b.a-write-into-the-input-is-caught-when-fn-saves",
    sentence="a write into a checkpoint's *input* after the call is caught at backward when `fn`'s operations save "
    "something, since backward unpacks that input to rerun `fn` before any of them reads a value",
    holds_when="`fn`'s operations save something; when they save nothing (`t * 2`, `t + 1`, `t.sum()`), backward "
    "needs no rerun, never unpacks the input, and the write goes unseen",
    not_swept="about checkpoint's handling of its own input, not what one operation records",
)
def a_write_into_the_input_is_caught_when_fn_saves():
    for seed in range(16):
        label, saves, raised = _written_input(seed, reentrant=False)
        yield Trial(label, condition=saves, holds=raised)


@claim(
    "09b.reentrant-input-write-is-caught",
    sentence="a write into one of them after the call is caught at backward, whatever the function's operations save",
    holds_when="",
    not_swept="about the reentrant checkpoint's Function and its saved inputs, not what one operation records",
)
def reentrant_input_write_is_caught():
    for seed in range(8):
        label, saves, raised = _written_input(seed, reentrant=True)
        yield Trial(f"{label} (saves: {saves})", condition=True, holds=raised)


class _Counted(torch.nn.Module):
    def __init__(self, width: int, act: str):
        super().__init__()
        self.lin, self.act, self.calls = torch.nn.Linear(width, width), getattr(torch, act), 0

    def forward(self, t):
        self.calls += 1
        return self.act(self.lin(t))


@claim(
    "09b.checkpoint-reruns-on-every-backward",
    sentence="The recomputed tensors are dropped once backward has used them, so each backward over the retained "
    "graph reruns `fn`",
    not_swept="about checkpointing a block of code, not what one operation records",
)
def checkpoint_reruns_on_every_backward():
    from torch.utils.checkpoint import checkpoint

    for seed in range(6):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        block = _Counted(rng.randint(1, 5), rng.choice(("tanh", "sigmoid", "exp")))
        passes = rng.randint(1, 4)
        y = checkpoint(block, torch.randn(2, block.lin.in_features), use_reentrant=False).sum()
        for i in range(passes):
            y.backward(retain_graph=i < passes - 1)
        yield Trial(f"seed {seed}: {passes} backward pass(es): {block.calls} calls", True, block.calls == 1 + passes)


@claim(
    "09b.checkpoint-restores-the-generator",
    sentence="It does by default (`preserve_rng_state=True`)",
    holds_when="preserve_rng_state=True (the default); with False the rerun draws a new dropout mask and the "
    "gradients differ from the plain run's",
    not_swept="about checkpointing a block of code, not what one operation records",
)
def checkpoint_restores_the_generator():
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    for seed in range(8):
        rng = random.Random(seed)
        width, batch, rate = rng.randint(4, 8), rng.randint(3, 6), rng.choice((0.3, 0.5))
        preserve = seed % 4 != 3

        def grad(use_checkpoint, seed=seed, width=width, batch=batch, rate=rate, preserve=preserve):
            torch.manual_seed(seed)
            net = nn.Sequential(nn.Linear(width, width), nn.Dropout(rate), nn.Linear(width, 1))
            inputs = torch.randn(batch, width)
            torch.manual_seed(1000 + seed)
            out = (
                checkpoint(net, inputs, use_reentrant=False, preserve_rng_state=preserve)
                if use_checkpoint
                else net(inputs)
            )
            out.sum().backward()
            return net[0].weight.grad

        label = f"seed {seed}: Linear({width}), Dropout({rate}), batch {batch}, preserve_rng_state={preserve}"
        yield Trial(label, condition=preserve, holds=torch.equal(grad(True), grad(False)))


@claim(
    "09b.checkpoint-sequential-spares-the-last-segment",
    sentence="`checkpoint_sequential(model, segments, x, use_reentrant=False)` cuts an `nn.Sequential` into segments "
    "and checkpoints each one but the last",
    not_swept="about checkpointing a block of code, not what one operation records",
)
def checkpoint_sequential_spares_the_last_segment():
    from torch import nn
    from torch.utils.checkpoint import checkpoint_sequential

    for seed in range(6):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        n = rng.randint(2, 6)
        segments = rng.randint(2, n)
        model = nn.Sequential(*[_Counted(3, "tanh") for _ in range(n)])
        x = torch.randn(2, 3, requires_grad=rng.random() < 0.5)
        checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()
        calls = [b.calls for b in model]
        last = n - (n // segments) * (segments - 1)  # torch's cut: segments-1 of n // segments, the rest last
        expected = [2] * (n - last) + [1] * last
        yield Trial(f"seed {seed}: {n} blocks, {segments} segments: calls {calls}", True, calls == expected)


@claim(
    "09b.a-write-into-the-output-is-unseen",
    sentence="backward reads a checkpointed function's saved values from the rerun, never from the output checkpoint "
    "returned, so an in-place write into that output raises nothing, even where the function's last operation "
    "keeps its output",
    holds_when="the output is not a view of an input: a function that returns `t.view(-1)` of its input `t` hands "
    "back the input's memory, and a write into that output is a write into the saved input, caught at backward",
    not_swept="about checkpoint's rerun of a whole function, not what one operation records",
)
def a_write_into_the_output_is_unseen():
    from torch.utils.checkpoint import checkpoint

    for seed in range(16):
        rng = random.Random(seed)
        fn, inputs, label = _checkpointed_fn(rng)
        write = rng.choice(("add_(1)", "mul_(2)"))
        out = checkpoint(fn, *inputs, use_reentrant=False)
        getattr(out, write[:4])(float(write[5]))
        try:
            out.sum().backward()
            raised = False
        except RuntimeError:
            raised = True
        fresh = [t.detach().requires_grad_(t.requires_grad) for t in inputs]
        scale = 2.0 if write.startswith("mul") else 1.0
        (expected,) = torch.autograd.grad((fn(*fresh) * scale).sum(), fresh[0])
        right = not raised and torch.allclose(inputs[0].grad, expected, atol=1e-6)
        yield Trial(f"seed {seed}: {label}, out.{write}", True, right)
    a = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    kept, view = checkpoint(lambda t: (t.exp(), t.view(-1)), a * 1, use_reentrant=False)
    view.add_(1)
    try:
        (kept.sum() + view.sum()).backward()
        raised = False
    except RuntimeError:
        raised = True
    yield Trial("fn(t) = (t.exp(), t.view(-1)), a write into the view it returns", False, not raised)
