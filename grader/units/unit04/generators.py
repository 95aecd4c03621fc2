"""Unit 04's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

# --- 04.closed-book-shares: which copies share the storage --------------------------------------------------------

# (how a tensor is made from {h}, its kind): "history" cuts the record and copies nothing, "view" is a view,
# "same dtype" converts to the dtype h already has (a no-op that returns h), "copy" allocates, "rebuild" leaves
# tensors for Python numbers and allocates anew. Whether it shares is torch's to say; the kind names the trap.
SHARE_MAKERS = (
    ("{h}.detach()", "history"),
    ("{h}.detach().clone()", "copy"),
    ("{h}.data", "data"),
    ("torch.tensor({h}.tolist())", "rebuild"),
    ("{h}.detach().to(torch.float32)", "same dtype"),
    ("{h}.clone().detach()", "copy"),
    ("{h}.detach().double()", "copy"),
    ("{h}.detach()[1:]", "view"),
    ("{h}.view(-1)", "view"),
    ("{h} + 0", "copy"),
    ("{h}.data.clone()", "copy"),
    ("torch.tensor({h}.detach().tolist())", "rebuild"),
)
SHARE_BASES = (
    ("h", "torch.tensor([1.0, 2.0], requires_grad=True) * 2"),
    ("act", "torch.tensor([0.5, -1.5, 2.0], requires_grad=True).tanh()"),
    ("z", "torch.arange(4.0, requires_grad=True) + 1"),
    ("feat", "torch.ones(2, 3, requires_grad=True).exp()"),
    ("y", "torch.linspace(0.0, 1.0, 5, requires_grad=True) ** 2"),
)


def shares_program(d: Draw) -> Listing:
    """04.closed-book-shares: four tensors made from a non-leaf h: a history cut (detach, .data), a view, or a
    .to() to the dtype h already has (unit 01 showed it returns its tensor) copies nothing; clone, another dtype, arithmetic and a rebuild from Python
    numbers allocate."""
    h, base = d.one(SHARE_BASES)
    makers = d.some(SHARE_MAKERS, 4)
    lines = [f"{h} = {base}"]
    kinds = {}
    for i, (maker, kind) in enumerate(makers, start=1):
        lines.append(f"d{i} = {maker.format(h=h)}")
        kinds[f"d{i}"] = kind
    ask = f"Which of d1, d2, d3, d4 share {h}'s storage (the same untyped_storage().data_ptr())? Answer a set of names."
    return Listing("\n".join(lines), ask, {"base": h, "kinds": kinds})


def names_of(p: Listing, kind: str) -> set:
    return {name for name, k in p.facts["kinds"].items() if k == kind}


# --- 04.closed-book-edge: the first broken edge on a parameter's path ---------------------------------------------

# a statement that reads h and whose result no longer leads back to it: (code, what cut it)
EDGE_CUTS = (
    ("gate = (h > 0).float()", "comparison"),
    ("gate = h.detach() * 2", "detach"),
    ("gate = torch.tensor(h.tolist())", "rebuild"),
    ("gate = (h >= 0.5).float()", "comparison"),
    ("gate = torch.full_like(h, h.sum().item())", "item"),
    ("gate = h.argsort().float()", "index"),
)
# a statement between h and the cut that is recorded and leads back to w: it shifts the cut, breaks nothing
EDGE_KEPT = ("h = h.round() + h", "h = h * 3", "h = h.floor() * 0 + h", "h = h.clamp(-0.5, 0.5)", "h = h.sin()")
FLAT = (".round()", ".floor()", ".clamp(")  # derivative 0 (almost) everywhere, or where clamped: a recorded edge still


def edge_program(d: Draw) -> Listing:
    """04.closed-book-edge: w flows (or, where the first op reads a detached copy of w, does not) through recorded ops (some with a zero derivative: recorded all the same) to a
    statement that cuts the record (a comparison, a detach, a rebuild from Python numbers, .item(), an index op);
    a later detach cuts the other route."""
    w0 = d.one(["[0.5, -1.0, 2.0]", "[1.5, 0.25, -0.5]", "[-2.0, 1.0, 0.75, 0.5]", "[0.2, 0.4]"])
    b0 = d.one(["1.5", "0.5", "-1.25", "2.0"])
    op = d.one(["tanh", "sigmoid", "sin", "exp"])
    kept = d.some(EDGE_KEPT, d.integer(0, 2, 0))
    cut, how = d.one(EDGE_CUTS)
    later = d.one(["h.detach()", "h.detach() * 0.5", "torch.tensor(h.tolist())"])
    wv = d.one(["w", "w", "w", "w.detach()", "torch.tensor(w.tolist())"])  # perhaps the route is cut at once
    lines = [
        f"w = torch.tensor({w0}, requires_grad=True)",
        f"b = torch.tensor({b0}, requires_grad=True)",
        f"h = ({wv} * b).{op}()",
        *kept,
        cut,
        f"out = gate * b + {later}",
        "loss = (out ** 2).sum()",
    ]
    width = max(len(line) for line in lines) + 3
    source = "\n".join(f"{line:<{width}}# {i}" for i, line in enumerate(lines, start=1))
    ask = "The statements are numbered from 1. Which statement is the first broken edge on w's path to the loss?"
    flat = [i for i, line in enumerate(lines, start=1) if line in kept and any(f in line for f in FLAT)]
    facts = {
        "later": len(lines) - 1,
        "how": how,
        "flat": flat[0] if flat and wv == "w" else None,
        "cut": lines.index(cut) + 1 if wv != "w" else None,
    }
    return Listing(source, ask, facts)


# --- 04.closed-book-allow-unused: None, zero or nonzero --------------------------------------------------------

# a term made from one input: "zero" (recorded, derivative 0 at these values), "none" (no path), "nonzero"
UNUSED_TERMS = {
    "zero": ("{v} * 0", "{v}.floor() * 2", "{v}.round()", "{v}.sign() * 3", "({v} - {v})"),
    "none": ("({v} > 0).float()", "{v}.detach() * 3", "torch.tensor({v}.item())", "({v} == 1).float() * 2"),
    "nonzero": ("{v} * 3", "{v} ** 2", "{v}.exp()", "{v}.sin() * 2"),
}


def allow_unused_program(d: Draw) -> Listing:
    """04.closed-book-allow-unused: out sums one term of each of a, b, c: a recorded op whose derivative is 0 (a path
    with a zero gradient), an op that records nothing (no path: None), or an ordinary op (a nonzero gradient)."""
    values = d.one([("2.0", "3.0", "4.0"), ("1.5", "2.5", "0.5"), ("3.0", "1.25", "2.0"), ("0.75", "2.0", "1.5")])
    kinds = [d.one(["zero", "none", "nonzero"]) for _ in range(3)]
    if d.canonical:
        kinds = ["zero", "zero", "none"]
    elif kinds == ["none"] * 3:  # out would have no record at all: grad() raises instead of answering
        kinds[d.integer(0, 2, 0)] = d.one(["zero", "nonzero"])
    terms = []
    for i, (v, kind) in enumerate(zip("abc", kinds)):
        options = UNUSED_TERMS[kind]
        first = {0: "{v} * 0", 1: "{v}.floor() * 2", 2: "({v} > 0).float()"}[i]
        terms.append(d.one([first, *[t for t in options if t != first]] if first in options else options).format(v=v))
    lines = [
        *(f"{v} = torch.tensor({x}, requires_grad=True)" for v, x in zip("abc", values)),
        f"out = {' + '.join(terms)}",
        "g = torch.autograd.grad(out, [a, b, c], allow_unused=True)",
    ]
    ask = (
        "For each of g[0], g[1], g[2], is it None, a tensor equal to zero, or a nonzero tensor? Answer a list of three "
        "words, each 'None', 'zero' or 'nonzero'."
    )
    return Listing("\n".join(lines), ask, {"kinds": kinds})
