"""The backward stepper: replay a backward pass node by node.

:func:`trace_backward` runs ``backward()`` once with a hook on every node of the
graph (``register_prehook`` sees the gradient that arrives, ``register_hook``
what the node passes on down each edge) and returns the :class:`BackwardRun`, in the
order autograd ran the nodes. It is a real backward: leaves' ``.grad`` fill as
usual, and the graph is freed unless ``retain_graph=True``. If backward raises
(an in-place write, a second backward), the trace keeps the steps that ran and
the error, and names the node it stopped in.

:func:`stepper` shows the same trace with Next / Back buttons; its text/plain
is the whole trace, deterministic, for nbval and for checks.
"""

from __future__ import annotations

import html
import math
import shutil
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import probes
from grader.learner import a11y
from grader.learner.display import Shown, widgets_available


def show_grad(g: Any) -> str:
    """A gradient in a few characters: 12, [2, 4, 6], or its shape and sum when it is large."""
    if g is None:
        return "None"
    if not isinstance(g, torch.Tensor):
        return repr(g)

    def one(x: float) -> str:
        if not math.isfinite(x):
            return str(x)
        if x == int(x) and abs(x) < 1e15:
            return str(int(x))
        return f"{x:.4f}" if abs(x) >= 1e-3 else f"{x:.3e}"

    flat = g.detach().reshape(-1)
    if flat.numel() == 1 and g.dim() == 0:
        return one(flat.item())
    if flat.numel() <= 6:
        return "[" + ", ".join(one(x) for x in flat.tolist()) + "]"
    return f"{tuple(g.shape)} tensor, sum {one(flat.double().sum().item())}"


@dataclass
class NodeVisit:
    number: int  # 1, 2, ... in the order backward ran the nodes
    index: int  # the node's position in the graph walk (see BackwardRun.labels)
    node: str  # class name
    label: str  # class name; AccumulateGrad with its leaf's name
    arrived: tuple = ()  # what arrived, one gradient per output of the node
    passed: list = field(default_factory=list)  # (input slot, where to, gradient or None)
    finished: bool = False  # False when backward raised inside this node

    @property
    def grad(self) -> Any:
        """The (first) gradient that arrived, as a float when it has one element."""
        g = self.arrived[0] if self.arrived else None
        return g.item() if isinstance(g, torch.Tensor) and g.numel() == 1 else g

    def describe(self) -> str:
        arrived = ", ".join(show_grad(g) for g in self.arrived) or "nothing"
        if not self.finished:
            return f"receives {arrived}; backward raised here"
        if self.node == "AccumulateGrad":
            where = self.passed[0][1] if self.passed else "the leaf's .grad"
            return f"receives {arrived}; adds it into {where}"
        if not self.passed:
            return f"receives {arrived}; has no inputs to pass to"
        sent = "; ".join(f"[{slot}] {show_grad(g)} -> {to}" for slot, to, g in self.passed)
        return f"receives {arrived}; passes {sent}"


