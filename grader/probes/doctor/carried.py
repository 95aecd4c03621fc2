"""Carried state and growing graphs (unit 08): this step's graph reaches nodes an earlier step's backward
already went through, or the loss graphs of earlier steps stay alive after their backward."""

from __future__ import annotations

import weakref

from grader import probes
from grader.probes.doctor.findings import Mechanism


class _Token:
    """Put in a node's metadata; a weak reference to it says whether the node is still alive."""


def stamp_and_check(d, walked, site):
    """Stamp every node with the round (and backward call) that first walked it; a node stamped in an
    earlier round, or by an earlier call of this same backward line, is a graph carried across steps."""
    earlier, old, size = set(), 0, 0
    for fn in walked:
        if probes.node_name(fn) == "AccumulateGrad":  # one per leaf, shared by every step: not state
            continue
        size += 1
        meta = fn.metadata
        seen = meta.get("doctor")
        if seen is None:
            meta["doctor"] = (d.round, site, d.backwards)
            continue
        made, where, _ = seen
        if made < d.round or where == site:
            earlier.add(seen)
            old += 1
    d.sizes[site].append(size)
    if earlier:
        d.carried[site] |= earlier
        steps = sorted({e[0] for e in d.carried[site]})
        d.add(
            ("carried", site),
            Mechanism.CARRIED_STATE,
            site,
            f"this step's graph ({size} nodes) reaches {old} nodes that the backward of an earlier step "
            f"already went through (made in step(s) {steps[:6]}, this is step {d.round}); the graph's "
            f"size at this line per call: {d.sizes[site][-4:]}",
            "detach the state you carry from one step to the next (h = h.detach()) at the step boundary, and "
            "build every tensor with a graph inside the step that backpropagates through it",
        )
    return earlier


def record_roots(d, graph_roots, site):
    """After a backward: a token in the root's (and its inputs') metadata lives exactly as long as the node."""
    for r in graph_roots:
        tokens = []
        for fn in [r.grad_fn, *(n for n, _ in r.grad_fn.next_functions if n is not None)]:
            token = _Token()
            fn.metadata["doctor_alive"] = token
            tokens.append(weakref.ref(token))
        d.old_roots.append((tokens, d.epoch, site))


def check_old_roots(d):
    """At an optimizer step: roots of earlier steps' backward calls still alive: something keeps every step's graph."""
    alive = [r for r in d.old_roots if any(t() is not None for t in r[0])]
    d.old_roots = alive[-200:]
    epochs = {e for _, e, _ in alive if e < d.epoch - 1}
    if len(epochs) >= 3:
        site = alive[0][2]
        d.add(
            ("kept-roots", site),
            Mechanism.CARRIED_STATE,
            site,
            f"the loss graphs of {len(epochs)} earlier steps are still alive after their backward (more "
            "every step): something accumulates the loss tensor itself",
            "keep a number, not the tensor: total += loss.item() (or loss.detach())",
        )
