"""Labs: small experiments with sliders and switches, every number read from autograd.

* :func:`neuron_lab` (unit 01): one sigmoid neuron, sliders for x and w; z, s = sigmoid(z)
  and ds/dx from autograd beside the formula, and the forward values the local rules read.
* :func:`memory_bill_lab` (unit 05): what a small MLP keeps for backward, counted by
  distinct storage, as a bar chart, with switches to freeze the first layer and to make
  the input require grad.
* :func:`depth_lab` (unit 08): a hidden state carried across steps; graph depth and
  saved bytes against the step, carrying the graph versus detaching the state.

Each lab's numbers are also plain data (:func:`neuron_numbers`, :func:`bill_for`,
:func:`depth_series`). Outside a kernel (nbval) a lab shows a deterministic text
and a PNG chart; in JupyterLab it is a widget.
"""

from __future__ import annotations

import base64
import copy
import html
import io
from dataclasses import dataclass

import torch

from grader import probes
from grader.learner import a11y
from grader.learner.display import view_of, widgets_available


def _fmt(x: float) -> str:
    return f"{x:g}" if x == round(x, 6) and abs(x) < 1e6 else f"{x:.4f}"


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def _figure(width: float, height: float, columns: int = 1):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    axes = fig.subplots(1, columns)
    return fig, axes


class Lab:
    """Shown as a widget in a kernel, as text plus a PNG chart elsewhere."""

    widget = None

    def text(self) -> str:  # pragma: no cover - every lab defines it
        raise NotImplementedError

    def chart(self) -> bytes | None:
        return None

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text())

    def _repr_mimebundle_(self, include=None, exclude=None):
        data: dict = {"text/plain": self.text()}
        try:
            png = self.chart()
        except Exception:  # no matplotlib: the text says it all
            png = None
        if png:
            data["image/png"] = base64.b64encode(png).decode("ascii")
        if self.widget is not None:
            data.update(view_of(self.widget))
        return data


def _image_widget(png: bytes | None, says: str = "the lab's chart; the table beside it gives its figures"):
    """The lab's chart; ``says`` is its accessible name (the image's alt, from :func:`a11y.figure`: an image given
    a tooltip is not drawn at all by ipywidgets' page code). Shown through :func:`_named_chart`."""
    import ipywidgets as W

    image = W.Image(value=png or b"", format="png")
    image.agl_says = says
    return image


def _named_chart(image):
    """The chart as the lab shows it: in a box that names it."""
    return a11y.figure(image, image.agl_says)


# --- unit 01: one sigmoid neuron -------------------------------------------------------------


def neuron_numbers(x: float = 1.0, w: float = 2.0, bias: float = -0.5) -> dict:
    """z = w*x + bias, s = sigmoid(z): values, autograd's ds/dx and ds/dw, the formulas,
    and what each node saved for its local rule (read from the graph before backward)."""
    with torch.inference_mode(False), torch.enable_grad():
        xt = torch.tensor(float(x), requires_grad=True)
        wt = torch.tensor(float(w), requires_grad=True)
        product = wt * xt
        z = product + bias
        s = torch.sigmoid(z)
        known = {"x": xt, "w": wt, "w*x": product, "z": z, "s": s}
        by_storage = {t.untyped_storage().data_ptr(): n for n, t in known.items()}
        saved = []
        for fn in probes.nodes(s):
            for attribute, value in sorted(probes.saved_attributes(fn).items()):
                if isinstance(value, torch.Tensor):
                    which = by_storage.get(value.untyped_storage().data_ptr(), "another tensor")
                    saved.append((probes.node_name(fn), attribute, which, value.item()))
        nodes = probes.node_names(s)
        s.backward()
    sv = s.item()
    return {
        "x": float(x),
        "w": float(w),
        "bias": float(bias),
        "z": z.item(),
        "s": sv,
        "ds_dx": xt.grad.item(),
        "ds_dw": wt.grad.item(),
        "formula_ds_dx": float(w) * sv * (1 - sv),
        "formula_ds_dw": float(x) * sv * (1 - sv),
        "saved": saved,
        "nodes": nodes,
    }


