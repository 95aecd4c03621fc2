"""draw(): the graph behind a tensor, with what each node saved for backward.

The drawing is read from autograd's own record (``grad_fn``, ``next_functions``,
``_saved_*``) through :mod:`grader.probes`:

* one box per node, by class; an AccumulateGrad box names its leaf (from a
  ``names`` mapping or a module's named parameters);
* each edge is labelled ``[i]``, the input slot it serves (``next_functions[i]``),
  as in the text form; an empty slot (``None``) is drawn too;
* a shape reads ``(2, 3)``, and a 0-dim tensor's reads ``(scalar)``, not ``()``;
* every saved storage once, with shape, dtype, bytes and its version when
  saved and now: a stale one (written in place since) is drawn in red, so the
  in-place error can be seen before backward runs; what backward already freed
  is drawn grey;
* a Python number that torch wrapped into a 0-dim tensor (the ``3`` of
  ``x * 3``) is kept by its node too, but no pack hook ever sees it, so it is
  listed apart (``W1``, ...) and left out of the totals: ``storages`` and
  ``total_bytes`` are the bill that :func:`grader.probes.bill` counts.

In a notebook it shows as SVG when Graphviz's ``dot`` program is installed, also given as an HTML image
whose ``alt`` is the text form, so a screen reader reads the graph (JupyterLab draws a bare SVG output as
an image without one). Its text/plain is an indented tree that is deterministic, so nbval can compare it
(SVG, and the SVG data inside the HTML, are excluded from comparison). Without ``dot`` only the text is shown.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import probes

FREED = probes.FREED
WRAPPED = "wrapped"


@dataclass
class Wrapped:
    """A Python number wrapped as a 0-dim tensor and kept by one node: outside the bill."""

    index: int  # W1, W2, ... in the order the walk meets them
    value: Any
    dtype: str
    bytes: int
    node: str
    attribute: str


@dataclass
class Storage:
    """One storage kept alive for backward, however many saves landed on it."""

    index: int  # 1, 2, ... in the order the walk first meets it
    shape: tuple
    dtype: str
    bytes: int
    version_saved: int | None
    version_now: int | None
    state: str = "ok"  # 'ok' or 'stale'
    name: str = ""  # from names, when it is a named tensor's storage
    savers: list = field(default_factory=list)  # (node label, attribute) pairs

    @property
    def stale(self) -> bool:
        return self.state == "stale"

    @property
    def what(self) -> str:
        if self.name:
            return self.name
        for node, attribute in self.savers:
            if attribute == "_saved_result":
                return f"output of {node.split(' ')[0]}"
        return ""

    def versions(self) -> str:
        if self.stale:
            return f"STALE: saved at version {self.version_saved}, now {self.version_now}; backward will raise"
        return f"version {self.version_now} (as saved)"


@dataclass
class Node:
    index: int
    fn: Any = field(repr=False)
    name: str
    label: str
    edges: list = field(default_factory=list)  # (input slot, Node index or None)
    saves: list = field(default_factory=list)  # (attribute, Storage index, FREED, or (WRAPPED, index))


class _One:
    """Presents one node to probes.saved_tensors without its children, so saves stay per node."""

    next_functions = ()

    def __init__(self, fn):
        self._fn = fn

    def __dir__(self):
        return dir(self._fn)

    def __getattr__(self, name):
        return getattr(self._fn, name)


def _storage_names(names: Any) -> dict[int, str]:
    """storage address -> name for every named tensor (a view of a parameter counts as it)."""
    out: dict[int, str] = {}
    items = names if isinstance(names, (list, tuple)) else [names]
    for item in items:
        if isinstance(item, torch.nn.Module):
            pairs = list(item.named_parameters()) + list(item.named_buffers())
        elif isinstance(item, Mapping):
            pairs = [(n, t) for n, t in item.items() if isinstance(t, torch.Tensor)]
        else:
            continue
        for n, t in pairs:
            if t.untyped_storage().nbytes():
                out.setdefault(t.untyped_storage().data_ptr(), n)
    return out


def _roots(outputs: Any) -> list[tuple[str, torch.Tensor]]:
    if isinstance(outputs, torch.Tensor):
        return [("", outputs)]
    if isinstance(outputs, Mapping):
        return [(str(k), v) for k, v in outputs.items()]
    if isinstance(outputs, (list, tuple)):
        return [("", t) for t in outputs]
    raise TypeError(f"draw() takes a tensor, a list of tensors or a dict of them, not {type(outputs).__name__}")


class Drawing:
    """What :func:`draw` returns: the graph as data, as text, as DOT source and (with dot) as SVG."""

    def __init__(self, outputs: Any, names: Any = None, saved: bool = True):
        labels = probes.name_map(names)
        self.show_saved = saved
        by_storage = _storage_names(names) if saved else {}
        self.roots: list[tuple[str, Any]] = []
        self.nodes: list[Node] = []
        self.storages: list[Storage] = []
        self.freed: list[tuple[str, str]] = []
        self.wrapped: list[Wrapped] = []
        index_of: dict[Any, int] = {}
        storage_of: dict[tuple, int] = {}

        for i, (given, tensor) in enumerate(_roots(outputs)):
            if not isinstance(tensor, torch.Tensor):
                raise TypeError(f"draw() takes tensors; got {type(tensor).__name__}")
            name = given or labels.get(id(tensor), "") or ("output" if i == 0 else f"output {i}")
            self.roots.append((f"{name} {shape_words(tensor.shape)}", tensor.grad_fn))

        def label(fn) -> str:
            text = probes.node_name(fn)
            if text == "AccumulateGrad":
                leaf = fn.variable
                text += f" -> {labels.get(id(leaf), 'leaf')} {shape_words(leaf.shape)}"
            return text

        order = []
        for _, fn in self.roots:
            for node in probes.nodes(fn) if fn is not None else []:
                if node not in index_of:
                    index_of[node] = len(order)
                    order.append(node)
        for i, fn in enumerate(order):
            node = Node(i, fn, probes.node_name(fn), label(fn))
            node.edges = [
                (slot, index_of.get(nxt) if nxt is not None else None)
                for slot, (nxt, _) in enumerate(fn.next_functions)
            ]
            if saved:
                for entry in probes.saved_tensors(_One(fn), names):
                    if entry.state == FREED:
                        node.saves.append((entry.attribute, FREED))
                        self.freed.append((node.label, entry.attribute))
                        continue
                    if entry.wrapped:
                        self.wrapped.append(
                            Wrapped(
                                len(self.wrapped) + 1,
                                entry.value,
                                entry.dtype,
                                entry.bytes,
                                node.label,
                                entry.attribute,
                            )
                        )
                        node.saves.append((entry.attribute, (WRAPPED, len(self.wrapped))))
                        continue
                    key = (entry.storage, entry.bytes) if entry.storage else ("empty", i, entry.attribute)
                    if key not in storage_of:
                        storage_of[key] = len(self.storages)
                        self.storages.append(
                            Storage(
                                len(self.storages) + 1,
                                entry.shape,
                                entry.dtype,
                                entry.bytes,
                                entry.version_saved,
                                entry.version_now,
                                entry.state,
                                by_storage.get(entry.storage) or entry.what,
                            )
                        )
                    storage = self.storages[storage_of[key]]
                    storage.savers.append((node.label, entry.attribute))
                    if entry.stale:  # one stale save makes the storage's story stale
                        storage.state = "stale"
                        storage.version_saved, storage.version_now = entry.version_saved, entry.version_now
                    node.saves.append((entry.attribute, storage.index))
            self.nodes.append(node)

    # -- figures --------------------------------------------------------------------------------
    @property
    def total_bytes(self) -> int:
        return sum(s.bytes for s in self.storages)

    @property
    def stale(self) -> list[Storage]:
        return [s for s in self.storages if s.stale]

    def summary(self) -> str:
        parts = [_plural(len(self.nodes), "node")]
        if self.show_saved:  # draw(..., saved=False) measured nothing: it says nothing about the bill
            parts.append(f"{_plural(len(self.storages), 'saved storage')}, {self.total_bytes:,} bytes")
        if self.wrapped:
            parts.append(f"{_plural(len(self.wrapped), 'wrapped number')} outside the bill")
        if self.stale:
            parts.append(f"{len(self.stale)} STALE")
        if self.freed:
            parts.append(f"{len(self.freed)} saved values freed by backward")
        return "; ".join(parts)

    # -- text ------------------------------------------------------------------------------------
    def text(self) -> str:
        lines = [f"graph: {self.summary()}"]
        seen: set[int] = set()

        def saves(node: Node) -> str:
            if not node.saves:
                return ""
            parts = [
                f"{a} (freed)" if s == FREED else f"{a} -> W{s[1]}" if isinstance(s, tuple) else f"{a} -> S{s}"
                for a, s in node.saves
            ]
            return "  saves " + ", ".join(parts)

        def visit(index, depth, slot):
            prefix = "  " * depth + (f"[{slot}] " if slot is not None else "")
            if index is None:
                lines.append(prefix + "None (no gradient needed)")
                return
            node = self.nodes[index]
            if index in seen:
                lines.append(prefix + node.label + "  (the same node as above)")
                return
            seen.add(index)
            lines.append(prefix + node.label + saves(node))
            for s, child in node.edges:
                visit(child, depth + 1, s)

        for name, fn in self.roots:
            if fn is None:
                lines.append(f"{name}: no grad_fn, so no graph behind it")
                continue
            lines.append(f"{name}:")
            visit(next(n.index for n in self.nodes if n.fn is fn), 1, None)
        if self.storages:
            lines.append("saved storages (each counted once, at its whole size):")
            for s in self.storages:
                by = ", ".join(f"{n.split(' ')[0]}.{a}" for n, a in s.savers)
                what = f"  {s.what}" if s.what else ""
                lines.append(
                    f"  S{s.index}  {shape_words(s.shape):<12} {s.dtype:<8} {s.bytes:>12,} bytes  {s.versions()}{what}  <- {by}"
                )
            lines.append(f"  {_plural(len(self.storages), 'storage')}, {self.total_bytes:,} bytes")
        if self.wrapped:
            lines.append("wrapped Python numbers (kept, but never passed to a pack hook: not in the totals):")
            for w in self.wrapped:
                lines.append(
                    f"  W{w.index}  {w.value!r:<12} {w.dtype:<8} {w.bytes:>12,} bytes  "
                    f"<- {w.node.split(' ')[0]}.{w.attribute}"
                )
        if self.freed:
            lines.append("freed by backward: " + ", ".join(f"{n.split(' ')[0]}.{a}" for n, a in self.freed))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    __repr__ = __str__

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text())

    # -- Graphviz ----------------------------------------------------------------------------------
    def dot(self) -> str:
        """The drawing in Graphviz's DOT language."""
        q = _quote
        out = [
            "digraph autograd {",
            '  graph [rankdir=TB, fontname="Helvetica", fontsize=11, nodesep=0.25, ranksep=0.35, '
            f"labelloc=t, label={q(self.summary())}];",
            '  node [fontname="Helvetica", fontsize=10, shape=box, style="rounded,filled", '
            'fillcolor="#f6f8fa", color="#57606a"];',
            '  edge [fontname="Helvetica", fontsize=9, color="#57606a"];',
        ]
        for r, (name, fn) in enumerate(self.roots):
            out.append(f'  r{r} [label={q(name)}, shape=oval, fillcolor="#fff8c5"];')
            if fn is not None:
                target = next(n.index for n in self.nodes if n.fn is fn)
                out.append(f"  r{r} -> n{target};")
        for node in self.nodes:
            if node.name == "AccumulateGrad":
                lines = node.label.split(" -> ", 1)
                out.append(f'  n{node.index} [label={q(chr(10).join(lines))}, fillcolor="#ddf4ff", color="#0969da"];')
            else:
                out.append(f"  n{node.index} [label={q(node.label)}];")
            for slot, child in node.edges:
                if child is None:
                    out.append(
                        f'  z{node.index}_{slot} [label="None", shape=plaintext, style="", fontcolor="#8c959f"];'
                    )
                    out.append(
                        f'  n{node.index} -> z{node.index}_{slot} [label="[{slot}]", style=dotted, color="#8c959f"];'
                    )
                else:
                    out.append(f'  n{node.index} -> n{child} [label="[{slot}]"];')
            for attribute, storage in node.saves:
                if isinstance(storage, tuple):
                    out.append(
                        f"  n{node.index} -> w{storage[1]} [label={q(attribute)}, style=dotted, "
                        'arrowhead=none, fontcolor="#8c959f", color="#afb8c1"];'
                    )
                elif storage == FREED:
                    out.append(
                        f"  f{node.index}_{attribute} [label={q(attribute + chr(10) + 'freed by backward')}, "
                        'shape=note, fillcolor="#eaeef2", fontcolor="#8c959f", color="#afb8c1"];'
                    )
                    out.append(
                        f'  n{node.index} -> f{node.index}_{attribute} [style=dashed, arrowhead=none, color="#afb8c1"];'
                    )
                else:
                    tint = "#cf222e" if self.storages[storage - 1].stale else "#8250df"
                    out.append(
                        f"  n{node.index} -> s{storage} [label={q(attribute)}, style=dashed, "
                        f'arrowhead=none, fontcolor="{tint}", color="{tint}"];'
                    )
        for s in self.storages:
            text = [f"S{s.index}  {s.what}".rstrip(), f"{shape_words(s.shape)} {s.dtype}", f"{s.bytes:,} bytes"]
            if s.stale:
                text.append(f"STALE: saved at v{s.version_saved}, now v{s.version_now}")
                style = 'fillcolor="#ffebe9", color="#cf222e", fontcolor="#82071e", penwidth=2'
            else:
                text.append(f"version {s.version_now} (as saved)")
                style = 'fillcolor="#fbefff", color="#8250df"'
            out.append(f"  s{s.index} [label={q(chr(10).join(text))}, shape=note, {style}];")
        for w in self.wrapped:
            text = [f"W{w.index}  the number {w.value!r}", f"{w.dtype}, {w.bytes} bytes", "not in the bill"]
            out.append(
                f'  w{w.index} [label={q(chr(10).join(text))}, shape=note, fillcolor="#f6f8fa", '
                'color="#afb8c1", fontcolor="#57606a"];'
            )
        out.append("}")
        return "\n".join(out)

    def svg(self) -> str | None:
        """The SVG Graphviz draws, or None where ``dot`` (or the graphviz package) is missing."""
        if not hasattr(self, "_svg"):
            self._svg = None
            if shutil.which("dot"):
                try:
                    import graphviz

                    self._svg = graphviz.Source(self.dot()).pipe(format="svg", encoding="utf-8")
                except Exception:  # ImportError, ExecutableNotFound, CalledProcessError: fall back to text
                    self._svg = None
        return self._svg

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = {"text/plain": self.text()}
        svg = self.svg()
        if svg:
            data["image/svg+xml"] = fit_width(svg)
            data["text/html"] = svg_with_alt(fit_width(svg), data["text/plain"])
        return data


