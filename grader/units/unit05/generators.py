"""Unit 05's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

import math

from grader.engine.variants import Draw, Listing

# ops and what their backward reads: "output" (kept: a fresh tensor of the view's size) or "input" (the view, which
# pins its base's whole storage)
VIEW_OPS = {"tanh": "output", "exp": "output", "sigmoid": "output", "sin": "input", "cos": "input", "relu": "output"}


def _view_elements(view: str, rows: int, cols: int) -> int:
    return {
        "h[:, :8]": rows * 8,
        "h[:16]": 16 * cols,
        "h[::2]": math.ceil(rows / 2) * cols,
        "h[:, 4:12]": rows * 8,
        "h.t()[:8]": 8 * rows,
    }[view]


def view_bill_program(d: Draw) -> Listing:
    """05.closed-book-view-tanh: an op on a view of a big activation: one that keeps its output keeps a fresh tensor
    of the view's size; one that keeps its input keeps the view, and with it the base's whole storage."""
    rows, cols = d.one([(256, 512), (128, 64), (64, 300), (512, 32)])
    view = d.one(["h[:, :8]", "h[:16]", "h[::2]", "h[:, 4:12]", "h.t()[:8]"])
    op = d.one(list(VIEW_OPS))
    dtype = d.one(["", "", ", dtype=torch.float64"])
    size = 8 if dtype else 4
    steps = [
        ("", f"h = torch.randn({rows}, {cols}{dtype}, requires_grad=True) * 2"),
        ("forward", f"out = {view}.{op}()"),
    ]
    ask = (
        "How many bytes does out's graph keep for backward, counted as the bill counts (what reaches a pack hook, each "
        "storage once at its full size)?"
    )
    facts = {
        "forward": f"{view}.{op}()",
        "keeps": VIEW_OPS[op],
        "h bytes": rows * cols * size,
        "view bytes": _view_elements(view, rows, cols) * size,
    }
    return Listing.in_steps(steps, ask, facts)


RELU_SIN = (
    "r is y itself; s is y itself",
    "r is y itself; s is another object over y's storage",
    "r is another object over y's storage; s is y itself",
    "both are other objects over y's storage",
    "at least one of them is a copy in new storage",
)
# a saved tensor to compare with y: (the lines that make the node, how to reach what it saved)
ACCESSES = {
    "producer": ((), "y.grad_fn._saved_result"),
    "sin": (("z = y.sin()",), "z.grad_fn._saved_self"),
    "cos": (("q = y.cos()",), "q.grad_fn._saved_self"),
    "square": (("k = y ** 2",), "k.grad_fn._saved_self"),
    "product": (("c = torch.randn(5, requires_grad=True)", "m = c * y"), "m.grad_fn._saved_other"),
    "exp after": (("e = y.exp()",), "e.grad_fn._saved_result"),
}


def identity_program(d: Draw) -> Listing:
    """05.closed-book-relu-sin-identity: y is saved by the node that made it (its own output: rebuilt as another
    object over the same storage, to avoid a reference cycle) and by nodes that read it (an input: kept as the very
    object); a node after it that keeps its own output keeps a new storage."""
    producer = d.one(["relu", "exp", "tanh", "sigmoid"])
    first, second = d.one(
        [
            ("producer", "sin"),
            ("sin", "producer"),
            ("square", "product"),
            ("producer", "producer"),
            ("cos", "exp after"),
            ("product", "producer"),
            ("exp after", "sin"),
        ]
    )
    lines = ["v = torch.randn(5, requires_grad=True)", f"y = v.{producer}()"]
    for key in dict.fromkeys((first, second)):
        lines += list(ACCESSES[key][0])
    lines += [f"r = {ACCESSES[first][1]}", f"s = {ACCESSES[second][1]}"]
    ask = "Compared with y, what are r and s? Answer one of: " + "; ".join(repr(o) for o in RELU_SIN) + "."
    return Listing("\n".join(lines), ask, {})


# the op on m: what its backward reads
STORAGE_OPS = {"m.exp()": "output", "m.sin()": "input", "m.relu()": "output", "m ** 2": "input", "m.tanh()": "output"}


def storages_program(d: Draw) -> Listing:
    """05.closed-book-mul-exp-storages: a product, a quotient or a sum of a and b (either or both requiring grad),
    then an op on it: whose storages do the tensors kept in p's graph share?"""
    who = d.one(["a", "a", "b", "both"])
    combine = d.one(["a * b", "a * b", "a / b", "a + b"])
    op = d.one(list(STORAGE_OPS))
    lines = [
        f"a = torch.randn(4{', requires_grad=True' if who in ('a', 'both') else ''})",
        f"b = torch.randn(4{', requires_grad=True' if who in ('b', 'both') else ''})",
        f"m = {combine}",
        f"p = {op}",
    ]
    ask = "Whose storages do the tensors kept anywhere in p's graph share: which of a, b, m, p? Answer a set of names."
    facts = {"who": who, "combine": combine, "keeps": STORAGE_OPS[op]}
    return Listing("\n".join(lines), ask, facts)


