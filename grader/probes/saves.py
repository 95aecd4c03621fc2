"""What the nodes of an op_db run keep for backward: what reached a pack hook, and each saved slot read back.

Read by the claims' sweeps (grader.probes.sweep) on :class:`grader.probes.opdb.OpSample` programs:

* :func:`packed`: the run under a pair of hooks that records what reached pack (a detached alias of each);
* :func:`slots`: every saved slot of the run's graph read back under a numbering pair: which went through
  pack (a wrapped Python number does not), and which pack each holds; the unpacks of a later backward;
* :func:`saved_values` (through torch's version check) and :func:`raw_saved` (without it: what a write
  would have to move to be caught).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import probes
from grader.probes.opdb import OpSample, Run


@dataclass
class Packs:
    """What reached a pack hook during one run: a detached alias of each tensor, in order (no reference cycle
    through a saved output), and how many of them were Python numbers torch had wrapped as tensors."""

    tensors: list[torch.Tensor] = field(default_factory=list)
    wrapped: int = 0

    def __len__(self) -> int:
        return len(self.tensors)

    def __iter__(self) -> Iterator[torch.Tensor]:
        return iter(self.tensors)


def packed(sample: OpSample, **run_kwargs) -> tuple[Run | None, Packs]:
    """``sample.run(**run_kwargs)`` under a saved-tensor pair that records what reaches pack."""
    seen = Packs()

    def pack(t: torch.Tensor) -> torch.Tensor:
        alias = t.detach()
        seen.tensors.append(alias)
        seen.wrapped += probes.is_wrapped_number(t)
        return alias

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run = sample.run(**run_kwargs)
    return run, seen


def saved_values(fn: Any, custom: bool = True) -> list[tuple[str, torch.Tensor]]:
    """(attribute, tensor) for each tensor a node hands back from its ``_saved_*`` attributes (a list of them,
    such as index's indices, one entry each), or a custom Function's ``saved_tensors``; a slot that cannot be
    read (freed, stale) is left out; ``custom=False`` reads torch's own nodes' ``_saved_*`` only."""
    out = []
    for attr in dir(fn):
        if not attr.startswith("_saved_") and not (custom and attr == "saved_tensors"):  # a custom Function's
            continue
        try:
            value = getattr(fn, attr)
        except RuntimeError:
            continue
        items = value if isinstance(value, (list, tuple)) else [value]
        out += [(attr, v) for v in items if isinstance(v, torch.Tensor)]
    return out


@dataclass
class Slot:
    """One saved slot of a node of the run's graph, read back under a recording pair of hooks."""

    node: str
    attribute: str
    unpacked: bool  # reading it went through unpack (False: a wrapped number, saved without pack)
    packed: int  # which of the run's packs it holds (-1 when it did not go through unpack)


def raw_saved(fn: Any) -> list[torch.Tensor]:
    """The tensors a node keeps, read without torch's version check (``_raw_saved_*``'s data): what a write
    would have to move to be caught. Wrapped numbers and slots backward already freed are left out."""
    out = []
    for attr in dir(fn):
        if not attr.startswith("_raw_saved_"):
            continue
        try:
            raw = getattr(fn, attr)
        except RuntimeError:
            continue
        for item in raw if isinstance(raw, (list, tuple)) else [raw]:
            try:
                data = item.data if item is not None and hasattr(item, "data") else None
            except RuntimeError:
                continue
            if isinstance(data, torch.Tensor) and not probes.is_wrapped_number(data):
                out.append(data)
    return out


def slots(sample: OpSample, unpack=None) -> tuple[Run | None, list[Slot], list[int]]:
    """Run the operation under a pair whose pack hands back a numbered token; then read every ``_saved_*``
    slot of the graph. Returns (run, the slots, the token of every pack in call order); ``unpack(token)`` is
    called on every unpack after the slots are read (to count what backward unpacks)."""
    packs: list[int] = []
    reading: list[int] = []
    live = {"after": None}

    def pack(t: torch.Tensor):
        packs.append(len(packs))
        return (packs[-1], t.detach())

    def unpacked(token):
        if live["after"] is not None:
            live["after"](token[0])
        else:
            reading.append(token[0])
        return token[1]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpacked):
        run = sample.run()
    found = []
    if run is not None:
        for fn in run.nodes():
            for attr in dir(fn):
                if not attr.startswith("_saved_"):
                    continue
                before = len(reading)
                try:
                    value = getattr(fn, attr)
                except RuntimeError:
                    continue
                items = value if isinstance(value, (list, tuple)) else [value]
                for item in items:
                    if not isinstance(item, torch.Tensor):
                        continue
                    went = len(reading) > before and not probes.is_wrapped_number(item)
                    token = reading[before] if went else -1
                    before += went
                    found.append(Slot(probes.node_name(fn), attr, went, token))
    live["after"] = unpack
    return run, found, packs
