"""Unit 10's exercises: an audit and a repair written the way a learner would, and plausible bugs."""

import re

import torch

from grader.probes import nodes
from grader.probes.traces import first_broken_edge
from grader.units.unit10.capstone import step_through

# --- 10.diagnose --------------------------------------------------------------------------------


def diagnose(program):
    run = step_through(program, steps=2)
    tr = run.trace(1)
    held = run.held()
    for name in program.params:  # 1. is it the optimizer's tensor?
        used = [s for s in tr if s.name == name][-1]
        if not any(used.tensor is p for p in held):
            return ("rebound parameter", used.number)
    for name in program.params:  # 2. does the loss reach it?
        edge = first_broken_edge(tr, name)
        if edge is not None:
            return ("no_grad encoder" if "no_grad region" in edge.cuts else "detached stage", edge.number)
    for e in run.step(1):  # 3. stale saves before backward
        if e.backward:
            break
        if e.stale:
            return ("in-place on a saved tensor", e.number)
    loss2 = run.loss(2)
    if loss2 is not None:  # 4. a graph from before this step
        reached = set(nodes(loss2))
        for e in run.step(2):
            for name in e.inputs:
                b = run.bound_before(e, name)
                fn = getattr(b.value(name), "grad_fn", None) if b is not None else None
                if fn is not None and b.step < 2 and fn in reached:
                    return ("stale graph" if b.step == 0 else "carried state leak", b.number)
        # a value kept in a list or a dict is bound by no name: the last earlier statement that made a node
        # step 2's loss reaches
        maker = next((e for e in reversed(run.events) if e.step < 2 and any(n in reached for n in e.made)), None)
        if maker is not None:
            return ("stale graph" if maker.step == 0 else "carried state leak", maker.number)
    bw = run.backward_event(2)  # 5. .grad cleared before backward?
    if bw is not None:
        grads = run.before(bw).grads
        if any(g is not None and g.abs().sum() > 0 for g in grads.values()):
            return ("gradients never cleared", bw.number)
    return "no fault"


def diagnose_always_detached(program):
    """Every missing-gradient story is a detach: finds the edge if there is one, else blames line 1."""
    run = step_through(program, steps=2)
    tr = run.trace(1)
    for name in program.params:
        edge = first_broken_edge(tr, name)
        if edge is not None:
            return ("detached stage", edge.number)
    return ("detached stage", 1)


def diagnose_one_statement_late(program):
    """Right kind, but reports the statement after the one that did it (where the symptom shows)."""
    found = diagnose(program)
    if found == "no fault":
        return found
    kind, line = found
    starts = sorted({e.number for e in step_through(program, steps=2).events})
    later = [n for n in starts if n > line]
    return (kind, later[0] if later else line + 1)


def diagnose_errors_are_in_place(program):
    """Any error is an in-place write, placed where it raised; otherwise the audit as it should be."""
    run = step_through(program, steps=2)
    if run.error is not None:
        return ("in-place on a saved tensor", run.error.number)
    return diagnose(program)


def diagnose_depth_only(program):
    """Compares depths across steps instead of asking which earlier graph step 2 reaches: finds a carried
    state (its depth grows) and calls a stale graph clean (its depth never changes)."""
    run = step_through(program, steps=2)
    tr = run.trace(1)
    held = run.held()
    for name in program.params:
        used = [s for s in tr if s.name == name][-1]
        if not any(used.tensor is p for p in held):
            return ("rebound parameter", used.number)
    for name in program.params:
        edge = first_broken_edge(tr, name)
        if edge is not None:
            return ("no_grad encoder" if "no_grad" in edge.line else "detached stage", edge.number)
    for e in run.step(1):
        if e.backward:
            break
        if e.stale:
            return ("in-place on a saved tensor", e.number)
    depths = run.depths()
    if len(depths) == 2 and depths[1] > depths[0]:
        for e in run.step(2):
            for name in e.inputs:
                b = run.bound_before(e, name)
                if b is not None and b.step == 1 and getattr(b.tensor, "grad_fn", None) is not None:
                    return ("carried state leak", b.number)
    bw = run.backward_event(2)
    if bw is not None and any(g is not None and g.abs().sum() > 0 for g in run.before(bw).grads.values()):
        return ("gradients never cleared", bw.number)
    return "no fault"


def diagnose_grads_at_step_1(program):
    """Looks at .grad before the first backward, where it is always empty: never finds uncleared grads."""
    found = diagnose(program)
    if found != "no fault" and found[0] == "gradients never cleared":
        run = step_through(program, steps=1)
        grads = run.before(run.backward_event(1)).grads
        if any(g is not None and g.abs().sum() > 0 for g in grads.values()):
            return found
        return "no fault"
    return found


def diagnose_the_first_name(program):
    """Asks the rebinding question of the first parameter only (the encoder): a rebound head goes unseen."""
    found = diagnose(program)
    if found != "no fault" and found[0] == "rebound parameter":
        run = step_through(program, steps=2)
        name = program.params[0]
        used = [s for s in run.trace(1) if s.name == name][-1]
        if any(used.tensor is p for p in run.held()):
            return "no fault"
    return found


# --- 10.repair ------------------------------------------------------------------------------------


