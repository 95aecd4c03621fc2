"""Unit 08's exercise: k-step truncated BPTT written the way a learner would, and plausible bugs."""


def tbptt_grads(seq, k):
    state = seq.h0
    pending = 0
    last = len(seq.inputs) - 1
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        pending = pending + seq.loss(state, t)
        if (t + 1) % k == 0 or t == last:
            pending.backward()
            pending = 0
            state = state.detach()
    return {name: p.grad for name, p in seq.params.items()}


REFERENCE = {
    "08.tbptt": tbptt_grads,
}


# --- plausible buggy implementations: each must be refused --------------------------------


def detach_every_step(seq, k):
    """Ignores k: backward and detach after every step, which is k = 1 whatever k says."""
    state = seq.h0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        seq.loss(state, t).backward()
        state = state.detach()
    return {name: p.grad for name, p in seq.params.items()}


def never_detaches(seq, k):
    """Adds every loss into one total and backpropagates once: the full history for every k."""
    state, total = seq.h0, 0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        total = total + seq.loss(state, t)
    total.backward()
    return {name: p.grad for name, p in seq.params.items()}


def retain_instead_of_detach(seq, k):
    """Silences the second-backward error with retain_graph=True and never cuts the state."""
    state, pending = seq.h0, 0
    last = len(seq.inputs) - 1
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        pending = pending + seq.loss(state, t)
        if (t + 1) % k == 0 or t == last:
            pending.backward(retain_graph=True)
            pending = 0
    return {name: p.grad for name, p in seq.params.items()}


def boundary_off_by_one(seq, k):
    """Tests t % k == 0 on a 0-based t: the first chunk is one step long, every later one shifted."""
    state, pending = seq.h0, 0
    last = len(seq.inputs) - 1
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        pending = pending + seq.loss(state, t)
        if t % k == 0 or t == last:
            pending.backward()
            pending = 0
            state = state.detach()
    return {name: p.grad for name, p in seq.params.items()}


def drops_the_last_chunk(seq, k):
    """Backpropagates only at full chunks: when k does not divide the length, the tail is lost."""
    state, pending = seq.h0, 0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        pending = pending + seq.loss(state, t)
        if (t + 1) % k == 0:
            pending.backward()
            pending = 0
            state = state.detach()
    return {name: p.grad for name, p in seq.params.items()}


def zeroes_each_chunk(seq, k):
    """Borrows a training loop's zero_grad before each chunk's backward: only the last chunk survives."""
    state, pending = seq.h0, 0
    last = len(seq.inputs) - 1
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        pending = pending + seq.loss(state, t)
        if (t + 1) % k == 0 or t == last:
            for p in seq.params.values():
                p.grad = None
            pending.backward()
            pending = 0
            state = state.detach()
    return {name: p.grad for name, p in seq.params.items()}


BUGGY = {
    "08.tbptt": [
        detach_every_step,
        never_detaches,
        retain_instead_of_detach,
        boundary_off_by_one,
        drops_the_last_chunk,
        zeroes_each_chunk,
    ],
}
