"""The optimizer and the parameters disagree (unit 12): parameters the loss reaches that no optimizer holds
(by identity: a module assigned over one after the optimizer was built, an optimizer built on another
instance of the model); held parameters that never got a gradient; an optimizer step that writes
parameters a graph saved between its forward and its backward; declared intent (``frozen=``,
``should_move=``) proved by measurement.

What the program shows it means is respected: a leaf it differentiates on purpose (an input of
``autograd.grad``, one whose ``.grad`` it reads) is no parameter; a program whose optimizers hold only such
inputs (style transfer, adversarial examples) optimizes its input, not the model, and the model's
parameters the loss reaches are not expected in an optimizer. Where intent cannot be told (parameters left
out of the optimizer on purpose), the finding names the declaration that says so (``frozen=``).
"""

from __future__ import annotations

import torch

from grader import probes
from grader.probes.doctor import inplace, intent
from grader.probes.doctor.base import Backward, Check, DoctorState
from grader.probes.doctor.findings import Mechanism


class StepBetween(Check):
    """An optimizer step between a forward and its backward, that wrote what the graph saved."""

    def on_backward_start(self, bw: Backward) -> None:
        check_written_since_forward(self.d, bw.graph_roots, bw.walked, bw.site)


class Optimizer(Check):
    """The optimizers and the parameters, judged at the end; declared intent, proved."""

    def conclude(self, exc) -> None:
        if self.d.optimizers:
            conclude_held(self.d, exc, self.d.explained)
        conclude_declared(self.d, exc)


def check_written_since_forward(d: DoctorState, graph_roots, walked, site):
    """A backward through a forward made before the latest optimizer step, whose saved parameters that step
    wrote: backward would use (or refuse) values the step overwrote. The line to edit is that step's."""
    if ("carried", site) in d.keys or d.saved_hooks_seen:
        return
    if not any(fn.metadata.get("doctor_epoch", (d.epoch,))[0] < d.epoch for fn in walked):
        return
    stepped = {p.untyped_storage().data_ptr(): p for p in d.held.values()}
    written = [s for s in inplace.stale_saved(d, graph_roots) if s.storage in stepped]
    if not written:
        return
    names = sorted({d.name_of.get(id(stepped[s.storage]), f"a parameter {list(s.shape)}") for s in written})
    s = written[0]
    epoch, forward_line = _forward_of(d, walked, s)
    step_line = d.step_lines.get(epoch + 1, d.step_line) or "?"
    d.add(
        ("step-between", site),
        Mechanism.OPTIMIZER_MISMATCH,
        step_line,
        f"optimizer.step() at {step_line} ran between the forward at {forward_line or '?'} and this backward at "
        f"{site or '?'}: it wrote {len(names)} parameter(s) that graph saved ({', '.join(names[:4])}; {s.node}'s "
        f"{s.attribute} version {s.version_saved} -> {s.version_now})",
        "call every backward that needs this forward before optimizer.step() (step once, after all of them), or "
        "run the forward again after the step",
    )


def _forward_of(d: DoctorState, walked, stale):
    """(step count, line) of the module call made before the latest step whose graph holds the node that
    saved ``stale``: the smallest such graph (the forward that saved it, not the one that fed it)."""
    holders = [fn for fn in walked if any(x.stale and x.storage == stale.storage for x in probes.saved_in(fn))]
    best = None
    for fn in walked:
        stamp = fn.metadata.get("doctor_epoch")
        if stamp is None or stamp[0] >= d.epoch:
            continue
        below = probes.nodes(fn)
        if any(h in below for h in holders) and (best is None or len(below) < best[0]):
            best = (len(below), stamp)
    if best is None:
        return min(
            fn.metadata["doctor_epoch"] for fn in walked if fn.metadata.get("doctor_epoch", (d.epoch,))[0] < d.epoch
        )
    return best[1]


def conclude_held(d: DoctorState, exc, explained=frozenset()):
    """Parameters the loss reached that no optimizer holds; held ones that never got a gradient. Not for a run
    cut short (it may not have reached every optimizer step)."""
    if exc is not None:
        return
    names, held = d.name_of, d.held
    reached = {i: (r if isinstance(r, torch.Tensor) else r()) for i, r in d.reached.items()}
    reached = {i: t for i, t in reached.items() if t is not None and i not in explained and not intent.is_input(d, t)}
    unheld = [t for i, t in reached.items() if i not in held and not d.declared_frozen(names.get(i))]
    named = [t for t in unheld if id(t) in names]
    if named and not _optimizes_inputs(d):
        _unheld(d, named, reached)
    # (one cause, one finding: a cut loss already explains the parameters it leaves without gradient)
    causes = (
        Mechanism.INERT_LOSS_TERM,
        Mechanism.NO_GRAD_ROOT,
        Mechanism.HOOKS_CHECKPOINT,
        Mechanism.PARAMETER_REBOUND,
    )
    if d.steps >= 2 and ("unheld",) not in d.keys and not any(f.mechanism in causes for f in d.findings):
        _never(d, reached)