def _indent(text):
    return text[: len(text) - len(text.lstrip())]


def _written_name(text):
    return re.match(r"\s*(\w+)", text).group(1)


def repair(program):
    found = diagnose(program)
    if found == "no fault":
        return program.source
    kind, number = found
    lines = program.lines
    i = number - 1
    text = lines[i]
    if kind == "detached stage":
        lines[i] = text.replace(".detach()", "").replace(".data", "")
    elif kind == "no_grad encoder":
        lines[i : i + 2] = [_indent(text) + lines[i + 1].strip()]
    elif kind == "stale graph":
        moved = lines.pop(i).strip()
        loop = next(j for j, line in enumerate(lines) if line.startswith("for "))
        lines.insert(loop + 1, "    " + moved)
    elif kind == "in-place on a saved tensor":
        name = _written_name(text)
        lines.insert(i, f"{_indent(text)}{name} = {name}.clone()")
    elif kind == "carried state leak":
        if ".append(" in text:  # a list of states: detach the last
            held = f"{_written_name(text)}[-1]"
        elif '["h"] =' in text:  # a dict of states
            held = f'{_written_name(text)}["h"]'
        else:
            held = _written_name(text)
        lines.append(f"    {held} = {held}.detach()")
    elif kind == "rebound parameter":
        del lines[i]
    elif kind == "gradients never cleared":
        lines.insert(i, _indent(text) + "opt.zero_grad()")
    return "\n".join(lines)


def _backward_line(lines):
    return next(j for j, line in enumerate(lines) if ".backward(" in line)


def repair_with_retain_graph(program):
    """A stale graph or a carried state 'repaired' the way the error message suggests."""
    found = diagnose(program)
    if found != "no fault" and found[0] in ("stale graph", "carried state leak"):
        lines = program.lines
        j = _backward_line(lines)
        lines[j] = lines[j].replace("backward()", "backward(retain_graph=True)")
        return "\n".join(lines)
    return repair(program)


def repair_requires_grad_downstream(program):
    """A cut path 'repaired' by asking for gradients on the cut value, as the forum answer goes."""
    found = diagnose(program)
    if found != "no fault" and found[0] in ("detached stage", "no_grad encoder"):
        kind, number = found
        lines = program.lines
        last = number if kind == "detached stage" else number + 1
        name = _written_name(lines[last - 1])
        lines.insert(last, f"{_indent(lines[number - 1])}{name}.requires_grad_(True)")
        return "\n".join(lines)
    return repair(program)


def _loss_fell(source):
    ns = {"torch": torch}
    losses = []
    real_step = torch.optim.SGD.step

    def step(self, *args, **kwargs):
        losses.append(float(ns["loss"].detach().sum()))
        return real_step(self, *args, **kwargs)

    torch.optim.SGD.step = step
    try:
        exec(source, ns)
    except Exception:
        return False
    finally:
        torch.optim.SGD.step = real_step
    return len(losses) > 1 and losses[-1] < losses[0]


def repair_checked_by_the_loss(program):
    """Tries the usual fixes in the order the forums give them; keeps the first after which the loss falls."""
    lines = program.lines
    j = _backward_line(lines)
    candidates = []
    retained = list(lines)
    retained[j] = retained[j].replace("backward()", "backward(retain_graph=True)")
    candidates.append("\n".join(retained))
    cleared = list(lines)
    cleared.insert(j, _indent(lines[j]) + "opt.zero_grad()")
    candidates.append("\n".join(cleared))
    candidates.append("\n".join(line.replace(".detach()", "") for line in lines))
    candidates.append(repair(program))
    for source in candidates:
        if _loss_fell(source):
            return source
    return program.source


def repair_zero_grad_only(program):
    """Whatever the audit found, clears the gradients before backward, and changes nothing else."""
    lines = program.lines
    j = _backward_line(lines)
    if "zero_grad" not in "\n".join(lines):
        lines.insert(j, _indent(lines[j]) + "opt.zero_grad()")
    return "\n".join(lines)


def repair_detach_too_early(program):
    """A carried state detached right where it is made, before the step has used it."""
    found = diagnose(program)
    if found != "no fault" and found[0] == "carried state leak":
        kind, number = found
        lines = program.lines
        name = _written_name(lines[number - 1])
        lines.insert(number, f"    {name} = {name}.detach()")
        return "\n".join(lines)
    return repair(program)


def repair_through_data(program):
    """An in-place write moved onto .data, which silences the version check instead of avoiding it."""
    found = diagnose(program)
    if found != "no fault" and found[0] == "in-place on a saved tensor":
        kind, number = found
        lines = program.lines
        name = _written_name(lines[number - 1])
        text = lines[number - 1]
        lines[number - 1] = (
            text.replace(f"{name} ", f"{name}.data ", 1)
            if f"{name} " in text
            else text.replace(f"{name}.", f"{name}.data.", 1)
        )
        return "\n".join(lines)
    return repair(program)


REFERENCE = {
    "10.diagnose": diagnose,
}

BUGGY = {
    "10.diagnose": [
        diagnose_always_detached,
        diagnose_one_statement_late,
        diagnose_errors_are_in_place,
        diagnose_depth_only,
        diagnose_grads_at_step_1,
        diagnose_the_first_name,
    ],
}
