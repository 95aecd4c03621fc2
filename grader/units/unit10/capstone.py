"""The capstone's audit kit: training programs nobody in the room wrote, a way to walk them, and proofs.

A :class:`TrainingProgram` is the source of a small training script: data, two or three parameters, an
optimizer named ``opt``, and one top-level ``for step in range(N):`` loop whose body computes ``loss``,
calls ``loss.backward()`` and ``opt.step()``. :func:`render` writes one from a :class:`Spec` with at most
one planted :class:`Fault` (:data:`KINDS`); the exercise's generated cases
(:func:`grader.units.unit10.cases.generate_audit_case`) keep which fault, and where, on the case object, and
it never reaches the :class:`TrainingProgram` a learner is given.

The tools read torch's record, never the generator's label:

* :func:`step_through` runs a program one statement at a time, the loop unrolled, and keeps a
  :class:`StatementEvent` per statement run: its line in :meth:`TrainingProgram.listing`, the step, the
  value it bound with the three flags of unit 01 as they were then, the parameters' ``.grad`` right after
  it, the saved tensors that had gone stale by then (unit 07; read without opening a checkpoint's), and
  what its torch operations did (the parameters they took as inputs and the cuts they made,
  :mod:`grader.units.unit10.ops`). A :class:`Run` hands out each step's loss, a :class:`~grader.probes.traces.Trace` of the program up to a step (for ``first_broken_edge``,
  unit 04), and a table of it all.
* :func:`audit` is the grader's audit: the checklist of the capstone asked in order (rebound
  parameter, reachability, stale saves, graphs carried across steps, the run's own error as the course's
  doctor names it, a non-finite loss or gradient, gradients left in ``.grad``) on two steps run under the
  doctor (:mod:`grader.probes.doctor`); it returns an :class:`AuditFinding`. Reachability follows the
  names statements read and bind and, where a function or a module hides a parameter, the operations a
  statement ran; a non-finite gradient is traced to the statement that made the doctor's node. A statement's bound names are
  those it binds in the program (each name of a tuple unpacking; not a comprehension's own variable).
* :func:`prove` runs a (repaired) source whole and measures the quantities a repair must restore:
  it runs, every parameter moves, the loss's depth is the same at every step (so it holds where no step was
  measured), and every step's gradients equal an independent reference (:meth:`TrainingProgram.reference`, computed with
  ``torch.autograd.grad`` from the program's specification, not from its text).
"""

from __future__ import annotations

import ast
import math
import random
import traceback
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.optim.optimizer as _optimizer

from grader import probes
from grader.engine import syntax, torch_state
from grader.engine.kinds import stable_part
from grader.probes import traces
from grader.units.unit10 import ops

# --- the fault kinds ---------------------------------------------------------------------------

DETACHED = "detached stage"
NO_GRAD = "no_grad encoder"
STALE = "stale graph"
IN_PLACE = "in-place on a saved tensor"
CARRIED = "carried state leak"
REBOUND = "rebound parameter"
NOT_CLEARED = "gradients never cleared"
NO_FAULT = "no fault"
KINDS = (DETACHED, NO_GRAD, STALE, IN_PLACE, CARRIED, REBOUND, NOT_CLEARED)
VERDICTS = KINDS + (NO_FAULT,)
# the audit also names a non-finite loss or gradient at step 1; the generator never plants one, so it is no
# verdict a learner is asked for
NONFINITE = "non-finite value"

# --- the quantities a repair restores ----------------------------------------------------------

RUNS = "runs without an error"
MOVES = "every parameter moves"
DEPTH = "depth is the same at every step"
GRADS = "every step's gradients equal the reference"
FACTS = (RUNS, MOVES, DEPTH, GRADS)
TOLERANCE = (1e-5, 1e-4)  # absolute, relative: how close a gradient must be to the reference


# =================================================================================================
# Programs
# =================================================================================================


@dataclass(frozen=True)
class TrainingProgram:
    """A training script as text. ``params`` names its parameters in the order the optimizer holds them."""

    source: str
    params: tuple = ()
    steps: int = 0
    title: str = "program"
    _spec: Any = field(default=None, repr=False, compare=False)

    @property
    def lines(self) -> list[str]:
        """The source's lines; line n of :meth:`listing` is ``lines[n - 1]``."""
        return self.source.split("\n")

    def listing(self) -> str:
        """The source with line numbers, as audits refer to it."""
        width = len(str(len(self.lines)))
        return "\n".join(f"{n:>{width}}  {text}" for n, text in enumerate(self.lines, start=1))

    def inline(self) -> str:
        """The numbered source on one line, for a question's prompt."""
        return " | ".join(f"{n}: {text.strip()}" for n, text in enumerate(self.lines, start=1))

    def run(self) -> dict:
        """Run the whole program as written (it may raise) and return its names."""
        ns: dict[str, Any] = {"torch": torch}
        with torch_state.clean_room():
            exec(compile(self.source, f"<{self.title}>", "exec"), ns)
        ns.pop("__builtins__", None)
        return ns

    def reference(self) -> list[dict[str, torch.Tensor]]:
        """The gradient of each step's loss for every parameter, from the specification the program was
        written from: the intended computation, differentiated with ``torch.autograd.grad`` and updated
        by plain SGD, the carried state (if any) entering each step as a constant."""
        if self._spec is None:
            raise ValueError("this program was not generated from a specification; it has no reference")
        with torch_state.clean_room():
            return reference_grads(self._spec)

    def with_source(self, source: str, title: str | None = None) -> TrainingProgram:
        """The same program (parameters, steps, reference) with another text, e.g. a repair."""
        return replace(self, source=source, title=title or self.title)

    def __repr__(self):
        return f"<{self.title}: {len(self.lines)} lines, {self.steps} steps, parameters {', '.join(self.params)}>"


# =================================================================================================
# Walking a program statement by statement
# =================================================================================================


