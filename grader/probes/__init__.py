"""Live probes: ask torch's own record what it holds.

Everything here reads the graph that autograd built (``grad_fn``,
``next_functions``, ``_saved_*``) or watches a forward pass with
``saved_tensors_hooks``; nothing is a table of expected answers.

* graph shape: :func:`nodes`, :func:`node_names`, :func:`edges`, :func:`depth`,
  :func:`size`, :func:`reachable_leaves`, :func:`text_tree`;
* what nodes keep: :func:`saved_attributes`, :func:`saved_tensors` and :func:`saved_in` (with the
  version each was saved at and the version now, before backward runs);
* what a forward pass costs: :func:`bill` (distinct storages kept for backward).

What backward keeps, one definition for the whole course (``bill``, ``draw`` and
every question agree on it): every tensor a node saves that passes through a
saved-tensor pack hook, each storage counted once at its whole size. One kind
of saved tensor never reaches a pack hook: a Python number that torch wrapped
into a 0-dim tensor to run the op (the ``3`` in ``x * 3``, kept as
``_saved_other``; int64 or float64, 8 bytes, complex128, 16; a new one for
every use). Those are not in the bill; :func:`saved_tensors` marks them
``wrapped`` and ``draw`` lists them apart. (A wrapped bool, as in ``x * True``,
cannot be told from ``torch.tensor(True)``, so ``draw`` counts its one byte.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

# --- graph shape ----------------------------------------------------------------


def node_name(fn: Any) -> str:
    """The node's class name; AccumulateGrad's .name() carries a C++ prefix, the class does not."""
    return "None" if fn is None else type(fn).__name__


def _root(obj: Any):
    if isinstance(obj, torch.Tensor):
        return obj.grad_fn
    return obj


def nodes(obj: Any) -> list:
    """Every distinct node reachable from a tensor's grad_fn (or a node), depth first,
    parents before children, next_functions in order."""
    root = _root(obj)
    out, seen, stack = [], set(), [root]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        out.append(fn)
        stack.extend(reversed([nxt for nxt, _ in fn.next_functions]))
    return out


def node_names(obj: Any) -> list[str]:
    return [node_name(fn) for fn in nodes(obj)]


def edges(fn: Any) -> list[tuple[str, int]]:
    """(name of the next node, or 'None', input slot) for each input of ``fn``."""
    return [(node_name(nxt), slot) for nxt, slot in fn.next_functions]


def size(obj: Any) -> int:
    return len(nodes(obj))


def depth(obj: Any) -> int:
    """Nodes on the longest path from ``obj`` down to a leaf node (0 without a graph)."""
    root = _root(obj)
    if root is None:
        return 0
    memo: dict = {}
    stack = [(root, False)]
    while stack:
        fn, expanded = stack.pop()
        if fn in memo:
            continue
        children = [n for n, _ in fn.next_functions if n is not None]
        if expanded:
            memo[fn] = 1 + max((memo[c] for c in children), default=0)
        else:
            stack.append((fn, True))
            stack.extend((c, False) for c in children if c not in memo)
    return memo[root]


def reachable_leaves(obj: Any) -> list[torch.Tensor]:
    """The leaf tensors that backward from ``obj`` would accumulate into, in walk order."""
    return [fn.variable for fn in nodes(obj) if node_name(fn) == "AccumulateGrad"]


def leaf_names(obj: Any, names: Mapping[str, torch.Tensor]) -> set[str]:
    """Names (keys of ``names``) of the leaves reachable from ``obj``."""
    by_id = {id(t): n for n, t in names.items() if isinstance(t, torch.Tensor)}
    return {by_id.get(id(t), "an unnamed tensor") for t in reachable_leaves(obj)}


def name_map(names: Any = None) -> dict[int, str]:
    """id(tensor) -> name, from a dict of tensors, an nn.Module, or a list of either."""
    out: dict[int, str] = {}
    if names is None:
        return out
    items: Iterable = names if isinstance(names, (list, tuple)) else [names]
    for item in items:
        if isinstance(item, torch.nn.Module):
            for n, p in item.named_parameters():
                out.setdefault(id(p), n)
        elif isinstance(item, Mapping):
            for n, t in item.items():
                if isinstance(t, torch.Tensor):
                    out.setdefault(id(t), n)
    return out


def text_tree(obj: Any, names: Any = None, saved: bool = False) -> str:
    """An indented drawing of the graph; a node met again is marked rather than repeated."""
    labels = name_map(names)
    root = _root(obj)
    if root is None:
        return "(no graph: this tensor has no grad_fn)"
    lines, seen = [], set()

    def label(fn):
        text = node_name(fn)
        if text == "AccumulateGrad":
            leaf = fn.variable
            text += f" -> {labels.get(id(leaf), 'leaf')} {tuple(leaf.shape)}"
        if saved:
            keep = [
                a + (f" (wrapped number {v.item()})" if is_wrapped_number(v) else "")
                for a, v in saved_attributes(fn).items()
                if isinstance(v, torch.Tensor)
            ]
            if keep:
                text += "  saves " + ", ".join(keep)
        return text

    def visit(fn, indent, slot):
        prefix = "  " * indent + (f"[{slot}] " if indent else "")  # slot: which input of the parent
        if fn is None:
            lines.append(prefix + "None (needs no gradient)")
            return
        if fn in seen:
            lines.append(prefix + node_name(fn) + "  (the same node as above)")
            return
        seen.add(fn)
        lines.append(prefix + label(fn))
        for position, (nxt, _) in enumerate(fn.next_functions):
            visit(nxt, indent + 1, position)

    visit(root, 0, 0)
    return "\n".join(lines)


# --- what the nodes keep ------------------------------------------------------------

FREED = "freed"

# A wrapped number takes part in type promotion as the Python number it was, below any tensor of
# its category, 0-dim tensors included: ``torch.tensor(3)`` (int64) with a 0-dim int8 tensor gives
# int64, the wrapped ``3`` gives int8. One probe per dtype a Python number can become.
_PROMOTION_PROBES = {
    torch.int64: torch.tensor(1, dtype=torch.int8),
    torch.float64: torch.tensor(1, dtype=torch.float16),
    torch.complex128: torch.tensor(1, dtype=torch.complex64),
}


def is_wrapped_number(t: Any) -> bool:
    """True for a 0-dim tensor that torch made from a Python number (int, float, complex) to run an op.

    No public attribute says so; type promotion does (see ``_PROMOTION_PROBES``). A wrapped bool
    (``x * True``) cannot be told from ``torch.tensor(True)`` this way and reads False.
    """
    if not isinstance(t, torch.Tensor) or t.dim() != 0 or t.requires_grad or t.device.type != "cpu":
        return False
    probe = _PROMOTION_PROBES.get(t.dtype)
    return probe is not None and torch.result_type(t, probe) == probe.dtype


def saved_attributes(fn: Any) -> dict[str, Any]:
    """{'_saved_self': value, ...} for one node; a value backward already freed reads 'freed'."""
    out = {}
    for attr in dir(fn):
        if not attr.startswith("_saved_"):
            continue
        try:
            out[attr] = getattr(fn, attr)
        except RuntimeError as exc:
            out[attr] = FREED if "freed" in str(exc) or "second time" in str(exc) else _Stale(str(exc))
    return out


class _Stale:
    """A saved tensor whose version moved since it was saved (reading it raised)."""

    def __init__(self, message: str):
        self.message = message

    def __repr__(self):
        return "<stale saved tensor>"


_VERSIONS = re.compile(r"version (\d+); expected version (\d+)")


@dataclass
class SavedTensor:
    node: str
    attribute: str
    shape: tuple = ()
    dtype: str = ""
    bytes: int = 0  # the whole storage, which is what stays alive
    storage: int = 0  # storage address, to tell shared storages apart
    version_saved: int | None = None
    version_now: int | None = None
    state: str = "ok"  # 'ok', 'stale' (a write since saving) or 'freed'
    what: str = ""
    wrapped: bool = False  # a Python number wrapped as a 0-dim tensor: no pack hook sees it
    value: Any = None  # for a wrapped number, the number

    @property
    def stale(self) -> bool:
        return self.state == "stale"


def saved_tensors(obj: Any, names: Any = None) -> list[SavedTensor]:
    """Every tensor the graph under ``obj`` keeps for backward, with versions then and now.

    Read before backward, a 'stale' entry is a write that will make backward raise. Wrapped Python
    numbers are listed too, marked ``wrapped``: they are kept, but they are not in the bill.
    """
    labels = name_map(names)
    return [entry for fn in nodes(obj) for entry in saved_in(fn, labels)]


def saved_in(fn: Any, labels: Mapping[int, str] | None = None) -> list[SavedTensor]:
    """What one node keeps for backward, as :func:`saved_tensors` lists it (``labels``: id -> name). A slot
    is unpacked only when it holds a tensor, so a checkpoint's slots (they hold its own objects) are never
    opened: unpacking them would run the checkpointed forward again."""
    labels = labels or {}
    out = []
    for attr in dir(fn):
        if not attr.startswith("_raw_saved_"):
            continue
        name = "_saved_" + attr[len("_raw_saved_") :]
        try:
            raw = getattr(fn, attr)
        except RuntimeError:  # backward already freed it
            out.append(SavedTensor(node=node_name(fn), attribute=name, state=FREED))
            continue
        if isinstance(raw, (list, tuple)):
            # a list of saved tensors: a custom Function's ctx.save_for_backward (read back as
            # node.saved_tensors), or a built-in's tensor-list argument such as index's indices
            base = name if hasattr(fn, name) else name.lstrip("_")
            for i, item in enumerate(raw):
                # named first: mypy cannot infer a lambda with a default written as an argument
                unpack = lambda item=item: item.unpack()
                entry = _saved_entry(fn, f"{base}[{i}]", item, labels, unpack)
                if entry is not None:
                    out.append(entry)
            continue
        read = lambda fn=fn, name=name: getattr(fn, name)  # named first, as above
        entry = _saved_entry(fn, name, raw, labels, read)
        if entry is not None:
            out.append(entry)
    return out


def _saved_entry(fn, name: str, raw: Any, labels: Mapping[int, str], read: Callable[[], Any]) -> SavedTensor | None:
    """One saved slot as a SavedTensor; None when the slot holds no tensor. ``read`` unpacks it with
    torch's own version check."""
    entry = SavedTensor(node=node_name(fn), attribute=name)
    if raw is None or not hasattr(raw, "data"):
        return None
    try:
        data = raw.data
    except RuntimeError:
        entry.state = FREED
        return entry
    if data is None:
        try:
            read()  # None: nothing was saved in this slot
            return None
        except RuntimeError:  # backward already freed it
            entry.state = FREED
            return entry
    if not isinstance(data, torch.Tensor):
        return None
    entry.shape = tuple(data.shape)
    entry.dtype = str(data.dtype).replace("torch.", "")
    entry.bytes = data.untyped_storage().nbytes()
    entry.storage = data.untyped_storage().data_ptr()
    entry.version_now = data._version
    entry.what = labels.get(id(data), "")
    if is_wrapped_number(data):
        entry.wrapped, entry.value = True, data.item()
    try:
        value = read()
        entry.version_saved = entry.version_now
        if isinstance(value, torch.Tensor):
            entry.what = entry.what or labels.get(id(value), "")
    except RuntimeError as exc:
        text = str(exc)
        if "freed" in text or "second time" in text:
            entry.state = FREED
        elif _VERSIONS.search(text) or "modified by an inplace operation" in text:
            entry.state = "stale"
            found = _VERSIONS.search(text)
            if found:
                entry.version_now, entry.version_saved = int(found.group(1)), int(found.group(2))
        else:  # this slot cannot be unpacked on its own: no check possible
            entry.version_saved = entry.version_now
    return entry


