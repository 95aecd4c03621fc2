"""Unit 03's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

UNTOUCHED_PASSES = (
    ("(gu,) = torch.autograd.grad(out, u)", "grad", ("u",)),
    ("(gv,) = torch.autograd.grad(out, v)", "grad", ("v",)),
    ("gu, gv = torch.autograd.grad(out, [u, v])", "grad", ("u", "v")),
    ("out.backward()", "backward", ()),
)


def untouched_program(d: Draw) -> Listing:
    """03.which-untouched: one pass (autograd.grad for some inputs, or backward) over out = f(m) + v with m = u * v;
    m retains its gradient or not; a hook on v that zeroes what it sees, or none. Which .grad fields are set?"""
    u0, v0 = d.one([(1.0, 2.0), (0.5, -1.0), (2.0, 1.5), (-1.0, 0.5)])
    retained = d.coin(True, p=0.6)
    form = d.one(["m.exp() + v", "m ** 2 + v", "m.sin() + v * 3"])
    hooked = d.coin(True, p=0.6)
    line, how, asked = d.one(UNTOUCHED_PASSES)
    lines = [
        f"u = torch.tensor({u0}, requires_grad=True)",
        f"v = torch.tensor({v0}, requires_grad=True)",
        "m = u * v",
        *(["m.retain_grad()"] if retained else []),
        f"out = {form}",
        *(["v.register_hook(lambda g: g * 0)"] if hooked else []),
        line,
    ]
    ask = "Which of u, v, m, out have a .grad that is not None afterwards? Answer a set of names (set() for none)."
    facts = {"retained": retained, "grad": how == "grad", "asked": set(asked), "hooked": hooked}
    return Listing("\n".join(lines), ask, facts)


# (the expression that uses h twice, its derivative in h; the two uses as separate outputs)
SHARED = (
    ("h ** 2 + 5 * h", ("h ** 2", "5 * h")),
    ("h * h", ("h * h",)),
    ("h.exp() + h", ("h.exp()", "h")),
    ("(h + 1) * h", ("(h + 1) * h",)),
    ("h ** 3 - 2 * h", ("h ** 3", "-2 * h")),
)


def shared_program(d: Draw) -> Listing:
    """03.hook-on-shared: a hook on h, which is used twice. One backward of the whole expression runs the hook once,
    with the total; two backward calls, one per use, run it once each. h is a sum, whose node keeps nothing, so a
    second backward through it needs no retain_graph (unit 06's topic)."""
    a0 = d.one([0.5, 1.0, -0.5, 1.5, 0.25])
    scale = d.one([4, 2, 3])
    form, parts = d.one(SHARED)
    apart = len(parts) == 2 and d.coin(False, p=0.4)
    lines = [
        f"a = torch.tensor({a0}, requires_grad=True)",
        f"h = a + {scale}",
        "calls = []",
        "h.register_hook(lambda g: calls.append(g.item()))",
    ]
    if apart:
        lines += [f"({parts[0]}).backward()", f"({parts[1]}).backward()"]
    else:
        lines += [f"out = {form}", "out.backward()"]
    ask = "How many times is the hook called, and with what values? Answer [calls, value, ...] (values in order)."
    return Listing("\n".join(lines), ask, {"apart": apart})


def leaf_second_program(d: Draw) -> Listing:
    """03.leaf-hook-second: a hook on a leaf across two or three backward passes, each over a graph built anew: it
    sees each pass's gradient, before AccumulateGrad adds it into p.grad, which holds the running total."""
    p0 = d.one([1.5, 0.5, -1.0, 2.0, -2.0])
    form = d.one(["(p * 2) ** 2", "p ** 3", "(p + 1) * p", "(3 * p) ** 2"])
    passes = d.one([2, 3, 2])
    lines = [
        f"p = torch.tensor({p0}, requires_grad=True)",
        "got = []",
        "p.register_hook(lambda g: got.append(g.item()))",
        f"for step in range({passes}):",
        f"    z = {form}",
        "    z.backward()",
    ]
    ask = "What did the hook receive the last time, and what is p.grad now? Answer [last value, p.grad]."
    return Listing("\n".join(lines), ask, {"passes": passes})


def retain_program(d: Draw) -> Listing:
    """03.retain-accumulates: a retained non-leaf gradient across two or three backward passes through the same h
    (each builds out anew from it; h's own node, a sum, keeps nothing, so no retain_graph is needed): it adds up like
    a leaf's .grad."""
    q0 = d.one([-0.5, 0.5, 1.5, -1.0, 0.25])
    scale = d.one([4, 2, 3])
    form = d.one(["h ** 2", "h ** 3", "h * h + h", "3 * h ** 2"])
    passes = d.one([2, 3, 2])
    lines = [
        f"q = torch.tensor({q0}, requires_grad=True)",
        f"h = q + {scale}",
        "h.retain_grad()",
        f"for step in range({passes}):",
        f"    out = {form}",
        "    out.backward()",
    ]
    return Listing("\n".join(lines), "What is h.grad?", {"passes": passes})
