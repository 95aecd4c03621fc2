"""Unit 06's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

# (the intermediate h, the loss from it, what the nodes keep for backward: "kept" a tensor (a number a product
# wraps in a tensor is one too), "nothing": only numbers outside any tensor, like an addition's alpha)
TWICE_LOSSES = (
    ("x.relu()", "h.sum()", "kept"),
    ("x.exp()", "h.sum()", "kept"),
    ("x ** 2", "h.sum()", "kept"),
    ("x * 2", "h.sum()", "kept"),
    ("x + 1", "h.sum()", "nothing"),
    ("x.sigmoid()", "h.mean()", "kept"),
    ("x - 2", "h.mean()", "nothing"),
)


def twice_program(d: Draw) -> Listing:
    """06.closed-book-relu-twice: two backward passes through one graph: the second fails where the first freed a
    tensor a node kept (or where a kept tensor was written between them), and runs where nothing was kept or the
    first pass retained it; a graph that never required grad fails at once."""
    size = d.one([5, 3, 4, 8])
    h, loss, keeps = d.one(TWICE_LOSSES)
    retain = d.coin(False, p=0.4)
    tracked = d.coin(True, p=0.85)
    written = retain and keeps == "kept" and d.coin(False, p=0.5)
    first = "loss.backward(retain_graph=True)" if retain else "loss.backward()"
    setup = f"x = torch.randn({size}{', requires_grad=True' if tracked else ''})"
    compact = f"{setup}\nloss = {loss.replace('h', f'({h})' if ' ' in h else h)}"
    steps = [
        ("", f"{setup}\nh = {h}\nloss = {loss}" if written else compact),
        ("at the first backward", first),
        *([("", "h.add_(1)")] if written else []),
        ("at the second backward", "loss.backward()"),
    ]
    ask = (
        "Where does it fail: 'no error', 'at the first backward' or 'at the second backward', and why? For an "
        "error, answer a pair (place, cause), the cause chosen from the candidates listed with the answer's form; "
        "your own words may follow as a third item, a note shown beside torch's message and never graded."
    )
    return Listing.in_steps(steps, ask, {"keeps": keeps, "retain": retain, "tracked": tracked, "written": written})


# (the function of x, what the first pass is)
KEEPS_FORMS = (
    "(x.exp() * x).sum()",
    "(x.sin() ** 2).sum()",
    "(x - 2).mean()",
    "(x.tanh() * x).mean()",
    "(x + 1).sum()",
)
KEEPS_PASSES = (
    "torch.autograd.grad(z, x, create_graph=True)",
    "torch.autograd.grad(z, x)",
    "z.backward(create_graph=True)",
    "torch.autograd.grad(z, x, create_graph=True, retain_graph=False)",
    "z.backward()",
    "torch.autograd.grad(z, x, retain_graph=True)",
)


def keeps_program(d: Draw) -> Listing:
    """06.closed-book-create-keeps: one pass with or without create_graph and retain_graph (which defaults to it);
    the graph's saved tensors are kept, freed, never saved, or kept only where the pass did not go."""
    form = d.one(KEEPS_FORMS)
    call = d.one(KEEPS_PASSES)
    extra = d.coin(False, p=0.45)  # a second part that the pass for x alone never walks
    lines = ["x = torch.tensor([0.5, 1.5], requires_grad=True)"]
    if extra:
        lines += ["y = torch.tensor([1.0, -1.0], requires_grad=True)", f"z = {form} + y.sin().sum()"]
    else:
        lines.append(f"z = {form}")
    lines.append(call)
    ask = (
        "What does probes.saved_tensors(z) report for z's saved tensors now: 'ok', 'freed', 'stale', 'mixed' or "
        "'nothing saved'?"
    )
    return Listing("\n".join(lines), ask, {"create": "create_graph=True" in call, "kept": "retain_graph=True" in call})


# (z, whether the first gradient's graph reaches a forward node of z: the node kept a forward intermediate)
SECOND_FORMS = (
    ("(x.cos() ** 2).sum()", True),
    ("(x ** 3).sum()", False),
    ("(x.exp() * x).sum()", True),
    ("(x * x).sum()", False),
    ("x.sin().sum()", False),
    ("(x.sin() ** 2).sum()", True),
)