MAX_WIDTH_PX = 720  # a notebook column in JupyterLab at its default width


def fit_width(svg: str, max_px: int = MAX_WIDTH_PX) -> str:
    """Scale a Graphviz SVG down (keeping its proportions) so it never overflows the notebook column."""
    import re

    m = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    if not m:
        return svg
    width, height = float(m.group(1)) * 4 / 3, float(m.group(2)) * 4 / 3
    if width <= max_px:
        return svg
    scale = max_px / width
    return svg.replace(m.group(0), f'<svg width="{max_px}px" height="{height * scale:.0f}px"', 1)


ALT_CHARS = 4000  # a screen reader reads the alt text whole; a huge graph's is cut, and says so


def svg_with_alt(svg: str, text: str) -> str:
    """The SVG as an HTML image whose alt text is ``text`` (the drawing's text form)."""
    import base64
    import html

    if len(text) > ALT_CHARS:
        text = text[:ALT_CHARS].rsplit("\n", 1)[0] + "\n(cut here: print(draw(...)) shows the whole text form)"
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img class="agl-drawing" alt="{html.escape(text, quote=True)}" src="data:image/svg+xml;base64,{data}">'


def shape_words(shape) -> str:
    """A tensor's shape as draw writes it: (2, 3), and (scalar) for a 0-dim tensor, not ()."""
    shape = tuple(shape)
    return str(shape) if shape else "(scalar)"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def draw(outputs: Any, names: Any = None, saved: bool = True) -> Drawing:
    """Draw the graph behind ``outputs`` (a tensor, a list of tensors, or a dict name -> tensor).

    ``names`` labels leaves and saved storages: a dict of tensors, an ``nn.Module``
    (its named parameters), or a list of either. ``saved=False`` leaves saved
    tensors out. The result shows as SVG where Graphviz is installed and as an
    indented text tree everywhere; ``.storages``, ``.total_bytes``, ``.stale``,
    ``.freed`` and ``.wrapped`` (Python numbers kept as 0-dim tensors, outside
    the totals) give the figures as data.
    """
    return Drawing(outputs, names=names, saved=saved)