class NeuronLab(Lab):
    def __init__(self, x: float = 1.0, w: float = 2.0, interactive: bool | None = None):
        self.x, self.w = float(x), float(w)
        if interactive if interactive is not None else widgets_available():
            self._build()

    @property
    def numbers(self) -> dict:
        return neuron_numbers(self.x, self.w)

    def text(self) -> str:
        n = self.numbers
        b = n["bias"]
        lines = [
            f"one neuron at x = {_fmt(n['x'])}, w = {_fmt(n['w'])}: z = w·x {'-' if b < 0 else '+'} {_fmt(abs(b))}, "
            "s = σ(z)",
            f"  z = {n['z']:.4f}   s = σ(z) = {n['s']:.4f}",
            f"  ds/dx: autograd {n['ds_dx']:.4f}   formula w·s·(1 − s) = {n['formula_ds_dx']:.4f}",
            f"  ds/dw: autograd {n['ds_dw']:.4f}   formula x·s·(1 − s) = {n['formula_ds_dw']:.4f}",
            "  what the local rules read, saved by the forward pass:",
        ]
        for node, attribute, which, value in n["saved"]:
            lines.append(f"    {node}.{attribute} = {value:.4f}  ({which})")
        return "\n".join(lines)

    def html(self) -> str:
        n = self.numbers
        esc = html.escape
        rows = "".join(
            f"<tr><td style='padding:1px 10px 1px 0'><code>{esc(node)}.{esc(a)}</code></td>"
            f"<td style='padding:1px 10px 1px 0'>{v:.4f}</td><td>{esc(which)}</td></tr>"
            for node, a, which, v in n["saved"]
        )
        return (
            f"<table style='border-collapse:collapse'>"
            f"<tr><td style='padding:1px 14px 1px 0'>z = w·x − 0.5</td><td>{n['z']:.4f}</td></tr>"
            f"<tr><td style='padding:1px 14px 1px 0'>s = σ(z)</td><td>{n['s']:.4f}</td></tr>"
            f"<tr><td style='padding:1px 14px 1px 0'>ds/dx from autograd</td><td><b>{n['ds_dx']:.4f}</b></td>"
            f"<td style='padding-left:14px;color:#57606a'>formula w·s·(1 − s) = {n['formula_ds_dx']:.4f}</td></tr>"
            f"<tr><td style='padding:1px 14px 1px 0'>ds/dw from autograd</td><td><b>{n['ds_dw']:.4f}</b></td>"
            f"<td style='padding-left:14px;color:#57606a'>formula x·s·(1 − s) = {n['formula_ds_dw']:.4f}</td></tr>"
            f"</table><div style='margin-top:6px'>What the local rules read (saved in the forward pass):</div>"
            f"<table style='border-collapse:collapse'>{rows}</table>"
        )

    def chart(self) -> bytes:
        n = self.numbers
        fig, ax = _figure(4.6, 2.8)
        xs = torch.linspace(-4, 4, 161)
        ax.plot(xs.tolist(), torch.sigmoid(n["w"] * xs + n["bias"]).tolist(), color="#0969da", label="s = σ(w·x − 0.5)")
        span = torch.tensor([n["x"] - 1.2, n["x"] + 1.2])
        ax.plot(
            span.tolist(),
            (n["s"] + n["ds_dx"] * (span - n["x"])).tolist(),
            color="#cf222e",
            label=f"slope from autograd {n['ds_dx']:.4f}",
        )
        ax.plot([n["x"]], [n["s"]], "o", color="#cf222e")
        ax.set_xlim(-4, 4)
        ax.set_ylim(-0.1, 1.1)
        ax.set_xlabel("x")
        ax.legend(loc="upper left", fontsize=8)
        ax.grid(alpha=0.3)
        return _png(fig)

    def _build(self) -> None:
        import ipywidgets as W

        self.x_slider = W.FloatSlider(value=self.x, min=-4, max=4, step=0.1, description="x", continuous_update=False)
        self.w_slider = W.FloatSlider(value=self.w, min=-4, max=4, step=0.1, description="w", continuous_update=False)
        a11y.named(self.x_slider, "x, the neuron's input (arrow keys move it by 0.1)")
        a11y.named(self.w_slider, "w, the neuron's weight (arrow keys move it by 0.1)")
        self.table = a11y.result_area(W.HTML(), live_only=True)
        self.image = _image_widget(None, "chart: sigmoid(w·x − 0.5) and its slope at x; the table gives the figures")

        def changed(_=None):
            self.x, self.w = round(self.x_slider.value, 6), round(self.w_slider.value, 6)
            self.table.value = self.html()
            self.image.value = self.chart()

        self.x_slider.observe(changed, names="value")
        self.w_slider.observe(changed, names="value")
        self.widget = W.VBox([W.HBox([self.x_slider, self.w_slider]), W.HBox([self.table, _named_chart(self.image)])])
        self.widget.add_class("agl-lab")
        a11y.wire(self.widget)
        changed()


