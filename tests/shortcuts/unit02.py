"""Unit 02's shortcuts: a timeline computed without ever reading .grad, and seeds built through the output's
own layout."""

import torch


def timeline_by_autograd_grad(leaves, forward):
    """[wrapper] The reviewer's version: torch.autograd.grad for each step's gradient, the two summed by hand, and
    None for the third column; .grad itself is never read."""
    names = [n for n, t in leaves.items() if t.requires_grad]
    steps = []
    for _ in range(2):
        out = forward()
        got = torch.autograd.grad(out, [leaves[n] for n in names], allow_unused=True) if out.requires_grad else []
        steps.append(dict(zip(names, got)))
    table = {}
    for name in leaves:
        one, two = steps[0].get(name), steps[1].get(name)
        total = None if one is None else one + two
        table[name] = [one, total, None]
    return table


def timeline_zero_for_unreached(leaves, forward):
    """[heuristic] 'A gradient that never arrived is zero': zeros where .grad stayed None."""
    snap = []
    for _ in range(2):
        forward().backward()
        snap.append({n: t.grad.clone() if t.grad is not None else torch.zeros_like(t) for n, t in leaves.items()})
    torch.optim.SGD(list(leaves.values()), lr=0.1).zero_grad()
    return {n: [snap[0][n], snap[1][n], None] for n in leaves}


def seed_through_flatten(out, index):
    """[heuristic] Writes the 1 through flatten() of a zeros tensor shaped like out: for a non-contiguous out,
    flatten() is a copy and the 1 goes nowhere (the trap the exercise plants)."""
    seed = torch.zeros_like(out)
    seed.flatten()[index] = 1
    return seed


def seed_in_outs_memory_order(out, index):
    """[heuristic] Puts the 1 at position index of the memory out's strides describe, not of its row-major order."""
    seed = torch.zeros_like(out)
    seed.as_strided((out.numel(),), (1,))[index] = 1
    return seed


SHORTCUTS = {
    "02.grad-timeline": [timeline_by_autograd_grad, timeline_zero_for_unreached],
    "02.isolating-seed": [seed_through_flatten, seed_in_outs_memory_order],
}