# --- the saved-tensor bill ------------------------------------------------------------------


@dataclass
class BillEntry:
    shape: tuple
    dtype: str
    bytes: int
    what: str
    saves: int = 1  # how many saves landed on this storage


@dataclass
class Bill:
    entries: list[BillEntry] = field(default_factory=list)
    output: Any = None

    @property
    def total(self) -> int:
        return sum(e.bytes for e in self.entries)

    @property
    def count(self) -> int:
        return len(self.entries)

    def names(self) -> set[str]:
        return {e.what for e in self.entries}

    def table(self) -> str:
        rows = [f"{'shape':<14} {'dtype':<9} {'bytes':>12}  what"]
        for e in self.entries:
            rows.append(f"{str(e.shape):<14} {e.dtype:<9} {e.bytes:>12,}  {e.what}")
        rows.append(f"{len(self.entries)} storages, {self.total:,} bytes")
        return "\n".join(rows)

    def __repr__(self):
        return self.table()


def bill(forward: Callable[[], Any], names: Any = None, inputs: Mapping[str, torch.Tensor] | None = None) -> Bill:
    """Run ``forward()`` and count what autograd keeps for backward, by distinct storage.

    It counts what reaches its pack hook: every save made inside ``forward()``
    except Python numbers wrapped as 0-dim tensors, which no pack hook sees (and
    nothing at all under another hook pair, which runs instead of this one).
    A saved view keeps its whole base allocation alive, so each storage is
    counted once at its full size. ``names`` (a module, a dict of tensors, or a
    list of them) labels parameters; ``inputs`` labels input tensors; anything
    else is 'an activation'.
    """
    labels: dict[int, str] = {}
    for key, label in name_map(names).items():
        labels[key] = label
    by_storage: dict[int, str] = {}
    for item in [names] if not isinstance(names, (list, tuple)) else list(names):
        if isinstance(item, torch.nn.Module):
            for n, p in item.named_parameters():
                by_storage.setdefault(p.untyped_storage().data_ptr(), n)
        elif isinstance(item, Mapping):
            for n, t in item.items():
                if isinstance(t, torch.Tensor):
                    by_storage.setdefault(t.untyped_storage().data_ptr(), n)
    for n, t in (inputs or {}).items():
        by_storage.setdefault(t.untyped_storage().data_ptr(), n)

    seen: dict[int, BillEntry] = {}

    def pack(t):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key in seen:
            seen[key].saves += 1
        else:
            what = by_storage.get(key) or labels.get(id(t)) or "an activation"
            seen[key] = BillEntry(tuple(t.shape), str(t.dtype).replace("torch.", ""), storage.nbytes(), what)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        output = forward()
    return Bill(entries=list(seen.values()), output=output)