@dataclass
class BackwardRun:
    """A recorded backward pass: the steps in the order they ran, and the error if one stopped it."""

    steps: list
    labels: list  # node labels in graph-walk order
    edges: list  # per node: (slot, child index or None)
    roots: list  # (root label, node index)
    error: str = ""

    def __iter__(self):
        return iter(self.steps)

    def __len__(self):
        return len(self.steps)

    def __getitem__(self, i):
        return self.steps[i]

    def grads(self) -> list:
        """The gradient that arrived at each step, in order (floats where they are single numbers)."""
        return [s.grad for s in self.steps]

    def nodes(self) -> list[str]:
        return [s.node for s in self.steps]

    def chain(self) -> str:
        """The arriving gradients joined by arrows: '1 -> 12 -> 36'."""
        return " -> ".join(", ".join(show_grad(g) for g in s.arrived) for s in self.steps)

    def text(self) -> str:
        head = f"backward, node by node: {len(self.steps)} steps"
        lines = [head + (f"; stopped by {self.error}" if self.error else "")]
        width = max((len(s.label) for s in self.steps), default=0)
        for s in self.steps:
            lines.append(f"  {s.number:>2}. {s.label:<{width}}  {s.describe()}")
        return "\n".join(lines)

    def __str__(self):
        return self.text()

    __repr__ = __str__

    def html(self, current: int | None = None) -> str:
        esc = html.escape
        rows = []
        for s in self.steps:
            if current is None or s.number < current:
                style = ""
            elif s.number == current:
                style = "background:#fff8c5;font-weight:600"
            else:
                style = "color:#8c959f"
            rows.append(
                f"<tr style='{style}'><td style='padding:1px 8px'>{s.number}</td>"
                f"<td style='padding:1px 8px'><code>{esc(s.label)}</code></td>"
                f"<td style='padding:1px 8px'>{esc(s.describe())}</td></tr>"
            )
        error = f"<div style='color:#cf222e'>backward raised: {esc(self.error)}</div>" if self.error else ""
        return (
            f"<table class='agl-trace' style='border-collapse:collapse'><thead><tr>"
            f"<th style='text-align:left;padding:1px 8px'>step</th><th style='text-align:left;padding:1px 8px'>"
            f"node</th><th style='text-align:left;padding:1px 8px'>gradient</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{error}"
        )

    def dot(self, current: int) -> str:
        """The graph with steps before ``current`` done (green), ``current`` highlighted, and each
        edge a finished node used labelled with the gradient it sent."""
        ran = {s.index: s for s in self.steps if s.number <= current}
        out = [
            "digraph backward {",
            '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.25, ranksep=0.3];',
            '  node [fontname="Helvetica", fontsize=10, shape=box, style="rounded,filled"];',
            '  edge [fontname="Helvetica", fontsize=9];',
        ]
        for r, (label, index) in enumerate(self.roots):
            out.append(f'  r{r} [label="{_esc(label)}", shape=oval, fillcolor="#fff8c5"];')
            if index is not None:
                out.append(f"  r{r} -> n{index};")
        for i, label in enumerate(self.labels):
            step = ran.get(i)
            if step is None:
                colour = 'fillcolor="#ffffff", color="#afb8c1", fontcolor="#8c959f"'
                text = label
            else:
                colour = (
                    'fillcolor="#fff8c5", color="#9a6700", penwidth=2'
                    if step.number == current
                    else 'fillcolor="#dafbe1", color="#1a7f37"'
                )
                text = f"{label}\\nreceives {_esc(', '.join(show_grad(g) for g in step.arrived))}"
            out.append(f'  n{i} [label="{_esc(label) if step is None else text}", {colour}];')
            sent = {slot: g for slot, _, g in step.passed} if step is not None and step.finished else {}
            for slot, child in self.edges[i]:
                target = f"n{child}" if child is not None else f"z{i}_{slot}"
                if child is None:
                    out.append(f'  z{i}_{slot} [label="None", shape=plaintext, style="", fontcolor="#8c959f"];')
                if slot in sent:
                    out.append(
                        f'  n{i} -> {target} [label="[{slot}] {_esc(show_grad(sent[slot]))}", '
                        'color="#1a7f37", fontcolor="#1a7f37", penwidth=1.5];'
                    )
                else:
                    out.append(f'  n{i} -> {target} [label="[{slot}]", color="#afb8c1", fontcolor="#8c959f"];')
        out.append("}")
        return "\n".join(out)


def _esc(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def _roots(outputs) -> list:
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in outputs):
        return list(outputs)
    raise TypeError("trace_backward() takes a tensor or a list of tensors")


def _copy(g):
    return g.detach().clone() if isinstance(g, torch.Tensor) else g


def trace_backward(outputs: Any, gradient: Any = None, names: Any = None, retain_graph: bool = False) -> BackwardRun:
    """Run backward from ``outputs`` (with ``gradient`` as the seed) and record every node it runs.

    ``names`` (a dict of tensors, a module, or a list of them) names leaves and outputs.
    """
    roots = _roots(outputs)
    labels_of = probes.name_map(names)
    order, index_of = [], {}
    for root in roots:
        for fn in probes.nodes(root) if root.grad_fn is not None else []:
            if fn not in index_of:
                index_of[fn] = len(order)
                order.append(fn)

    def label(fn) -> str:
        text = probes.node_name(fn)
        if text == "AccumulateGrad":
            text += f" ({labels_of.get(id(fn.variable), 'leaf')})"
        return text

    labels = [label(fn) for fn in order]
    edges = [
        [(slot, index_of.get(nxt) if nxt is not None else None) for slot, (nxt, _) in enumerate(fn.next_functions)]
        for fn in order
    ]
    root_rows = []
    for i, root in enumerate(roots):
        name = labels_of.get(id(root)) or ("output" if len(roots) == 1 else f"output {i}")
        root_rows.append((f"{name} {tuple(root.shape)}", index_of.get(root.grad_fn)))

    steps: list[NodeVisit] = []
    current: dict = {}
    handles = []

    def pre(fn):
        def hook(grad_outputs):
            step = NodeVisit(
                len(steps) + 1,
                index_of[fn],
                probes.node_name(fn),
                labels[index_of[fn]],
                tuple(_copy(g) for g in grad_outputs),
            )
            steps.append(step)
            current[fn] = step

        return hook

    def post(fn):
        def hook(grad_inputs, grad_outputs):
            step = current.get(fn)
            if step is None:
                return
            if probes.node_name(fn) == "AccumulateGrad":
                leaf = labels_of.get(id(fn.variable), "the leaf")
                step.passed = [(None, f"{leaf}.grad", _copy(grad_outputs[0]) if grad_outputs else None)]
            else:
                targets = edges[index_of[fn]]
                step.passed = [
                    (slot, labels[child] if child is not None else "None", _copy(g))
                    for (slot, child), g in zip(targets, grad_inputs)
                ]
            step.finished = True

        return hook

    error = ""
    try:
        for fn in order:
            handles.append(fn.register_prehook(pre(fn)))
            handles.append(fn.register_hook(post(fn)))
        torch.autograd.backward(roots, grad_tensors=gradient, retain_graph=retain_graph)
    except Exception as exc:  # what torch says is part of the trace
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        for h in handles:
            h.remove()
    return BackwardRun(steps, labels, edges, root_rows, error)


