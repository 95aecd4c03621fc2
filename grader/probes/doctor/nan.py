"""NaN from a masked or unselected branch (unit 03/12), at tensor level (no module needed).

After a backward whose loss is finite, the leaves whose gradient has non-finite entries. Where the graph
has a masking node (``torch.where``, boolean indexing, ``masked_fill``...; not slicing, ``select`` or
``gather``, which most models use and which would make the hooks cost every step), the doctor puts a
post-hook on the nodes just below each masking node for that one backward, to name the first of them
that turned finite incoming gradients into non-finite ones (what anomaly mode's check names, without
raising). The forward line comes from a replay: the next step is recorded under anomaly mode
(``check_nan=False``, so nothing raises and nothing computed changes) and the node of the same kind at
the same backward line carries the traceback of its forward."""

from __future__ import annotations

import torch

from grader import probes
from grader.probes.doctor.base import Backward, Check, DoctorState
from grader.probes.doctor.findings import Finding, Mechanism
from grader.probes.doctor.frames import anomaly_line
from grader.probes.doctor.nonleaf import raw_grad

_MASKING = frozenset(
    {
        "WhereBackward0",
        "IndexBackward0",
        "MaskedFillBackward0",
        "MaskedSelectBackward0",
        "MaskedScatterBackward0",
    }
)


class Nan(Check):
    def __init__(self, d):
        super().__init__(d)
        self.replay: dict[str, str] = {}  # backward site -> the node kind to find again in the anomaly replay

    def on_backward_start(self, bw: Backward) -> None:
        if not bw.from_grad:
            bw.notes["nan"] = watch(self.d, bw.walked)

    def on_backward_finally(self, bw: Backward) -> None:
        watched = bw.notes.get("nan")
        if watched is not None:
            unwatch(watched)

    def on_backward_end(self, bw: Backward) -> None:
        if not bw.from_grad:
            check(self.d, bw.graph_roots, bw.leaves, bw.site, bw.notes.get("nan"), self.replay)


def _finite(g) -> bool:
    return g is None or not g.is_floating_point() or bool(torch.isfinite(g).all())


def watch(d: DoctorState, walked):
    """Post-hooks on the nodes just below each masking node (3 deep, 32 at most: where a masked-out branch's
    zero gradient meets an infinite local derivative), for one backward; (handles, found) or None."""
    masks = [fn for fn in walked if probes.node_name(fn) in _MASKING]
    if not masks:
        return None
    targets: dict = {}
    frontier = [(n, 1) for m in masks for n, _ in m.next_functions if n is not None]
    while frontier and len(targets) < 32:
        fn, depth = frontier.pop()
        if fn in targets or depth > 3 or probes.node_name(fn) == "AccumulateGrad":
            continue
        targets[fn] = None
        frontier.extend((n, depth + 1) for n, _ in fn.next_functions if n is not None)
    found: list = []
    handles = []
    for fn in targets:

        def hook(grad_inputs, grad_outputs, fn=fn):
            if not found and all(_finite(g) for g in grad_outputs) and not all(_finite(g) for g in grad_inputs):
                found.append(fn)

        handles.append(fn.register_hook(hook))
    return handles, found


def unwatch(watched):
    for handle in watched[0]:
        handle.remove()


def check(d: DoctorState, graph_roots, leaves, site, watched, replay: dict[str, str]):
    finite = all(bool(torch.isfinite(r.detach()).all()) for r in graph_roots)
    origin = watched[1][0] if watched and watched[1] else None
    replayed = replay.pop(site, None)
    if replayed is not None:  # the replay is this one step: anomaly mode goes off whatever it shows
        d.replay_done(("nan", site))
        if finite and origin is not None and probes.node_name(origin) == replayed:
            _forward_line(d, site, origin)
        return
    if not finite:
        return
    if origin is not None:  # kept even when no leaf's gradient ends non-finite (a ReLU below may zero it)
        d.nan_origins[site] = origin
    bad = []
    for leaf in leaves:
        g = raw_grad(leaf)
        if g is not None and g.is_floating_point() and not bool(torch.isfinite(g).all()):
            bad.append((leaf, int((~torch.isfinite(g)).sum())))
    if not bad or ("nan", site) in d.keys:
        return
    leaf, count = bad[0]
    where = f"a leaf {list(leaf.shape)}"
    node = ""
    if origin is not None:
        node = (
            f"; the first node to turn finite incoming gradients into non-finite ones is "
            f"{probes.node_name(origin)} (inputs: {', '.join(probes.node_name(n) for n, _ in origin.next_functions)})"
        )
    d.add(
        ("nan", site),
        Mechanism.NAN_MASKED_BRANCH,
        site,
        f"the loss is finite but the gradient of {d.name_of.get(id(leaf), where)} has {count} non-finite entries "
        f"({len(bad)} leaf/leaves in all){node}: a branch masked out in forward (torch.where, indexing) still "
        "sends 0 * inf (or 0 * nan) = nan back",
        "make the unselected branch safe before the op: torch.where(mask, x, safe_value) inside, then the op",
    )
    if origin is not None:  # replay the next step at this line under anomaly mode, for the forward line
        replay[site] = probes.node_name(origin)
        d.replay_next(("nan", site))


def _forward_line(d: DoctorState, site, origin):
    line = anomaly_line(origin)
    if not line:
        return
    for i, f in enumerate(d.findings):
        if f.mechanism is Mechanism.NAN_MASKED_BRANCH and f.line == site:
            evidence = f.evidence + f" (made in forward at {line}, from anomaly mode's record of the next step)"
            d.findings[i] = Finding(f.mechanism, line, evidence, f.fix)
