"""The grad mode where the root was made (unit 04): backward on a tensor with no ``grad_fn`` that does not
require grad (an inference tensor, module calls run with grad disabled, nothing upstream requiring grad),
and a forward that raised "Inference tensors cannot be saved for backward"."""

from __future__ import annotations

import torch

from grader.probes.doctor.base import Backward, Check, DoctorState
from grader.probes.doctor.findings import Mechanism


class GradMode(Check):
    def __init__(self, d):
        super().__init__(d)
        self.nograd_calls: list[tuple[str, str]] = []  # (module class, line) run with grad off, the last 50

    def on_module_call(self, module, parent) -> None:
        """A module call with grad disabled, kept to name where a root without graph came from."""
        if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
            if any(p.requires_grad for p in module.parameters()):
                self.nograd_calls.append((type(module).__name__, self.d.line()))
                del self.nograd_calls[:-50]

    def on_backward_start(self, bw: Backward) -> None:
        for r in bw.roots:
            if isinstance(r, torch.Tensor) and r.grad_fn is None and not r.requires_grad:
                no_grad_root(self.d, r, bw.site, self.nograd_calls)

    def on_program_error(self, exc) -> None:
        inference_saved(self.d, exc)


def no_grad_root(d: DoctorState, root, site, nograd_calls):
    if root.is_inference():
        why = "it is an inference tensor: it was made under torch.inference_mode()"
    elif nograd_calls:
        cls, line = nograd_calls[-1]
        why = f"{len(nograd_calls)} module call(s) ran with grad disabled, the last {cls} at {line or '?'}"
    else:
        why = "no tensor it was computed from required grad (a torch.no_grad block, .detach() or .item() cut it)"
    d.add(
        ("nograd", site),
        Mechanism.NO_GRAD_ROOT,
        site,
        f"backward was called on a tensor with no grad_fn and requires_grad=False: {why}",
        "compute the loss with grad enabled: move it out of torch.no_grad()/inference_mode() (or model.eval "
        "wrappers that disable grad) and keep .detach()/.item() for logging only",
    )


def inference_saved(d: DoctorState, exc):
    """The program's error: an inference tensor given to an operation that records a graph. The line to
    edit is where inference mode was entered last (where the tensor was made), else where it raised."""
    if isinstance(exc, RuntimeError) and "Inference tensors cannot be saved for backward" in str(exc):
        raised = d.traceback_line(exc)
        made = d.inference_lines[-1] if d.inference_lines else ""
        d.add(
            ("inference-saved", raised),
            Mechanism.NO_GRAD_ROOT,
            made or raised,
            f"an operation that records a graph (at {raised or '?'}) was given a tensor made under "
            "torch.inference_mode()" + (f" (entered at {made})" if made else "") + ": an inference tensor "
            "cannot be saved for backward",
            "make the tensors you train on outside inference_mode (torch.no_grad() for frozen features, or "
            ".clone() the inference tensor first)",
        )