def neuron_lab(x: float = 1.0, w: float = 2.0) -> NeuronLab:
    """Unit 01's lab: sliders for x and w; z, sigmoid(z) and ds/dx from autograd beside the formula."""
    return NeuronLab(x, w)


# --- unit 05: the memory bill ------------------------------------------------------------


def syllabus_mlp(seed: int = 0):
    """Linear(512,512)-ReLU-Linear(512,512)-ReLU-Linear(512,1) and a 256x512 input, seeded
    (the caller's random state is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = torch.nn.Sequential(
            torch.nn.Linear(512, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 1),
        )
        return model, torch.randn(256, 512)


def _first_layer(model: torch.nn.Module) -> str:
    for name, module in model.named_modules():
        if name and any(True for _ in module.parameters(recurse=False)):
            return name
    return ""


def bill_for(
    model: torch.nn.Module | None = None,
    x: torch.Tensor | None = None,
    freeze_first: bool = False,
    input_grad: bool = False,
) -> probes.Bill:
    """The saved-tensor bill of ``model(x).sum()`` (the syllabus MLP by default), on copies, so
    freezing the first layer or making the input require grad never changes the caller's tensors."""
    if model is None:
        model, x = syllabus_mlp()
    with torch.inference_mode(False), torch.enable_grad():
        model = copy.deepcopy(model)
        first = _first_layer(model)
        if freeze_first and first:
            model.get_submodule(first).requires_grad_(False)
        x = x.detach().clone().requires_grad_(input_grad)
        return probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})


