"""Unit 08's loop and truncation: the unit's carried-state loop (:func:`carried_loop`), a recurrent computation
as the exercise hands it to the learner (:class:`Recurrence`), and k-step truncated BPTT by chunks
(:func:`chunked_grads`), torch's answer to the exercise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from grader import probes

# --- the unit's loop ------------------------------------------------------------------------------------

STEPS = 5


def kept_bytes(t: torch.Tensor) -> int:
    """Bytes of the distinct storages that the graph under ``t`` still keeps for backward."""
    storages = {s.storage: s.bytes for s in probes.saved_tensors(t) if s.state == "ok"}
    return sum(storages.values())


def carried_loop(
    steps: int = STEPS,
    *,
    w: float = 0.9,
    retain: bool = False,
    detach: bool = False,
    width: int | None = None,
    each: Callable | None = None,
) -> torch.Tensor:
    """Run the unit's loop; ``each(step, loss)`` sees every step's loss before its backward. Returns w."""
    w = torch.tensor(w, requires_grad=True)
    hidden = torch.tensor(1.0) if width is None else torch.ones(width)
    for step in range(1, steps + 1):
        hidden = hidden * w + 0.1
        loss = hidden**2 if width is None else (hidden**2).sum()
        if each is not None:
            each(step, loss)
        loss.backward(retain_graph=retain)
        if detach:
            hidden = hidden.detach()
    return w


def retained_grad_value() -> float:
    """w.grad after the five retained steps (the notebook's figure)."""
    return carried_loop(retain=True).grad.item()


def mul_runs(steps: int, retain: bool, detach: bool) -> int:
    runs = [0]

    def count(grad_outputs):
        runs[0] += 1

    w = torch.tensor(0.9, requires_grad=True)
    hidden = torch.tensor(1.0)
    for _ in range(steps):
        product = hidden * w
        product.grad_fn.register_prehook(count)
        hidden = product + 0.1
        (hidden**2).backward(retain_graph=retain)
        if detach:
            hidden = hidden.detach()
    return runs[0]


def depth_200():
    """depth(loss) at step 200 of the retained loop (the notebook's cell shows it)."""
    found = []
    carried_loop(200, retain=True, each=lambda step, loss: found.append(probes.depth(loss)) if step == 200 else None)
    return found[0]


# --- k-step truncation ---------------------------------------------------------------------------------


class Recurrence:
    """A recurrent computation: ``params`` (name -> leaf), a first state ``h0``, one input per step,
    ``step(h, x)`` giving the next state and ``loss(h, t)`` the loss of the state made at step t (from 0)."""

    def __init__(self, params: Mapping[str, torch.Tensor], h0: torch.Tensor, inputs, step: Callable, loss: Callable):
        self.params = dict(params)
        self.h0 = h0
        self.inputs = list(inputs)
        self.step = step
        self.loss = loss

    def __len__(self):
        return len(self.inputs)

    def __repr__(self):
        shapes = ", ".join(f"{n} {tuple(p.shape)}" for n, p in self.params.items())
        h0 = (
            "(" + ", ".join(str(tuple(t.shape)) for t in self.h0) + ")"
            if isinstance(self.h0, tuple)
            else str(tuple(self.h0.shape))
        )
        return f"Recurrence({len(self.inputs)} steps, params: {shapes}, h0 {h0})"


def detached(state):
    """A state held constant: the tensor detached, or every tensor of a tuple state (an LSTM's (h, c))."""
    return tuple(t.detach() for t in state) if isinstance(state, tuple) else state.detach()


def chunks(steps: int, k: int) -> list[range]:
    """The step indices (from 0) of each chunk: k at a time, the last one shorter if k does not divide."""
    return [range(start, min(start + k, steps)) for start in range(0, steps, k)]


def chunked_grads(seq: Recurrence, k: int) -> list[torch.Tensor]:
    """k-step truncated BPTT by chunks: the gradient of each chunk's summed losses, the state entering
    the chunk held constant, added over the chunks. One tensor per parameter, in ``seq.params`` order."""
    params = list(seq.params.values())
    totals = [torch.zeros_like(p) for p in params]
    state = seq.h0
    for chunk in chunks(len(seq.inputs), k):
        state = state.detach()
        losses = []
        for t in chunk:
            state = seq.step(state, seq.inputs[t])
            losses.append(seq.loss(state, t))
        grads = torch.autograd.grad(torch.stack(losses).sum(), params, allow_unused=True)
        totals = [total if g is None else total + g for total, g in zip(totals, grads)]
    return totals


def window_grads(seq: Recurrence, k: int) -> list[torch.Tensor]:
    """TBPTT(1, k): after each step t, the gradient of that step's loss through steps t-k+1 .. t, the state
    entering step t-k+1 held constant, added over the steps. A recorded graph cannot lose its oldest step, so
    each window is run again from the state kept (detached) where it starts; the forward values are the
    sequence's own. One tensor per parameter, in ``seq.params`` order."""
    params = list(seq.params.values())
    totals = [torch.zeros_like(p) for p in params]
    entering = [detached(seq.h0)]  # the state entering each step, as a constant
    with torch.no_grad():
        for x in seq.inputs:
            entering.append(detached(seq.step(entering[-1], x)))
    for t in range(len(seq.inputs)):
        start = max(0, t - k + 1)
        state = entering[start]
        for j in range(start, t + 1):
            state = seq.step(state, seq.inputs[j])
        grads = torch.autograd.grad(seq.loss(state, t), params, allow_unused=True)
        totals = [total if g is None else total + g for total, g in zip(totals, grads)]
    return totals


def the_loop(w: float = 0.9, steps: int = STEPS) -> Recurrence:
    """The unit's loop as a Recurrence: hidden = hidden * w + 0.1, loss = hidden ** 2."""
    wt = torch.tensor(w, requires_grad=True)
    return Recurrence(
        {"w": wt},
        torch.tensor(1.0),
        [torch.tensor(0.1) for _ in range(steps)],
        step=lambda h, x: h * wt + x,
        loss=lambda h, t: h**2,
    )


def first_w_grad(seq_k) -> float:
    return chunked_grads(*seq_k)[0].item()
