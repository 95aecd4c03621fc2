"""Unit 08's shortcuts: the loops the unit already wrote (its chunks with k made general, detach every step,
never detach), which do not give every loss the same k steps."""

from tests.reference.unit08 import chunks_of_k, each_step_then_detach_every_k, full_history


def chunks_as_in_the_notebook(seq, k):
    """[heuristic] Cell 52's loop with k made general: the exercise the unit used to have, which the window is not."""
    return chunks_of_k(seq, k)


def retain_instead_of_detach(seq, k):
    """[heuristic] The forum fix the unit warns about: retain_graph=True after every step, nothing detached."""
    state = seq.h0
    for t, x in enumerate(seq.inputs):
        state = seq.step(state, x)
        seq.loss(state, t).backward(retain_graph=True)
    return {name: p.grad for name, p in seq.params.items()}


SHORTCUTS = {
    "08.sliding-window": [
        chunks_as_in_the_notebook,
        each_step_then_detach_every_k,
        full_history,
        retain_instead_of_detach,
    ]
}