class MemoryBillLab(Lab):
    SETTINGS = ((False, False), (False, True), (True, False), (True, True))

    def __init__(
        self, model=None, x=None, freeze_first: bool = False, input_grad: bool = False, interactive: bool | None = None
    ):
        if model is None:
            model, x = syllabus_mlp()
        self.model, self.x = model, x
        self.freeze_first, self.input_grad = freeze_first, input_grad
        self._bills: dict = {}
        if interactive if interactive is not None else widgets_available():
            self._build()

    def bill(self, freeze_first: bool | None = None, input_grad: bool | None = None) -> probes.Bill:
        key = (
            self.freeze_first if freeze_first is None else freeze_first,
            self.input_grad if input_grad is None else input_grad,
        )
        if key not in self._bills:
            self._bills[key] = bill_for(self.model, self.x, *key)
            self._bills[key].output = None
        return self._bills[key]

    @staticmethod
    def setting(freeze_first: bool, input_grad: bool) -> str:
        return (
            ("first layer frozen" if freeze_first else "all layers train")
            + ", "
            + ("input requires grad" if input_grad else "input does not require grad")
        )

    def text(self) -> str:
        bill = self.bill()
        lines = [
            f"memory bill ({self.setting(self.freeze_first, self.input_grad)}): "
            f"{bill.count} storages, {bill.total:,} bytes"
        ]
        lines += ["  " + row for row in bill.table().splitlines()[:-1]]
        lines.append("  the four settings:")
        for f, g in self.SETTINGS:
            b = self.bill(f, g)
            lines.append(f"    {self.setting(f, g):<50} {b.count} storages, {b.total:>10,} bytes")
        return "\n".join(lines)

    def chart(self) -> bytes:
        bill = self.bill()
        fig, (left, right) = _figure(8.6, 3.0, 2)
        labels = [f"{e.what} {e.shape}" for e in bill.entries]
        left.barh(range(len(labels)), [e.bytes / 2**20 for e in bill.entries], color="#8250df")
        left.set_yticks(range(len(labels)), labels, fontsize=8)
        left.invert_yaxis()
        left.set_xlabel("MiB kept for backward")
        left.set_title(f"{bill.count} storages, {bill.total:,} bytes", fontsize=9)
        names = ["trains", "trains,\ninput grad", "frozen", "frozen,\ninput grad"]
        totals = [self.bill(f, g).total / 2**20 for f, g in self.SETTINGS]
        colours = ["#0969da" if s == (self.freeze_first, self.input_grad) else "#afb8c1" for s in self.SETTINGS]
        right.bar(range(4), totals, color=colours)
        right.set_xticks(range(4), names, fontsize=8)
        right.set_ylabel("MiB")
        right.set_title("total by setting (first layer / input)", fontsize=9)
        fig.tight_layout()
        return _png(fig)

    def _build(self) -> None:
        import ipywidgets as W

        self.freeze_box = W.Checkbox(value=self.freeze_first, description="freeze the first layer", indent=False)
        self.input_box = W.Checkbox(value=self.input_grad, description="input requires grad", indent=False)
        self.summary = a11y.result_area(W.HTML(), live_only=True)
        self.image = _image_widget(None, "chart: the bytes saved for backward by each setting; the table gives them")

        def changed(_=None):
            self.freeze_first, self.input_grad = self.freeze_box.value, self.input_box.value
            bill = self.bill()
            rows = "".join(
                f"<tr><td style='padding:1px 10px 1px 0'>{html.escape(e.what)}</td>"
                f"<td style='padding:1px 10px 1px 0'>{e.shape}</td>"
                f"<td style='text-align:right'>{e.bytes:,}</td></tr>"
                for e in bill.entries
            )
            self.summary.value = (
                f"<b>{bill.count} storages, {bill.total:,} bytes</b>"
                f"<table style='border-collapse:collapse'>{rows}</table>"
            )
            self.image.value = self.chart()

        self.freeze_box.observe(changed, names="value")
        self.input_box.observe(changed, names="value")
        self.widget = W.VBox([W.HBox([self.freeze_box, self.input_box]), _named_chart(self.image), self.summary])
        self.widget.add_class("agl-lab")
        a11y.wire(self.widget)
        changed()


def memory_bill_lab(model=None, x=None) -> MemoryBillLab:
    """Unit 05's lab: the saved-tensor bill as a bar chart, with freeze / input-requires-grad switches."""
    return MemoryBillLab(model, x)


# --- unit 08: carried state ----------------------------------------------------------------


@dataclass
class DepthRow:
    step: int
    depth: int
    saved_bytes: int
    storages: int
    w_grad: float


def depth_series(
    steps: int = 200, detach: bool = False, w: float = 0.9, h0: float = 1.0, bias: float = 0.1, width: int = 1
) -> list[DepthRow]:
    """hidden = hidden * w + bias, loss = (hidden ** 2).sum(), backward(retain_graph=True) every step.

    Per step: the depth of the loss's graph, the bytes of the distinct storages it keeps for
    backward, and w.grad so far. ``detach=True`` detaches the hidden state before each step.
    """
    rows = []
    with torch.inference_mode(False), torch.enable_grad():
        wt = torch.tensor(float(w), requires_grad=True)
        hidden = torch.full((width,), float(h0)) if width > 1 else torch.tensor(float(h0))
        for step in range(1, steps + 1):
            if detach:
                hidden = hidden.detach()
            hidden = hidden * wt + bias
            loss = (hidden**2).sum() if width > 1 else hidden**2
            kept = {}
            for entry in probes.saved_tensors(loss):
                if entry.state == "ok":
                    kept[entry.storage] = entry.bytes
            depth = probes.depth(loss)
            loss.backward(retain_graph=True)
            rows.append(DepthRow(step, depth, sum(kept.values()), len(kept), wt.grad.item()))
    return rows