ACTIVATIONS = {"nn.ReLU()": "output", "nn.Tanh()": "output", "nn.GELU()": "input"}


def _mlp(d: Draw) -> tuple[list[str], dict]:
    """The seed-0 MLP of section 4 (the canonical programs), or another width, batch and activation, under names the
    unit's own cells do not use."""
    name, data = d.other(("model", "x"), [("net", "batch"), ("mlp", "inputs"), ("layers", "data")])
    width, batch = d.other((512, 256), [(128, 64), (256, 32), (96, 48), (192, 16)])
    act = d.one(list(ACTIVATIONS))
    layers = f"nn.Linear({width}, {width}), {act}, nn.Linear({width}, {width}), {act}, nn.Linear({width}, 1)"
    lines = [
        "from torch import nn",
        "",
        "torch.manual_seed(0)",
        f"{name} = nn.Sequential({layers})",
        f"{data} = torch.randn({batch}, {width})",
    ]
    return lines, {"width": width, "batch": batch, "act": ACTIVATIONS[act], "model": name, "x": data}


def frozen_program(d: Draw) -> Listing:
    """05.closed-book-middle-frozen: one layer of the MLP frozen (and perhaps the input requiring grad): a frozen
    layer whose input needs a gradient still keeps its weight to pass the gradient back; one whose input needs
    none keeps nothing."""
    lines, facts = _mlp(d)
    frozen = d.one([2, 0, 2, 4])
    grad_input = d.coin(False, p=0.3)
    lines.append(f"{facts['model']}[{frozen}].requires_grad_(False)")
    if grad_input:
        lines.append(f"{facts['x']}.requires_grad_()")
    ask = (
        f"How many bytes does {facts['model']}({facts['x']}).sum() keep for backward, counted as the bill counts (what reaches a pack hook, "
        "each storage once at its full size)?"
    )
    width = facts["width"]
    facts.update(
        frozen=frozen,
        grad_input=grad_input,
        weight_bytes=(width * width if frozen < 4 else width) * 4,
        input_bytes=facts["batch"] * width * 4,
    )
    return Listing("\n".join(lines), ask, facts)


def outputs_program(d: Draw) -> Listing:
    """05.closed-book-kept-outputs: several forward outputs kept, backward never called: every graph keeps its own
    activations, while the input and the weights are one storage each, however many graphs keep them."""
    lines, facts = _mlp(d)
    passes = d.one([3, 2, 4])
    if d.coin(False, p=0.3):
        lines.append(f"{facts['x']}.requires_grad_()")
    forward = f"[{facts['model']}({facts['x']}) for _ in range({passes})]"
    ask = (
        "Together, how many distinct storages and bytes do the graphs of outputs keep alive, counted as the bill "
        "counts? Answer [storages, bytes]."
    )
    facts.update(passes=passes, forward=forward)
    return Listing.in_steps([("", "\n".join(lines)), ("forward", f"outputs = {forward}")], ask, facts)


WRITES = ("b", "c", "d", "e")
# (b's op, c's op, d's op, e's op): each keeps its input, its output or nothing
WRITE_PROGRAMS = (
    ("a * 3", "b.relu()", "b.sin()", "c.exp()"),
    ("a * 3", "b.sigmoid()", "b * 2", "c.sin()"),
    ("a.exp()", "b.relu()", "b.cos()", "c.tanh()"),
    ("a ** 2", "b.tanh()", "b.exp()", "c * 2"),
    ("a * 3", "b.abs()", "b.sigmoid()", "c.exp()"),
    ("a.sin()", "b * 2", "b ** 2", "c.relu()"),
    ("a * 3", "b.exp()", "b.relu()", "c.cos()"),
)


def writes_program(d: Draw) -> Listing:
    """05.closed-book-which-writes: one in-place write to one of b, c, d, e before backward: it breaks backward
    exactly when some node saved that storage (an op that reads its input, or one that keeps its output)."""
    b, c, dd, e = d.one(WRITE_PROGRAMS)
    a0 = d.one(["[0.25, 0.75, 1.25]", "[0.5, 1.5, 2.0]", "[1.0, 0.25, 0.75]"])
    lines = [
        "def build():",
        f"    a = torch.tensor({a0}, requires_grad=True)",
        f"    b = {b}",
        f"    c = {c}",
        f"    d = {dd}",
        f"    e = {e}",
        "    loss = (d + e).sum()",
        '    return {"b": b, "c": c, "d": d, "e": e, "loss": loss}',
    ]
    ask = (
        "For each of b, c, d, e: take a fresh build(), write that tensor once with t.add_(1), then call "
        "loss.backward(). For which of them does backward fail? Answer a set of names."
    )
    return Listing("\n".join(lines), ask, {})
