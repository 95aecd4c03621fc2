"""Unit 09's general rules, each checked on generated programs (see grader.engine.claims)."""

import gc
import random
import weakref

import torch
from torch.autograd.graph import save_on_cpu

from grader.engine.claims import Trial, claim, sweeps
from grader.probes import opdb, saves
from grader.units.unit09.support import noting_pack

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


@sweeps("09.save-on-cpu-keeps-the-tensor-itself", batch=True)
def save_on_cpu_keeps_the_tensor_itself_on(samples):
    """Every operation whose node saves its own output (seen by a recording pair on a first run), run again
    under save_on_cpu(): the output dropped, one gc.collect() for all of them, is it still alive?"""
    made = []
    for sample in samples:
        seen: list = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t, seen=seen: seen.append(t) or t.detach(), lambda t: t):
            first = sample.run()
        if first is None or not first.recorded or not any(s is first.recorded[0] for s in seen):
            continue
        del first, seen
        with save_on_cpu(pin_memory=False):
            run = sample.run()
        if run is None or not run.recorded:
            continue
        made.append((f"{sample.label}: output 0 saved by its node", weakref.ref(run.recorded[0]), sample.op))
        del run
    gc.collect()
    alive = [ref() is not None for _, ref, _ in made]
    for _, ref, _ in made:  # backward frees what the node saved, and so the cycle
        kept = ref()
        if kept is not None and kept.grad_fn is not None:
            try:
                kept.backward(torch.ones_like(kept))
            except RuntimeError:
                pass
            del kept
    for (label, _, op), survived in zip(made, alive):
        yield Trial(label, True, survived, op=op)


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
    holds_when="no operation keeps a Python number it wrapped as a tensor: h * 2 and h / 3 save the number as a "
    "0-dim tensor (_saved_other) that pack never sees, and so do functions built on such products "
    "(`F.kl_div`, `F.gaussian_nll_loss`, `F.local_response_norm`)",
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
        with torch.autograd.graph.saved_tensors_hooks(noting_pack(packed), lambda kept: kept):
            h = _run_steps(steps, x, y)
        saved = _saved_tensors(h.grad_fn)
        label = f"seed {seed}: " + " -> ".join(steps) + f": pack ran {len(packed)} times, nodes saved {saved} tensors"
        yield Trial(label, condition=not any(s in _WITH_NUMBER for s in steps), holds=len(packed) == saved)


@sweeps("09.pack-once-per-saved-tensor")
def pack_once_per_saved_tensor_on(sample):
    """Every operation whose graph keeps something: each slot read back holds a pack of its own; its condition:
    no slot holds a wrapped Python number (those never reach pack)."""
    _, found, _ = saves.slots(sample)
    if not found:
        return None
    tokens = [s.packed for s in found if s.unpacked]
    wrapped = sum(not s.unpacked for s in found)
    rule = not wrapped and len(set(tokens)) == len(tokens)
    label = f"{sample.label}: {len(found)} slots, {wrapped} wrapped numbers, {len(set(tokens))} packs"
    return Trial(label, not wrapped, rule, op=sample.op)


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
    with torch.autograd.graph.saved_tensors_hooks(noting_pack(handed[0]), lambda kept: kept):
        return _nested(handed[1:], steps, x, y)


