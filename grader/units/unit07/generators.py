"""Unit 07's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

# what each derived tensor is: a view of b's memory (sharing its counter) or a copy with a counter of its own
VIEWS = ("b[::2]", "b.reshape(2, 2)", "b[1:]", "b.view(2, 2)", "b.detach()", "b.unsqueeze(0)")
COPIES = ("b.clone()", "b.double()", "b * 1", "b.reshape(2, 2).clone()")
WRITES = ("add_(1)", "mul_(2)", "zero_()", "sub_(0.5)")


def alias_program(d: Draw) -> Listing:
    """07.self-alias-or-copy: c, v and r are each a view of b or a copy; some are written once or twice. A view
    shares b's version counter, a copy has its own: what are b._version and c._version?"""
    c_op = d.one([COPIES[0], *COPIES[1:], *VIEWS[2:]])
    v_op = d.one(VIEWS)
    r_op = d.one([VIEWS[1], *VIEWS, COPIES[0]])
    writes = {
        "c": d.one([1, 1, 2]),
        "v": d.one([1, 0, 1, 2]),
        "r": d.one([1, 1, 0, 2]),
    }
    ops = {"c": c_op, "v": v_op, "r": r_op}
    lines = ["b = torch.zeros(4)", f"c = {c_op}", f"v = {v_op}", f"r = {r_op}"]
    first = {"c": "add_(1)", "v": "add_(1)", "r": "mul_(2)"}
    for name in ("c", "v", "r"):
        for i in range(writes[name]):
            lines.append(f"{name}.{first[name] if i == 0 else d.one(WRITES)}")
    facts = {
        "c view": c_op in VIEWS,
        "c writes": writes["c"],
        "reshape writes": sum(writes[n] for n in ("v", "r") if ops[n] == "b.reshape(2, 2)"),
    }
    return Listing("\n".join(lines), "What are b._version and c._version? Answer [b's, c's].", facts)


# the first operation: what its backward rule reads (its input, its output)
FIRSTS = {"a.sin()": "input", "a.exp()": "output", "a.tanh()": "output", "a ** 2": "input", "a.sigmoid()": "output"}


def keepers_program(d: Draw) -> Listing:
    """07.self-mul-constant: t = f(a), then y combines t with c, which may require grad. Written one at a time under
    no_grad, which of a, t, c, y make backward raise? Those some node kept."""
    first = d.one(list(FIRSTS))
    combine = d.one(["t * c", "t * c", "t + c", "c * t", "t / c"])
    c_grad = d.coin(False, p=0.35)
    source = "\n".join(
        [
            "def build():",
            "    a = torch.tensor([0.5, 1.0], requires_grad=True)",
            f"    c = torch.tensor([2.0, 3.0]{', requires_grad=True' if c_grad else ''})",
            f"    t = {first}",
            f"    y = {combine}",
            '    return {"a": a, "t": t, "c": c, "y": y}',
        ]
    )
    ask = (
        "For each of a, t, c, y: take a fresh build(), write that tensor once with x.add_(1) under torch.no_grad() "
        "(so even the leaf a may be written), then call y.sum().backward(). For which names does backward raise? "
        "Answer a set of names."
    )
    return Listing(source, ask, {"keeps": FIRSTS[first], "product": "*" in combine, "c grad": c_grad})


STALE_KEEPERS = ("ExpBackward0", "the in-place ReLU's node", "both", "neither: backward runs")
STALE_PROGRAMS = (
    # (the lines after x, the output backward starts from)
    (("h = x.exp()", "h.relu_()"), "h"),
    (("h = x.exp()", "h.relu_()", "h.relu_()"), "h"),
    (("h = x.exp()", "h.relu_()", "h.add_(1)"), "h"),
    (("h = x.exp()", "h.add_(1)", "h.relu_()"), "h"),
    (("h = x.exp()", "g = h.clone()", "g.relu_()"), "h + g"),
    (("h = x.exp() * 1", "h.relu_()", "h.relu_()"), "h"),
    (("h = x.exp()", "h.relu_()", "h.mul_(0.5)"), "h"),
    (("h = x.exp() * 2", "h.relu_()"), "h"),
)


def stale_program(d: Draw) -> Listing:
    """07.self-inplace-after-exp: exp keeps its output, each in-place ReLU keeps its result after writing it; later
    writes into the same memory make what an earlier node kept stale. Whose kept tensor no longer matches?"""
    x0 = d.one(["[-3.0, 1.5]", "[-1.0, 2.0]", "[0.5, -2.5]", "[1.0, -0.5]"])
    lines, out = d.one(STALE_PROGRAMS)
    steps = [
        ("", "\n".join([f"x = torch.tensor({x0}, requires_grad=True)", *lines])),
        ("backward", f"{out if out.isidentifier() else f'({out})'}.sum().backward()"),
    ]
    ask = (
        "exp's node keeps its output, and each in-place ReLU's node keeps its result after writing it. Whose kept "
        "tensor no longer matches its version when backward reads it? One of "
        + ", ".join(repr(k) for k in STALE_KEEPERS)
        + "."
    )
    return Listing.in_steps(steps, ask, {"out": out})