class DepthLab(Lab):
    def __init__(
        self,
        steps: int = 200,
        w: float = 0.9,
        h0: float = 1.0,
        shown: int | None = None,
        interactive: bool | None = None,
    ):
        self.steps, self.w, self.h0 = int(steps), float(w), float(h0)
        self.carried = depth_series(self.steps, detach=False, w=w, h0=h0)
        self.detached = depth_series(self.steps, detach=True, w=w, h0=h0)
        self.shown = min(self.steps, int(shown) if shown else self.steps)
        if interactive if interactive is not None else widgets_available():
            self._build()

    def text(self) -> str:
        lines = [
            f"hidden = hidden·w + 0.1, loss = hidden², w = {_fmt(self.w)}, hidden starts at {_fmt(self.h0)}; "
            "backward(retain_graph=True) each step",
            f"  {'step':>5}  {'depth':>5} {'saved bytes':>11} {'w.grad':>10}   "
            f"{'depth':>5} {'saved bytes':>11} {'w.grad':>10}",
            f"  {'':>5}  {'carrying the graph':^28}   {'detaching the state':^28}",
        ]
        picks = sorted({i for i in range(min(5, self.shown))} | {self.shown - 1})
        for i in picks:
            c, d = self.carried[i], self.detached[i]
            if i == self.shown - 1 and i > 5:
                lines.append(f"  {'...':>5}")
            lines.append(
                f"  {c.step:>5}  {c.depth:>5} {c.saved_bytes:>11,} {c.w_grad:>10.4f}   "
                f"{d.depth:>5} {d.saved_bytes:>11,} {d.w_grad:>10.4f}"
            )
        return "\n".join(lines)

    def chart(self) -> bytes:
        n = self.shown
        steps = list(range(1, n + 1))
        fig, (left, right) = _figure(8.6, 2.9, 2)
        left.plot(steps, [r.depth for r in self.carried[:n]], color="#cf222e", label="carrying the graph")
        left.plot(steps, [r.depth for r in self.detached[:n]], color="#1a7f37", label="detaching the state")
        left.set_xlabel("step")
        left.set_ylabel("graph depth (nodes)")
        left.legend(fontsize=8)
        right.plot(steps, [r.saved_bytes for r in self.carried[:n]], color="#cf222e")
        right.plot(steps, [r.saved_bytes for r in self.detached[:n]], color="#1a7f37")
        right.set_xlabel("step")
        right.set_ylabel("bytes saved for backward")
        for ax in (left, right):
            ax.grid(alpha=0.3)
        fig.tight_layout()
        return _png(fig)

    def _build(self) -> None:
        import ipywidgets as W

        self.slider = W.IntSlider(value=self.shown, min=1, max=self.steps, description="steps", continuous_update=False)
        a11y.named(self.slider, "steps shown (arrow keys move it by one)")
        self.summary = a11y.result_area(W.HTML(), live_only=True)
        self.image = _image_widget(None, "chart: graph depth and bytes saved against step; the text above gives them")

        def changed(_=None):
            self.shown = self.slider.value
            c, d = self.carried[self.shown - 1], self.detached[self.shown - 1]
            self.summary.value = (
                f"<div>after step {self.shown}: carrying the graph, depth <b>{c.depth}</b>, "
                f"{c.saved_bytes:,} bytes saved, w.grad {c.w_grad:.4f}; detaching the state, depth "
                f"<b>{d.depth}</b>, {d.saved_bytes:,} bytes saved, w.grad {d.w_grad:.4f}</div>"
            )
            self.image.value = self.chart()

        self.slider.observe(changed, names="value")
        self.widget = W.VBox([self.slider, self.summary, _named_chart(self.image)])
        self.widget.add_class("agl-lab")
        a11y.wire(self.widget)
        changed()


def depth_lab(steps: int = 200, w: float = 0.9, h0: float = 1.0, shown: int | None = None) -> DepthLab:
    """Unit 08's lab: graph depth and saved bytes against step, carrying the graph or detaching."""
    return DepthLab(steps, w, h0, shown)
