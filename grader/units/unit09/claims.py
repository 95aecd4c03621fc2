"""Unit 09's general rules, each checked on generated programs (see grader.engine.claims)."""

import gc
import random
import weakref

import torch
from torch.autograd.graph import save_on_cpu

from grader.engine.claims import Trial, claim

_SAVE_THEIR_OUTPUT = ("exp", "sigmoid", "tanh")


@claim(
    "09.save-on-cpu-keeps-the-tensor-itself",
    sentence="on a machine without a GPU the default `save_on_cpu()` keeps the very tensor it is handed, not a "
    "detached alias: an output it saves (`exp`'s) survives `del` and `gc.collect()`, the cycle of section 1, "
    "while `pin_memory=True` copies",
    holds_when="pin_memory=False on a CPU tensor; with pin_memory=True the pack keeps a copy and the output is freed",
)
def save_on_cpu_keeps_the_tensor_itself():
    made = []
    for seed in range(8):
        rng = random.Random(seed)
        op, pin = _SAVE_THEIR_OUTPUT[seed % 3], seed % 2 == 1
        p = torch.randn(rng.randint(1, 64), requires_grad=True)
        with save_on_cpu(pin_memory=pin):
            out = getattr(p, op)()
        made.append((f"seed {seed}: p.{op}() under save_on_cpu(pin_memory={pin})", not pin, weakref.ref(out)))
        del out
    gc.collect()  # once for all of them: a collection takes a while in a process that imported torch
    for label, aliased, gone in made:
        kept = gone()
        if kept is not None:  # leave nothing behind: backward frees what the node saved, and so the cycle
            kept.sum().backward()
        yield Trial(label, condition=aliased, holds=kept is not None)


def _noting(into: list):
    """A pack that appends each tensor it is handed to ``into`` and keeps it detached."""

    def pack(t):
        into.append(t)
        return t.detach()

    return pack


def _saved_tensors(root) -> int:
    """How many tensors the nodes of root's graph hold in their ``_saved_*`` attributes (wrapped numbers too)."""
    seen, stack, count = set(), [root], 0
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for name in dir(node):
            if name.startswith("_saved_"):
                value = getattr(node, name)
                values = value if isinstance(value, (tuple, list)) else (value,)
                count += sum(isinstance(v, torch.Tensor) for v in values)
        stack.extend(fn for fn, _ in node.next_functions)
    return count


# each step makes h from h (and y, a tensor that needs no grad); those with a Python number save it wrapped
_STEPS = ("h.exp()", "h.sin()", "h * h", "(h * y).tanh()", "h ** 2", "(h + 1).relu()", "h * torch.tensor(0.5)")
_WITH_NUMBER = ("h * 2", "h / 3")


@claim(
    "09.pack-once-per-saved-tensor",
    sentence="`pack` runs once for each tensor a node saves, not once per storage, with one exception: a Python "
    "number that an op wraps as a tensor (the `2` of `x * 2`) is saved without reaching `pack`",
    holds_when="no op multiplies or divides by a Python number; h * 2 and h / 3 save the number as a 0-dim tensor "
    "(_saved_other) that pack never sees",
)
def pack_once_per_saved_tensor():
    for seed in range(10):
        rng = random.Random(seed)
        steps = [rng.choice(_STEPS) for _ in range(rng.randint(1, 4))]
        if seed % 2:
            steps.insert(rng.randint(0, len(steps)), rng.choice(_WITH_NUMBER))
        x = torch.randn(rng.randint(1, 8), requires_grad=True)
        y = torch.randn(x.shape)
        packed: list = []
        with torch.autograd.graph.saved_tensors_hooks(_noting(packed), lambda kept: kept):
            h = _run_steps(steps, x, y)
        saved = _saved_tensors(h.grad_fn)
        label = f"seed {seed}: " + " -> ".join(steps) + f": pack ran {len(packed)} times, nodes saved {saved} tensors"
        yield Trial(label, condition=not any(s in _WITH_NUMBER for s in steps), holds=len(packed) == saved)


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
    "09.checkpoint-hands-its-inputs",
    sentence="a pair around `checkpoint(fn, ..., use_reentrant=False)` is handed each tensor input of `fn` once, "
    "and nothing that `fn`'s operations save",
)
def checkpoint_hands_its_inputs():
    from torch.utils.checkpoint import checkpoint

    for seed in range(6):
        rng = random.Random(seed)
        fn, inputs, label = _checkpointed_fn(rng)
        handed: list = []
        with torch.autograd.graph.saved_tensors_hooks(_noting(handed), lambda kept: kept):
            out = checkpoint(fn, *inputs, use_reentrant=False)
        out.sum().backward()
        same = len(handed) == len(inputs) and all(h is i for h, i in zip(handed, inputs))
        yield Trial(f"seed {seed}: {label}: pack handed {len(handed)} tensor(s)", condition=True, holds=same)


