"""A second backward through a freed graph (unit 06): the saved values an earlier backward freed, counted
with ``probes.saved_attributes`` (never where a checkpoint's hooks were seen).

The line to edit is where one of the two graphs took in the shared part, at a module call outside it:
the one whose loss should not have reached the shared part. An optimizer step between the two backward
calls tells which: if it held the shared part's parameters, the earlier backward was that part's own
update, and this graph should have cut it (an adversarial autoencoder's discriminator step taking in the
encoder's codes without ``.detach()``); otherwise the earlier graph should have (DCGAN's discriminator
step taking in ``fake`` without ``.detach()``, then the generator's backward needs that graph). With no
step between, or no such module call, it is the earlier backward's line (the one to give
``retain_graph=True``, or to merge with this one).
"""

from __future__ import annotations

from grader import probes
from grader.probes.doctor.base import Backward, Check, DoctorState
from grader.probes.doctor.findings import Mechanism


class Freed(Check):
    def on_backward_error(self, bw: Backward, exc) -> None:
        text = str(exc)
        if "modified by an inplace operation" in text:  # (the in-place check's error)
            return
        if "backward through the graph a second time" in text or "already been freed" in text:
            if not explained(self.d, bw.site):
                on_freed_error(self.d, bw.graph_roots, bw.walked, bw.site, bw.earlier)


def explained(d: DoctorState, site) -> bool:
    """Whether a finding at this backward already names the cause of its error: the carried state (an old
    graph, its saved values overwritten) or an optimizer step between its forward and it."""
    return ("carried", site) in d.keys or ("step-between", site) in d.keys


def on_freed_error(d: DoctorState, graph_roots, walked, site, earlier) -> None:
    freed = 0
    if not d.saved_hooks_seen:
        freed = sum(1 for fn in walked for v in probes.saved_attributes(fn).values() if v == probes.FREED)
    previous = sorted((e for e in earlier if e[2] != d.backwards), key=lambda e: -e[2])
    where = previous[0][0] if previous else ""
    joined = _joined(d, graph_roots, walked, previous[0][2]) if previous else ""
    count = f"{freed} saved value(s)" if freed else "saved values"
    how = f" (its graph took this one in at the module call at {joined})" if joined else ""
    d.add(
        ("freed", site),
        Mechanism.FREED_GRAPH,
        joined or where or site,
        f"this backward at {site or '?'} goes through {count} that the earlier backward"
        f"{' at ' + where if where else ''} already freed{how}",
        "if that earlier backward should not reach this graph, cut it where it took it in (.detach(), as in "
        "D(fake.detach())); if both need it, do one backward on the sum of the losses, or pass retain_graph=True "
        "to the first",
    )


def _joined(d: DoctorState, graph_roots, walked, number) -> str:
    """Where the earlier backward (number ``number``, its root still alive) or this one should have cut the
    shared part: the line of the module call nearest to the shared nodes, outside them."""
    earlier = next((r() for r, n in reversed(d.recent) if n == number and r() is not None), None)
    if earlier is None or earlier.grad_fn is None:
        return ""
    # (the leaves' AccumulateGrad nodes are shared by every graph that reaches a parameter: not the graph)
    shared = {fn for fn in set(walked) & set(probes.nodes(earlier)) if probes.node_name(fn) != "AccumulateGrad"}
    leaves = {id(n.variable) for fn in shared for n, _ in fn.next_functions if probes.node_name(n) == "AccumulateGrad"}
    between = [held for at, held in d.step_log if number <= at < d.backwards]
    if not between:
        return ""
    owner_stepped = any(held & leaves for held in between)
    roots = [r.grad_fn for r in graph_roots] if owner_stepped else [earlier.grad_fn]
    found = []
    for root in roots:
        distance = _distances(root, shared)
        found += [
            (distance[fn], fn.metadata["doctor_epoch"][1])
            for fn in distance
            if fn not in shared and distance[fn] is not None and fn.metadata.get("doctor_epoch", (0, ""))[1]
        ]
    return min(found)[1] if found else ""


def _distances(root, shared) -> dict:
    """Node -> the number of edges from it down to the nearest shared node (None: it reaches none), by an
    iterative depth-first walk (graphs of long loops are deep)."""
    out: dict = {}
    stack = [(root, False)]
    while stack:
        fn, children_done = stack.pop()
        if fn in out and not children_done:
            continue
        kids = [n for n, _ in fn.next_functions if n is not None]
        if not children_done:
            out[fn] = None  # (visiting)
            stack.append((fn, True))
            stack.extend((n, False) for n in kids if n not in out)
            continue
        if fn in shared:
            out[fn] = 0
            continue
        below = [out[n] for n in kids if out.get(n) is not None]
        out[fn] = 1 + min(below) if below else None
    return out
