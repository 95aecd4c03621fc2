"""Unit 05's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch
from torch import nn

from grader import probes
from grader.engine.claims import Trial, claim

# activations that keep their own output for backward, and ones that keep only their input
_KEEP_OUTPUT = {"ReLU": nn.ReLU, "Tanh": nn.Tanh, "Sigmoid": nn.Sigmoid}
_KEEP_INPUT = {"GELU": nn.GELU, "SiLU": nn.SiLU}


@claim(
    "05.freeze-saves-nothing-when-kept",
    sentence="Freezing a layer whose input needs a gradient saves nothing when the node before it keeps that "
    "input anyway, as a ReLU keeps its output",
    holds_when="the activation before the frozen layer keeps its own output (ReLU, Tanh, Sigmoid); after one "
    "that keeps only its input (GELU, SiLU) freezing the layer drops that input from the bill",
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


_KEEPS_OUTPUT = {"exp": torch.exp, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}
_KEEPS_INPUT = {"sin": torch.sin, "cos": torch.cos, "square": lambda t: t**2, "log": torch.log}


def _source(rng: random.Random) -> tuple[str, torch.Tensor]:
    leaf = (torch.rand(rng.randint(1, 6)) + 0.5).requires_grad_()
    return rng.choice([("a leaf", leaf), ("a product", leaf * 2), ("a view", (leaf * 2)[: max(1, leaf.numel() - 1)])])


@claim(
    "05.saved-output-is-a-fresh-object",
    sentence="so it keeps the data and builds a fresh tensor object each time you ask",
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


@claim(
    "05.adam-keeps-two-averages",
    sentence="Adam keeps two running averages shaped like each parameter, plus a one-number step count per "
    "parameter tensor",
    holds_when="amsgrad is off (the default); with amsgrad=True Adam keeps a third tensor shaped like each "
    "parameter, the running maximum",
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
