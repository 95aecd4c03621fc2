"""Module backward hooks (unit 03) and checkpointing (unit 09b), and torch's own warnings about the mechanisms
(seen as torch gives them, before any filter of the program's, so even silenced ones are reported):

* a legacy ``register_backward_hook`` on a module whose forward makes several nodes (torch's warning);
* a reentrant checkpoint whose inputs need no grad (torch's warning);
* a full backward hook followed by an in-place op on the module's output (the error torch raises in
  forward, read from the program's exception);
* state updated twice by recomputation: a module called again while a backward runs (a checkpoint's
  recomputation) whose buffers it writes again (BatchNorm's running statistics, ``num_batches_tracked``).
  A buffer counts as written when its version moved and, once that backward is over, its value differs
  from the one before the recomputation: a ``context_fn`` that snapshots and restores the buffers around
  the recomputation writes them back (the version moves, the value does not), and is no finding. The
  doctor never opens a checkpoint's saved tensors itself.
"""

from __future__ import annotations

import torch

from grader.probes.doctor.base import Check, DoctorState
from grader.probes.doctor.findings import Mechanism

# (a phrase of torch's message, the mechanism, what it means, fix)
TORCH_WARNINGS = (
    (
        "non-full backward hook",
        Mechanism.HOOKS_CHECKPOINT,
        "a module backward hook registered with register_backward_hook sees only the last autograd node "
        "of the module's forward, so its grad_input is not the module's input gradient",
        "register_full_backward_hook (and no in-place op on the module's output or input)",
    ),
    (
        "None of the inputs have requires_grad=True",
        Mechanism.HOOKS_CHECKPOINT,
        "a reentrant checkpoint got inputs none of which requires grad: its output has no graph, so the "
        "parameters inside the checkpointed block get no gradient",
        "checkpoint(..., use_reentrant=False), or give the block an input that requires grad",
    ),
)


class Hooks(Check):
    def __init__(self, d):
        super().__init__(d)
        self.recomputing: list = []  # (module, its buffers, versions and values, line) of calls inside backward
        self.recomputed: list = []  # the same, once the recomputation returned: judged when the backward ends
        self.full_hooked = ""  # the last module called with a full backward hook on it, and where

    def on_module_call(self, module, parent) -> None:
        if module._backward_hooks and getattr(module, "_is_full_backward_hook", None):
            self.full_hooked = f"{type(module).__name__} at {self.d.line() or '?'}"

    def on_call_in_backward(self, module) -> None:
        before_recomputation(self.d, module, self.recomputing)

    def on_return_in_backward(self, module) -> None:
        """The recomputed module returned: its entry waits for the end of the backward (a context_fn may
        restore the buffers after the recomputation returns)."""
        while self.recomputing and self.recomputing[-1][0] is module:
            self.recomputed.append(self.recomputing.pop())

    def on_backward_finally(self, bw) -> None:
        if self.recomputed:
            done, self.recomputed = self.recomputed, []
            check_recomputed(self.d, done)

    def on_warn(self, message: str) -> None:
        on_torch_warning(self.d, message)

    def on_program_error(self, exc) -> None:
        on_program_error(self.d, exc, self.full_hooked)


def on_torch_warning(d: DoctorState, message: str):
    for phrase, mechanism, meaning, fix in TORCH_WARNINGS:
        if phrase in message:
            line = d.line()
            first = message.split(". ")[0].strip()
            d.add((mechanism, phrase), mechanism, line, f'torch warned "{first}": {meaning}', fix)


def on_program_error(d: DoctorState, exc, full_hooked: str):
    """The error the program stopped with: an in-place write on an output a full backward hook wrapped."""
    text = str(exc)
    if isinstance(exc, RuntimeError) and "BackwardHookFunction" in text and "modified inplace" in text:
        line = d.traceback_line(exc)
        d.add(
            ("full-hook-inplace", line),
            Mechanism.HOOKS_CHECKPOINT,
            line,
            "an in-place op wrote a tensor that a full backward hook (register_full_backward_hook, or the global "
            "register_module_full_backward_hook) wrapped: the hook passes a module's inputs and outputs through "
            "BackwardHookFunction, whose outputs are views that may not be written in place"
            + (f" (the last hooked module called: {full_hooked})" if full_hooked else ""),
            "make the op after the hooked module out of place (nn.ReLU(inplace=False), x = x + ...), or hook a "
            "module whose output nothing writes in place (or use a forward hook with tensor.register_hook)",
        )


def before_recomputation(d: DoctorState, module, recomputing: list):
    """A module called while a backward runs: remember its buffers' versions and values (a checkpoint
    recomputes it)."""
    if not module.training:
        return
    buffers = [
        (name, b, b._version, b.detach().clone()) for name, b in module.named_buffers(recurse=False) if b is not None
    ]
    if buffers:
        recomputing.append((module, buffers, d.line()))


def check_recomputed(d: DoctorState, done: list):
    """After a backward: buffers a recomputation wrote and that did not get their value back."""
    for module, buffers, line in done:
        written = [(name, v, b._version) for name, b, v, before in buffers if b._version != v and not _same(b, before)]
        if not written:
            continue
        names = ", ".join(f"{name} (version {v} -> {now})" for name, v, now in written[:4])
        d.add(
            ("recomputed-state", type(module).__name__, line),
            Mechanism.HOOKS_CHECKPOINT,
            line,
            f"{type(module).__name__} ran again inside backward (a checkpoint recomputing its forward) and wrote "
            f"its buffers again: {names}; its state is updated twice per training step",
            "keep modules that update state in forward (BatchNorm's running statistics) outside the checkpointed "
            "block, or restore their buffers around the recomputation (checkpoint's context_fn)",
        )


def _same(buffer, before) -> bool:
    return buffer.shape == before.shape and bool(torch.equal(buffer.detach(), before))
