"""Unit 02's shortcuts: a timeline computed without ever reading .grad, and seeds built through the output's
own layout."""

import torch

from tests.shortcuts._around import graders_answer


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


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


def timeline_cleared_to_zeros(leaves, forward):
    """[heuristic] zero_grad() read as 'fills .grad with zeros' (set_to_none=False), the pre-2.0 default."""
    out = {name: [] for name in leaves}
    for _ in range(2):
        forward().backward()
        for name, leaf in leaves.items():
            out[name].append(None if leaf.grad is None else leaf.grad.clone())
    for leaf in leaves.values():
        if leaf.grad is not None:
            leaf.grad.zero_()
    for name, leaf in leaves.items():
        out[name].append(None if leaf.grad is None else leaf.grad.clone())
    return out


def timeline_without_copies(leaves, forward):
    """[heuristic] Keeps .grad itself at each moment instead of a copy: backward adds in place, so the first entry
    becomes the second."""
    out = {name: [] for name in leaves}
    for _ in range(2):
        forward().backward()
        for name, leaf in leaves.items():
            out[name].append(leaf.grad)
    for leaf in leaves.values():
        leaf.grad = None
    for name in leaves:
        out[name].append(None)
    return out


def timeline_from_the_grader(leaves, forward):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack; forward() is called twice
    and .grad cleared only so that the side checks see what they expect."""
    truth = graders_answer()
    forward(), forward()
    for leaf in leaves.values():
        leaf.grad = None
    return {
        name: [None if g is None else torch.tensor(g, dtype=leaves[name].dtype).view(leaves[name].shape) for g in row]
        for name, row in truth.items()
    }


def seed_asked_of_autograd(out, index):
    """[wrapper] The seed is d out.flatten()[index] / d out: torch.autograd.grad works it out on a detached copy of
    out, so no seed is ever built by hand (arguably a fair answer: it needs the idea the unit teaches)."""
    copy = out.detach().requires_grad_()
    return torch.autograd.grad(copy.flatten()[index], copy)[0]


SHORTCUTS["02.grad-timeline"] += [timeline_cleared_to_zeros, timeline_without_copies]
OPEN = {"02.grad-timeline": [timeline_from_the_grader], "02.isolating-seed": [seed_asked_of_autograd]}