@dataclass(repr=False, eq=False)
class StatementEvent(traces.Step):
    """One statement as it ran. ``number`` is its first line in the listing, ``line`` its text.

    ``step`` is 0 before the loop and 1, 2, ... inside it. ``grads`` holds each parameter's ``.grad``
    right after the statement (a copy, or None); ``stale`` the saved tensors, in every graph a name
    held at that moment, whose version had moved since they were saved. ``error`` is set on the
    statement that raised (the run stops there).
    """

    last: int = 0
    step: int = 0
    names: tuple = ()
    grads: dict = field(default_factory=dict)
    stale: tuple = ()
    error: BaseException | None = None
    bound: dict = field(default_factory=dict)  # every name the statement bound -> its value then
    touched: tuple = ()  # the parameters a torch operation of the statement took as an input (ops.OpWatch)
    cuts: tuple = ()  # the cuts its operations made on tensors that require grad, first made first
    made: tuple = ()  # the nodes its torch operations recorded, in order

    def value(self, name: str):
        """What the statement bound to ``name`` (``a, b = ...`` binds two)."""
        return self.bound.get(name, self.tensor if name == self.name else None)

    __eq__ = object.__eq__  # events are compared by identity, never by their tensors
    __hash__ = object.__hash__

    @property
    def backward(self) -> bool:
        """Does this statement call ``.backward(...)``?"""
        return ".backward(" in self.line

    def __repr__(self):
        where = "before the loop" if self.step == 0 else f"step {self.step}"
        shown = self.line if "\n" not in self.line else self.line.split("\n")[0] + " …"
        return f"StatementEvent(line {self.number}, {where}, {shown!r})"


class Run:
    """What :func:`step_through` saw: every statement run, in order, and the names at the end."""

    def __init__(self, program: TrainingProgram, events: list[StatementEvent], names: dict, after: dict[int, dict]):
        self.program = program
        self.events = events
        self.names = names
        self._after = after  # step -> a shallow copy of the names when that step ended

    @property
    def error(self) -> StatementEvent | None:
        """The statement that raised, or None."""
        return self.events[-1] if self.events and self.events[-1].error is not None else None

    @property
    def optimizer(self):
        for value in self.names.values():
            if isinstance(value, torch.optim.Optimizer):
                return value
        return None

    def held(self) -> list[torch.Tensor]:
        """The tensors the optimizer updates, in its order."""
        opt = self.optimizer
        return [] if opt is None else [p for group in opt.param_groups for p in group["params"]]

    def step(self, n: int) -> list[StatementEvent]:
        """The statements run at step ``n`` (0: before the loop)."""
        return [e for e in self.events if e.step == n]

    def loss(self, n: int):
        """The tensor ``loss`` held when step ``n`` computed it (None if it did not)."""
        found = None
        for e in self.step(n):
            if "loss" in e.names and e.error is None:
                found = e.value("loss")
        return found

    def backward_event(self, n: int) -> StatementEvent | None:
        return next((e for e in self.step(n) if e.backward), None)

    def before(self, event: StatementEvent) -> StatementEvent | None:
        """The statement run just before ``event``."""
        i = self.events.index(event)
        return self.events[i - 1] if i else None

    def bound_before(self, event: StatementEvent, name: str) -> StatementEvent | None:
        """The latest statement before ``event`` that bound ``name`` (in any step)."""
        i = self.events.index(event)
        return next((e for e in reversed(self.events[:i]) if name in e.names), None)

    def trace(self, n: int) -> traces.Trace:
        """The statements up to the end of step ``n`` as a trace, so unit 04's tools work on it:
        ``traces.first_broken_edge(run.trace(1), "w_enc")``; a step's ``number`` is its line."""
        steps = [e for e in self.events if e.step <= n and e.error is None]
        return traces.Trace(steps=steps, names=dict(self._after.get(n, self.names)), source=self.program.source)

    def depths(self) -> list[int]:
        """probes.depth of each step's loss, for the steps that computed one."""
        out = []
        for n in range(1, self.events[-1].step + 1 if self.events else 1):
            loss = self.loss(n)
            if isinstance(loss, torch.Tensor):
                out.append(probes.depth(loss))
        return out

    def table(self, step: int | None = None) -> str:
        """One row per statement run: line, step, the flags of the value it bound, stale saves so far."""
        rows = [
            f"{'line':>4}  {'step':>4}  {'statement':<38}  {'requires_grad':<13}  {'is_leaf':<7}  "
            f"{'grad_fn':<18}  stale"
        ]
        for e in self.events:
            if step is not None and e.step not in (step,):
                continue
            text = traces._one_line(e.line)
            text = text if len(text) <= 38 else text[:37] + "…"
            if e.error is not None:
                rows.append(
                    f"{e.number:>4}  {e.step:>4}  {text:<38}  raised {type(e.error).__name__}: {stable_part(e.error)}"
                )
                continue
            if isinstance(e.tensor, torch.Tensor) and e.name is not None:
                flags = f"{e.requires_grad!s:<13}  {e.is_leaf!s:<7}  {e.grad_fn:<18}"
            else:
                flags = f"{'':<13}  {'':<7}  {'':<18}"
            rows.append(f"{e.number:>4}  {e.step:>4}  {text:<38}  {flags}  {len(e.stale) or ''}".rstrip())
        return "\n".join(rows)

    def __repr__(self):
        last = self.events[-1].step if self.events else 0
        ended = f"raised at line {self.error.number}" if self.error else "ran"
        return f"<Run of {self.program.title}: {len(self.events)} statements, {ended}, up to step {last}>"


def _stale_saves(values) -> tuple:
    """The stale saved tensors in the graphs under ``values`` (each node once). Read with the probes, which
    unpack a saved slot only when it holds a tensor: a checkpoint's slots hold its own objects, and
    unpacking them would run the checkpointed forward again (BatchNorm's statistics, a ``context_fn``)."""
    roots = [v.grad_fn for v in values if isinstance(v, torch.Tensor) and v.grad_fn is not None]
    seen: set = set()
    found = []
    for root in roots:
        for fn in probes.nodes(root):
            if fn in seen:
                continue
            seen.add(fn)
            found.extend(s for s in probes.saved_in(fn) if s.stale)
    return tuple(found)


def _statement_text(source: str, stmt: ast.stmt) -> str:
    text = ast.get_source_segment(source, stmt) or ""
    lines = text.split("\n")
    pad = stmt.col_offset
    return "\n".join([lines[0]] + [l[pad:] if l[:pad].strip() == "" else l for l in lines[1:]])


_SCOPES = (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp, ast.Lambda, ast.FunctionDef)


