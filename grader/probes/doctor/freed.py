"""A second backward through a freed graph (unit 06): the saved values an earlier backward of the same
step freed, counted with ``probes.saved_attributes`` (never where a checkpoint's hooks were seen)."""

from __future__ import annotations

from grader import probes
from grader.probes.doctor.findings import Mechanism


def on_freed_error(d, walked, site):
    freed = 0
    if not d.saved_hooks_seen:
        freed = sum(1 for fn in walked for v in probes.saved_attributes(fn).values() if v == probes.FREED)
    earlier = {fn.metadata.get("doctor") for fn in walked} - {None}
    previous = [e for e in earlier if e[2] != d.backwards]
    where = previous[0][1] if previous else ""
    count = f"{freed} saved value(s)" if freed else "saved values"
    d.add(
        ("freed", site),
        Mechanism.FREED_GRAPH,
        site,
        f"this backward goes through {count} that the earlier backward{' at ' + where if where else ''} already freed",
        "do one backward on the sum of the losses, or pass retain_graph=True to the first of two backward "
        "calls that share a graph",
    )
