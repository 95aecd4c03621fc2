"""Unit 04b's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing
from grader.units.unit04b.support import HELD_PLACES

ENC_GRAD_STATES = ("None", "a tensor of zeros", "a nonzero tensor", "an error at backward")

# --- 04b.closed-book-frozen-grad: what a training loop leaves in enc.grad ------------------------------------------

# how feats is made from enc: (the lines, what reaches the loss): "cut" records nothing of enc, "flat" is recorded with
# derivative 0, "kept" is an ordinary path
FEATS = (
    (("feats = (enc * x).detach()",), "cut"),
    (("with torch.no_grad():", "    feats = enc * x"), "cut"),
    (("feats = enc.item() * x",), "cut"),
    (("feats = enc * x",), "kept"),
    (("feats = (enc * x).round()",), "flat"),
    (("feats = torch.tensor((enc * x).tolist())",), "cut"),
    (("feats = (enc * x).sign() * 2",), "flat"),
)
# where zero_grad runs in each step (its call, and whether it comes first or after opt.step()); "" is no call
ZERO_GRADS = (
    ("opt.zero_grad(set_to_none=False)", "first"),
    ("opt.zero_grad()", "first"),
    ("opt.zero_grad(set_to_none=False)", "last"),
    ("opt.zero_grad()", "last"),
    ("", "first"),
)


def frozen_grad_program(d: Draw) -> Listing:
    """04b.closed-book-frozen-grad: a few SGD steps of a two-parameter model in which enc's path to the loss may be
    cut (detach, no_grad, .item(), a rebuild), flat (a recorded op with derivative 0) or whole, with zero_grad setting
    to None or to zeros, before backward or after the step, or never; a loss with no path to any parameter fails."""
    enc0, head0 = d.one([("1.0", "0.5"), ("2.0", "-0.5"), ("0.5", "1.5"), ("-1.0", "0.75")])
    x0 = d.one(["[1.0, 2.0]", "[0.5, -1.0, 1.5]", "[3.0, 1.0]", "[-2.0, 0.5]"])
    lr = d.one(["0.1", "0.05", "0.01"])
    feats, reach = d.one(FEATS)
    call, where = d.one(ZERO_GRADS)
    steps = d.one([3, 2, 1, 4])
    head_cut = reach == "cut" and d.coin(False, p=0.25)  # no path to any parameter: backward has nothing to do
    head = "head.detach()" if head_cut else "head"
    body = [
        *([call] if call and where == "first" else []),
        *feats,
        f"loss = (({head} * feats - x) ** 2).mean()",
        "loss.backward()",
        "opt.step()",
        *([call] if call and where == "last" else []),
    ]
    lines = [
        f"enc = torch.tensor({enc0}, requires_grad=True)",
        f"head = torch.tensor({head0}, requires_grad=True)",
        f"opt = torch.optim.SGD([enc, head], lr={lr})",
        f"x = torch.tensor({x0})",
        f"for _ in range({steps}):",
        *(f"    {line}" for line in body),
    ]
    ask = "What is enc.grad afterwards: " + ", ".join(repr(g) for g in ENC_GRAD_STATES) + "?"
    facts = {"reach": reach, "zero_grad": call, "where": where, "head cut": head_cut}
    return Listing("\n".join(lines), ask, facts)


# --- 04b.closed-book-modes: which results have a grad_fn -----------------------------------------------------------

# one statement making {n}: (its lines, the trap it sets): "inner enable" (enable_grad inside no_grad records),
# "inference" (enable_grad does not undo inference_mode), "no input" (a recording region whose input needs no grad),
# "outside" (the op after a frozen call runs outside its region), "after" (the op after a tracked call runs in the
# region around it, with grad mode off), "" (no trap beyond the rule)
MODE_LINES = (
    (("with torch.no_grad():", "    {n} = tracked(w)"), "inner enable"),
    (("{n} = frozen(w) * w",), "outside"),
    (("with torch.set_grad_enabled(False):", "    {n} = tracked(w) + frozen(w)"), ""),
    (("with torch.inference_mode():", "    {n} = tracked(w)"), "inference"),
    (("with torch.no_grad():", "    {n} = tracked(frozen(w))"), "no input"),
    (("with torch.set_grad_enabled(False):", "    {n} = tracked(w * 2)"), "no input"),
    (("{n} = frozen(tracked(w))",), ""),
    (("with torch.enable_grad():", "    {n} = frozen(w) + 1"), ""),
    (("with torch.no_grad():", "    {n} = tracked(w) * w"), "after"),
    (("with torch.inference_mode():", "    {n} = frozen(w) + tracked(w)"), "inference"),
    (("{n} = tracked(w) - frozen(w)",), ""),
    (("with torch.set_grad_enabled(False):", "    {n} = tracked(w).exp()"), "after"),
)


def modes_program(d: Draw) -> Listing:
    """04b.closed-book-modes: four results made inside and outside grad-mode regions by a function decorated with
    no_grad (frozen) and one decorated with enable_grad (tracked): the innermost setting wins while it lasts,
    enable_grad does not undo inference_mode, and an op records only if one of its inputs requires grad."""
    w0 = d.one(["1.0", "-0.5", "2.5", "0.25"])
    k_frozen, k_tracked = d.one([(2, 3), (5, 4), (0.5, 7), (3, -2)])
    chosen = d.some(MODE_LINES, 4)
    lines = [
        f"w = torch.tensor({w0}, requires_grad=True)",
        "",
        "",
        "@torch.no_grad()",
        "def frozen(t):",
        f"    return t * {k_frozen}",
        "",
        "",
        "@torch.enable_grad()",
        "def tracked(t):",
        f"    return t * {k_tracked}",
        "",
        "",
    ]
    traps = {}
    for name, (code, trap) in zip("abcd", chosen):
        lines += [line.format(n=name) for line in code]
        traps[name] = trap
    ask = "Which of a, b, c, d have a grad_fn? Answer a set of names."
    return Listing("\n".join(lines), ask, {"traps": traps})


def trapped(p: Listing, trap: str) -> set:
    return {name for name, t in p.facts["traps"].items() if t == trap}


# --- 04b.closed-book-held: which parameters an optimizer moves ------------------------------------------------------

FREEZE_LINES = {
    "attribute": "{net}.stem.requires_grad = False",
    "method": "{net}.stem.requires_grad_(False)",
    "none": "",
}
REPLACES = {
    "weight after": '{net}.heads["cls"].weight = nn.Parameter(torch.full(({out}, {width}), 0.5))',
    "bias after": '{net}.heads["cls"].bias = nn.Parameter(torch.zeros({out}))',
    "none": "",
}


def held_program(d: Draw) -> Listing:
    """04b.closed-book-held: a model with a stem, branches kept in a plain list (not registered) or a ModuleList,
    and a head in a ModuleDict; the stem perhaps frozen (by a plain attribute, which freezes nothing, or by
    requires_grad_), an optimizer built, then perhaps a head parameter replaced by a new nn.Parameter, which the
    optimizer does not hold. One backward and one step: which tensors moved?"""
    cls, net = d.other(("Branched", "net"), [("Forked", "model"), ("TwoPaths", "m"), ("Splitter", "clf")])
    width, out = d.one([(4, 2), (3, 2), (5, 3), (6, 1)])
    count = d.one([2, 3])
    container = d.one(["list", "ModuleList", "list"])
    freeze = d.one(["attribute", "method", "none", "attribute"])
    replace = d.one(["weight after", "bias after", "none", "weight after"])
    opt = d.one(["torch.optim.SGD({net}.parameters(), lr=0.01)", "torch.optim.SGD({net}.parameters(), lr=0.1)"])
    act = d.one(["relu", "tanh"])
    branches = ", ".join([f"nn.Linear({width}, {width})"] * count)
    made = f"[{branches}]" if container == "list" else f"nn.ModuleList([{branches}])"
    lines = [
        "from torch import nn",
        "",
        "torch.manual_seed(0)",
        "",
        "",
        f"class {cls}(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.stem = nn.Linear({width}, {width})",
        f"        self.branches = {made}",
        f'        self.heads = nn.ModuleDict({{"cls": nn.Linear({width}, {out})}})',
        "",
        "    def forward(self, x):",
        f"        h = self.stem(x).{act}()",
        "        h = sum(branch(h) for branch in self.branches)",
        '        return self.heads["cls"](h)',
        "",
        "",
        f"{net} = {cls}()",
        *([FREEZE_LINES[freeze].format(net=net)] if freeze != "none" else []),
        f"opt = {opt.format(net=net)}",
        *([REPLACES[replace].format(net=net, out=out, width=width)] if replace != "none" else []),
    ]
    train = [f"{net}(torch.randn(8, {width})).sum().backward()", "opt.step()"]
    ask = "Which of " + ", ".join(repr(p) for p in HELD_PLACES) + f" (of {net}) changed value? Answer a set."
    facts = {"net": net, "container": container, "freeze": freeze, "replace": replace}
    return Listing.in_steps([("", "\n".join(lines)), ("training", "\n".join(train))], ask, facts)


def held(ns: dict, p: Listing, place: str):
    """The tensor at ``place`` (one of HELD_PLACES) of the program's model, as a plain tensor to compare."""
    net = ns[p.facts["net"]]
    tensors = {
        "stem.weight": net.stem.weight,
        "branches[0].weight": net.branches[0].weight,
        "heads['cls'].weight": net.heads["cls"].weight,
        "heads['cls'].bias": net.heads["cls"].bias,
    }
    return tensors[place].detach()
