"""Unit 12's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

# (y from x, where the first NaN of the backward appears: an inf from a slope at 0, met by a zero)
ANOMALIES = (
    ("(x ** 2).sqrt()", "inf then"),
    ("(x * x).sqrt()", "inf then"),
    ("x.abs().sqrt()", "inf then"),
    ("(x.sin() ** 2).sqrt()", "inf then"),
    ("x.sqrt() * 0", "zero then"),
    ("x.log() * 0", "zero then"),
    ("(x ** 3).sqrt()", "inf then"),
)
ZEROS = ("[0.0, 3.0]", "[2.0, 0.0]", "[0.0, 1.0, 4.0]", "[1.5, 0.0, 2.0]")


def anomaly_program(d: Draw) -> Listing:
    """12.self-anomaly-node: anomaly mode names the node whose backward first returns NaN. A slope at 0 is inf,
    not NaN; the NaN is born where inf meets a zero (inf * 0, 0 * inf)."""
    y, order = d.one(ANOMALIES)
    x0 = d.one(ZEROS)
    lines = [
        f"x = torch.tensor({x0}, requires_grad=True)",
        "with torch.autograd.detect_anomaly():",
        f"    y = {y}",
        "    y.sum().backward()  # raises",
    ]
    ask = "Which node does anomaly mode name ('Error detected in <node>')? Answer its class name."
    return Listing("\n".join(lines), ask, {"order": order})


FIXES = (
    "torch.where(x > 0, x.sqrt(), 0.0)",
    "torch.where(x > 0, x, 0.0).sqrt()",
    "x.abs().sqrt()",
    "x.relu().sqrt()",
    "(x + 1).abs().sqrt()",
)
FIX_INPUTS = (
    "[-1.0, 0.0, 2.0]",
    "[-2.0, 3.0]",
    "[0.0, 9.0]",
    "[-1.0, 0.0]",
    "[0.5, -0.5, 0.0]",
    "[2.0, 0.0, -3.0]",
    "[-0.5, 4.0]",
    "[0.0, 0.0, 1.0]",
)


def fix_program(d: Draw) -> Listing:
    """12.self-finite-fix: five guards around a square root (the last meets abs's zero at x = -1), on an x with a zero or a negative entry (or both; an x
    of positive entries only would leave every guard finite and test nothing): which leave every entry of x.grad
    finite?"""
    x0 = d.one(FIX_INPUTS)
    lines = [
        "expressions = (",
        *(f"    {f!r}," for f in FIXES),
        ")",
        "grads = {}",
        "for expression in expressions:",
        f"    x = torch.tensor({x0}, requires_grad=True)",
        "    y = eval(expression)",
        "    y.sum().backward()",
        "    grads[expression] = x.grad",
    ]
    ask = (
        "For which expressions is every entry of grads[expression] (x.grad) finite? Answer a set of the expressions "
        "(set() for none)."
    )
    values = [float(v) for v in x0.strip("[]").split(",")]
    return Listing("\n".join(lines), ask, {"x": x0, "zero": 0.0 in values, "negative": any(v < 0 for v in values)})


GROWTH = ("nothing grows", "only held bytes grow", "only depth grows", "both grow", "backward raises at step 2")
# (the loss's extra term, its backward, the update of ema)
EMAS = (
    ("", "loss.backward()", "ema = 0.9 * ema + 0.1 * loss"),
    ("", "loss.backward()", "ema = 0.9 * ema + 0.1 * loss.detach()"),
    ("", "loss.backward(retain_graph=True)", "ema = 0.9 * ema + 0.1 * loss"),
    ("", "loss.backward()", "ema = 0.9 * ema + 0.1 * loss.item()"),
    ("", "loss.backward()", "ema = ema * 0.9 + loss * loss"),
    (" + 0.01 * ema", "loss.backward()", "ema = 0.9 * ema + 0.1 * loss"),
)


def ema_program(d: Draw) -> Listing:
    """12.self-ema: a running average of the loss across steps: chained with its graph, detached, or as a number;
    over losses whose graphs backward freed, or kept; or fed back into the loss, whose next backward walks the freed
    graph."""
    extra, backward, update = d.one(EMAS)
    width = d.one([8, 4, 16])
    steps = d.one([4, 5, 3])
    lines = [
        "from torch import nn",
        "",
        "from grader import probes",
        "from grader.units.unit12.support import held_bytes",
        "",
        "torch.manual_seed(7)",
        f"net = nn.Sequential(nn.Linear(3, {width}), nn.Tanh(), nn.Linear({width}, 1))",
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)",
        "ema = torch.tensor(0.0)",
        "seen = []",
        f"for _ in range({steps}):",
        "    x, y = torch.randn(10, 3), torch.randn(10, 1)",
        f"    loss = ((net(x) - y) ** 2).mean(){extra}",
        "    opt.zero_grad()",
        f"    {backward}",
        "    opt.step()",
        f"    {update}",
        "    seen.append((held_bytes(ema), probes.depth(ema)))",
    ]
    ask = (
        "From the first step to the last, what happens to ema's graph: the bytes it holds for backward as "
        "held_bytes(ema) counts them (the saved tensors a pack hook sees, not yet freed: a Python number an op keeps "
        "as a 0-dim tensor is not counted) and its depth? One of " + ", ".join(repr(g) for g in GROWTH) + "."
    )
    facts = {"kept": "retain_graph" in backward, "fed back": bool(extra), "chained": update.endswith("loss")}
    return Listing("\n".join(lines), ask, facts)


ORIGINS = ("n", "r", "h", "none of them")
# (x, r from h, n from r, out from n)
HOOKED = (
    ("[[1.0, 2.0], [-1.0, -3.0]]", "h.relu()", "r / r.norm(dim=1, keepdim=True)", "n @ w2"),
    ("[[1.0, 2.0], [-1.0, -3.0]]", "h.relu()", "r / (r.norm(dim=1, keepdim=True) + 1e-6)", "n @ w2"),
    ("[[1.0, 2.0], [2.0, 0.5]]", "h.relu()", "r / r.norm(dim=1, keepdim=True)", "n @ w2"),
    ("[[1.0, 2.0], [0.0, 0.0]]", "(h ** 2).sqrt()", "r * 2", "n @ w2"),
    ("[[-2.0, -1.0], [1.0, 3.0]]", "h.relu()", "r * 2", "n.log() * 0"),
    ("[[0.0, 0.0], [1.0, -1.0]]", "h.abs()", "r / r.norm(dim=1, keepdim=True)", "n @ w2"),
)


def first_hook_program(d: Draw) -> Listing:
    """12.self-first-hook: hooks on h, r and n record whether each gradient is finite, in the order they fire; a
    non-finite gradient starts where a backward divides by zero or meets inf, and a relu can make it vanish."""
    x0, r, n, out = d.one(HOOKED)
    w1 = d.one(["[[1.0, 0.5], [0.5, 1.0]]", "[[2.0, 1.0], [1.0, 3.0]]", "[[0.5, 0.25], [0.25, 1.0]]"])
    w2 = d.one(["[[1.0], [-1.0]]", "[[2.0], [0.5]]", "[[-1.0], [1.5]]"])
    lines = [
        "seen = []",
        "",
        "",
        "def watch(name, t):",
        "    t.register_hook(lambda g: seen.append((name, bool(g.isfinite().all()))))",
        "    return t",
        "",
        "",
        f"x = torch.tensor({x0})",
        f"w1 = torch.tensor({w1}, requires_grad=True)",
        f"w2 = torch.tensor({w2}, requires_grad=True)",
        'h = watch("h", x @ w1)',
        f'r = watch("r", {r})',
        f'n = watch("n", {n})',
        f"out = {out}",
        "out.sum().backward()",
    ]
    ask = (
        "Which is the first hook, in the order they fire, to see a non-finite gradient: "
        + ", ".join(repr(o) for o in ORIGINS)
        + "?"
    )
    return Listing("\n".join(lines), ask, {})
