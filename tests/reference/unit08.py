"""Unit 08's exercise: TBPTT(1, k) written the way a learner would, and plausible bugs."""

import torch


def _detached(state):
    return tuple(t.detach() for t in state) if isinstance(state, tuple) else state.detach()


def window_grads(seq, k):
    entering = [_detached(seq.h0)]
    with torch.no_grad():
        for x in seq.inputs:
            entering.append(_detached(seq.step(entering[-1], x)))
    for t in range(len(seq.inputs)):
        start = max(0, t - k + 1)
        state = entering[start]
        for j in range(start, t + 1):
            state = seq.step(state, seq.inputs[j])
        seq.loss(state, t).backward()
    return {name: p.grad for name, p in seq.params.items()}


REFERENCE = {"08.sliding-window": window_grads}


# --- plausible buggy implementations: each must be refused --------------------------------


def chunks_of_k(seq, k):
    """Section 6's chunks, k made general: a backward every k steps, the state detached between chunks. Each loss
    sees 1 to k steps, not k."""
    state, pending = seq.h0, 0
    last = len(seq.inputs) - 1
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        pending = pending + seq.loss(state, t)
        if (t + 1) % k == 0 or t == last:
            pending.backward()
            pending = 0
            state = _detached(state)
    return {name: p.grad for name, p in seq.params.items()}


def window_one_too_long(seq, k):
    """Starts each window from the state kept k steps back and runs k + 1 steps."""
    entering = [_detached(seq.h0)]
    with torch.no_grad():
        for x in seq.inputs:
            entering.append(_detached(seq.step(entering[-1], x)))
    for t in range(len(seq.inputs)):
        start = max(0, t - k)
        state = entering[start]
        for j in range(start, t + 1):
            state = seq.step(state, seq.inputs[j])
        seq.loss(state, t).backward()
    return {name: p.grad for name, p in seq.params.items()}


def detaches_only_h(seq, k):
    """Holds a pair state 'constant' by detaching its first tensor: c still carries every earlier step."""

    def half(state):
        return (state[0].detach(), *state[1:]) if isinstance(state, tuple) else state.detach()

    entering = [half(seq.h0)]
    state = seq.h0
    for x in seq.inputs:  # recorded, so that a c left attached carries its history into the windows
        state = seq.step(state, x)
        entering.append(half(state))
    for t in range(len(seq.inputs)):
        start = max(0, t - k + 1)
        s = entering[start]
        for j in range(start, t + 1):
            s = seq.step(s, seq.inputs[j])
        seq.loss(s, t).backward(retain_graph=True)
    return {name: p.grad for name, p in seq.params.items()}


def each_step_then_detach_every_k(seq, k):
    """A backward per step over the graph so far (retain_graph=True), detaching every k steps: the chunks again,
    loss by loss."""
    state = seq.h0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        seq.loss(state, t).backward(retain_graph=True)
        if (t + 1) % k == 0:
            state = _detached(state)
    return {name: p.grad for name, p in seq.params.items()}


def full_history(seq, k):
    """Never detaches: every loss through every step before it."""
    state, total = seq.h0, 0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        total = total + seq.loss(state, t)
    total.backward()
    return {name: p.grad for name, p in seq.params.items()}


BUGGY = {
    "08.sliding-window": [
        chunks_of_k,
        window_one_too_long,
        detaches_only_h,
        each_step_then_detach_every_k,
        full_history,
    ]
}
