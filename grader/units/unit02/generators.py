"""Unit 02's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing


def _floats(values) -> str:
    return "[" + ", ".join(f"{float(v)}" for v in values) + "]"


def seed_program(d: Draw) -> Listing:
    """02.closed-book-seed: m = v * v.sum() (or the sum first), backward with a one-hot seed (1 or 2 at one place):
    the element the seed keeps reaches v[k] by two routes, and the others through the sum only."""
    values = d.one([(2.0, -1.0, 1.0), (1.0, 3.0, -2.0), (-1.0, 2.0, 0.5), (3.0, 1.0, -1.0, 2.0), (0.5, -2.0, 1.5, 1.0)])
    k = d.integer(0, len(values) - 1, 0)
    weight = d.one([1.0, 2.0, 1.0])
    form = d.one(["v * v.sum()", "v.sum() * v"])
    seed = [0.0] * len(values)
    seed[k] = weight
    source = "\n".join(
        [
            f"v = torch.tensor({_floats(values)}, requires_grad=True)",
            f"m = {form}",
            f"m.backward(torch.tensor({_floats(seed)}))",
        ]
    )
    return Listing(source, "What is v.grad? Answer a list of numbers.", {"k": k, "other": 1 if k == 0 else 0})


def broadcast_program(d: Draw) -> Listing:
    """02.closed-book-broadcast: b broadcast over the rows (or the columns) of X, then a mean or a sum: the engine
    sums the gradients of every place b meets down to b's shape."""
    rows, cols = d.one([(4, 3), (2, 5), (3, 2), (5, 4), (6, 2)])
    along = d.one(["rows", "columns"])
    shape = f"1, {cols}" if along == "rows" else f"{rows}, 1"
    op = d.one(["+", "+", "-"])
    total = d.one(["mean", "sum"])
    source = "\n".join(
        [
            f"X = torch.randn({rows}, {cols})",
            f"b = torch.zeros({shape}, requires_grad=True)",
            f"loss = (X {op} b).{total}()",
            "loss.backward()",
        ]
    )
    copies = rows if along == "rows" else cols
    ask = "What is b.grad? Answer its numbers as a flat list (4 decimals)."
    return Listing(source, ask, {"copies": copies, "entries": rows * cols, "mean": total == "mean", "minus": op == "-"})


def steps_program(d: Draw) -> Listing:
    """02.closed-book-steps: N backward calls of w ** p, with zero_grad() after one of them only: .grad holds the sum
    of what the calls after it stored."""
    w0 = d.one([-1.0, 2.0, 0.5, -2.0, 1.5])
    power = d.one([3, 2])
    steps = d.one([3, 4, 5])
    cleared = d.integer(0, steps - 2, 1)
    source = "\n".join(
        [
            f"w = torch.tensor({w0}, requires_grad=True)",
            "opt = torch.optim.SGD([w], lr=0.0)",
            f"for step in range({steps}):",
            f"    (w ** {power}).backward()",
            f"    if step == {cleared}:",
            "        opt.zero_grad()",
        ]
    )
    after = steps - 1 - cleared  # backward calls whose gradients are left
    return Listing(source, "What is w.grad at the end?", {"steps": steps, "after": after})


# what each role writes into the loss (None: nothing), whether the leaf requires grad, and its value
_ROLES = {
    "times zero": ("{n} * 0", True, 1.0),
    "relu below zero": ("{n}.relu()", True, -1.0),
    "minus itself": ("({n} - {n})", True, 2.0),
    "unused": (None, True, 1.0),
    "constant": ("{n}", False, 1.0),
    "plain": ("{n} * 2", True, 1.0),
}
ZERO_ROLES = ("times zero", "relu below zero", "minus itself")
# each set of roles has a leaf reached with a zero gradient and one whose .grad stays None
_CASTS = (
    ("times zero", "relu below zero", "unused", "constant"),
    ("minus itself", "unused", "plain", "constant"),
    ("relu below zero", "plain", "constant", "constant"),
    ("times zero", "unused", "unused", "plain"),
    ("minus itself", "relu below zero", "constant", "plain"),
    ("plain", "times zero", "unused", "minus itself"),
    ("relu below zero", "unused", "constant", "times zero"),
)


def none_program(d: Draw) -> Listing:
    """02.closed-book-none: four leaves, each in one role: reached with a zero gradient (times zero, relu below zero,
    minus itself), never reached (unused), not requiring grad (constant), or plain. Which .grad is None?"""
    roles = d.one(_CASTS)
    roles = tuple(d.order(roles))
    names = ("a", "b", "c", "d")
    lines, terms = [], []
    for name, role in zip(names, roles):
        term, grad, value = _ROLES[role]
        lines.append(f"{name} = torch.tensor({value}{', requires_grad=True' if grad else ''})")
        if term is not None:
            terms.append(term.format(n=name))
    lines += [f"loss = {' + '.join(terms)}", "loss.backward()"]
    facts = {
        "zero": {n for n, r in zip(names, roles) if r in ZERO_ROLES},
        "constant": {n for n, r in zip(names, roles) if r == "constant"},
        "unused": {n for n, r in zip(names, roles) if r == "unused"},
    }
    return Listing("\n".join(lines), "Which of a, b, c, d have a .grad that is None? Answer a set of names.", facts)
