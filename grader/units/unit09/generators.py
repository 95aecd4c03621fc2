"""Unit 09's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

# --- 09.self-bill-half-offloaded: bill's pair, and a pair entered inside forward() -------------------------------

# the pair entered inside forward(): save_on_cpu (the canonical one) or a pair of one's own that copies
BILL_PAIRS = (
    "torch.autograd.graph.save_on_cpu()",
    "torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda kept: kept)",
)
BILL_ACTS = ("nn.ReLU()", "nn.GELU()", "nn.Tanh()")


def bill_pair_program(d: Draw) -> Listing:
    """09.self-bill-half-offloaded: forward() runs part of an MLP under a pair of its own (after the cut, or before
    it); probes.bill installs its pair around forward(), and only the innermost pair in force receives a save."""
    model, data = d.other(("model", "x"), [("net", "inputs"), ("mlp", "batch"), ("layers", "data")])
    width, batch = d.other((512, 256), [(64, 32), (96, 16), (128, 24), (48, 40)])
    act = d.one(BILL_ACTS)
    cut = d.one([2, 1, 3, 4])
    inside_first = d.coin(False)
    pair = d.one(BILL_PAIRS)
    layers = f"nn.Linear({width}, {width}), {act}, nn.Linear({width}, {width}), {act}, nn.Linear({width}, 1)"
    if inside_first:
        body = [f"    with {pair}:", f"        h = {model}[:{cut}]({data})", f"    return {model}[{cut}:](h).sum()"]
    else:
        body = [f"    h = {model}[:{cut}]({data})", f"    with {pair}:", f"        return {model}[{cut}:](h).sum()"]
    lines = [
        "from torch import nn",
        "",
        "torch.manual_seed(0)",
        f"{model} = nn.Sequential({layers})",
        f"{data} = torch.randn({batch}, {width})",
        "",
        "",
        "def forward():",
        *body,
    ]
    facts = {"model": model, "x": data, "cut": cut, "inside first": inside_first}
    return Listing("\n".join(lines), "How many bytes does probes.bill(forward).total report?", facts)


# --- 09.self-saved-three-times: saves against storages ---------------------------------------------------------

FIRST_OPS = ("a.exp()", "a.tanh()", "a.sin()", "a.sigmoid()", "a.cos()")
# how h is used: a product of h with itself keeps it twice, a square once, a product by a number keeps the number
USES = ("h * h", "h * h * h", "h ** 2", "h * a", "h * 2", "h * a * a")


def saves_program(d: Draw) -> Listing:
    """09.self-saved-three-times: one or two storages, saved once or several times; the bill counts each storage
    once, a naive float16 pack copies every save (2 bytes a value whatever the dtype)."""
    n = d.one([1000, 256, 600, 2048])
    double = d.coin(False, p=0.3)
    first = d.one(FIRST_OPS)
    use = d.one(USES)
    dtype = ", dtype=torch.float64" if double else ""
    lines = [
        f"a = torch.randn({n}{dtype}, requires_grad=True)",
        "",
        "",
        "def forward():",
        f"    h = {first}",
        f"    return ({use}).sum()",
    ]
    ask = (
        "What is the plain bill of forward() (probes.bill(forward).total), and the total bytes of the float16 tensors "
        "the naive pack (t.detach().to(torch.float16)) creates when forward() runs under it? Answer [bill bytes, "
        "float16 bytes]."
    )
    facts = {"n": n, "itemsize": 8 if double else 4, "wrapped": "* 2" in use}
    return Listing("\n".join(lines), ask, facts)


# --- 09.self-unpack-partial: how often pack and unpack run ------------------------------------------------------

# (op, what its node keeps: "output", "input", "twice" (its input, two times) or "number" (a wrapped Python number))
OP1 = (("a.exp()", "output"), ("a.sin()", "input"), ("a.tanh()", "output"), ("a * 3", "number"), ("a ** 2", "input"))
OP2 = (
    ("b.sin()", "input"),
    ("b.exp()", "output"),
    ("(b * b)", "twice"),
    ("b.cos()", "input"),
    ("(b + 1)", "nothing"),
    ("b.sigmoid()", "output"),
    ("(b * 3)", "number"),
)
GRADS = ("torch.autograd.grad(loss, b)", "torch.autograd.grad(loss, a)", "loss.backward()")


def unpack_program(d: Draw) -> Listing:
    """09.self-unpack-partial: two ops under a counting pair, then a gradient: pack runs once per saved tensor,
    unpack once per saved tensor of each node that the gradient runs."""
    n = d.one([5, 3, 8, 4])
    op1, keeps1 = d.one(OP1)
    op2, keeps2 = d.one(OP2)
    grad = d.one(GRADS)
    lines = [
        "counts = [0, 0]",
        "",
        "",
        "def pack(t):",
        "    counts[0] += 1",
        "    return t.detach()",
        "",
        "",
        "def unpack(kept):",
        "    counts[1] += 1",
        "    return kept",
        "",
        "",
        f"a = torch.randn({n}, requires_grad=True)",
        "with torch.autograd.graph.saved_tensors_hooks(pack, unpack):",
        f"    b = {op1}",
        f"    loss = {op2}.sum()",
        grad,
    ]
    ask = "How many times did pack run, and unpack? Answer [pack, unpack]."
    facts = {
        "shared": (keeps1 == "output" and keeps2 == "input") or keeps2 == "twice",
        "number": "number" in (keeps1, keeps2),
    }
    return Listing("\n".join(lines), ask, facts)