class Stepper:
    """A recorded backward pass, shown one step at a time with Next / Back buttons."""

    def __init__(self, trace: BackwardRun, interactive: bool | None = None):
        self.trace = trace
        self.position = 1 if trace.steps else 0
        self.widget = None
        self._svg: dict[int, str | None] = {}
        if interactive if interactive is not None else widgets_available():
            self._build()

    def next(self) -> NodeVisit | None:
        if self.position < len(self.trace):
            self.position += 1
            self._update()
        return self.step

    def back(self) -> NodeVisit | None:
        if self.position > 1:
            self.position -= 1
            self._update()
        return self.step

    @property
    def step(self) -> NodeVisit | None:
        return self.trace.steps[self.position - 1] if self.position else None

    def svg(self, position: int) -> str | None:
        """The graph at one step, drawn by Graphviz (None without dot or for graphs over 60 nodes)."""
        if position not in self._svg:
            svg = None
            if shutil.which("dot") and len(self.trace.labels) <= 60:
                try:
                    import graphviz

                    svg = graphviz.Source(self.trace.dot(position)).pipe(format="svg", encoding="utf-8")
                    svg = svg[svg.find("<svg") :]
                except Exception:
                    svg = None
            self._svg[position] = svg
        return self._svg[position]

    def _build(self) -> None:
        import ipywidgets as W

        self.back_button = W.Button(description="Back", icon="arrow-left", tooltip="the step before")
        self.next_button = W.Button(
            description="Next", icon="arrow-right", button_style="primary", tooltip="the next node backward runs"
        )
        self.back_button.add_class("agl-back")
        self.next_button.add_class("agl-next")
        self.counter = W.HTML()
        self.detail = a11y.result_area(W.HTML(), live_only=True)  # read aloud at each step; the focus stays
        self.picture = W.HTML()
        self.table = W.HTML()
        self.back_button.on_click(lambda b: self.back())
        self.next_button.on_click(lambda b: self.next())
        self.widget = W.VBox(
            [W.HBox([self.back_button, self.next_button, self.counter]), self.detail, self.picture, self.table],
            layout=W.Layout(border="1px solid #d0d7de", padding="6px 10px", margin="4px 0"),
        )
        self.widget.add_class("agl-stepper")
        a11y.wire(self.widget)
        self._update()

    def _update(self) -> None:
        if self.widget is None:
            return
        n = len(self.trace)
        self.back_button.disabled = self.position <= 1
        self.next_button.disabled = self.position >= n
        self.counter.value = f"<span style='padding:0 8px'>step {self.position} of {n}</span>"
        step = self.step
        self.detail.value = (
            f"<div><code>{html.escape(step.label)}</code> {html.escape(step.describe())}</div>"
            if step
            else "<div>backward ran no node</div>"
        )
        svg = self.svg(self.position) if step else None
        self.picture.value = svg or ""
        self.table.value = self.trace.html(self.position)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return Shown(self.trace.text, lambda: self.trace.html(), self.widget)._repr_mimebundle_()

    def __repr__(self):
        return self.trace.text()


def stepper(outputs: Any, gradient: Any = None, names: Any = None, retain_graph: bool = False) -> Stepper:
    """Run backward from ``outputs`` once, recording each node, and step through it (Next / Back).

    ``.trace`` holds the same record as data (:func:`trace_backward`).
    """
    return Stepper(trace_backward(outputs, gradient=gradient, names=names, retain_graph=retain_graph))