def second_pass_program(d: Draw) -> Listing:
    """06.closed-book-second-pass: a second-order pass after create_graph=True, with or without retain_graph, then
    the forward graph's own backward: it fails where the second pass walked (and freed) z's own nodes."""
    form, reaches = d.one(SECOND_FORMS)
    retain = d.coin(False, p=0.25)
    create = d.coin(True, p=0.8)
    steps = [
        (
            "",
            f"x = torch.tensor([0.5, 1.5], requires_grad=True)\nz = {form}\n"
            f"(g,) = torch.autograd.grad(z, x{', create_graph=True' if create else ''})",
        ),
        (
            "at the second autograd.grad",
            f"(h,) = torch.autograd.grad(g.sum(), x{', retain_graph=True' if retain else ''})",
        ),
        ("at z.backward()", "z.backward()"),
    ]
    ask = (
        "Where does it fail: 'no error', 'at the second autograd.grad' or 'at z.backward()', and why? For an error, "
        "answer a pair (place, cause), the cause chosen from the candidates listed with the answer's form; your own "
        "words may follow as a third item, a note shown beside torch's message and never graded."
    )
    return Listing.in_steps(steps, ask, {"reaches": reaches, "retain": retain, "create": create})


MODULE_CLEARINGS = ("nothing cleared", "opt.zero_grad()", "only lin.weight.grad = None", "only lin.bias.grad = None")
MODULE_LOSSES = (
    "(lin(x) ** 2).sum()",
    "lin(x).sum()",
    "lin(x).exp().sum()",
    "lin(x).sum() + (lin.weight ** 2).sum()",
    "lin(x).sum() + (lin.bias * lin.weight.sum()).sum()",
    "(lin(x) * lin(x).detach()).sum()",
)


def module_cycle_program(d: Draw) -> Listing:
    """06.closed-book-module-cycle: backward(create_graph=True) on a Linear makes each .grad a tensor with a graph;
    a cycle holds every leaf its gradient's graph reaches. Which clearings leave the weight alive?"""
    shape = d.one([(4, 1, 6), (3, 1, 5), (5, 1, 4), (2, 1, 8)])
    loss = d.one(MODULE_LOSSES)
    inputs, outputs, rows = shape
    lines = [
        "import gc",
        "import weakref",
        "",
        "from torch import nn",
        "",
        "",
        "def run(clearing):",
        "    torch.manual_seed(0)",
        f"    lin = nn.Linear({inputs}, {outputs})",
        "    opt = torch.optim.SGD(lin.parameters(), lr=0.1)",
        "    ref = weakref.ref(lin.weight)",
        f"    x = torch.randn({rows}, {inputs})",
        f"    ({loss}).backward(create_graph=True)",
        '    if clearing == "opt.zero_grad()":',
        "        opt.zero_grad()",
        '    elif clearing == "only lin.weight.grad = None":',
        "        lin.weight.grad = None",
        '    elif clearing == "only lin.bias.grad = None":',
        "        lin.bias.grad = None",
        "    del lin, opt",
        "    gc.collect()",
        "    return ref() is not None",
    ]
    ask = (
        "Four separate runs, run(clearing) for each of 'nothing cleared', 'opt.zero_grad()', 'only lin.weight.grad = "
        "None', 'only lin.bias.grad = None'. In which runs is the weight still alive (run returns True)? Answer a set "
        "of the labels (set() for none)."
    )
    return Listing("\n".join(lines), ask, {})


# how the loop keeps a loss: (the lines that keep it, the name asked about)
RUNNING_KEEPS = (
    (("if best is None or loss < best:", "    best = loss"), "best"),
    (("last = loss",), "last"),
    (("total = total + loss",), "total"),
    (("total = total + loss.detach()",), "total"),
    (("if best is None or loss.item() < best.item():", "    best = loss"), "best"),
)
RUNNING_LOSSES = (
    "((A @ v - b) ** 2).mean()",
    "(A @ v - b).abs().mean()",
    "((A @ v - b) ** 2).sum()",
    "(A @ v).exp().mean()",
)


def running_program(d: Draw) -> Listing:
    """06.closed-book-detached-running: a training loop that keeps a loss across steps: the lowest so far or the
    last (one step's graph), a running sum of tensors (every step's), or of detached copies (none)."""
    keep, name = d.one(RUNNING_KEEPS)
    loss = d.one(RUNNING_LOSSES)
    steps = d.one([100, 30, 50])
    start = {"best": "best = None", "last": "last = None", "total": "total = 0.0"}[name]
    lines = [
        "torch.manual_seed(0)",
        "v = torch.randn(4, requires_grad=True)",
        start,
        f"for _ in range({steps}):",
        "    A, b = torch.randn(16, 4), torch.randn(16)",
        f"    loss = {loss}",
        "    loss.backward()",
        "    with torch.no_grad():",
        "        v -= 0.01 * v.grad",
        "    v.grad = None",
        *("    " + line for line in keep),
    ]
    ask = f"After the loop, how many nodes does the graph under {name} hold (probes.size({name}))?"
    return Listing("\n".join(lines), ask, {"name": name, "steps": steps, "loss": loss})
