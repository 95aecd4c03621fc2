"""Unit 13's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

# a call and what it does to w.grad: "adds" (backward), "returns" (torch.func.grad, torch.autograd.grad), "clears"
CALLS = {
    "f(w).backward()": "adds",
    "g = torch.func.grad(f)(w)": "returns",
    "(a,) = torch.autograd.grad(f(w), w)": "returns",
    "w.grad = None": "clears",
}
SEQUENCES = (
    ("f(w).backward()", "g = torch.func.grad(f)(w)", "f(w).backward()"),
    ("f(w).backward()", "(a,) = torch.autograd.grad(f(w), w)", "f(w).backward()", "f(w).backward()"),
    ("g = torch.func.grad(f)(w)", "f(w).backward()"),
    ("f(w).backward()", "w.grad = None", "g = torch.func.grad(f)(w)", "f(w).backward()"),
    ("f(w).backward()", "f(w).backward()", "g = torch.func.grad(f)(w)", "f(w).backward()"),
    ("(a,) = torch.autograd.grad(f(w), w)", "f(w).backward()", "f(w).backward()"),
    ("f(w).backward()", "f(w).backward()", "w.grad = None", "f(w).backward()", "g = torch.func.grad(f)(w)"),
)


def accumulate_program(d: Draw) -> Listing:
    """13.self-accumulate: backward adds into w.grad; torch.func.grad and torch.autograd.grad return gradients and
    write nothing; w.grad = None clears. What is w.grad after the calls?"""
    w0 = d.one(["[1.0, 3.0]", "[2.0, -1.0]", "[0.5, 1.5]", "[-2.0, 4.0]"])
    body = d.one(["(t * t).sum()", "(t ** 3).sum()", "(t * t * 0.5).sum()", "(2 * t).exp().sum() / 10"])
    calls = d.one(SEQUENCES)
    lines = [
        f"w = torch.tensor({w0}, requires_grad=True)",
        "",
        "",
        "def f(t):",
        f"    return {body}",
        "",
        "",
        *calls,
    ]
    last_clear = max((i for i, c in enumerate(calls) if CALLS[c] == "clears"), default=-1)
    after = calls[last_clear + 1 :]
    facts = {
        "backwards": sum(CALLS[c] == "adds" for c in after),
        "returns": sum(CALLS[c] == "returns" for c in after),
        "all backwards": sum(CALLS[c] == "adds" for c in calls),
    }
    return Listing("\n".join(lines), "What is w.grad afterwards? Answer [w.grad[0], w.grad[1]].", facts)


# (y from the dual x, whose derivative is never zero at the primals drawn)
DUALS = ("x.exp() * (x + 1)", "x ** 3 + x", "(x * x + 1).log()", "x.sin() + 2 * x", "(2 * x).exp()", "x * x.exp()")
PRIMALS = {
    "x.exp() * (x + 1)": ("0.0", "1.0", "-0.5"),
    "x ** 3 + x": ("0.0", "2.0", "-1.0"),
    "(x * x + 1).log()": ("1.0", "2.0", "-0.5"),
    "x.sin() + 2 * x": ("0.0", "1.0", "3.0"),
    "(2 * x).exp()": ("0.0", "0.5", "-1.0"),
    "x * x.exp()": ("0.0", "1.0", "0.5"),
}


def dual_program(d: Draw) -> Listing:
    """13.self-dual: a dual number's tangent moves by each op's derivative: y's tangent is f'(primal) times the
    tangent x came in with."""
    y = d.one(DUALS)
    primal = d.one(PRIMALS[y])
    tangent = d.one(["3.0", "2.0", "-1.5", "0.5"])
    lines = [
        "import torch.autograd.forward_ad as fwAD",
        "",
        "with fwAD.dual_level():",
        f"    x = fwAD.make_dual(torch.tensor({primal}), torch.tensor({tangent}))",
        f"    y = {y}",
        "    tangent = fwAD.unpack_dual(y).tangent",
    ]
    return Listing("\n".join(lines), "What is tangent (4 decimals)?", {"tangent": float(tangent)})


KEEP_OPTIONS = ("the matmul's result", "exp's result", "both", "neither: it recomputes the matmul")
KEEP_FORMS = (
    "(x @ w).exp().sum()",
    "((x @ w) * 2).exp().sum()",
    "(x @ w).exp().mean()",
    "((x @ w) + 1).exp().sum()",
    "(x @ w).sin().exp().sum()",
    "((x @ w) ** 2).exp().sum()",
    "((x @ w).exp() * (x @ w)).sum()",
    "(x @ w).cos().sum()",
    "(x @ w).exp().pow(2).sum()",
)


def keeps_program(d: Draw) -> Listing:
    """13.self-compiled-keeps: what AOTAutograd's min-cut partitioner keeps for backward besides x: an op's output
    that its own backward reads (exp's), an input an op's backward reads (the matmul's result, read by sin, cos or
    a power), or both."""
    form = d.one(KEEP_FORMS)
    rows, inner, cols = d.one([(4, 6, 3), (8, 5, 2), (3, 3, 7), (5, 2, 4)])
    lines = [
        "def f(x, w):",
        f"    return {form}",
        "",
        "",
        f"x = torch.randn({rows}, {inner})",
        f"w = torch.randn({inner}, {cols}, requires_grad=True)",
    ]
    ask = (
        "f is compiled with AOTAutograd (aot_eager, the default min-cut partitioner) and called on x and w. Besides "
        "x (kept for w's gradient), what does the compiled forward keep? One of "
        + ", ".join(repr(o) for o in KEEP_OPTIONS)
        + "."
    )
    return Listing("\n".join(lines), ask, {"exp": "exp" in form})


# f's body: (its lines, the graph breaks it has)
BRANCHES = (
    (("h = x.cos()", "if h.sum() > 0:", "    h = h * 3", "return h.tanh()"), 1),
    (("h = x.cos()", "if x.shape[0] > 2:", "    h = h * 3", "return h.tanh()"), 0),
    (("h = x.cos()", "if h.sum() > 0:", "    h = h * 3", "if h.mean() > 10:", "    h = h - 1", "return h.tanh()"), 2),
    (("h = x.cos()", "scale = h.sum().item()", "return (h * scale).tanh()"), 1),
    (("h = x.sin()", "if h.max() < 1:", "    h = h + 1", "return h.exp()"), 1),
    (("h = x.sin() * 2", "if x.dim() == 1:", "    h = h.cos()", "return h.sum()"), 0),
)


def branch_program(d: Draw) -> Listing:
    """13.self-branch-graphs: a Python if on a tensor's value (or .item()) is a graph break: Dynamo compiles the part
    before it and the part after it; a test on the shape is known while tracing and breaks nothing."""
    body, breaks = d.one(BRANCHES)
    size = d.one([4, 3, 6])
    lines = [
        "def f(x):",
        *("    " + line for line in body),
        "",
        "",
        f"x = torch.zeros({size}, requires_grad=True)",
    ]
    ask = "torch.compile(f) with a graph-counting backend, one call f(x). How many graphs does Dynamo make?"
    return Listing("\n".join(lines), ask, {"breaks": breaks})
