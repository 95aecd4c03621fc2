"""Unit 04's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim, sweeps
from grader.probes import opdb, saves

# how a tensor comes to exist inside inference_mode, from a normal tensor a made outside it
_MADE_ANEW = {
    "a * 2": lambda a: a * 2,
    "a.relu()": lambda a: a.relu(),
    "a.sum(0)": lambda a: a.sum(0),
    "torch.zeros(3)": lambda a: torch.zeros(3),
    "a.clone()": lambda a: a.clone(),
}
_FROM_A = {
    "a.view(-1)": lambda a: a.view(-1),
    "a.t()": lambda a: a.t(),
    "a[0]": lambda a: a[0],
    "a.mul_(2)": lambda a: a.mul_(2),
    "a.add_(1)": lambda a: a.add_(1),
}


@claim(
    "04.inference-mode-makes-inference-tensors",
    sentence="the tensors it makes anew inside it (results of out-of-place operations and factories) are "
    "*inference tensors*, marked for good",
    holds_when="the tensor is made anew inside the region; a view or an in-place result of a normal tensor "
    "made outside it stays a normal tensor, and so does the tensor itself when an operation hands it back "
    "(`x.contiguous()` of a contiguous x, `x.float()` of a float32 x)",
)
def inference_mode_makes_inference_tensors():
    for seed in range(20):
        rng = random.Random(seed)
        a = torch.randn(rng.randint(2, 5), rng.randint(2, 5))
        anew = rng.random() < 0.5
        name = rng.choice(sorted(_MADE_ANEW if anew else _FROM_A))
        with torch.inference_mode():
            t = (_MADE_ANEW if anew else _FROM_A)[name](a)
        yield Trial(f"seed {seed}: {name}", condition=anew, holds=t.is_inference())


def _in_inference_mode(function):
    def call(*args, **kwargs):
        with torch.inference_mode():
            return function(*args, **kwargs)

    return call


@sweeps("04.inference-mode-makes-inference-tensors")
def inference_mode_makes_inference_tensors_on(sample):
    """Every operation run inside inference_mode on normal tensors made outside it; each output is made anew
    when it shares no memory with an argument."""
    run = sample.run(requires_grad=False, call=_in_inference_mode(sample.function))
    if run is None:
        return None
    for i, t in enumerate(run.outputs):
        if not t.numel():  # an empty tensor has no memory to tell a view from a new tensor
            continue
        anew = not any(opdb.shares_memory(t, a) for a in run.tensors)
        label = f"{sample.label}: output {i}, {'made anew' if anew else 'memory of an argument'}"
        yield Trial(label, anew, t.is_inference(), op=sample.op)


_OPS = {
    "a * b": lambda a, b: a * b,
    "a + b": lambda a, b: a + b,
    "a @ b.T": lambda a, b: a @ b.T,
    "torch.cat([a, b])": lambda a, b: torch.cat([a, b]),
    "a.exp() - b": lambda a, b: a.exp() - b,
}


@claim(
    "04.records-only-when-an-input-requires-grad",
    sentence="Autograd records an operation only when at least one of its inputs requires grad.",
)
def records_only_when_an_input_requires_grad():
    for seed in range(24):
        rng = random.Random(seed)
        shape = (rng.randint(1, 4), rng.randint(1, 4))
        a, b = (
            torch.randn(shape, requires_grad=rng.random() < 0.5),
            torch.randn(shape, requires_grad=rng.random() < 0.5),
        )
        name = rng.choice(sorted(_OPS))
        y = _OPS[name](a, b)
        needs = a.requires_grad or b.requires_grad
        yield Trial(
            f"seed {seed}: {name}, requires_grad {a.requires_grad}/{b.requires_grad}",
            True,
            (y.grad_fn is not None) == needs,
        )


@sweeps("04.records-only-when-an-input-requires-grad")
def records_only_when_an_input_requires_grad_on(sample):
    """Every operation with no argument that requires grad: no output has a grad_fn."""
    run = sample.run(requires_grad=False)
    if run is None or not run.outputs:
        return None
    recorded = [t for t in run.outputs if t.grad_fn is not None or t.requires_grad]
    return Trial(f"{sample.label}: no argument requires grad", True, not recorded, op=sample.op)


_DTYPES = (
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.complex64,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.bool,
)


@claim(
    "04.only-floats-require-grad",
    sentence="only floating-point (and complex) tensors can require grad",
    holds_when="the dtype is floating-point or complex; an integer or bool tensor refuses requires_grad",
    not_swept="about which tensors may be asked to require grad; what operations return is 01.only-floating-point-requires-grad's sweep",
)
def only_floats_require_grad():
    for seed, dtype in enumerate(_DTYPES * 2):
        shape = [random.Random(seed).randint(1, 4)]
        try:
            torch.zeros(shape, dtype=dtype).requires_grad_()
            can = True
        except RuntimeError:
            can = False
        yield Trial(f"{dtype} of shape {shape}", dtype.is_floating_point or dtype.is_complex, can)


# (label, op of (inference tensor c, normal tensor h that requires grad), whether it keeps c for backward)
_WITH_C = {
    "c * h": (lambda c, h: c * h, True),
    "h / c": (lambda c, h: h / c, True),
    "c @ h": (lambda c, h: c @ h, True),
    "h ** c": (lambda c, h: h**c, True),
    "c + h": (lambda c, h: c + h, False),
    "h - c": (lambda c, h: h - c, False),
    "torch.cat([c, h])": (lambda c, h: torch.cat([c, h]), False),
}


@claim(
    "04.inference-tensors-are-never-saved",
    sentence="autograd may never save an inference tensor",
    holds_when="the recorded operation would keep the inference tensor (a product keeps each operand); an "
    "operation that keeps nothing of it (an addition) goes through",
)
def inference_tensors_are_never_saved():
    for seed in range(21):
        rng = random.Random(seed)
        name = sorted(_WITH_C)[seed % len(_WITH_C)]
        op, keeps = _WITH_C[name]
        n = rng.randint(1, 6)
        with torch.inference_mode():
            c = torch.rand(n) + 0.5
        h = torch.rand(n, requires_grad=True) + 0.5
        try:
            op(c, h)
            refused = False
        except RuntimeError as exc:
            refused = "Inference tensors cannot be saved" in str(exc)
        yield Trial(f"seed {seed}: {name}, {n} elements", keeps, refused)


@sweeps("04.inference-tensors-are-never-saved")
def inference_tensors_are_never_saved_on(sample):
    """For each of an operation's first two floating-point arguments (when another one requires grad): made a
    normal tensor that needs no gradient, is it kept for backward (a saved tensor in its memory, seen by a pack
    hook)? Made an inference tensor instead, is the run refused?"""
    plain = sample.shared()
    if plain is None or len(plain.leaves) < 2 or not plain.recorded:
        return None
    for position in range(2):
        normal, seen = saves.packed(sample, prepare=opdb.without_grad([position]))
        if normal is None:
            continue
        arg = [t for t in normal.tensors if not t.requires_grad and t.is_floating_point()]
        kept = any(opdb.shares_memory(s, a) for s in seen for a in arg)
        run = sample.run(prepare=opdb.without_grad([position], inference=True))
        refused = run is None and "Inference tensors cannot be saved" in sample.error
        label = f"{sample.label}: argument {position} an inference tensor, kept {kept}"
        yield Trial(label, kept, refused, op=sample.op)


_STEPS = {"round": torch.round, "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "sign": torch.sign}


@claim(
    "04.step-functions-record-zero-gradients",
    sentence="`round()` (like `floor`, `sign`) is different: it is recorded, and its derivative is zero almost "
    "everywhere",
)
def step_functions_record_zero_gradients():
    for seed in range(15):
        rng = random.Random(seed)
        name = sorted(_STEPS)[seed % len(_STEPS)]
        w = (torch.rand(rng.randint(1, 6)) * 10 - 5 + 0.25).requires_grad_()  # away from the jumps
        y = _STEPS[name](w)
        y.sum().backward()
        zeros = w.grad is not None and bool((w.grad == 0).all())
        yield Trial(f"seed {seed}: {name} of {w.numel()} values", True, y.grad_fn is not None and zeros)


@sweeps("04.step-functions-record-zero-gradients", ops=("round", "floor", "ceil", "trunc", "sign"))
def step_functions_record_zero_gradients_on(sample):
    run = sample.run()
    if run is None:
        return None
    y, (w,) = run.output, run.leaves
    if y.grad_fn is None:
        return Trial(f"{sample.label}: not recorded", True, False, op=sample.op)
    (g,) = torch.autograd.grad(y, w, torch.ones_like(y))
    return Trial(f"{sample.label}: {list(w.shape)}", True, bool((g == 0).all()), op=sample.op)


_SOURCES = {
    "a leaf": lambda t: t,
    "a product": lambda t: t * 3,
    "a view": lambda t: (t * 2)[1:],
    "a transpose": lambda t: (t + 1).t() if t.dim() == 2 else t + 1,
}


@claim(
    "04.detach-shares-memory",
    sentence="`t.detach()` gives a new tensor object that views the same memory as `t` and has no `grad_fn`.",
    not_swept="op_db has no entry for detach",
)
def detach_shares_memory():
    for seed in range(16):
        rng = random.Random(seed)
        name = sorted(_SOURCES)[seed % len(_SOURCES)]
        shape = (rng.randint(2, 5),) if rng.random() < 0.5 else (rng.randint(2, 4), rng.randint(2, 4))
        dtype = rng.choice([torch.float32, torch.float64])
        t = _SOURCES[name](torch.randn(shape, dtype=dtype, requires_grad=True))
        d = t.detach()
        same = d.data_ptr() == t.data_ptr() and d.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        cut = d.grad_fn is None and not d.requires_grad and (d * 2).grad_fn is None
        yield Trial(f"seed {seed}: {name}, {tuple(shape)} {dtype}", True, d is not t and same and cut)


@claim(
    "04.data-shares-memory-and-cuts-the-history",
    sentence="it also shares memory and cuts the history",
    not_swept="about the .data attribute, not an operation",
)
def data_shares_memory_and_cuts_the_history():
    for seed in range(10):
        rng = random.Random(seed)
        w = torch.randn(rng.randint(2, 6), requires_grad=True)
        h = w * rng.choice([2.0, 3.0, -1.5])
        d = h.data
        shares = d.data_ptr() == h.data_ptr() and d.shape == h.shape
        cut = d.grad_fn is None and not d.requires_grad and d.is_leaf
        yield Trial(f"seed {seed}: h.data of h = w * c, {tuple(h.shape)}", True, shares and cut)


@claim(
    "04.allow-unused-gives-none",
    sentence="`allow_unused=True` turns the error into a `None`",
    not_swept="about autograd.grad's option, the same for every graph",
)
def allow_unused_gives_none():
    for seed in range(12):
        rng = random.Random(seed)
        leaves = [torch.randn(rng.randint(1, 4), requires_grad=True) for _ in range(rng.randint(2, 4))]
        used = set(rng.sample(range(len(leaves)), rng.randint(1, len(leaves) - 1)))
        how = rng.choice(["detached", "never read"])
        loss = sum((leaves[i] ** 2).sum() for i in used)
        if how == "detached":
            loss = loss + sum(leaves[i].detach().sum() for i in range(len(leaves)) if i not in used)
        try:
            torch.autograd.grad(loss, leaves, retain_graph=True)
            raised = False
        except RuntimeError as exc:
            raised = "not have been used in the graph" in str(exc)
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        nones = {i for i, g in enumerate(grads) if g is None}
        yield Trial(
            f"seed {seed}: {len(leaves)} leaves, {len(leaves) - len(used)} {how}",
            True,
            raised and nones == set(range(len(leaves))) - used,
        )


class _DropsSecond(torch.autograd.Function):
    """a * b whose backward gives b no gradient (returns None for it): b is on the path and still gets None."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        (b,) = ctx.saved_tensors
        return grad * b, None