def _bound_names(stmt: ast.stmt) -> list[str]:
    """The names a statement binds in the program's namespace, in source order (tuple unpacking binds each
    name; a comprehension's or a lambda's own variables, ``t`` in ``sum(t for t in terms)``, are not)."""
    found: list[str] = []
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop(0)
        if isinstance(node, _SCOPES) and node is not stmt:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in found:
            found.append(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _loop(tree: ast.Module) -> ast.For:
    loops = [s for s in tree.body if isinstance(s, ast.For)]
    if len(loops) != 1 or not isinstance(loops[0].target, ast.Name):
        raise ValueError("an audited program has exactly one top-level loop, `for step in range(N):`")
    return loops[0]


def step_through(program: TrainingProgram | str, steps: int | None = None) -> Run:
    """Run ``program`` one statement at a time (the loop's body statement by statement, for ``steps``
    iterations or all of them) and keep a :class:`StatementEvent` for each. Stops at the first statement that
    raises; that event carries the exception. Runs in torch's default state."""
    if isinstance(program, str):
        program = TrainingProgram(program, title="your program")
    source = program.source
    tree = syntax.parse(source)
    loop = _loop(tree)
    ns: dict[str, Any] = {"torch": torch}
    events: list[StatementEvent] = []
    after: dict[int, dict] = {}
    filename = f"<{program.title}>"

    def grads_now() -> dict:
        out = {}
        for name in program.params:
            t = ns.get(name)
            if isinstance(t, torch.Tensor):
                out[name] = None if t.grad is None else t.grad.detach().clone()
        return out

    def one(stmt: ast.stmt, step: int) -> bool:
        read_first = [n for n in traces._read(stmt) if n in ns and not isinstance(ns[n], type(torch))]
        code = syntax.compile_tree(ast.Module(body=[stmt], type_ignores=[]), filename, "exec")
        event = StatementEvent(
            number=stmt.lineno,
            line=_statement_text(source, stmt),
            name=None,
            tensor=None,
            inputs=tuple(read_first),
            last=stmt.end_lineno or stmt.lineno,
            step=step,
        )
        watch = ops.OpWatch({name: ns.get(name) for name in program.params})
        try:
            with watch:
                exec(code, ns)
        except Exception as exc:  # torch raised: that is the observation
            event.error = exc
            events.append(event)
            return False
        finally:
            event.touched, event.cuts, event.made = tuple(watch.touched), tuple(watch.cuts), tuple(watch.made)
        event.names = tuple(_bound_names(stmt))
        event.name = event.names[-1] if event.names else None
        event.tensor = ns.get(event.name) if event.name else None
        event.bound = {n: ns.get(n) for n in event.names}
        if isinstance(event.tensor, torch.Tensor):
            event.requires_grad, event.is_leaf = event.tensor.requires_grad, event.tensor.is_leaf
            event.grad_fn = probes.node_name(event.tensor.grad_fn)
        event.grads = grads_now()
        event.stale = _stale_saves(ns.values())
        events.append(event)
        return True

    with torch_state.clean_room():
        ok = True
        for stmt in tree.body:
            if stmt is not loop:
                ok = one(stmt, 0)
                if not ok:
                    break
                continue
            after[0] = dict(ns)
            iterable = eval(syntax.compile_tree(ast.Expression(loop.iter), filename, "eval"), ns)
            for index, value in enumerate(iterable, start=1):
                if steps is not None and index > steps:
                    break
                ns[loop.target.id] = value
                for body in loop.body:
                    ok = one(body, index)
                    if not ok:
                        break
                after[index] = dict(ns)
                if not ok:
                    break
            if not ok:
                break
    ns.pop("__builtins__", None)
    return Run(program, events, ns, after)


# =================================================================================================
# The grader's audit
# =================================================================================================


@dataclass
class AuditFinding:
    """A diagnosis: the fault kind, the statement it sits in (None for no fault), and the evidence."""

    kind: str
    event: StatementEvent | None = None
    evidence: str = ""

    @property
    def line(self) -> int | None:
        return None if self.event is None else self.event.number

    @property
    def last(self) -> int | None:
        return None if self.event is None else self.event.last

    def __repr__(self):
        where = "" if self.event is None else f" at line {self.line}"
        return f"<{self.kind}{where}: {self.evidence}>"


def _nonzero(grad) -> bool:
    return isinstance(grad, torch.Tensor) and bool(grad.detach().abs().sum() > 0)


def _watched_run(program: TrainingProgram):
    """Two steps of ``program`` under the course's doctor (:mod:`grader.probes.doctor`): the run, and the
    doctor (None when a doctor the caller started is already watching)."""
    from grader.probes.doctor import doctor

    watching = doctor(report=False)
    try:
        watching.__enter__()
    except RuntimeError:  # one doctor at a time: the caller's is watching, the audit reads torch alone
        return step_through(program, steps=2), None
    try:
        run = step_through(program, steps=2)
    finally:
        watching.__exit__(None, None, None)
    return run, watching


def _finite(t) -> bool:
    return not isinstance(t, torch.Tensor) or not t.is_floating_point() or bool(torch.isfinite(t.detach()).all())


def _cut_inside(run: Run, upto: list, loss_at: int, name: str):
    """The statement that cut ``name``'s path where its text shows neither: one of step 1 (up to its loss)
    whose torch operations took the parameter as an input while none of the values it bound reaches it,
    and that the loss reads from (through the names statements bind). None when there is none."""
    needed, todo = set(), ["loss"]
    for e in reversed(upto[: loss_at + 1]):
        if any(n in todo or n in needed for n in e.names):
            needed.update(e.names)
            todo.extend(e.inputs)
    param = next((e.value(name) for e in reversed(upto[: loss_at + 1]) if name in e.names), None)
    for e in upto[:loss_at]:
        if name not in e.touched or not needed & set(e.names):
            continue
        if not any(traces.reaches(e.value(n), param) for n in e.names):
            return e
    return None


def _nonfinite(run: Run, watching) -> AuditFinding | None:
    """Step 1's loss, or a gradient its backward left, non-finite: the statement that made it."""
    upto = run.step(1)
    loss1 = run.loss(1)
    if not _finite(loss1):
        first = next((e for e in upto if any(not _finite(v) for v in e.bound.values())), None)
        return AuditFinding(
            NONFINITE, first, "step 1's loss is not finite; this statement made the first non-finite value"
        )
    bw = run.backward_event(1)
    if bw is None or bw.error is not None:
        return None
    bad = [n for n, g in bw.grads.items() if not _finite(g)]
    if not bad:
        return None
    origins = list(watching.nan_origins.values()) if watching is not None else []
    origin = origins[0] if origins else None
    made = None
    if origin is not None:
        made = next(
            (
                e
                for e in upto[: upto.index(bw)]
                if any(isinstance(v, torch.Tensor) and origin in probes.nodes(v) for v in e.bound.values())
            ),
            None,
        )
    node = f"; {probes.node_name(origin)} turned finite gradients non-finite" if origin is not None else ""
    return AuditFinding(
        NONFINITE,
        made or bw,
        f"step 1's loss is finite, but its backward left non-finite entries in {', '.join(bad)}.grad{node} "
        "(a branch masked out in forward still sends 0 * inf back)",
    )


def audit(program: TrainingProgram | Run) -> AuditFinding:
    """The capstone's checklist, asked in order, on two steps of the program run under the course's doctor.
    Every answer is read from torch's record (identity, reachability, saved-tensor versions after every
    statement of step 1, including those between two backward calls, shared nodes, non-finite values,
    ``.grad``); a program that raises is named by the mechanism the doctor measured on that error, never
    called clean. A cut inside a function or a module is found from the operations each statement ran."""
    run, watching = (program, None) if isinstance(program, Run) else _watched_run(program)
    said = {f.mechanism.value for f in watching.findings} if watching is not None else set()
    params = run.program.params
    loss1 = run.loss(1)
    if not isinstance(loss1, torch.Tensor):
        where = f" (line {run.error.number} raised first)" if run.error else ""
        raise ValueError(f"the program computed no loss at step 1{where}")
    held = run.held()
    upto = run.step(0) + run.step(1)
    loss_at = max(i for i, e in enumerate(upto) if "loss" in e.names)

    # 1. the tensor each name held when step 1's loss was computed: is it the one the optimizer updates?
    for name in params:
        binding = next((e for e in reversed(upto[: loss_at + 1]) if name in e.names), None)
        if binding is not None and not any(binding.value(name) is p for p in held):
            return AuditFinding(REBOUND, binding, f"{name} as the loss used it is not a tensor the optimizer holds")

    # 2. does step 1's loss reach every parameter? if not, the first broken edge and what cut it: read from the
    # names statements read and bind, or, where a function or a module hides the parameter, from the
    # operations each statement ran; the cut is the one its operations made (else the one its text shows)
    tr = run.trace(1)
    for name in params:
        edge = traces.first_broken_edge(tr, name)
        binding = next((e for e in reversed(upto[: loss_at + 1]) if name in e.names), None)
        if edge is None and binding is not None and not traces.reaches(loss1, binding.value(name)):
            edge = _cut_inside(run, upto, loss_at, name)
            if edge is None:  # torch says the path stops, and no statement shows where: never "no fault"
                raise ValueError(f"step 1's loss does not reach {name}, and no statement this audit reads cut it")
        if edge is not None:
            text = traces.cut_kind(edge.line)
            made = getattr(edge, "cuts", ())
            kind = text if text in made or not made else made[0]
            if kind == traces.DETACHED:
                return AuditFinding(DETACHED, edge, f"step 1's loss does not reach {name}; its path stops at a detach")
            if kind == traces.NO_GRAD:
                return AuditFinding(NO_GRAD, edge, f"step 1's loss does not reach {name}; its path stops in no_grad")
            raise ValueError(
                f"{name}'s path stops at line {edge.number}, by no cut this audit knows"
                + (f" ({kind})" if kind else "")
            )

    # 3. saved tensors made stale in step 1 before its last backward (between two backward calls too; after
    # the last one the optimizer's step writes the parameters, which every graph still alive saved)
    step1 = run.step(1)
    last_backward = max((i for i, e in enumerate(step1) if e.backward), default=len(step1))
    for e in step1[:last_backward]:
        if e.error is not None:
            break
        if e.backward:
            continue
        if e.stale:
            return AuditFinding(IN_PLACE, e, f"after this statement {e.stale[0].node} holds a stale saved tensor")

    # 4. does step 2's loss reach a graph made before the loop, or in step 1?
    for _reader, name, b in crossings(run, 2)[:1]:
        when = "before the loop" if b.step == 0 else f"at step {b.step}"
        return AuditFinding(
            STALE if b.step == 0 else CARRIED,
            b,
            f"step 2 reads {name} as bound {when}, and its loss reaches that graph",
        )

    # the run raised and none of the checks above named why: the doctor's measurement on that error
    error = run.error
    if error is not None and error.step <= 2:
        if "inplace-on-saved" in said:
            return AuditFinding(IN_PLACE, error, f"line {error.number} raised: a saved tensor was written in place")
        if said & {"freed-graph", "carried-state"}:
            return AuditFinding(STALE, error, f"line {error.number} raised: it goes back through a freed graph")
        raise ValueError(
            f"line {error.number} raised {type(error.error).__name__}: {stable_part(error.error)}; "
            "no fault this audit knows"
        )

    # 5. a non-finite loss, or a gradient step 1's backward made non-finite (the doctor's node, where it saw one)
    found = _nonfinite(run, watching)
    if found is not None:
        return found

    # 6. is .grad clear when step 2's backward adds into it?
    bw = run.backward_event(2)
    if bw is not None:
        prior = run.before(bw)
        left = [n for n, g in prior.grads.items() if _nonzero(g)]
        if left:
            return AuditFinding(NOT_CLEARED, bw, f"{', '.join(left)}.grad still held step 1's gradient")
    return AuditFinding(NO_FAULT, None, "every check came back clean")


def crossings(run: Run, n: int = 2) -> list[tuple[StatementEvent, str, StatementEvent]]:
    """Where step ``n`` reads, with its graph, a value bound before it: (the statement of step ``n`` that
    reads it, the name, the statement that bound it, before the loop or in an earlier step), for every
    such value whose graph step ``n``'s loss reaches. In program order, up to the loss.

    A value kept in a list or a dict is bound by no name of its own: where step ``n`` reads such a container,
    the statement that made what it reads is the last statement before step ``n`` whose operations recorded
    a node step ``n``'s loss reaches (``StatementEvent.made``)."""
    loss = run.loss(n)
    if not isinstance(loss, torch.Tensor):
        return []
    reached = set(probes.nodes(loss))
    earlier = [e for e in run.events if e.step < n]
    found = []
    for e in run.step(n):
        for name in e.inputs:
            b = run.bound_before(e, name)
            if b is None or b.step >= n:
                continue
            value = b.value(name)
            if isinstance(value, torch.Tensor):
                if value.grad_fn is not None and value.grad_fn in reached:
                    found.append((e, name, b))
            elif isinstance(value, (list, tuple, dict)):
                maker = next((m for m in reversed(earlier) if any(node in reached for node in m.made)), None)
                if maker is not None:
                    found.append((e, name, maker))
        if "loss" in e.names:
            break
    return found


def backward_places(program: TrainingProgram):
    """Run ``program`` whole, yielding "at step n's backward" before each statement that calls backward:
    the experiment of an error question (the place torch raised in is the answer)."""
    tree = syntax.parse(program.source)
    loop = _loop(tree)
    ns: dict[str, Any] = {"torch": torch}
    filename = f"<{program.title}>"
    for stmt in tree.body:
        if stmt is not loop:
            exec(syntax.compile_tree(ast.Module(body=[stmt], type_ignores=[]), filename, "exec"), ns)
            continue
        for index, value in enumerate(
            eval(syntax.compile_tree(ast.Expression(loop.iter), filename, "eval"), ns), start=1
        ):
            ns[loop.target.id] = value
            for body in loop.body:
                if ".backward(" in _statement_text(program.source, body):
                    yield f"at step {index}'s backward"
                exec(syntax.compile_tree(ast.Module(body=[body], type_ignores=[]), filename, "exec"), ns)


def checklist(run: Run) -> str:
    """The audit's readings, one line per item, as text (shown beside a failing case)."""
    lines = []
    params = run.program.params
    if run.error is not None:
        e = run.error
        where = "before the loop" if e.step == 0 else f"at step {e.step}"
        lines.append(f"raised: line {e.number} {where}, {type(e.error).__name__}: {stable_part(e.error)}")
    loss1 = run.loss(1)
    if isinstance(loss1, torch.Tensor):
        held = run.held()
        tr = run.trace(1)
        used = {}
        for name in params:
            binding = next((s for s in reversed(tr.steps) if name in getattr(s, "names", ())), None)
            used[name] = binding
        rebound = [n for n, b in used.items() if b is not None and not any(b.tensor is p for p in held)]
        lines.append(
            "step 1's parameters are the optimizer's: " + ("yes" if not rebound else "no, not " + ", ".join(rebound))
        )
        reached = [n for n in params if used.get(n) is not None and traces.reaches(loss1, used[n].tensor)]
        lines.append(
            "step 1's loss reaches: "
            + (", ".join(reached) or "none")
            + ("" if len(reached) == len(params) else "; not " + ", ".join(n for n in params if n not in reached))
        )
        stale = next((e for e in run.step(1) if e.stale and not e.backward), None)
        bw1 = run.backward_event(1)
        if stale is not None and (bw1 is None or run.events.index(stale) < run.events.index(bw1)):
            lines.append(f"stale saved tensors before step 1's backward: from line {stale.number} on")
        else:
            lines.append("stale saved tensors before step 1's backward: none")
    depths = run.depths()
    if depths:
        lines.append("depth of each step's loss: " + ", ".join(map(str, depths)))
    if isinstance(run.loss(2), torch.Tensor):
        found = crossings(run, 2)
        lines.append(
            "step 2's loss reaches an earlier graph: "
            + (
                "no"
                if not found
                else "; ".join(
                    f"{name} as bound at line {b.number} " + ("before the loop" if b.step == 0 else f"at step {b.step}")
                    for _, name, b in found
                )
            )
        )
    bw = run.backward_event(2)
    if bw is not None:
        grads = run.before(bw).grads
        lines.append(
            ".grad just before step 2's backward: "
            + ", ".join(
                f"{n} {'None' if g is None else ('zero' if not _nonzero(g) else 'nonzero')}" for n, g in grads.items()
            )
        )
    return "\n".join(lines)


# =================================================================================================
# Proving a repair by the quantities it restores
# =================================================================================================


@dataclass
class Proof:
    """What :func:`prove` measured on one run of a source."""

    facts: frozenset
    error: str = ""
    depths: list = field(default_factory=list)
    matches: list = field(default_factory=list)  # per opt.step: do the gradients equal the reference?
    moved: dict = field(default_factory=dict)
    losses: list = field(default_factory=list)
    steps: int = 0  # opt.step() calls seen
    expected_steps: int = 0

    def details(self) -> list[str]:
        out = []
        if self.error:
            out.append(f"raised {self.error}")
        out.append(f"opt.step() ran {self.steps} of {self.expected_steps} times")
        if self.depths:
            out.append("depths " + ", ".join(map(str, self.depths)))
        elif not self.steps:
            out.append("no depth measured (no opt.step() ran): none differs")
        if self.moved:
            out.append("moved: " + ", ".join(f"{n} {'yes' if m else 'no'}" for n, m in self.moved.items()))
        if self.matches:
            out.append(
                "gradients equal the reference at step(s): "
                + (", ".join(str(i + 1) for i, ok in enumerate(self.matches) if ok) or "none")
            )
        return out

    def __repr__(self):
        rows = [("✓ " if f in self.facts else "✗ ") + f for f in FACTS]
        rows += ["  " + d for d in self.details()]
        if len(self.losses) > 1:
            rows.append(f"  loss {self.losses[0]:.4f} at step 1, {self.losses[-1]:.4f} at step {len(self.losses)}")
        elif self.losses:
            rows.append(f"  loss {self.losses[0]:.4f} at step 1")
        return "\n".join(rows)


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if tuple(a.shape) != tuple(b.shape):
        return False
    return bool(torch.allclose(a.double(), b.double(), atol=TOLERANCE[0], rtol=TOLERANCE[1]))


def _error_line(exc: BaseException, filename: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    where = f" at line {frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}: {stable_part(exc)}"


def prove(program: TrainingProgram, source: str | None = None) -> Proof:
    """Run ``source`` (by default the program's own) whole and measure the four quantities, comparing each
    ``opt.step()``'s gradients with :meth:`TrainingProgram.reference`. Never raises for a program that raises."""
    source = program.source if source is None else source
    names = program.params
    reference = program.reference()
    ns: dict[str, Any] = {"torch": torch}
    start: dict[str, torch.Tensor] = {}
    seen: list[tuple] = []  # (grads, depth, loss) at each opt.step(), before it updates
    filename = "<repaired program>"

    def before_step(optimizer, args, kwargs):
        current = {n: ns.get(n) for n in names}
        if not seen:
            start.update({n: t.detach().clone() for n, t in current.items() if isinstance(t, torch.Tensor)})
        grads = {
            n: (t.grad.detach().clone() if isinstance(t, torch.Tensor) and t.grad is not None else None)
            for n, t in current.items()
        }
        loss = ns.get("loss")
        is_tensor = isinstance(loss, torch.Tensor)
        seen.append(
            (grads, probes.depth(loss) if is_tensor else 0, float(loss.detach().sum()) if is_tensor else math.nan)
        )

    error = ""
    handle = _optimizer.register_optimizer_step_pre_hook(before_step)
    try:
        with torch_state.clean_room():
            exec(compile(source, filename, "exec"), ns)
    except Exception as exc:
        error = _error_line(exc, filename)
    finally:
        handle.remove()
    moved = {}
    for n in names:
        now = ns.get(n)
        moved[n] = (
            n in start
            and isinstance(now, torch.Tensor)
            and now.shape == start[n].shape
            and bool((now.detach() - start[n]).abs().max() > 1e-7)
        )
    matches = [all(_close(grads.get(n), ref.get(n)) for n in names) for (grads, _, _), ref in zip(seen, reference)]
    depths = [d for _, d, _ in seen]
    facts = set()
    if not error:
        facts.add(RUNS)
    if seen and all(moved.values()):
        facts.add(MOVES)
    # a run that raised before any opt.step() measured no depth: none differs (cells 42 and 53 read one depth
    # the same way), so the fact holds; what such a run breaks is that it runs, and that anything moves
    if not seen or (all(d == depths[0] for d in depths) and depths[0] > 0):
        facts.add(DEPTH)
    if len(seen) == len(reference) and all(matches):
        facts.add(GRADS)
    return Proof(frozenset(facts), error, depths, matches, moved, [l for _, _, l in seen], len(seen), len(reference))


# =================================================================================================
# Generating programs
# =================================================================================================


@dataclass(frozen=True)
class Spec:
    """The intended computation a program is written from (never handed to a learner as such)."""

    template: str  # "batch": one fixed batch; "sequence": one input per step, a carried state
    x: tuple
    y: tuple
    w_enc: tuple
    w_head: tuple
    steps: int
    lr: float
    act: str = "tanh"
    bias: float | None = None
    decay: float = 0.5
    names: tuple = ("w_enc", "w_head", "b_head")
    hname: str = "h"
    sname: str = "state"
    log: bool = False  # decoy: a detached copy of the features kept in a list
    metric: bool = False  # decoy: a metric computed under no_grad after the loss
    shift: bool = False  # decoy: a harmless in-place shift of the pre-activation
    retain: bool = False  # decoy (sequence): retain_graph=True, the state still detached
    zero_first: bool = False  # opt.zero_grad() opens the step instead of preceding backward
    post: tuple | None = None  # ("add" | "mul" | "clamp", c): a transform of the features
    clamp_state: bool = False  # sequence: the state is clamped to [-1, 1] after the prediction
    # spellings the exercise's cases draw (issue 45); the defaults write the programs as before
    enc_op: str = "@"  # "@" | "matmul": how the encoder multiplies
    shift_form: str = "+="  # the harmless shift: "+=" | "add_" | "sub_"
    carry: str = "axpy"  # sequence: "axpy" (decay * s + h) | "lerp" | "list" | "dict": how the state is carried
    detach_form: str = "line"  # sequence: "line" (s = s.detach()) | "inplace" (s.detach_()) | "read" (at its use)
    clear_form: str = "zero_grad"  # "zero_grad" | "none_loop" (p.grad = None for each) | "zeros" (set_to_none=False)
    rebind_decoy: bool = False  # a parameter rebound to itself after the optimizer: requires_grad_() returns it
    probe: bool = False  # decoy: a measure of the encoder computed under no_grad, used nowhere
    init_norm: bool = False  # decoy: a number taken from the encoder before the loop (.item(): no graph)

    @property
    def params(self) -> tuple:
        enc, head, bias = self.names
        return (enc, head) + ((bias,) if self.bias is not None else ())


@dataclass(frozen=True)
class Fault:
    """One planted fault and its spelling."""

    kind: str
    form: str = ""  # detach: "call" | "copy" | "line" | "data"; in-place: "features" | "state"; rebind: how;
    # no_grad: "" | "set_grad" (torch.set_grad_enabled(False)); carried: "" | "bare" (a detach() whose result is
    # dropped); never cleared: "" | "attribute" (opt.zero_grad without the call)
    target: str = ""  # the parameter a rebinding hits
    retain: bool = False  # stale graph / carried state: the author silenced the error with retain_graph
    op: str = ""  # in-place on the features: "+=" | "method" | "copy" (h.copy_(h + c))


def _num(v: float) -> str:
    return f"{v:.1f}" if abs(v * 10 - round(v * 10)) < 1e-9 else f"{v:g}"


def _vec(values) -> str:
    return "[" + ", ".join(_num(v) for v in values) + "]"


def _mat(rows) -> str:
    return "[" + ", ".join(_vec(r) for r in rows) + "]"


_INPLACE = {
    ("add", "+="): "{h} += {c}",
    ("add", "method"): "{h}.add_({c})",
    ("mul", "+="): "{h} *= {c}",
    ("mul", "method"): "{h}.mul_({c})",
    ("clamp", "+="): "{h}.clamp_(max={c})",
    ("clamp", "method"): "{h}.clamp_(max={c})",
    ("add", "copy"): "{h}.copy_({h} + {c})",
    ("mul", "copy"): "{h}.copy_({h} * {c})",
    ("clamp", "copy"): "{h}.copy_({h}.clamp(max={c}))",
}
_SHIFTS = {"+=": "z += 0.1", "add_": "z.add_(0.1)", "sub_": "z.sub_(-0.1)"}
_OUTOFPLACE = {"add": "{h} = {h} + {c}", "mul": "{h} = {h} * {c}", "clamp": "{h} = {h}.clamp(max={c})"}
_REBINDS = {
    "copy": "{p} = {p}.detach().clone().requires_grad_()",
    "parameter": "{p} = torch.nn.Parameter({p}.detach().clone())",
    "tolist": "{p} = torch.tensor({p}.tolist(), requires_grad=True)",
    "in loop": "{p} = {p}.detach().requires_grad_()",
}


def _state_lines(spec: Spec, st: str, feed: str) -> tuple[list[str], str]:
    """The statements that carry the state one step (and what the prediction reads), in ``spec.carry``'s
    spelling; with ``detach_form`` "read" the state is detached where it is read."""
    old = {"list": f"{st}s[-1]", "dict": f'{st}["h"]'}.get(spec.carry, st)
    if spec.detach_form == "read" and spec.carry in ("axpy", "lerp"):
        old = f"{st}.detach()"
    if spec.carry == "lerp":
        new = f"torch.lerp({old}, {feed}, {_num(1 - spec.decay)})"
    else:
        new = f"{_num(spec.decay)} * {old} + {feed}"
    if spec.carry == "list":
        return [f"{st}s.append({new})"], f"{st}s[-1]"
    if spec.carry == "dict":
        return [f'{st}["h"] = {new}'], f'{st}["h"]'
    return [f"{st} = {new}"], st


def _detach_lines(spec: Spec, st: str, fault: Fault | None) -> list[str]:
    """The statement that starts the next step from a constant (none where the state is detached where it is read),
    or, for a carried state whose detach is dropped, the bare call."""
    kind = fault.kind if fault else NO_FAULT
    held = {"list": f"{st}s[-1]", "dict": f'{st}["h"]'}.get(spec.carry, st)
    if kind == CARRIED:
        return [f"{held}.detach()"] if fault.form == "bare" else []
    if spec.detach_form == "read" and spec.carry in ("axpy", "lerp"):
        return []
    if spec.carry == "list":
        return [f"{st}s[-1] = {st}s[-1].detach()"]
    if spec.carry == "dict":
        return [f'{st}["h"] = {st}["h"].detach()']
    if spec.detach_form == "inplace":
        return [f"{st}.detach_()"]
    return [f"{st} = {st}.detach()"]


def _clear_line(spec: Spec, fault: Fault | None) -> list[str]:
    kind = fault.kind if fault else NO_FAULT
    if kind == NOT_CLEARED:
        return ["opt.zero_grad"] if fault.form == "attribute" else []
    if spec.clear_form == "none_loop":
        return [f"for p in ({', '.join(spec.params)}):\n    p.grad = None"]
    if spec.clear_form == "zeros":
        return ["opt.zero_grad(set_to_none=False)"]
    return ["opt.zero_grad()"]


def _times(spec: Spec, inp: str, enc: str) -> str:
    return f"torch.matmul({inp}, {enc})" if spec.enc_op == "matmul" else f"{inp} @ {enc}"


def render(spec: Spec, fault: Fault | None = None, title: str = "program") -> TrainingProgram:
    """Write the program for ``spec``, with ``fault`` planted (or none)."""
    kind = fault.kind if fault else NO_FAULT
    enc, head, bias = spec.names
    h, st = spec.hname, spec.sname
    seq = spec.template == "sequence"
    k = len(spec.w_head)
    lines: list[str] = []
    if seq:
        lines += [f"xs = torch.tensor({_mat(spec.x)})", f"ys = torch.tensor({_vec(spec.y)})"]
    else:
        lines += [f"x = torch.tensor({_mat(spec.x)})", f"y = torch.tensor({_vec(spec.y)})"]
    lines.append(f"{enc} = torch.tensor({_mat(spec.w_enc)}, requires_grad=True)")
    lines.append(f"{head} = torch.tensor({_vec(spec.w_head)}, requires_grad=True)")
    if spec.bias is not None:
        lines.append(f"{bias} = torch.tensor({_num(spec.bias)}, requires_grad=True)")
    lines.append(f"opt = torch.optim.SGD([{', '.join(spec.params)}], lr={_num(spec.lr)})")
    if spec.rebind_decoy:
        lines.append(f"{head} = {head}.requires_grad_()")
    if seq:
        start = f"torch.zeros({k})"
        lines.append(
            {"list": f"{st}s = [{start}]", "dict": f'{st} = {{"h": {start}}}'}.get(spec.carry, f"{st} = {start}")
        )
    copy_detach = kind == DETACHED and fault.form == "copy"
    if spec.log or copy_detach:
        lines.append("log = []")
    inp = "xs[step]" if seq else "x"
    encoder = f"torch.{spec.act}({_times(spec, inp, enc)})"
    if spec.init_norm:
        lines.append(f"scale0 = ({_times(spec, 'xs' if seq else 'x', enc)}).norm().item()")
    if kind == STALE:
        lines.append(f"{h}s = torch.{spec.act}({_times(spec, 'xs', enc)})" if seq else f"{h} = {encoder}")
    if kind == REBOUND and fault.form != "in loop":
        lines.append(_REBINDS[fault.form].format(p=fault.target))
    lines.append(f"for step in range({spec.steps}):")

    body: list[str] = []
    if spec.zero_first:
        body += _clear_line(spec, fault)
    if kind == REBOUND and fault.form == "in loop":
        body.append(_REBINDS["in loop"].format(p=fault.target))
    if kind == STALE:
        if seq:
            body.append(f"{h} = {h}s[step]")
    elif kind == NO_GRAD:
        block = "torch.set_grad_enabled(False)" if fault.form == "set_grad" else "torch.no_grad()"
        body.append(f"with {block}:\n    {h} = {encoder}")
    elif spec.shift:
        body += [f"z = {_times(spec, inp, enc)}", _SHIFTS[spec.shift_form], f"{h} = torch.{spec.act}(z)"]
    else:
        body.append(f"{h} = {encoder}" + (".detach()" if kind == DETACHED and fault.form == "call" else ""))
    if kind == DETACHED and fault.form == "line":
        body.append(f"{h} = {h}.detach()")
    if kind == DETACHED and fault.form == "data":
        body.append(f"{h} = {h}.data")
    if spec.post is not None:
        op, c = spec.post
        if kind == IN_PLACE and fault.form == "features":
            body.append(_INPLACE[(op, fault.op)].format(h=h, c=_num(c)))
        else:
            body.append(_OUTOFPLACE[op].format(h=h, c=_num(c)))
    feed = h
    if copy_detach:
        body += [f"kept = {h}.detach()", "log.append(kept)"]
        feed = "kept"
    elif spec.log:
        body.append(f"log.append({h}.detach())")
    if seq:
        carried, feed = _state_lines(spec, st, feed)
        body += carried
    body.append(f"pred = {feed} @ {head}" + (f" + {bias}" if spec.bias is not None else ""))
    if spec.clamp_state:
        body.append(
            f"{st}.clamp_(-1.0, 1.0)" if kind == IN_PLACE and fault.form == "state" else f"{st} = {st}.clamp(-1.0, 1.0)"
        )
    target = "ys[step]" if seq else "y"
    body.append("loss = (pred - ys[step]) ** 2" if seq else "loss = ((pred - y) ** 2).mean()")
    if spec.metric:
        body.append(f"with torch.no_grad():\n    err = (pred - {target}).abs().max()")
    if spec.probe:
        body.append(f"with torch.no_grad():\n    probe = ({_times(spec, inp, enc)}).abs().mean()")
    if not spec.zero_first:
        body += _clear_line(spec, fault)
    retain = spec.retain or (kind in (STALE, CARRIED) and fault.retain)
    body.append("loss.backward(retain_graph=True)" if retain else "loss.backward()")
    body.append("opt.step()")
    if seq:
        body += _detach_lines(spec, st, fault)
    for statement in body:
        lines += ["    " + part for part in statement.split("\n")]
    return TrainingProgram("\n".join(lines), spec.params, spec.steps, title, spec)


_ACT = {"tanh": torch.tanh, "sigmoid": torch.sigmoid}


def reference_grads(spec: Spec) -> list[dict[str, torch.Tensor]]:
    """Each step's gradients for the intended computation, by torch.autograd.grad, with plain SGD between
    steps and the carried state entering each step as a constant. Independent of any program text."""
    params = {n: torch.tensor(v, requires_grad=True) for n, v in zip(spec.params, (spec.w_enc, spec.w_head, spec.bias))}
    enc, head, bias = spec.names
    x, y = torch.tensor(spec.x), torch.tensor(spec.y)
    state = torch.zeros(len(spec.w_head))
    out = []
    for t in range(spec.steps):
        inp = x[t] if spec.template == "sequence" else x
        z = inp @ params[enc]
        if spec.shift:
            z = z + 0.1
        h = _ACT[spec.act](z)
        if spec.post is not None:
            op, c = spec.post
            h = h + c if op == "add" else h * c if op == "mul" else h.clamp(max=c)
        feed = h
        if spec.template == "sequence":
            state = spec.decay * state + (1 - spec.decay) * h if spec.carry == "lerp" else spec.decay * state + h
            feed = state
        pred = feed @ params[head]
        if spec.bias is not None:
            pred = pred + params[bias]
        if spec.clamp_state:
            state = state.clamp(-1.0, 1.0)
        loss = (pred - y[t]) ** 2 if spec.template == "sequence" else ((pred - y) ** 2).mean()
        grads = torch.autograd.grad(loss, list(params.values()))
        out.append({n: g.detach() for n, g in zip(params, grads)})
        params = {n: (p.detach() - spec.lr * g).requires_grad_() for (n, p), g in zip(params.items(), grads)}
        state = state.detach()
    return out


_NAMES = (("w_enc", "w_head", "b_head"), ("W1", "W2", "b2"), ("enc", "head", "bias"))


def _values(rng: random.Random, n: int, low: float = -1.2, high: float = 1.2) -> tuple:
    out = []
    for _ in range(n):
        v = 0.0
        while abs(v) < 0.1:
            v = round(rng.uniform(low, high), 1)
        out.append(v)
    return tuple(out)


def random_spec(rng: random.Random, kind: str) -> Spec:
    """A spec whose decoys and options suit a planted ``kind`` (NO_FAULT for a clean decoy program)."""
    template = rng.choice(["batch", "sequence"])
    if kind == CARRIED:
        template = "sequence"
    d, k = rng.choice([2, 3]), 2
    steps = rng.choice([3, 4])
    rows = steps if template == "sequence" else rng.choice([2, 3])
    x = tuple(_values(rng, d) for _ in range(rows))
    y = _values(rng, rows, -0.9, 0.9)
    names = rng.choice(_NAMES)
    post = None
    if kind == IN_PLACE or rng.random() < 0.25:
        op = rng.choice(["add", "mul", "clamp"])
        post = (op, {"add": rng.choice([0.1, 0.2]), "mul": rng.choice([0.5, 2.0]), "clamp": 0.5}[op])
    return Spec(
        template=template,
        x=x,
        y=y,
        w_enc=tuple(_values(rng, k) for _ in range(d)),
        w_head=_values(rng, k),
        steps=steps,
        lr=rng.choice([0.1, 0.2, 0.3]),
        act=rng.choice(["tanh", "tanh", "sigmoid"]),
        bias=round(rng.uniform(-0.5, 0.5), 1) if rng.random() < 0.3 else None,
        decay=rng.choice([0.5, 0.8]),
        names=names,
        hname=rng.choice(["h", "feats"]),
        sname=rng.choice(["state", "memory"]),
        log=rng.random() < 0.4,
        metric=rng.random() < 0.25,
        shift=kind != STALE and rng.random() < 0.25,
        retain=template == "sequence" and kind not in (STALE, CARRIED) and rng.random() < 0.3,
        zero_first=rng.random() < 0.3,
        post=post,
        clamp_state=template == "sequence" and rng.random() < 0.3,
    )


def random_fault(rng: random.Random, kind: str, spec: Spec) -> tuple[Spec, Fault | None]:
    if kind == NO_FAULT:
        return spec, None
    if kind == DETACHED:
        return spec, Fault(kind, form=rng.choice(["call", "copy", "line"]))
    if kind in (STALE, CARRIED):
        return spec, Fault(kind, retain=rng.random() < 0.5)
    if kind == IN_PLACE:
        if spec.template == "sequence" and rng.random() < 0.4:
            return replace(spec, clamp_state=True), Fault(kind, form="state")
        return spec, Fault(kind, form="features", op=rng.choice(["+=", "method"]))
    if kind == REBOUND:
        return spec, Fault(kind, form=rng.choice(sorted(_REBINDS)), target=rng.choice(spec.params))
    return spec, Fault(kind)