@claim(
    "09.only-the-innermost-pair-runs",
    sentence="Only the innermost pair runs.",
    not_swept="about nested saved-tensor hook pairs, the same for every operation",
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
        with torch.autograd.graph.saved_tensors_hooks(noting_pack(handed), lambda kept: kept):
            lin(x if not needs or rng.random() < 0.5 else x * 1)
        views = [t for t in handed if t._base is lin.weight and t.shape == lin.weight.T.shape]
        label = f"seed {seed}: {lin}, input requires grad {needs}: pack handed {len(views)} view(s) of the weight"
        yield Trial(label, condition=needs, holds=len(views) == 1)


@sweeps("09.linear-keeps-its-weight-for-its-input", ops=("nn.functional.linear",))
def linear_keeps_its_weight_for_its_input_on(sample):
    """op_db's F.linear samples, the input requiring grad or not (the weight always): how many views of the
    weight, shaped like weight.T, reach pack?"""
    plain = sample.shared()
    if plain is None or any(not t.numel() for t in plain.tensors):
        return
    for needs in (True, False):
        run, seen = saves.packed(sample, prepare=None if needs else opdb.without_grad([0]))
        if run is None:
            continue
        w = run.tensors[1]
        views = [s for s in seen if opdb.shares_memory(s, w) and s.shape == w.T.shape and s.stride() == w.T.stride()]
        label = f"{sample.label}: input requires grad {needs}, {len(views)} view(s) of weight.T packed"
        yield Trial(label, needs, len(views) == 1, op=sample.op)


@claim(
    "09.pack-detach-frees-and-sees-writes",
    sentence="`t.detach()` is the same memory without the history, so it breaks the cycle. It also shares `t`'s "
    "version counter, so a guard built on it still sees a later write",
    not_swept="about a hook pair built on detach(); the cycle it avoids is swept as 07.pack-returning-t-makes-a-cycle",
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


# two leaves a, b that require grad, and a loss whose every node lies on the paths to both (so it runs whichever
# gradient is asked for) and saves both of its inputs
_BOTH_SAVED = {
    "(a * b).sum()": lambda a, b: (a * b).sum(),
    "(a / b).sum()": lambda a, b: (a / b).sum(),
    "(a * b).exp().sum()": lambda a, b: (a * b).exp().sum(),
    "(a * b * b).sum()": lambda a, b: (a * b * b).sum(),
    "(a @ b)": lambda a, b: a @ b,
}


@claim(
    "09.a-node-unpacks-all-it-saved",
    sentence="A built-in node that runs unpacks every tensor it saved, whether or not the gradient asked for reads it",
    holds_when="the node is one of torch's own; a custom `autograd.Function`'s node unpacks what its backward reads "
    "from `ctx.saved_tensors`, once per read (nothing, for a backward that reads nothing)",
)
def a_node_unpacks_all_it_saved():
    for seed in range(18):
        rng = random.Random(seed)
        custom = seed % 3 == 2
        label = "a custom Function" if custom else sorted(_BOTH_SAVED)[seed % len(_BOTH_SAVED)]
        n = rng.randint(1, 5)
        a, b = torch.randn(n, requires_grad=True), torch.rand(n, requires_grad=True) + 0.5
        counts = {"pack": 0, "unpack": 0}

        def pack(t, counts=counts):
            counts["pack"] += 1
            return t.detach()

        def unpack(t, counts=counts):
            counts["unpack"] += 1
            return t

        reads = rng.choice((0, 2))
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            loss = _Reads.apply(a, b, reads).sum() if custom else _BOTH_SAVED[label](a, b)
        names = rng.choice(["a", "b", "a and b"])
        torch.autograd.grad(loss, {"a": [a], "b": [b], "a and b": [a, b]}[names])
        what = f"{label} whose backward reads its saved tensors {reads} times" if custom else label
        yield Trial(
            f"seed {seed}: {what}, the gradient of {names} only: {counts}",
            not custom,
            counts["unpack"] == counts["pack"] > 0,
        )


class _Reads(torch.autograd.Function):
    """Saves both inputs; its backward reads ctx.saved_tensors ``reads`` times."""

    @staticmethod
    def forward(ctx, a, b, reads):
        ctx.save_for_backward(a, b)
        ctx.reads = reads
        return a * b.detach() + b * a.detach()

    @staticmethod
    def backward(ctx, grad):
        for _ in range(ctx.reads):
            ctx.saved_tensors  # noqa: B018  (each read unpacks)
        return grad, grad, None


@sweeps("09.a-node-unpacks-all-it-saved")
def a_node_unpacks_all_it_saved_on(sample):
    """Every operation, asked for the gradient of its first input alone: each node that ran unpacked each tensor
    it saved, once (which node saved which tensor is read first, under the same pair)."""
    packs: list[int] = []
    unpacked: list[int] = []

    def pack(t):
        packs.append(len(packs))
        return (packs[-1], t.detach())

    def unpack(token):
        unpacked.append(token[0])
        return token[1]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        run = sample.run()
    outs = [t for t in run.recorded if t.is_floating_point()] if run is not None else []
    if not outs or not run.leaves or not packs:
        return None
    owned: dict = {}
    for fn in run.nodes():
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                before = len(unpacked)
                try:
                    getattr(fn, attr)
                except RuntimeError:
                    continue
                owned.setdefault(fn, []).extend(unpacked[before:])
    unpacked.clear()
    ran: set = set()
    for fn in owned:
        fn.register_prehook(lambda grad_outputs, fn=fn: ran.add(fn))
    try:
        torch.autograd.grad(outs, run.leaves[:1], [torch.ones_like(t) for t in outs], allow_unused=True)
    except RuntimeError:  # a derivative torch does not implement
        return None
    rule = all(sorted(unpacked.count(tok) for tok in owned[fn]) == [1] * len(owned[fn]) for fn in ran)
    return Trial(f"{sample.label}: {len(ran)} of {len(owned)} saving nodes ran", True, rule, op=sample.op)
