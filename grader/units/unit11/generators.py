"""Unit 11's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

# (forward, backward from the stashed input u, the slope as a function of u before the write)
STASH_FORMS = (
    ("t * t", "grad * 2 * ctx.inp", "2 * u"),
    ("t ** 3", "grad * 3 * ctx.inp ** 2", "3 * u ** 2"),
    ("t * t * 0.5", "grad * ctx.inp", "u"),
    ("t ** 3 / 3", "grad * ctx.inp * ctx.inp", "u * u"),
)
STASH_WRITES = ("u.mul_(4)", "u.add_(2)", "u.mul_(0.5)", "u.mul_(3)")  # each changes |u|: the slope moves


def stash_program(d: Draw) -> Listing:
    """11.self-stash: a custom Function that keeps its input as a plain attribute, written in place after apply:
    nothing checks a stash, so backward reads the written values."""
    forward, backward, slope = d.one(STASH_FORMS)
    b0 = d.one([3.0, 2.0, 0.5, 1.5, -2.5])  # u is never 0 nor -1
    shift = d.one(["b - 1", "b + 1", "b * 2"])
    write = d.one(STASH_WRITES)
    lines = [
        "class Sq(torch.autograd.Function):",
        "    @staticmethod",
        "    def forward(t):",
        f"        return {forward}",
        "",
        "    @staticmethod",
        "    def setup_context(ctx, inputs, output):",
        "        ctx.inp = inputs[0]",
        "",
        "    @staticmethod",
        "    def backward(ctx, grad):",
        f"        return {backward}",
        "",
        "",
        f"b = torch.tensor([{b0}], requires_grad=True)",
        f"u = {shift}",
        "out = Sq.apply(u)",
        write,
        "out.backward()",
    ]
    before = eval(shift, {"b": b0})
    db_du = 2.0 if shift == "b * 2" else 1.0
    facts = {"right slope": eval(slope, {"u": before}) * db_du}
    return Listing("\n".join(lines), "What is b.grad[0] (4 decimals)?", facts)


def decoder_program(d: Draw) -> Listing:
    """11.self-decoder-passes: a map from n numbers to m: its whole Jacobian takes m reverse passes (one row each)
    and n forward-mode passes (one column each)."""
    inputs, outputs = d.one([(4, 250), (3, 100), (50, 2), (6, 40), (200, 5), (10, 3)])
    act = d.one(["torch.tanh(W @ v)", "(W @ v).sin()", "W @ v.exp()", "torch.sigmoid(W @ v) * 2"])
    lines = [
        "torch.manual_seed(3)",
        f"W = torch.randn({outputs}, {inputs})",
        f"z = torch.randn({inputs}, requires_grad=True)",
        "",
        "",
        "def decode(v):",
        f"    return {act}",
    ]
    ask = (
        "Building decode's whole Jacobian at z, one pass at a time: how many reverse passes (vector-Jacobian "
        "products) and how many forward-mode passes (Jacobian-vector products)? Answer [reverse passes, forward "
        "passes]."
    )
    return Listing("\n".join(lines), ask, {})


LEAF_OPTIONS = ("runs, w.grad right", "runs, w.grad wrong", "raises at apply", "raises at backward")
# the backward rule: from the output it saved (right), or from its input, stashed and since written (wrong)
LEAF_BACKWARDS = {
    "output": ("        ctx.save_for_backward(output)", "        (y,) = ctx.saved_tensors"),
    "input": ("        ctx.x = inputs[0]", "        y = ctx.x.sigmoid()"),
}


def leaf_program(d: Draw) -> Listing:
    """11.self-leaf-inplace: an in-place sigmoid as a custom Function (mark_dirty on its input) applied to a leaf
    (refused at apply), to a tensor another node kept (stale at backward), or to a fresh non-leaf, with a backward
    that reads the output it saved or its input, stashed and overwritten."""
    target = d.one(["w", "w * 1", "w.exp()", "w.sin()", "w.clone()", "w"])
    keeps = d.one(["output", "output", "input"])
    save, read = LEAF_BACKWARDS[keeps]
    w0 = d.one(["[0.2, -0.7]", "[1.0, 0.5]", "[-1.5, 0.3]"])
    source = "\n".join(
        [
            "class SigmoidInPlace(torch.autograd.Function):",
            "    @staticmethod",
            "    def forward(x):",
            "        return x.sigmoid_()",
            "",
            "    @staticmethod",
            "    def setup_context(ctx, inputs, output):",
            "        ctx.mark_dirty(inputs[0])",
            save,
            "",
            "    @staticmethod",
            "    def backward(ctx, grad):",
            read,
            "        return grad * y * (1 - y)",
            "",
            "",
            f"w = torch.tensor({w0}, requires_grad=True)",
        ]
    )
    steps = [
        ("", source),
        ("at apply", f"out = SigmoidInPlace.apply({target})"),
        ("at backward", "out.sum().backward()"),
    ]
    ask = (
        "What happens, and is w.grad then d/dw of torch.sigmoid("
        + target
        + ").sum()? One of "
        + ", ".join(repr(o) for o in LEAF_OPTIONS)
        + "."
    )
    return Listing.in_steps(steps, ask, {"target": target, "keeps": keeps, "w": w0})


GRADGRAD_OPTIONS = (
    "passes",
    "fails: the analytical second derivative is all zeros",
    "fails: the numerical second derivative is all zeros",
    "raises at the second grad: it finds no graph to go through",
)
# (forward, backward from the saved t)
QUARTS = (
    ("t ** 4", "grad * 4 * t ** 3"),
    ("t ** 3", "grad * 3 * t ** 2"),
    ("t.sin()", "grad * t.cos()"),
    ("t.exp()", "grad * t.exp()"),
)
GRADGRAD_CHECKS = (
    "torch.autograd.gradgradcheck(Quart.apply, (t,))",
    "(g,) = torch.autograd.grad(Quart.apply(t).sum(), t, create_graph=True)\ntorch.autograd.grad(g.sum(), t)",
)


def gradgrad_program(d: Draw) -> Listing:
    """11.self-gradgrad-once: a custom Function whose backward is (or is not) once_differentiable, checked by
    gradgradcheck (whose analytical side needs backward recorded) or by a second torch.autograd.grad by hand."""
    forward, backward = d.one(QUARTS)
    once = d.coin(True, p=0.65)
    check = d.one(GRADGRAD_CHECKS)
    values = d.one(["[0.5, -1.5]", "[1.0, 2.0]", "[-0.5, 0.25]"])
    lines = [
        "from torch.autograd.function import once_differentiable",
        "",
        "",
        "class Quart(torch.autograd.Function):",
        "    @staticmethod",
        "    def forward(t):",
        f"        return {forward}",
        "",
        "    @staticmethod",
        "    def setup_context(ctx, inputs, output):",
        "        ctx.save_for_backward(inputs[0])",
        "",
        "    @staticmethod",
        *(["    @once_differentiable"] if once else []),
        "    def backward(ctx, grad):",
        "        (t,) = ctx.saved_tensors",
        f"        return {backward}",
        "",
        "",
        f"t = torch.tensor({values}, dtype=torch.float64, requires_grad=True)",
    ]
    steps = [("", "\n".join(lines)), ("check", check)]
    ask = "What happens? One of " + ", ".join(repr(o) for o in GRADGRAD_OPTIONS) + "."
    return Listing.in_steps(steps, ask, {"once": once, "gradgradcheck": check.startswith("torch.autograd.gradgrad")})
