"""Unit 05's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch
from torch import nn

from grader import probes
from grader.engine.claims import Trial, claim, sweeps
from grader.probes import opdb, saves

# activations that keep their own output for backward, and ones that keep only their input
_KEEP_OUTPUT = {"ReLU": nn.ReLU, "Tanh": nn.Tanh, "Sigmoid": nn.Sigmoid}
_KEEP_INPUT = {"GELU": nn.GELU, "SiLU": nn.SiLU}


@claim(
    "05.freeze-saves-nothing-when-kept",
    sentence="Freezing a layer whose input needs a gradient saves nothing when the node before it keeps that "
    "input anyway, as a ReLU keeps its output",
    holds_when="the activation before the frozen layer keeps its own output (ReLU, Tanh, Sigmoid) and the layer "
    "reads that output as it is; after one that keeps only its input (GELU, SiLU) freezing the layer drops that "
    "input from the bill, and a batch of matrices stored transposed (a batched `cholesky`'s output) is first "
    "copied by the layer, which keeps the copy",
)
def freeze_saves_nothing_when_kept():
    for seed in range(10):
        rng = random.Random(seed)
        kept = seed % 2 == 0
        acts = _KEEP_OUTPUT if kept else _KEEP_INPUT
        name = rng.choice(sorted(acts))
        width, batch = rng.choice([8, 16, 32]), rng.randint(2, 8)
        torch.manual_seed(seed)
        model = nn.Sequential(
            nn.Linear(width, width), acts[name](), nn.Linear(width, width), acts[name](), nn.Linear(width, 1)
        )
        x = torch.randn(batch, width)
        plain = probes.bill(lambda model=model, x=x: model(x).sum()).total
        model[2].requires_grad_(False)
        frozen = probes.bill(lambda model=model, x=x: model(x).sum()).total
        yield Trial(f"seed {seed}: Linear({width}) -> {name} -> frozen Linear({width})", kept, frozen == plain)


@sweeps("05.freeze-saves-nothing-when-kept")
def freeze_saves_nothing_when_kept_on(sample):
    """Every operation with one argument (that requires grad) and a floating-point output, followed by a
    layer (``F.linear``) that trains and then frozen: does freezing it shrink the bill? Its condition: the
    operation keeps its own output (a tensor in the output's memory reached its pack hook)."""
    first = sample.shared()
    if first is None or len(first.tensors) != 1 or not first.leaves or not first.recorded:
        return None
    if first.recorded[0].dim() == 0 or not first.recorded[0].numel() or not first.recorded[0].is_floating_point():
        return None
    base, seen = saves.packed(sample)
    if base is None or not base.recorded:
        return None
    out = base.recorded[0]
    keeps_output = any(opdb.shares_memory(s, out) for s in seen)
    try:  # the layer reads it as it is: it folds into a matrix without a copy
        out.view(-1, out.shape[-1])
        as_it_is = True
    except RuntimeError:  # a batch of matrices stored transposed: the layer keeps a contiguous copy
        as_it_is = False
    bills = []
    for trains in (True, False):
        weight = torch.ones(2, out.shape[-1], dtype=out.dtype, requires_grad=trains)
        layer = lambda weight=weight: torch.nn.functional.linear(sample.run().recorded[0], weight)
        bills.append(probes.bill(layer).total)
    label = (
        f"{sample.label}: keeps its output {keeps_output}, read as it is {as_it_is}, "
        f"bill {bills[0]} trained, {bills[1]} frozen"
    )
    return Trial(label, keeps_output and as_it_is, bills[0] == bills[1], op=sample.op)


_WITH_A_NUMBER = {
    "v * k": lambda v, k: v * k,
    "k * v": lambda v, k: k * v,
    "v / k": lambda v, k: v / k,
    "v.mul(k)": lambda v, k: v.mul(k),
}


@claim(
    "05.wrapped-numbers-skip-pack-hooks",
    sentence="torch does not send wrapped numbers through saved-tensor hooks.",
)
def wrapped_numbers_skip_pack_hooks():
    for seed in range(16):
        rng = random.Random(seed)
        name = sorted(_WITH_A_NUMBER)[seed % len(_WITH_A_NUMBER)]
        number = rng.choice([2, 3, -4]) if seed % 2 else rng.choice([0.5, 2.5, -1.5])
        v = torch.randn(rng.randint(1, 6), requires_grad=True)
        counts = []
        for k in (number, torch.tensor(number)):
            calls: list = []
            with torch.autograd.graph.saved_tensors_hooks(lambda t, calls=calls: calls.append(t) or t, lambda t: t):
                out = _WITH_A_NUMBER[name](v, k)
            kept = any(isinstance(getattr(out.grad_fn, a, None), torch.Tensor) for a in ("_saved_self", "_saved_other"))
            counts.append((len(calls), kept))
        # the number is kept by the node (a wrapped 0-dim tensor) yet never packed; the same value as a tensor is
        yield Trial(
            f"seed {seed}: {name.replace('k', repr(number))}", True, counts[0] == (0, True) and counts[1] == (1, True)
        )


@sweeps("05.wrapped-numbers-skip-pack-hooks", sample=("nn.functional.gaussian_nll_loss",))
def wrapped_numbers_skip_pack_hooks_on(sample):
    """Every operation whose node keeps a wrapped Python number (``mul(x, 2)``, ``xlogy(x, 3.0)``): none of
    what reaches the pack hook is one."""
    plain = sample.shared()
    if plain is None or not plain.recorded:
        return None
    kept = [e for e in probes.saved_tensors(plain.recorded[0]) if e.wrapped]
    if not kept:
        return None
    _, seen = saves.packed(sample)
    return Trial(f"{sample.label}: {len(kept)} wrapped number(s) kept", True, seen.wrapped == 0, op=sample.op)


_KEEPS_OUTPUT = {"exp": torch.exp, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}
_KEEPS_INPUT = {"sin": torch.sin, "cos": torch.cos, "square": lambda t: t**2, "log": torch.log}


def _source(rng: random.Random) -> tuple[str, torch.Tensor]:
    leaf = (torch.rand(rng.randint(1, 6)) + 0.5).requires_grad_()
    return rng.choice([("a leaf", leaf), ("a product", leaf * 2), ("a view", (leaf * 2)[: max(1, leaf.numel() - 1)])])


@claim(
    "05.saved-output-is-a-fresh-object",
    sentence="so it keeps the data and builds a fresh tensor object each time you ask (an output that carries no "
    "gradient, such as `sort`'s indices, points to no node, and the node hands back that very tensor)",
    holds_when="the output requires grad, so it points back to the node through `grad_fn`; an output that "
    "carries no gradient (`max`'s or `sort`'s indices, `layer_norm`'s mean) points to no node, and the node "
    "hands back that very tensor",
)
def saved_output_is_a_fresh_object():
    for seed in range(12):
        rng = random.Random(seed)
        name = sorted(_KEEPS_OUTPUT)[seed % len(_KEEPS_OUTPUT)]
        where, t = _source(rng)
        out = _KEEPS_OUTPUT[name](t)
        first, second = out.grad_fn._saved_result, out.grad_fn._saved_result
        same_data = first.untyped_storage().data_ptr() == out.untyped_storage().data_ptr()
        yield Trial(f"seed {seed}: {name} of {where}", True, first is not out and first is not second and same_data)
    for seed in range(4):  # an output with no gradient: sort's indices, kept as they are
        where, t = _source(random.Random(100 + seed))
        values, indices = t.sort()
        first = values.grad_fn._saved_indices
        fresh = first is not indices and values.grad_fn._saved_indices is not first
        yield Trial(f"seed {seed}: sort of {where}, its indices", False, fresh)


@sweeps("05.saved-output-is-a-fresh-object")
def saved_output_is_a_fresh_object_on(sample):
    """Every saved value that is one of the operation's outputs (the same memory, seen the same way). Its
    condition: that output requires grad, so it points back to a node; an output with no gradient (max's
    indices, layer_norm's mean) points to nothing."""
    run = sample.shared()
    if run is None or not run.recorded:
        return None
    for fn in run.nodes():
        for attr, first in saves.saved_values(fn, custom=False):
            who = run.owner(first)
            if not who.startswith("output") or any(opdb.same_view(first, t) for t in run.tensors):
                continue
            out = run.outputs[int(who.split()[1])]
            second = getattr(fn, attr)
            second = second if isinstance(second, torch.Tensor) else None
            fresh = first is not out and second is not None and second is not first
            label = f"{sample.label}: {probes.node_name(fn)}.{attr}, output requires grad {out.requires_grad}"
            yield Trial(label, out.requires_grad, fresh, op=sample.op)


@claim(
    "05.saved-input-is-your-tensor",
    sentence="A saved *input* is different: the node does not own it, and hands back your very tensor",
)
def saved_input_is_your_tensor():
    for seed in range(12):
        rng = random.Random(seed)
        name = sorted(_KEEPS_INPUT)[seed % len(_KEEPS_INPUT)]
        where, t = _source(rng)
        out = _KEEPS_INPUT[name](t)
        yield Trial(f"seed {seed}: {name} of {where}", True, out.grad_fn._saved_self is t)


@sweeps("05.saved-input-is-your-tensor")
def saved_input_is_your_tensor_on(sample):
    """Every saved value of a node that takes an argument itself (an edge to the argument's AccumulateGrad)
    and looks at that argument's memory the same way. (A function built of several operations may hand a
    node an alias it made, ``x.view(x.shape)``: that node's input is the alias, not your tensor.)"""
    run = sample.shared()
    if run is None or not run.recorded:
        return None
    for fn in run.nodes():
        taken = [nxt.variable for nxt, _ in fn.next_functions if hasattr(nxt, "variable")]
        for attr, value in saves.saved_values(fn, custom=False):
            mine = [t for t in taken if opdb.same_view(value, t)]
            if not mine or any(opdb.same_view(value, t) for t in run.outputs):
                continue
            yield Trial(f"{sample.label}: {probes.node_name(fn)}.{attr}", True, value is mine[0], op=sample.op)


@claim(
    "05.saved-view-keeps-its-whole-storage",
    sentence="A view cannot keep part of a storage, so the whole block stays.",
    holds_when="the node keeps the view itself (an operation that keeps its input, such as sin); one that keeps "
    "only its own output (exp) keeps a new storage the size of the slice",
)
def saved_view_keeps_its_whole_storage():
    for seed in range(12):
        rng = random.Random(seed)
        keeps_view = seed % 2 == 0
        ops = _KEEPS_INPUT if keeps_view else _KEEPS_OUTPUT
        name = rng.choice(sorted(ops))
        n, k = rng.randint(50, 400), rng.randint(1, 10)
        big = (torch.rand(n) + 0.5).requires_grad_() * 2
        kept = probes.bill(lambda big=big, k=k, op=ops[name]: op(big[:k])).total
        yield Trial(f"seed {seed}: {name} of a {k}-element slice of {n}", keeps_view, kept == n * 4)


def _slice_of_a_block(leaf: torch.Tensor) -> torch.Tensor:
    """``leaf``'s values as the first elements of a block four times its size (plus 8): a view of it."""
    block = torch.zeros(leaf.numel() * 4 + 8, dtype=leaf.dtype)
    block[: leaf.numel()] = leaf.detach().reshape(-1)
    block.requires_grad_()
    return block[: leaf.numel()].view(leaf.shape)


@sweeps("05.saved-view-keeps-its-whole-storage")
def saved_view_keeps_its_whole_storage_on(sample):
    """Every operation whose arguments are views of bigger blocks. Its condition: a tensor in a block's memory
    reached the pack hook (the node kept the view, or a view of it); the rule: the whole block is kept."""
    run, seen = saves.packed(sample, prepare=_slice_of_a_block)
    if run is None or not len(seen):
        return None
    blocks = [t for t in run.tensors if t.requires_grad and t._base is not None and t.numel()]
    if not blocks:
        return None
    kept = [s for s in seen if any(opdb.shares_memory(s, b) for b in blocks)]
    whole = {b.untyped_storage().nbytes() for b in blocks}
    rule = bool(kept) and all(s.untyped_storage().nbytes() in whole for s in kept)
    return Trial(f"{sample.label}: {len(kept)} of {len(seen)} saves in a block", bool(kept), rule, op=sample.op)


@claim(
    "05.clone-keeps-nothing",
    sentence="`clone()` makes a small storage of its own, and a clone's backward needs nothing from the forward pass.",
)
def clone_keeps_nothing():
    for seed in range(10):
        rng = random.Random(seed)
        dtype = rng.choice([torch.float32, torch.float64])
        n, k = rng.randint(50, 300), rng.randint(1, 10)
        big = torch.randn(n, dtype=dtype, requires_grad=True) * 2
        copy = big[:k].clone()
        own = copy.untyped_storage().nbytes() == k * dtype.itemsize
        keeps = probes.bill(lambda big=big, k=k: big[:k].clone()).total
        yield Trial(f"seed {seed}: clone of {k} of {n} {dtype}", True, own and keeps == 0)


@sweeps("05.clone-keeps-nothing", ops=("clone",))
def clone_keeps_nothing_on(sample):
    run, seen = saves.packed(sample)
    if run is None:
        return None
    y, x = run.output, run.tensors[0]
    own = y.untyped_storage().nbytes() == y.numel() * y.element_size() and not opdb.shares_memory(x, y)
    return Trial(f"{sample.label}: {list(x.shape)}, {len(seen)} saved", True, own and not len(seen), op=sample.op)


@claim(
    "05.linear-keeps-input-if-weight-trains",
    sentence="So a Linear keeps its input **only if its weight trains**, and its weight **only if its input needs "
    "a gradient**.",
)
def linear_keeps_input_if_weight_trains():
    for seed in range(16):
        rng = random.Random(seed)
        d_in, d_out = rng.randint(2, 8), rng.randint(2, 8)
        layer = nn.Linear(d_in, d_out, bias=rng.random() < 0.7)
        trains = rng.random() < 0.5
        layer.requires_grad_(trains)
        rows = (rng.randint(2, 5),) if rng.random() < 0.6 else (rng.randint(2, 3), rng.randint(2, 4))
        needs = rng.random() < 0.5 or not trains
        x = torch.randn(*rows, d_in, requires_grad=needs)
        kept = probes.bill(lambda layer=layer, x=x: layer(x), names=layer, inputs={"input": x})
        what = {e.what for e in kept.entries}
        rule = ("input" in what) == trains and ("weight" in what) == needs and not what - {"input", "weight"}
        yield Trial(
            f"seed {seed}: Linear({d_in}, {d_out}) on {(*rows, d_in)}, weight {'trains' if trains else 'frozen'}, "
            f"input {'needs' if needs else 'needs no'} grad",
            True,
            rule,
        )


@sweeps("05.linear-keeps-input-if-weight-trains", ops=("nn.functional.linear",))
def linear_keeps_input_if_weight_trains_on(sample):
    """op_db's F.linear samples, with the input or the weight (and bias) needing no gradient, or neither."""
    plain = sample.shared()
    if plain is None:
        return None
    if any(not t.numel() for t in plain.tensors):  # an empty batch: nothing to keep
        return None
    count = len(plain.leaves)  # input, weight[, bias]
    for frozen in ([], [0], list(range(1, count))):
        run, seen = saves.packed(sample, prepare=opdb.without_grad(frozen))
        if run is None:
            continue
        x, w = run.tensors[0], run.tensors[1]
        kept_x = any(opdb.shares_memory(s, x) for s in seen)
        kept_w = any(opdb.shares_memory(s, w) for s in seen)
        rule = kept_x == w.requires_grad and kept_w == x.requires_grad
        label = f"{sample.label}: input grad {x.requires_grad}, weight grad {w.requires_grad}: kept {kept_x}/{kept_w}"
        yield Trial(label, True, rule, op=sample.op)


@claim(
    "05.adam-keeps-two-averages",
    sentence="Adam keeps two running averages shaped like each parameter, plus a one-number step count per "
    "parameter tensor",
    holds_when="amsgrad is off (the default); with amsgrad=True Adam keeps a third tensor shaped like each "
    "parameter, the running maximum",
    not_swept="about an optimizer's state",
)
def adam_keeps_two_averages():
    for seed in range(8):
        rng = random.Random(seed)
        amsgrad = seed % 2 == 1
        params = [nn.Parameter(torch.randn(*[rng.randint(1, 5) for _ in range(rng.randint(1, 3))])) for _ in range(3)]
        opt = torch.optim.Adam(params, amsgrad=amsgrad, weight_decay=rng.choice([0.0, 0.01]))
        sum((p**2).sum() for p in params).backward()
        opt.step()
        rule = True
        for p in params:
            state = opt.state[p]
            counts = [k for k, v in state.items() if torch.is_tensor(v) and v.numel() == 1 and k == "step"]
            shaped = [k for k, v in state.items() if torch.is_tensor(v) and k != "step" and v.shape == p.shape]
            rule = rule and len(shaped) == 2 and len(counts) == 1 and len(state) == 3
        yield Trial(f"seed {seed}: Adam(amsgrad={amsgrad}) on {[tuple(p.shape) for p in params]}", not amsgrad, rule)


@claim(
    "05.conv-and-layer-norm-keep-their-weights",
    sentence="in torch 2.13 a convolution keeps its weight even when its input needs no gradient, and "
    "`layer_norm` keeps its weight and bias whatever is asked",
    holds_when="a convolution or layer_norm; a product (mul, mm, addmm) keeps only what the owed gradients read",
)
def conv_and_layer_norm_keep_their_weights():
    for seed in range(12):
        rng = random.Random(seed)
        kind = ("conv2d", "layer_norm", "addmm")[seed % 3]
        c, n = rng.randint(1, 3), rng.randint(3, 6)
        if kind == "conv2d":
            layer: nn.Module = nn.Conv2d(c, rng.randint(1, 3), 3)
            x = torch.randn(1, c, n, n)
        elif kind == "layer_norm":
            layer = nn.LayerNorm(n)
            x = torch.randn(rng.randint(1, 4), n, requires_grad=rng.random() < 0.5)
        else:
            layer = nn.Linear(n, rng.randint(1, 4))
            x = torch.randn(rng.randint(1, 4), n)
        if kind != "conv2d":
            layer.requires_grad_(rng.random() < 0.5 or not x.requires_grad)
        what = {e.what for e in probes.bill(lambda layer=layer, x=x: layer(x), names=layer).entries}
        # the rule: the layer's weight (and for layer_norm its bias) is kept whatever is asked
        expected = {"weight"} if kind != "layer_norm" else {"weight", "bias"}
        yield Trial(f"seed {seed}: {kind}, input grad {x.requires_grad}", kind != "addmm", expected <= what)


# where each operation's weight (and bias) sits among its tensor arguments, and which flags to try
_WEIGHTS = {
    "nn.functional.conv1d": (0, [1], [2]),
    "nn.functional.conv2d": (0, [1], [2]),
    "nn.functional.conv3d": (0, [1], [2]),
    "nn.functional.layer_norm": (0, [1, 2], []),
    "mm": (0, [1], []),
    "addmm": (1, [2], []),
    "mul": (0, [1], []),
}


@sweeps("05.conv-and-layer-norm-keep-their-weights", ops=tuple(_WEIGHTS))
def conv_and_layer_norm_keep_their_weights_on(sample):
    """Each operation with its input needing no gradient (and, for layer_norm, also with the input needing one
    and the weight and bias not): is every weight it was given kept?"""
    plain = sample.shared()
    if plain is None:
        return None
    inp, weights, _ = _WEIGHTS[sample.op]
    order = [i for i, t in enumerate(plain.tensors) if t.requires_grad]
    if inp not in order or not all(i in order for i in weights if i < len(plain.tensors)):
        return None
    tries = [[order.index(inp)]]
    if sample.op == "nn.functional.layer_norm":
        tries.append([order.index(i) for i in weights if i < len(plain.tensors)])
    for frozen in tries:
        run, seen = saves.packed(sample, prepare=opdb.without_grad(frozen))
        if run is None:
            continue
        given = [run.tensors[i] for i in weights if i < len(run.tensors)]
        kept = all(any(opdb.shares_memory(s, w) for s in seen) for w in given)
        special = sample.op != "mm" and sample.op != "addmm" and sample.op != "mul"
        label = f"{sample.label}: input grad {run.tensors[inp].requires_grad}, weight kept {kept}"
        yield Trial(label, special, kept, op=sample.op)
