"""What a check is: a class with its own state and one method per event of the run it needs to see.

The observer (:mod:`.observer`) makes one instance of each class in :data:`.checks.CHECKS` per run and, at
each event, calls only the checks whose class overrides that event's method (the lists are built once, when
the run starts: an event no check needs costs nothing). Within an event the checks run in the order of
``CHECKS``; each call is guarded, so that a failure of the doctor's own is counted and skipped, never
raised into the program (module calls, the hottest events, are guarded once for all their checks).

A check reports with ``self.d.add(key, mechanism, line, evidence, fix)`` and reads what the observer keeps for
every check (the parameters optimizers held, the leaves backward reached, parameter names, the step count,
the program's intent: :class:`.observer.Doctor`'s attributes). What only it needs lives in its instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

    from grader.probes.doctor.observer import Doctor


class Backward:
    """One call of ``backward`` or ``autograd.grad``, as the checks see it: ``site`` its line, ``roots`` what it
    was called on, ``graph_roots`` those with a graph, ``walked`` every node under them (the course's
    ``probes.nodes``), ``leaves`` the tensors whose ``AccumulateGrad`` nodes are among them, ``retain``
    whether the graph was retained, ``from_grad`` whether it was ``autograd.grad`` (nothing lands in
    ``.grad``). ``earlier``: the stamps of earlier walks this walk met (:mod:`.carried` fills it, :mod:`.freed`
    reads it). ``notes``: a check's own values for this one call (a backward may run inside another)."""

    __slots__ = ("site", "roots", "graph_roots", "walked", "leaves", "retain", "from_grad", "earlier", "notes")

    def __init__(
        self, site: str, roots: list, graph_roots: list, walked: list, leaves: list, retain: bool, from_grad: bool
    ):
        self.site, self.roots, self.graph_roots, self.walked, self.leaves = site, roots, graph_roots, walked, leaves
        self.retain, self.from_grad = retain, from_grad
        self.earlier: set = set()
        self.notes: dict[str, Any] = {}


class Check:
    """One mechanism's check. Override the events it needs; the others stay no-ops and are never called."""

    def __init__(self, d: Doctor):
        self.d = d

    # -- modules (every call: keep these cheap) --

    def on_module_call(self, module: nn.Module, parent: nn.Module | None) -> None:
        """A module is about to run its forward; ``parent`` is the module whose forward calls it (None: top level)."""

    def on_call_in_backward(self, module: nn.Module) -> None:
        """A module is about to run while a backward runs (a checkpoint recomputing it)."""

    def on_return_in_backward(self, module: nn.Module) -> None:
        """A module called while a backward runs returned."""

    def on_top_call(self, module: nn.Module) -> None:
        """A top-level module call (no module forward active) is about to run."""

    def on_top_return(self, nodes: list, line: str) -> None:
        """A top-level module call returned: ``nodes`` are its outputs' nodes seen for the first time (stamped
        with the step count and the call's ``line`` in their metadata, ``doctor_epoch``)."""

    # -- optimizer steps --

    def on_step(self, opt: torch.optim.Optimizer) -> None:
        """An optimizer is about to step (the observer already counted it and noted what it holds)."""

    def on_step_end(self, opt: torch.optim.Optimizer) -> None:
        """An optimizer step returned."""

    # -- backward --

    def on_backward_start(self, bw: Backward) -> None:
        """A backward (or ``autograd.grad``) is about to run."""

    def on_backward_error(self, bw: Backward, exc: RuntimeError) -> None:
        """That backward raised (the error then reaches the program)."""

    def on_backward_finally(self, bw: Backward) -> None:
        """That backward is over, whether it raised or not."""

    def on_backward_end(self, bw: Backward) -> None:
        """That backward returned (the observer already noted the leaves it reached)."""

    # -- reads and warnings --

    def on_grad_read(self, leaf: torch.Tensor, grad: torch.Tensor) -> None:
        """The program read the gradient of a leaf that no optimizer held at a step."""

    def on_warn(self, message: str) -> None:
        """``warnings.warn`` was called (torch's warnings, before any filter of the program's)."""

    def on_warning_shown(self, message: str) -> None:
        """A warning the program's filters let through is shown."""

    # -- the end --

    def on_program_error(self, exc: BaseException) -> None:
        """The program stopped with ``exc`` (called before every ``conclude``)."""

    def conclude(self, exc: BaseException | None) -> None:
        """The run is over (``exc``: what stopped it, None when it ran through): the findings judged at the end."""


EVENTS = tuple(name for name, value in vars(Check).items() if name.startswith(("on_", "conclude")) and callable(value))


def dispatch(checks: list[Check]) -> dict[str, list]:
    """Event name -> the bound methods of the checks whose class overrides it, in the checks' order."""
    return {
        event: [getattr(c, event) for c in checks if getattr(type(c), event) is not getattr(Check, event)]
        for event in EVENTS
    }
