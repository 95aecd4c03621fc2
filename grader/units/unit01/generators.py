"""Unit 01's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

WALK_ASK = (
    "Walk y.grad_fn as your graph_nodes does: every node once, depth first, next_functions in order. "
    "Which node names, in order?"
)


def _leaf(name: str, shape: str, grad: bool) -> str:
    return f"{name} = torch.randn({shape}{', requires_grad=True' if grad else ''})"


def walk_program(d: Draw) -> Listing:
    """01.closed-book-walk: a linear layer written as two operations, an activation (or none), a reduction; the
    operand order of the addition and which leaves require grad vary, and so does the walk."""
    rows, inner, width = d.one([2, 5, 1, 3]), d.one([3, 4, 2]), d.one([4, 2, 6])
    x_grad = d.coin(True, p=0.6)
    act = d.one([".relu()", ".tanh()", ".sigmoid()", ".exp()", ""])
    total = d.one([".sum()", ".mean()"])
    linear = d.one(["x @ W + b", "b + x @ W"])
    source = "\n".join(
        [
            _leaf("x", f"{rows}, {inner}", x_grad),
            _leaf("W", f"{inner}, {width}", True),
            _leaf("b", f"{width}", True),
            f"y = ({linear}){act}{total}",
        ]
    )
    return Listing(source, WALK_ASK, {"fused": True})


def leaves_program(d: Draw) -> Listing:
    """01.closed-book-leaves: which of x, W, b, y have an AccumulateGrad node. Each drawn program sets one trap:
    a leaf made without requires_grad, or a leaf that requires grad but is never used on the way to y."""
    trap = d.one(["canonical", "no grad", "unused", "no grad", "unused"])
    act = d.one([".relu()", ".tanh()", ".sigmoid()", ""])
    total = d.one([".sum()", ".mean()"])
    grads = {"x": True, "W": True, "b": True}
    linear = "x @ W + b"
    facts: dict = {"no grad": None, "unused": None, "x needs": trap == "canonical"}
    if trap == "no grad":
        name = d.one(["x", "W", "b"])
        grads[name] = False
        facts["no grad"] = name
    elif trap == "unused":
        name, linear = d.one([("b", "x @ W"), ("x", "W.sum(0) + b"), ("W", "x.sum(1, keepdim=True) + b")])
        facts["unused"] = name
    source = "\n".join(
        [
            _leaf("x", "2, 3", grads["x"]),
            _leaf("W", "3, 4", grads["W"]),
            _leaf("b", "4", grads["b"]),
            f"y = ({linear}){act}{total}",
        ]
    )
    return Listing(
        source, "Which of x, W, b, y have an AccumulateGrad node in y's graph? Answer a set of names.", facts
    )


def saves_program(d: Draw) -> Listing:
    """01.closed-book-saves: a product of two tensors, of which one or both require grad, in either order: the
    node keeps the factors the gradients asked for read, and nothing else."""
    shape = d.one(["3", "2, 2", "4", "5"])
    who = d.one(["a", "b", "both", "a", "b"])
    order = d.one(["a * b", "b * a"])
    source = "\n".join(
        [
            _leaf("a", shape, who in ("a", "both")),
            _leaf("b", shape, who in ("b", "both")),
            f"y = {order}",
        ]
    )
    ask = "Which _saved_ attributes of y.grad_fn hold a tensor (not None)? Answer a set of names."
    return Listing(source, ask, {"one needs grad": who != "both"})


def keeps_program(d: Draw) -> Listing:
    """01.who-keeps-grad: which of p, u, q, s keep a .grad after backward. u is a cast that records a copy (a
    non-leaf) or one that returns its own leaf (unit 01 shows .to() doing both); q is computed, so its gradient
    passes through; s is a constant or a leaf that requires grad."""
    u_line, u_copy = d.one(
        [
            ("u = torch.zeros(2, requires_grad=True).double()", True),
            ("u = torch.zeros(2, requires_grad=True).to(torch.float32)", False),
            ("u = torch.zeros(2, requires_grad=True).to(torch.float64)", True),
            ("u = torch.zeros(2, dtype=torch.float64, requires_grad=True)", False),
            ("u = torch.zeros(2, dtype=torch.float64, requires_grad=True).to(torch.float64)", False),
        ]
    )
    s_grad = d.coin(False, p=0.4)
    scale = d.one(["2", "3", "0.5"])
    total = d.one(["(q * s).sum()", "(s * q).sum()", "(q * s).mean()"])
    lines = [
        "p = torch.ones(2, requires_grad=True)",
        u_line,
        f"q = p * {scale} + u",
        f"s = torch.tensor(3.0{', requires_grad=True' if s_grad else ''})",
        f"{total}.backward()",
    ]
    ask = "Which of p, u, q, s have a .grad that is not None afterwards? Answer a set of names."
    return Listing("\n".join(lines), ask, {"u copy": u_copy})
