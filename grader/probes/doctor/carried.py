"""Carried state and growing graphs (unit 08): a backward that goes back into a graph an earlier call of the
same backward line already went through, or loss graphs of earlier steps kept alive after their backward.

Steps are the program's own loop: the calls of one backward line. Each node a backward walks is stamped
(in its metadata) with that walk: its line, the call's number there, the optimizer step count, and
whether the walk retained the graph. A walk reaches *carried* nodes when it reaches nodes an earlier call
of its own line walked, together with nodes never walked (this step's new forward), and the earlier walk
either freed the graph (going back is an error) or an optimizer step came between (the state outlived
its step). What is not carried: a graph walked again whole (a Jacobian row by row with
``retain_graph=True``), several losses of one step sharing a trunk, and higher-order passes within a step.

The finding's line is where the carried tensor was made: the module call whose output the new graph
joins (the state a ``detach()`` there would cut), or the backward line where no such call is known.
"""

from __future__ import annotations

import weakref
from typing import Any

from grader import probes
from grader.probes.doctor.findings import Mechanism


class _Token:
    """Put in a node's metadata; a weak reference to it says whether the node is still alive. ``summed_at``:
    where a running total took the node's tensor in (set by :mod:`.intent`)."""

    __slots__ = ("summed_at", "__weakref__")

    def __init__(self, summed_at: str = ""):
        self.summed_at = summed_at


def stamp_and_check(d, walked, site, retain) -> set:
    """Stamp every walked node with this walk; report carried state. Returns the earlier stamps seen
    (for the freed-graph check)."""
    call = d.site_calls[site]
    earlier, carried, new, size = set(), [], 0, 0
    for fn in walked:
        meta = fn.metadata
        token = meta.get("doctor_out")
        if token is not None:
            token.walked = True
        if probes.node_name(fn) == "AccumulateGrad":  # one per leaf, shared by every step: not state
            continue
        size += 1
        seen = meta.get("doctor")
        meta["doctor"] = (site, call, d.backwards, d.epoch, retain)
        if seen is None:
            new += 1
            continue
        earlier.add(seen)
        where, when, _, epoch, retained = seen
        if where == site and when < call and (not retained or epoch < d.epoch):
            carried.append(fn)
    d.sizes[site].append(size)
    if carried and new:
        _report(d, carried, walked, site)
    return earlier


def _report(d, carried, walked, site) -> None:
    made = producer(carried, walked)
    d.add(
        ("carried", site),
        Mechanism.CARRIED_STATE,
        made or site,
        f"the backward at {site or '?'} goes back into {len(carried)} nodes that an earlier call of it already "
        f"went through: a tensor with its graph outlived its step"
        + (f" (made by the module call at {made})" if made else "")
        + f"; the graph's size at this line per call: {d.sizes[site][-4:]}",
        "detach the state you carry from one step to the next where it is made (h = h.detach(), or "
        "repackage_hidden), and build every tensor with a graph inside the step that backpropagates through it",
    )


def producer(nodes, walked=()) -> str:
    """The line of the module call that made the carried tensor: a module output of this graph that leads
    into ``nodes`` (an LSTM's state: its node was never walked, since the earlier loss did not use it), or
    the nearest module output among or below ``nodes``; '' when none is known."""
    inside = set(nodes)
    for fn in walked:
        stamp = fn.metadata.get("doctor_epoch")
        if stamp is not None and stamp[1] and fn not in inside and any(n in inside for n, _ in fn.next_functions):
            return stamp[1]
    frontier: list[Any] = list(nodes[:8])
    seen: set = set()
    while frontier and len(seen) < 64:
        fn = frontier.pop(0)
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        stamp = fn.metadata.get("doctor_epoch")
        if stamp is not None and stamp[1]:
            return stamp[1]
        frontier.extend(n for n, _ in fn.next_functions)
    return ""


def record_roots(d, graph_roots, site) -> None:
    """After a backward: a token in the root's (and its inputs') metadata lives exactly as long as the node."""
    for r in graph_roots:
        tokens = []
        for fn in [r.grad_fn, *(n for n, _ in r.grad_fn.next_functions if n is not None)]:
            token = _Token(fn.metadata.get("doctor_summed_at", ""))
            fn.metadata["doctor_alive"] = token
            tokens.append(weakref.ref(token))
        d.old_roots[site].append((tokens, site, d.site_calls[site]))


def check_old_roots(d, site) -> None:
    """Before a backward: the loss graphs of three or more earlier calls of this line, older than the
    last one, still alive: something keeps every step's loss tensor. (The last 8 calls of each line are
    kept: three alive among them is enough.)"""
    call = d.site_calls[site]
    kept = [r for r in d.old_roots[site] if r[2] < call - 1 and any(t() is not None for t in r[0])]
    if len({r[2] for r in kept}) < 3:
        return
    summed = next((t().summed_at for r in kept for t in r[0] if t() is not None and t().summed_at), "")
    d.add(
        ("kept-roots", site),
        Mechanism.CARRIED_STATE,
        summed or site,
        f"the loss graphs of {len({r[2] for r in kept})} earlier calls of the backward at {site or '?'} are still "
        "alive after their backward (more every step): "
        + (
            f"the running total started at {summed} keeps the loss tensors"
            if summed
            else "something keeps the loss tensor itself"
        ),
        "keep a number, not the tensor: total += loss.item() (or loss.detach())",
    )
