"""In-place writes on saved tensors (unit 07): when backward raises torch's version error, the saved tensor
that is stale (node, slot, shape, versions then and now) and whether its storage is a parameter an
optimizer steps. The doctor adds no saved-tensor hooks, so torch's own version check stays on; it reads
saved tensors only where no saved-tensor hooks (a checkpoint's) were active, never opening a checkpoint's."""

from __future__ import annotations

import re

from grader import probes
from grader.probes.doctor.base import Backward, Check, DoctorState
from grader.probes.doctor.findings import Mechanism
from grader.probes.doctor.freed import explained

_VERSION_ERROR = re.compile(r"output (\d+) of (\w+), is at version (\d+); expected version (\d+)")


class Inplace(Check):
    def on_backward_error(self, bw: Backward, exc) -> None:
        text = str(exc)
        if "modified by an inplace operation" in text and not explained(self.d, bw.site):
            on_version_error(self.d, text, bw.graph_roots, bw.site)


def stale_saved(d: DoctorState, graph_roots):
    """The stale saved tensors of the graph, read with the probes; [] where a checkpoint's hooks were seen."""
    if d.saved_hooks_seen:
        return []
    return [s for r in graph_roots for s in probes.saved_tensors(r) if s.stale]


def on_version_error(d: DoctorState, text, graph_roots, site):
    stale = stale_saved(d, graph_roots)
    found = _VERSION_ERROR.search(text)
    stepped = {p.untyped_storage().data_ptr(): p for p in d.held.values()}
    if stale:
        s = stale[0]
        what = f"the tensor {s.node} saved as {s.attribute} {list(s.shape)}"
        versions = f"version {s.version_saved} -> {s.version_now}"
        owner = stepped.get(s.storage)
        if owner is not None:
            name = d.name_of.get(id(owner), f"a parameter {list(owner.shape)}")
            what += f" (the storage of {name}, which optimizer.step() at {d.step_line or '?'} updates)"
    elif found:
        what = f"output {found.group(1)} of {found.group(2)}, saved for backward,"
        versions = f"version {found.group(4)} -> {found.group(3)}"
    else:
        what, versions = "a tensor saved for backward", "its version moved"
    d.add(
        ("inplace", site),
        Mechanism.INPLACE_ON_SAVED,
        site,
        f"{what} was written in place between the forward and this backward ({versions}); "
        f"{len(stale)} stale saved tensor(s) in the graph",
        "make the write out of place (x = x + ..., inplace=False, clone() before writing), or call every "
        "backward that needs the old values before optimizer.step() (or recompute the forward after it)",
    )
