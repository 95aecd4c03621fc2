"""Unit 02's exercises: known-good implementations, written the way a learner would, and plausible bugs."""

import torch

# --- 02.grad-timeline ---------------------------------------------------------------------


def grad_timeline(leaves, forward):
    def snapshot():
        return {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}

    forward().backward()
    first = snapshot()
    forward().backward()
    second = snapshot()
    torch.optim.SGD(list(leaves.values()), lr=0.1).zero_grad()
    cleared = snapshot()
    return {name: [first[name], second[name], cleared[name]] for name in leaves}


def timeline_without_clone(leaves, forward):
    """Keeps .grad itself: the second backward adds into that very tensor."""
    forward().backward()
    first = {name: t.grad for name, t in leaves.items()}
    forward().backward()
    second = {name: t.grad for name, t in leaves.items()}
    for t in leaves.values():
        t.grad = None
    return {name: [first[name], second[name], None] for name in leaves}


def timeline_clearing_between_steps(leaves, forward):
    """Clears before the second step, so the second snapshot shows one step, not two."""
    opt = torch.optim.SGD(list(leaves.values()), lr=0.1)
    forward().backward()
    first = {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}
    opt.zero_grad()
    forward().backward()
    second = {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}
    opt.zero_grad()
    return {name: [first[name], second[name], leaves[name].grad] for name in leaves}


def timeline_zeroing_in_place(leaves, forward):
    """Clears the torch 1.x way: zeros, where today's zero_grad() leaves None."""
    forward().backward()
    first = {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}
    forward().backward()
    second = {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}
    for t in leaves.values():
        if t.grad is not None:
            t.grad.zero_()
    cleared = {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}
    return {name: [first[name], second[name], cleared[name]] for name in leaves}


def timeline_zeros_for_missing(leaves, forward):
    """Reports zeros where a leaf has no gradient at all."""

    def snapshot():
        return {name: torch.zeros_like(t) if t.grad is None else t.grad.clone() for name, t in leaves.items()}

    forward().backward()
    first = snapshot()
    forward().backward()
    second = snapshot()
    torch.optim.SGD(list(leaves.values()), lr=0.1).zero_grad()
    return {name: [first[name], second[name], None] for name in leaves}


def timeline_only_trainable(leaves, forward):
    """Leaves out the leaves that do not require grad."""
    result = grad_timeline(leaves, forward)
    return {name: steps for name, steps in result.items() if leaves[name].requires_grad}


def timeline_reusing_one_output(leaves, forward):
    """Calls backward twice on the same output instead of running the forward pass again."""
    out = forward()
    out.backward()
    first = {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}
    out.backward()
    second = {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}
    for t in leaves.values():
        t.grad = None
    return {name: [first[name], second[name], None] for name in leaves}


def timeline_doubling_one_step(leaves, forward):
    """Issue 29's shortcut: one step, the second taken to be twice the first, zero_grad() never run."""
    forward().backward()
    first = {name: None if t.grad is None else t.grad.clone() for name, t in leaves.items()}
    return {name: [first[name], None if first[name] is None else 2 * first[name], None] for name in leaves}


def timeline_doubling_and_clearing(leaves, forward):
    """The same shortcut, tidied up: it clears every .grad by hand, so only the second batch's weight refutes it."""
    result = timeline_doubling_one_step(leaves, forward)
    forward()  # called twice, as the steps would
    for t in leaves.values():
        t.grad = None
    return result


# --- 02.isolating-seed ------------------------------------------------------------------------


def isolating_seed(out, index):
    seed = torch.zeros(out.shape)
    seed.view(-1)[index] = 1.0
    return seed


def seed_of_ones(out, index):
    return torch.ones_like(out)


def seed_indexed_by_row(out, index):
    """seed[index] picks a whole row of a matrix, not one element."""
    seed = torch.zeros_like(out)
    seed[index] = 1.0
    return seed


def seed_left_flat(out, index):
    """A one-hot vector of out.numel() entries, never given out's shape."""
    seed = torch.zeros(out.numel())
    seed[index] = 1.0
    return seed


def seed_column_major(out, index):
    """Unravels the index with the first dimension varying fastest."""
    position = []
    for size in out.shape:
        position.append(index % size)
        index //= size
    seed = torch.zeros_like(out)
    seed[tuple(position)] = 1.0
    return seed


def seed_through_a_copy(out, index):
    """flatten() copies a non-contiguous tensor, so the 1 is written into a copy and lost."""
    seed = torch.zeros_like(out)
    seed.flatten()[index] = 1.0
    return seed


REFERENCE = {
    "02.grad-timeline": grad_timeline,
    "02.isolating-seed": isolating_seed,
}

BUGGY = {
    "02.grad-timeline": [
        timeline_without_clone,
        timeline_clearing_between_steps,
        timeline_zeroing_in_place,
        timeline_zeros_for_missing,
        timeline_only_trainable,
        timeline_reusing_one_output,
        timeline_doubling_one_step,
        timeline_doubling_and_clearing,
    ],
    "02.isolating-seed": [seed_of_ones, seed_indexed_by_row, seed_left_flat, seed_column_major, seed_through_a_copy],
}
