"""The optimizer and the parameters disagree (unit 12): parameters the loss reaches that no optimizer holds
(by identity; a name that now holds a new object is named as replaced); held parameters that never got a
gradient; an optimizer step that writes parameters a graph saved between its forward and its backward;
declared intent (``frozen=``, ``should_move=``) proved by measurement."""

from __future__ import annotations

from typing import Any

import torch

from grader.probes.doctor import inplace, unregistered
from grader.probes.doctor.findings import Mechanism


def install(d):
    d.params = {}  # id -> every parameter of a top-level module called (strongly: they live with the model)
    d.step_lines = {}  # epoch -> where that optimizer step was called


def snapshot(d, module):
    """A top-level module call: the names of its parameters, and a copy of the declared ones (once)."""
    if module not in d.root_index:
        d.root_index[module] = len(d.root_index)
    index = d.root_index[module]
    prefix = "" if index == 0 else f"{type(module).__name__}[{index}]."
    for name, p in module.named_parameters():
        name = prefix + name
        d.names_seen.setdefault(name, id(p))
        d.name_of[id(p)] = name
        d.params[id(p)] = p
        if d.declared(name):
            d.current[name] = p
            if name not in d.snap:
                with torch.no_grad():
                    d.snap[name] = p.detach().clone()


def stamp_output(d, output):
    """A top-level module call returned: its outputs' nodes (a tensor, or those of a tuple, list or dict) remember the optimizer step count then."""
    outputs = output.values() if isinstance(output, dict) else output if isinstance(output, (tuple, list)) else [output]
    line = None
    for out in outputs:
        fn: Any = out.grad_fn if isinstance(out, torch.Tensor) else None  # (metadata: a dict, not the stub's method)
        if fn is not None and "doctor_epoch" not in fn.metadata:
            line = d.line() if line is None else line
            fn.metadata["doctor_epoch"] = (d.epoch, line)


def observe_step(d, opt):
    if id(opt) not in d.optimizer_ids:
        d.optimizer_ids.add(id(opt))
        d.optimizers += 1
    for group in opt.param_groups:
        for p in group["params"]:
            d.held[id(p)] = p
    line = d.line()
    d.step_lines[d.epoch] = line
    if not d.step_line:
        d.step_line = line


def check_written_since_forward(d, graph_roots, walked, site):
    """A backward through a forward made before the latest optimizer step, whose saved parameters that step
    wrote: backward would use (or refuse) values the step overwrote."""
    if ("carried", site) in d.keys or d.saved_hooks_seen:
        return
    before = [fn.metadata["doctor_epoch"] for fn in walked if "doctor_epoch" in fn.metadata]
    before = [(epoch, line) for epoch, line in before if epoch < d.epoch]
    if not before:
        return
    epoch, forward_line = min(before)
    stepped = {p.untyped_storage().data_ptr(): p for p in d.held.values()}
    written = [s for s in inplace.stale_saved(d, graph_roots) if s.storage in stepped]
    if not written:
        return
    names = sorted({d.name_of.get(id(stepped[s.storage]), f"a parameter {list(s.shape)}") for s in written})
    s = written[0]
    step_line = d.step_lines.get(epoch + 1, d.step_line) or "?"
    d.add(
        ("step-between", site),
        Mechanism.OPTIMIZER_MISMATCH,
        site,
        f"optimizer.step() at {step_line} ran between the forward at {forward_line or '?'} and this backward: it "
        f"wrote {len(names)} parameter(s) that graph saved ({', '.join(names[:4])}; {s.node}'s {s.attribute} "
        f"version {s.version_saved} -> {s.version_now})",
        "call every backward that needs this forward before optimizer.step() (step once, after all of them), or "
        "run the forward again after the step",
    )


def conclude_held(d, exc):
    names = d.name_of
    registered = set(names)
    held = d.held
    reached = {i: (r if isinstance(r, torch.Tensor) else r()) for i, r in d.reached.items()}
    reached = {i: t for i, t in reached.items() if t is not None}
    unheld = [t for i, t in reached.items() if i not in held and not d.declared_frozen(names.get(i))]
    if unheld and exc is None:  # a run cut short may not have reached every optimizer step
        unnamed = [t for t in unheld if id(t) not in registered]
        named = [t for t in unheld if id(t) in registered]
        if unnamed:
            unregistered.leaves(d, unnamed)
        if named:
            orphans = [t for i, t in held.items() if i not in reached and t.requires_grad]
            replaced = [
                names[id(t)]
                for t in named
                if d.names_seen.get(names[id(t)], id(t)) != id(t) or any(o.shape == t.shape for o in orphans)
            ]
            how = (
                f"; {', '.join(replaced[:4])} was replaced by a new object after the optimizer was built (it holds "
                "the old one)"
                if replaced
                else ""
            )
            total = len(set(reached) & (set(held) | {id(t) for t in named}))
            d.add(
                ("unheld",),
                Mechanism.OPTIMIZER_MISMATCH,
                d.step_line,
                f"the optimizer holds {total - len(named)} of the {total} parameters the loss reaches; "
                f"not held: {', '.join(names[id(t)] for t in named[:5])}{how}",
                "build the optimizer after the model is final (after .to(), replacing layers, loading), from "
                "model.parameters()",
            )
    # (one cause, one finding: a cut loss already explains the parameters it leaves without gradient)
    causes = (Mechanism.INERT_LOSS_TERM, Mechanism.NO_GRAD_ROOT, Mechanism.HOOKS_CHECKPOINT)
    explained = any(f.mechanism in causes for f in d.findings)
    if d.steps >= 2 and ("unheld",) not in d.keys and not explained:
        never = [
            t for i, t in held.items() if i not in reached and t.requires_grad and not d.declared_frozen(names.get(i))
        ]
        if never and exc is None:
            label = ", ".join(names.get(id(t), f"a tensor {list(t.shape)}") for t in never[:5])
            d.add(
                ("never",),
                Mechanism.OPTIMIZER_MISMATCH,
                d.step_line,
                f"{len(never)} of the {len(held)} parameters the optimizer holds never got a gradient in "
                f"{d.steps} steps: {label}",
                "make sure the loss is computed from the model the optimizer was built on (or declare them "
                "frozen=[...] and set requires_grad=False)",
            )


def conclude_declared(d, exc):
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
