"""What a check is: a class with its own state and one method per event of the run it needs to see.

The observer (:mod:`.observer`) makes one instance of each class in :data:`.checks.CHECKS` per run and, at
each event, calls only the checks whose class overrides that event's method (the lists are built once, when
the run starts: an event no check needs costs nothing). Within an event the checks run in the order of
``CHECKS``; each call is guarded, so that a failure of the doctor's own is counted and skipped, never
raised into the program (module calls, the hottest events, are guarded once for all their checks).

A check reports with ``self.d.add(key, mechanism, line, evidence, fix)`` and reads what the observer keeps for
every check (the parameters optimizers held, the leaves backward reached, parameter names, the step count,
the program's intent: :class:`DoctorState`'s attributes, which :class:`.observer.Doctor` fills). What only
it needs lives in its instance.
"""

from __future__ import annotations

import weakref
from collections import defaultdict, deque
from typing import Any

import torch
from torch import nn

from grader.probes.doctor.findings import Finding, Mechanism
from grader.probes.doctor.frames import learner_line, traceback_line


class DoctorState:
    """What the observer keeps for every check, and what it does for them: a check reads these on ``self.d``
    (:class:`.observer.Doctor` is one, with the hooks that fill them)."""

    # what the program means, read from what it does: kept by intent.py (its install sets them up)
    inputs: dict[int, weakref.ref]  # id -> a tensor differentiated on purpose (an input, not a parameter)
    leaf_lines: dict[int, tuple]  # id -> (weakref, line) of a plain tensor requiring grad assigned to an attribute
    attr_lines: dict[tuple[int, str], str]  # (id(module), attribute) -> line of a list/tuple/dict of modules
    flag_lines: dict[int, str]  # id(module) -> line of a plain requires_grad attribute assignment
    replaced: dict[int, str]  # id(parameter) -> line: parameters of a module assigned over one with parameters
    rebound: list[tuple]  # (label, old parameter, new tensor, line, module): a Parameter's name bound anew
    optimizer_lines: weakref.WeakKeyDictionary  # optimizer -> where it was built
    inference_lines: list[str]  # where torch.inference_mode was entered (the last 20)
    processes: int  # processes the program started that are not DataLoader workers
    workers: int

    def __init__(self, frozen=(), should_move=()):
        self.frozen = tuple(frozen)
        self.should_move = tuple(should_move)
        self.findings: list[Finding] = []
        self.keys: set = set()
        self.backwards = 0
        self.steps = 0
        self.module_calls = 0
        self.internal_errors = 0  # the doctor's own failures (each one skipped an observation, nothing else)
        self.first_error = ""

    def _start(self) -> None:
        """The per-run state, set when the doctor is entered."""
        # what the observer keeps for every check (a check's own state lives in its instance)
        self.epoch = 0  # optimizer steps so far
        self.site_calls: dict[str, int] = defaultdict(int)  # backward line -> its calls so far (the program's loop)
        self.recent: deque = deque(maxlen=8)  # (weakref of a root, backward number) of the latest backward calls
        self.step_log: deque = deque(maxlen=8)  # (backward calls so far, ids of what the optimizer held) per step
        self.step_line = ""  # where the first optimizer step was called
        self.step_lines: dict[int, str] = {}  # step count -> where that optimizer step was called
        self.optimizers = 0  # optimizer objects seen stepping
        self.optimizer_ids: set[int] = set()
        # parameters are kept (strongly: they live as long as the model anyway) so that the checks at the end
        # still see them after the program's own references are gone; other leaves weakly
        self.held: dict[int, torch.Tensor] = {}  # every parameter an optimizer held at a step
        self.params: dict[int, torch.Tensor] = {}  # every parameter of a top-level module called
        self.reached: dict[int, Any] = {}  # every leaf a backward reached (a Parameter, or a weakref)
        # leaves that are no Parameter: id -> [weakref, first and last optimizer step count it was reached at, shape]
        self.leaf_seen: dict[int, list] = {}
        self.name_of: dict[int, str] = {}  # id(parameter) -> its name in a root module
        self.root_index: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # top-level module -> n
        self.current: dict[str, torch.Tensor] = {}  # declared name -> the parameter under it now
        self.snap: dict[str, torch.Tensor] = {}  # declared name -> its parameter's values when first seen
        self.stack: list = []  # the module forwards running, outermost first
        self.in_backward = 0  # > 0 while a backward runs: a module called then is a checkpoint's recomputation
        self.saved_hooks_seen = False  # saved-tensor hooks (a checkpoint's) were active at a module call
        # backward site -> the node that last first made a gradient non-finite there (nan.py; read by the course's
        # own tools, unit 10's audit and unit 12's find_fault)
        self.nan_origins: dict[str, Any] = {}
        self.explained: set[int] = set()  # ids of tensors a finding already explains (rebound.py): others leave them
        self.anomaly_armed = False
        self.anomaly_before = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
        self._replays: set = set()  # the checks' keys of the replays under anomaly mode still waiting

    # -- finding bookkeeping --

    def line(self) -> str:
        return learner_line()

    def traceback_line(self, exc: BaseException) -> str:
        return traceback_line(exc)

    def guarded(self, fn, *args):
        """Run one of the doctor's own observations; a failure in it is counted, never the program's."""
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - the learner's program must run as it would without us
            self.internal_errors += 1
            self.first_error = self.first_error or f"{type(exc).__name__}: {exc}"
            return None

    def add(self, key, mechanism: Mechanism, line: str, evidence: str, fix: str):
        if key in self.keys:
            return
        self.keys.add(key)
        self.findings.append(Finding(mechanism, line, evidence, fix))

    def declared(self, name: str) -> str | None:
        for kind, names in (("frozen", self.frozen), ("should_move", self.should_move)):
            if any(name == n or name.startswith(n + ".") for n in names):
                return kind
        return None

    def declared_frozen(self, name: str | None) -> bool:
        return name is not None and self.declared(name) == "frozen"

    # -- replays under anomaly mode (nan.py and inert.py ask for one to find a forward line) --

    def replay_next(self, key) -> None:
        """Record the next forward under anomaly mode (check_nan=False: nothing raises, nothing changes)."""
        self._replays.add(key)
        if not self.anomaly_armed:
            self.anomaly_armed = True
            torch.autograd.set_detect_anomaly(True, check_nan=False)

    def replay_done(self, key) -> None:
        """Anomaly mode back as the program had it, once no replay waits."""
        self._replays.discard(key)
        if self.anomaly_armed and not self._replays:
            torch.autograd.set_detect_anomaly(*self.anomaly_before)
            self.anomaly_armed = False


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

    def __init__(self, d: DoctorState):
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