def _on_path(loss: torch.Tensor, leaf: torch.Tensor) -> bool:
    seen, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "variable", None) is leaf:
            return True
        stack.extend(n for n, _ in node.next_functions)
    return False


_PATHS = {
    "through round()": (lambda a, b: a.round() * 1.0 + b * 2, True),
    "through a detach()": (lambda a, b: a.detach() * b, True),
    "through a comparison": (lambda a, b: (a > 0).float() * b + b, True),
    "through x * 0": (lambda a, b: a * 0 + b, True),
    "through a Function that returns None for a": (lambda a, b: _DropsSecond.apply(b, a), False),
}


@claim(
    "04.none-means-no-path",
    sentence='Zero means "a path whose slope is 0"; None means "no path".',
    holds_when="every node on the path is torch's own; a custom autograd.Function whose backward returns None "
    "for an input leaves that leaf's .grad None although a path reaches it",
    not_swept="about backward over a whole path and custom Functions, not one operation of op_db",
)
def none_means_no_path():
    for seed in range(15):
        rng = random.Random(seed)
        name = sorted(_PATHS)[seed % len(_PATHS)]
        make, builtin = _PATHS[name]
        a = (torch.rand(rng.randint(1, 5)) + 0.3).requires_grad_()
        b = torch.randn(a.shape, requires_grad=True)
        loss = make(a, b).sum()
        path = _on_path(loss, a)
        loss.backward()
        yield Trial(f"seed {seed}: a {name}", builtin, (a.grad is None) == (not path))