_SAVING_STEPS = ("h.exp()", "h.sin()", "h * h", "h.tanh()", "(h * y).cos()")


def _run_steps(steps: list[str], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    h = x
    for step in steps:
        h = eval(step, {"torch": torch}, {"h": h, "y": y})  # the step as written in the trial's label
    return h


def _nested(handed: list[list], steps: list[str], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Run the steps under one noting pair per list in ``handed``, the first outermost."""
    if not handed:
        return _run_steps(steps, x, y)
    with torch.autograd.graph.saved_tensors_hooks(_noting(handed[0]), lambda kept: kept):
        return _nested(handed[1:], steps, x, y)


@claim(
    "09.only-the-innermost-pair-runs",
    sentence="Only the innermost pair runs.",
)
def only_the_innermost_pair_runs():
    for seed in range(6):
        rng = random.Random(seed)
        depth = rng.randint(2, 4)
        steps = [rng.choice(_SAVING_STEPS) for _ in range(rng.randint(1, 3))]
        handed: list[list] = [[] for _ in range(depth)]
        x = torch.randn(rng.randint(1, 6), requires_grad=True)
        y = torch.randn(x.shape)

        out = _nested(handed, steps, x, y)
        counts = [len(h) for h in handed]
        saved = _saved_tensors(out.grad_fn)
        label = f"seed {seed}: {depth} pairs around " + " -> ".join(steps) + f": packs ran {counts}"
        yield Trial(label, condition=True, holds=counts[:-1] == [0] * (depth - 1) and counts[-1] == saved > 0)


def _installs(kind: str, p: torch.Tensor):
    """A callable that runs a little backward through code that installs a saved-tensor pair (or none)."""
    from torch.utils.checkpoint import checkpoint

    def with_pair(make):
        def run():
            with make():
                p.exp().sum().backward()

        return run

    return {
        "a pair of your own": with_pair(lambda: torch.autograd.graph.saved_tensors_hooks(_noting([]), lambda k: k)),
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
    "09.disable-refuses-every-pair",
    sentence="While `disable_saved_tensors_hooks(message)` is in force, whatever installs a pair raises a "
    "`RuntimeError` with that message: a pair of your own, `save_on_cpu`, `checkpoint(..., use_reentrant=False)`",
    holds_when="the code installs a saved-tensor pair; the reentrant checkpoint installs none and runs",
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
    "09.checkpoint-reruns-under-forward-autocast",
    sentence="`checkpoint` records the autocast state of the forward pass and restores it for the rerun, so a "
    "backward called outside `torch.autocast` recomputes in bfloat16 and the gradients equal the run without "
    "checkpoint",
)
def checkpoint_reruns_under_forward_autocast():
    for seed in range(6):
        label, dtypes, plain, ckpt = _autocast_rerun(random.Random(seed))
        same = all(torch.equal(a, b) for a, b in zip(plain, ckpt))
        yield Trial(
            f"seed {seed}: {label}: dtypes {dtypes}", condition=True, holds=dtypes == [torch.bfloat16] * 2 and same
        )


# --- what pack is handed ------------------------------------------------------------------------------------------


@claim(
    "09.linear-keeps-its-weight-for-its-input",
    sentence="Each Linear whose input needs a gradient keeps `weight.T` (a view of the parameter) to send a gradient "
    "back to its input",
    holds_when="the Linear's input requires grad; on an input without grad (the first layer on the batch) the "
    "weight is not saved",
)
def linear_keeps_its_weight_for_its_input():
    from torch import nn

    for seed in range(10):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        lin = nn.Linear(rng.randint(1, 6), rng.randint(1, 6), bias=rng.random() < 0.5)
        needs = seed % 3 != 0
        x = torch.randn(rng.randint(1, 4), lin.in_features, requires_grad=needs)
        handed: list = []
        with torch.autograd.graph.saved_tensors_hooks(_noting(handed), lambda kept: kept):
            lin(x if not needs or rng.random() < 0.5 else x * 1)
        views = [t for t in handed if t._base is lin.weight and t.shape == lin.weight.T.shape]
        label = f"seed {seed}: {lin}, input requires grad {needs}: pack handed {len(views)} view(s) of the weight"
        yield Trial(label, condition=needs, holds=len(views) == 1)


@claim(
    "09.pack-detach-frees-and-sees-writes",
    sentence="`t.detach()` is the same memory without the history, so it breaks the cycle. It also shares `t`'s "
    "version counter, so a guard built on it still sees a later write",
)
def pack_detach_frees_and_sees_writes():
    made = []
    for seed in range(8):
        rng = random.Random(seed)
        op = rng.choice(_SAVE_THEIR_OUTPUT + ("relu",))
        p = torch.randn(rng.randint(1, 64), requires_grad=True)
        kept: list = []
        with torch.autograd.graph.saved_tensors_hooks(
            lambda t, kept=kept: kept.append(t.detach()) or kept[-1], lambda k: k
        ):
            out = getattr(p, op)()
        before = kept[0]._version
        out.add_(1)  # the guard's view of it: the detached alias's counter
        saw = kept[0]._version == before + 1
        made.append((f"seed {seed}: p.{op}(), pack returns t.detach()", saw, weakref.ref(out)))
        del out, kept
    gc.collect()
    for label, saw, ref in made:
        yield Trial(label, condition=True, holds=saw and ref() is None)


# --- checkpoint -----------------------------------------------------------------------------------------------------


@claim(
    "09.reentrant-output-needs-an-input-that-requires-grad",
    sentence="The reentrant version wraps the block in an autograd Function whose output requires grad only if a "
    "tensor *input* does.",
    holds_when="use_reentrant=True; use_reentrant=False records the block normally, so its parameters make the "
    "output require grad",
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


class _Counted(torch.nn.Module):
    def __init__(self, width: int, act: str):
        super().__init__()
        self.lin, self.act, self.calls = torch.nn.Linear(width, width), getattr(torch, act), 0

    def forward(self, t):
        self.calls += 1
        return self.act(self.lin(t))


@claim(
    "09.checkpoint-reruns-on-every-backward",
    sentence="The recomputed tensors are dropped once backward has used them, so each backward over the retained "
    "graph reruns `fn`",
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
    "09.checkpoint-restores-the-generator",
    sentence="It does by default (`preserve_rng_state=True`)",
    holds_when="preserve_rng_state=True (the default); with False the rerun draws a new dropout mask and the "
    "gradients differ from the plain run's",
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
    "09.checkpoint-sequential-spares-the-last-segment",
    sentence="`checkpoint_sequential(model, segments, x, use_reentrant=False)` cuts an `nn.Sequential` into segments "
    "and checkpoints each one but the last",
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