def _optimizes_inputs(d: DoctorState) -> bool:
    """Every tensor the optimizers hold is a plain leaf no module registers: the program optimizes an input
    (an image in style transfer), and the model's parameters are not meant to move."""
    return bool(d.held) and all(i not in d.name_of and not isinstance(t, torch.nn.Parameter) for i, t in d.held.items())


def _unheld(d: DoctorState, named, reached) -> None:
    names, held = d.name_of, d.held
    total = len(set(reached) & (set(held) | {id(t) for t in named}))
    replaced = [t for t in named if id(t) in d.replaced]
    stray = [t for i, t in held.items() if i not in names and isinstance(t, torch.nn.Parameter)]
    label = ", ".join(names[id(t)] for t in named[:5])
    evidence = f"the optimizer holds {total - len(named)} of the {total} parameters the loss reaches; not held: {label}"
    if replaced:
        line = d.replaced[id(replaced[0])]
        evidence += (
            f"; {', '.join(names[id(t)] for t in replaced[:5])} belong to a module assigned at {line}, after the "
            "optimizer was built (it holds the parameters of the module that was there before)"
        )
    elif stray:
        built = _built(d, stray[0])
        line = built or d.step_line
        evidence += (
            f"; the optimizer{' built at ' + built if built else ''} holds {len(stray)} parameter(s) of no module the "
            "run called (another instance of the model?)"
        )
    else:
        line, why = _suspect_optimizer(d)
        line = line or d.step_line
        evidence += (
            why + " (if they are left out on purpose, declare them: frozen=NAME, or a '# doctor: frozen=NAME' line)"
        )
    d.add(
        ("unheld",),
        Mechanism.OPTIMIZER_MISMATCH,
        line,
        evidence,
        "build the optimizer after the model is final (after .to(), replacing layers, loading), from "
        "model.parameters()",
    )


def _suspect_optimizer(d: DoctorState) -> tuple[str, str]:
    """(where, why) for the optimizer to look at: one built on parameters another optimizer already holds
    (the later of two), or the only optimizer; ('', '') when the doctor cannot tell."""
    built = [(line, {id(p) for g in opt.param_groups for p in g["params"]}) for opt, line in d.optimizer_lines.items()]
    for i in reversed(range(len(built))):  # (in the order they were built: the later of two)
        line, ids = built[i]
        if any(ids and ids <= other for j, (_, other) in enumerate(built) if j != i):
            return line, f"; the optimizer built at {line} holds only parameters another optimizer holds too"
    if len(built) == 1:
        return built[0][0], f" (the optimizer was built at {built[0][0]})"
    return "", ""


def _built(d: DoctorState, p) -> str:
    """Where the optimizer holding ``p`` was built, if the doctor saw it built."""
    for opt, line in d.optimizer_lines.items():
        if any(q is p for group in opt.param_groups for q in group["params"]):
            return line
    return ""


def _never(d: DoctorState, reached) -> None:
    names, held = d.name_of, d.held
    never = [t for i, t in held.items() if i not in reached and t.requires_grad and not d.declared_frozen(names.get(i))]
    never = [t for t in never if not intent.is_input(d, t)]
    if not never:
        return
    label = ", ".join(names.get(id(t), f"a tensor {list(t.shape)}") for t in never[:5])
    built = _built(d, never[0])
    d.add(
        ("never",),
        Mechanism.OPTIMIZER_MISMATCH,
        built or d.step_line,
        f"{len(never)} of the {len(held)} parameters the optimizer{' built at ' + built if built else ''} holds never "
        f"got a gradient in {d.steps} steps: {label} (if they are frozen on purpose, declare them: frozen=NAME)",
        "make sure the loss is computed from the model the optimizer was built on (or declare them "
        "frozen=[...] and set requires_grad=False)",
    )


def conclude_declared(d: DoctorState, exc):
    """Declared intent, proved: one finding for the frozen ones that moved, one for the others that did not."""
    moved_frozen, still = [], []
    for name, before in d.snap.items():
        p = d.current.get(name)
        if p is None:
            continue
        moved = float((p.detach() - before).abs().max()) if p.shape == before.shape else float("inf")
        kind = d.declared(name)
        if kind == "frozen" and moved > 0:
            moved_frozen.append(f"{name} (by up to {moved:.3g})")
        elif kind == "should_move" and moved == 0 and exc is None:
            still.append(name)
    if moved_frozen:
        d.add(
            ("frozen",),
            Mechanism.OPTIMIZER_MISMATCH,
            d.step_line,
            f"declared frozen, but moved: {', '.join(moved_frozen[:6])}",
            "set requires_grad=False on them and build the optimizer from the parameters that require grad",
        )
    if still:
        d.add(
            ("still",),
            Mechanism.OPTIMIZER_MISMATCH,
            d.step_line,
            f"declared should_move, but did not move in {d.steps} steps: {', '.join(still[:6])}",
            "check that the optimizer holds them and that the loss reaches them (requires_grad, no detach)",
        )
