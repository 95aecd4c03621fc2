"""Unit 09b's self-test generators (grader.engine.variants): each draws a program of the same mechanism per learner
and attempt; the first option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

import itertools

from grader.engine.variants import Draw, Listing

_HEADER = [
    "from torch import nn",
    "from torch.utils.checkpoint import checkpoint",
    "",
    "from grader.units.unit09.support import Block",
    "",
    "torch.manual_seed(0)",
]

# --- 09b.self-checkpoint-plan: which blocks to checkpoint under a budget ---------------------------------------

PLAN_WIDTHS = (32, 48, 64, 96, 128, 192, 256, 384)  # small: the experiment runs every plan up to the answer's size
PLAN_CANONICAL = ((256, 1024, 512, 2048), 64, 128, 700_000)  # hidden widths, batch, width, budget


def _removed(hidden, batch, which) -> int:
    """Bytes a plan takes off the plain run, by the rule the self-test teaches: a checkpointed block no longer
    holds its two (batch, hidden) float32 activations. Used only to place the budget between plans; the truth is
    measured."""
    return sum(2 * batch * hidden[i] * 4 for i in which)


def _budget(hidden, batch, width, size: int) -> int | None:
    """A budget that the best plan of ``size`` blocks meets and no smaller plan, nor another plan of that size,
    does; None where the widths do not single one out."""
    plain = 4 + (len(hidden) - 1) * batch * width * 4 + _removed(hidden, batch, range(len(hidden)))
    ranked = sorted(
        (_removed(hidden, batch, c) for c in itertools.combinations(range(len(hidden)), size)), reverse=True
    )
    smaller = max(_removed(hidden, batch, c) for c in itertools.combinations(range(len(hidden)), size - 1))
    best, rival = ranked[0], max(ranked[1] if len(ranked) > 1 else 0, smaller)
    if best - rival < 8 * batch * 16:  # too close to call on a learner's arithmetic
        return None
    need = (best + rival) // 2
    return plain - round(need, -3)


def plan_program(d: Draw) -> Listing:
    """09b.self-checkpoint-plan: a chain of Blocks of different hidden widths and a memory budget; checkpointing a
    block leaves only its input, which the block before already made. Which fewest blocks fit the budget?"""
    if d.canonical:
        hidden, batch, width, budget = PLAN_CANONICAL
    else:
        budget = None
        while budget is None:
            count = d.one([4, 3, 5])
            hidden = tuple(d.some(PLAN_WIDTHS, count))
            batch, width = d.one([(16, 32), (8, 64), (12, 48), (24, 16)])
            budget = _budget(hidden, batch, width, d.one([2, 1, 3]) if count > 3 else d.one([1, 2]))
    blocks = ", ".join(f"Block({width}, {h})" for h in hidden)
    lines = [
        *_HEADER,
        f"chain = nn.Sequential({blocks})",
        f"x = torch.randn({batch}, {width})",
        f"budget = {budget:_}",
    ]
    ask = (
        "Block(width, hidden) is unit 09's block: Linear(width, hidden), GELU, Linear(hidden, width). Checkpoint as "
        "few blocks as you can (checkpoint(chain[i], h, use_reentrant=False) for each one chosen, the others run "
        "plainly, in order) so that the memory held after the forward pass and .sum() (MemoryWatch, the loss "
        "included) is at most budget bytes. Which blocks? Answer a set of their indices as strings, such as {'0'}."
    )
    return Listing("\n".join(lines), ask, {"hidden": hidden})


# --- 09b.self-checkpoint-input-write: a write after checkpoint kept its input ----------------------------------

# (the lines before the write, the write step, the trap it sets); {m} is the chain's name
INPUT_WRITES = (
    (("h = {m}[0](x)", "y = checkpoint({m}[1], h, use_reentrant=False)"), "h.add_(1)", "input"),
    (("h = {m}[0](x)", "y = checkpoint({m}[1], h, use_reentrant=False)"), "h.detach().mul_(2)", "input"),
    (("h = {m}[0](x)", "y = checkpoint({m}[1], h, use_reentrant=False)"), "h[0].zero_()", "input"),
    (("y = checkpoint({m}[0], x, use_reentrant=False)",), "x.add_(1)", "input"),
    (("h = {m}[0](x)", "y = checkpoint({m}[1], h, use_reentrant=True)"), "h.sub_(0.5)", "input"),
    (("h = {m}[0](x)", "y = checkpoint({m}[1], h, use_reentrant=False)"), "h.data.add_(1)", "data"),
    (("h = {m}[0](x)",), "h.add_(1)\ny = checkpoint({m}[1], h, use_reentrant=False)", "before"),
    (("h = {m}[0](x)", "y = checkpoint({m}[1], h, use_reentrant=False)"), "y.mul_(2)", "output"),
    (("h = {m}[0](x)", "y = checkpoint({m}[1], h, use_reentrant=False)"), "h.clone().add_(1)", "clone"),
    (("y = checkpoint({m}[0], x, use_reentrant=True)",), "x.add_(1)", "reentrant"),
    (("y = checkpoint({m}[0], x, use_reentrant=True)",), "x.mul_(2)", "reentrant"),
)


def input_write_program(d: Draw) -> Listing:
    """09b.self-checkpoint-input-write: checkpoint keeps its inputs as saved tensors, with their versions; a write
    into that memory through a name sharing the counter is caught at backward, others are not (and a reentrant
    checkpoint on an input without grad has no history at all)."""
    m = d.other("model", ["chain", "net", "blocks"])
    count = d.other(4, [2, 3])
    width, hidden = d.other((128, 512), [(16, 32), (8, 24), (32, 48), (12, 40)])
    batch = d.other(64, [4, 6, 8, 3])
    before, write, trap = d.one(INPUT_WRITES)
    setup = [
        *_HEADER,
        f"{m} = nn.Sequential(*[Block({width}, {hidden}) for _ in range({count})])",
        f"x = torch.randn({batch}, {width})",
        *(line.format(m=m) for line in before),
    ]
    steps = [("", "\n".join(setup)), ("at the write", write.format(m=m)), ("at backward", "y.sum().backward()")]
    ask = (
        "Backward reruns each checkpointed block from what checkpoint kept. Does anything raise, and where? Answer "
        "'no error', or a pair (place, cause), the cause chosen from the candidates listed with the answer's form; "
        "your own words may follow as a third item, a note shown beside torch's message and never graded."
    )
    return Listing.in_steps(steps, ask, {"trap": trap})


# --- 09b.self-pair-around-checkpoint: what a pair around checkpoint sees ---------------------------------------

# (the inputs' names and whether each is a tensor that requires grad, a tensor without grad, or a Python number;
# the checkpointed function's body)
CKPT_FUNCTIONS = (
    ((("a", "grad"), ("s", "plain")), "(a * s).tanh().exp()"),
    ((("a", "grad"),), "a.sin().exp()"),
    ((("a", "grad"), ("b", "grad")), "(a + b).sigmoid() * b"),
    ((("a", "grad"), ("s", "plain"), ("k", "number")), "(a * s + k).tanh()"),
    ((("a", "grad"), ("s", "plain"), ("c", "plain")), "(a * s).exp() * c"),
    ((("a", "grad"), ("k", "number")), "(a * k).cos()"),
    ((("a", "grad"), ("b", "grad"), ("s", "plain")), "(a * b).relu() + s"),
)
# what comes after checkpoint, under the pair: a sum keeps nothing, exp keeps its output, a square its input
CKPT_AFTER = ((".sum()", 0), (".exp().sum()", 1), (".pow(2).sum()", 1))
CKPT_PASSES = (
    ("y.backward(retain_graph=True)", "y.backward()"),
    ("y.backward()",),
    ("y.backward(retain_graph=True)", "y.backward(retain_graph=True)", "y.backward()"),
)


def pair_program(d: Draw) -> Listing:
    """09b.self-pair-around-checkpoint: a counting pair around checkpoint(fn, ...): it is handed each tensor input
    checkpoint keeps (with grad or not, never a Python number) and the saves made outside fn; every backward over
    the retained graph reruns fn and unpacks the inputs again."""
    args, body = d.one(CKPT_FUNCTIONS)
    after, outside = d.one(CKPT_AFTER)
    passes = d.one(CKPT_PASSES)
    n = d.one([6, 4, 5, 3])
    made = []
    for name, how in args:
        if how == "number":
            made.append(f"{name} = {d.one([0.5, 2.0, -1.5])}")
        else:
            made.append(f"{name} = torch.randn({n}{', requires_grad=True' if how == 'grad' else ''})")
    names = ", ".join(name for name, _ in args)
    lines = [
        "from torch.utils.checkpoint import checkpoint",
        "",
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
        *made,
        "with torch.autograd.graph.saved_tensors_hooks(pack, unpack):",
        f"    y = checkpoint(lambda {names}: {body}, {names}, use_reentrant=False){after}",
        *passes,
    ]
    facts = {
        "plain": sum(how == "plain" for _, how in args),
        "number": any(how == "number" for _, how in args),
        "outside": outside,
        "passes": len(passes),
    }
    return Listing("\n".join(lines), "How many times did pack run, and unpack? Answer [pack, unpack].", facts)
