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


class Root:
    """One backward's loss graph, as :func:`check_old_roots` follows it: its line and the call's number there,
    whether a later backward walked into it (an outer loss taking inner graphs in, as in MAML), and where a
    running total took it in (set by :mod:`.intent`). ``token`` says whether any of its nodes is alive."""

    __slots__ = ("site", "call", "walked", "summed_at", "token")

    def __init__(self, site: str, call: int, summed_at: str):
        self.site, self.call, self.walked, self.summed_at = site, call, False, summed_at
        self.token: Any = None

    def alive(self) -> bool:
        return self.token() is not None


class _Token:
    """Put in the metadata of a loss's node and of its inputs' nodes (one token shared by them): a weak
    reference to it says whether any of them is still alive."""

    __slots__ = ("root", "__weakref__")

    def __init__(self, root: Root):
        self.root = root


def stamp_and_check(d, walked, site, retain) -> set:
    """Stamp every walked node with this walk; report carried state. Returns the earlier stamps seen
    (for the freed-graph check)."""
    call = d.site_calls[site]
    earlier, carried, new, size = set(), [], 0, 0
    for fn in walked:
        meta = fn.metadata
        token = meta.get("doctor_out")
        if token is not None:
            token.walk()
        kept = meta.get("doctor_alive")
        if kept is not None:  # a loss graph of an earlier backward, walked again: not kept unwalked
            kept.root.walked = True
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
    """After a backward: one token in the metadata of the root's node and of its inputs' nodes (a leaf's
    ``AccumulateGrad``, shared by every step, left out) lives exactly as long as the last of them."""
    for r in graph_roots:
        nodes = [r.grad_fn, *(n for n, _ in r.grad_fn.next_functions if n is not None)]
        nodes = [fn for fn in nodes if probes.node_name(fn) != "AccumulateGrad"]
        summed = next((fn.metadata["doctor_summed_at"] for fn in nodes if "doctor_summed_at" in fn.metadata), "")
        root = Root(site, d.site_calls[site], summed)
        token = _Token(root)
        root.token = weakref.ref(token)
        for fn in nodes:
            fn.metadata["doctor_alive"] = token
        d.old_roots[site].append(root)


def check_old_roots(d, site) -> None:
    """Before a backward: the loss graphs of three or more earlier calls of this line still alive, none of
    them walked by a later backward, are remembered (the last 8 calls of each line are looked at). They are
    judged at the end (:func:`conclude`): kept until a later backward walked them (inner losses that an
    outer loss takes in, as in MAML) is no finding; never walked is something keeping every step's loss."""
    call = d.site_calls[site]
    kept = tuple(r for r in d.old_roots[site] if r.call < call and not r.walked and r.alive())
    if len(kept) >= 3:
        d.kept_roots[site].append(kept)
        summed = next((r.summed_at for r in kept if r.summed_at), "")
        for r in kept:  # kept together: by the running total one of them was seen taken into
            r.summed_at = r.summed_at or summed


def conclude(d, exc) -> None:
    """Each line whose backward saw three or more earlier loss graphs alive together, that no backward ever
    walked after their own, is named. In a run cut short, only those already dropped count (a backward
    still to come may have walked the others)."""
    for site, groups in d.kept_roots.items():
        unwalked = max(
            ([r for r in group if not r.walked and (exc is None or not r.alive())] for group in groups), key=len
        )
        if len(unwalked) < 3:
            continue
        summed = next((r.summed_at for r in unwalked if r.summed_at), "")
        d.add(
            ("kept-roots", site),
            Mechanism.CARRIED_STATE,
            summed or site,
            f"the loss graphs of {len(unwalked)} earlier calls of the backward at {site or '?'} were alive together "
            "after their backward, and no later backward walked them (more every step): "
            + (
                f"the running total started at {summed} keeps the loss tensors"
                if summed
                else "something keeps the loss tensor itself"
            ),
            "keep a number, not the tensor: total += loss.item() (or loss.detach())",
        )