# the operation and what its backward rule reads; the alias the write goes through
DETACH_OPS = {
    "a.exp()": "output",
    "a.tanh()": "output",
    "a.sin()": "input",
    "a * 2": "nothing",
    "a.sigmoid()": "output",
}
ALIASES = ("e.detach()", "e.data", "a.detach()", "e.clone()")


def detach_program(d: Draw) -> Listing:
    """07.self-detach-write: a write through an alias (detach() shares the counter, .data does not, clone() is a copy)
    of e or of the leaf a, or a detached e that backward starts from. Does it raise, and where?"""
    op = d.one(list(DETACH_OPS))
    shape = d.one(["write", "write", "write", "cut"])
    if shape == "cut":
        steps = [
            ("", f"a = torch.tensor([1.0, 2.0], requires_grad=True)\ne = ({op}).detach()"),
            ("at the write", "e.add_(1)"),
            ("at backward", "e.sum().backward()"),
        ]
        alias = "cut"
    else:
        alias = d.one(ALIASES)
        steps = [
            ("", f"a = torch.tensor([1.0, 2.0], requires_grad=True)\ne = {op}"),
            ("at the write", f"{alias}.add_(1)"),
            ("at backward", "e.sum().backward()"),
        ]
    ask = (
        "Does it raise, and where: 'no error', 'at the write' or 'at backward'? For an error, answer a pair "
        "(place, cause), the cause chosen from the candidates listed with the answer's form; your own words may "
        "follow as a third item, a note shown beside torch's message and never graded."
    )
    return Listing.in_steps(steps, ask, {"alias": alias, "keeps": DETACH_OPS[op]})


# the producer of u (none keeps its own output), the consumer that keeps u, the in-place write into u
PRODUCERS = ("w * 3", "w + 1", "w * w", "2 * w - 1")
CONSUMERS = {"u.sin()": "SinBackward0", "u.cos()": "CosBackward0", "u ** 2": "PowBackward0", "u * u": "MulBackward0"}
INPLACE = {"u.mul_(2)": "MulBackward0", "u.add_(1)": "AddBackward0", "u.sub_(0.5)": "SubBackward0"}


def which_node_program(d: Draw) -> Listing:
    """07.self-which-node: u is written in place after a consumer kept it; backward's message names u by its latest
    operation (the write), while the node whose kept tensor broke is the consumer."""
    w0 = d.one(["[2.0]", "[0.5]", "[-1.5]", "[1.0, 3.0]"])
    producer = d.one(PRODUCERS)
    consumer = d.one(list(CONSUMERS))
    writes = [w for w, node in INPLACE.items() if node != CONSUMERS[consumer]]
    write = d.one(writes)
    steps = [
        ("", "\n".join([f"w = torch.tensor({w0}, requires_grad=True)", f"u = {producer}", f"s = {consumer}", write])),
        ("backward", "s.sum().backward()  # raises"),
    ]
    ask = (
        "backward raises, its message naming u by its latest operation, the in-place write. Which node's saved "
        "tensor broke? Give its class name."
    )
    return Listing.in_steps(steps, ask, {"history": INPLACE[write]})


OPTIMIZERS = (
    "torch.optim.SGD(D.parameters(), lr=0.1)",
    "torch.optim.SGD(D.parameters(), lr=0.1, momentum=0.9)",
    "torch.optim.Adam(D.parameters(), lr=0.1)",
    "torch.optim.SGD(D.parameters(), lr=0.1, weight_decay=0.01)",
    "torch.optim.AdamW(D.parameters(), lr=0.1)",
)


def param_program(d: Draw) -> Listing:
    """07.self-param-version: a fresh layer's parameter is already written in place by its initialiser; each optimizer
    step writes it again (once, or twice for AdamW with its default weight decay: unit 07 counts them); backward and
    zero_grad() write only .grad."""
    param = d.one(["weight", "bias"])
    layer = d.one(["nn.Linear(2, 1)", "nn.Linear(3, 2)", "nn.Linear(2, 4)"])
    inputs = {"nn.Linear(2, 1)": 2, "nn.Linear(3, 2)": 3, "nn.Linear(2, 4)": 2}[layer]
    opt = d.one(OPTIMIZERS)
    steps = d.one([1, 2, 3])
    lines = [
        "from torch import nn",
        "",
        "torch.manual_seed(0)",
        f"D = {layer}",
        f"first = D.{param}._version",
        f"opt = {opt}",
    ]
    body = [f"D(torch.ones(1, {inputs})).sum().backward()", "opt.step()"]
    if steps == 1:
        lines += body
    else:
        lines += [f"for _ in range({steps}):", "    opt.zero_grad()", *("    " + line for line in body)]
    ask = (
        f"What is D.{param}._version right after the layer is made (first), and at the end? "
        "Answer [after construction, at the end]."
    )
    return Listing("\n".join(lines), ask, {"param": param, "steps": steps, "adamw": "AdamW" in opt})
