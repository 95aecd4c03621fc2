"""Unit 13's instruments: what a compiled function keeps for backward, how many graphs Dynamo made, per-sample
gradients the plain way, and the small functions its experiments compile. The exercises' generated cases (small
models for per-sample gradients, small programs whose eager and compiled bills are compared) are in
:mod:`grader.units.unit13.cases`.

torch._dynamo is imported inside the functions: importing it costs about a second and a half, and every unit
module is imported whenever the grader loads its questions.
"""

from __future__ import annotations

import contextlib
import logging

import torch

# =====================================================================================================
# Compiling quietly and counting
# =====================================================================================================


@contextlib.contextmanager
def quiet_dynamo():
    """Graph-break warnings go to the 'torch._dynamo' logger (stderr, which nbval compares): hold them back."""
    loggers = [logging.getLogger(name) for name in ("torch._dynamo", "torch._inductor", "torch._functorch")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def counting_backend(graphs: list):
    """A torch.compile backend that records each graph Dynamo hands it and runs it as it is (no AOTAutograd)."""

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend


def graphs_made(f, *args) -> int:
    """How many graphs torch.compile makes for one call of f (a graph break makes more than one)."""
    import torch._dynamo

    graphs: list = []
    torch._dynamo.reset()
    with quiet_dynamo():
        out = torch.compile(f, backend=counting_backend(graphs))(*args)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.sum().backward()
    torch._dynamo.reset()
    return len(graphs)


def graphs_with_hook(hook, x: torch.Tensor) -> int:
    """Graphs Dynamo makes for f(x) = (h * h).sum(), h = x * 2 with ``hook`` registered on h; backward is run,
    so the hook has run once when this returns."""
    import torch._dynamo

    graphs: list = []

    def f(t):
        h = t * 2
        h.register_hook(hook)
        return (h * h).sum()

    torch._dynamo.reset()
    with quiet_dynamo():
        torch.compile(f, backend=counting_backend(graphs))(x).backward()
    torch._dynamo.reset()
    return len(graphs)


def graphs_with_retain_grad(prefix: str, x: torch.Tensor) -> tuple[int, torch.Tensor | None]:
    """(graphs Dynamo makes, h.grad) for ``def f(x): h = <prefix>; h.retain_grad(); return (h * h).sum(), h``,
    with ``prefix`` an expression in x written into f's own code (a call to a helper would be a frame of its
    own); backward is run on the sum."""
    import torch._dynamo

    graphs: list = []
    namespace: dict = {}
    source = f"def f(x):\n    h = {prefix}\n    h.retain_grad()\n    return (h * h).sum(), h\n"
    exec(compile(source, f"<retain_grad after {prefix}>", "exec"), namespace)
    torch._dynamo.reset()
    with quiet_dynamo():
        total, h = torch.compile(namespace["f"], backend=counting_backend(graphs))(x)
        total.backward()
    torch._dynamo.reset()
    return len(graphs), h.grad


def compiled_forward_graph(f, *args):
    """Compile f with AOTAutograd (no code generation), call it once, and return the partitioned forward graph:
    its outputs are f's outputs followed by what it keeps for backward."""
    import torch._dynamo
    from functorch.compile import make_boxed_func, min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd

    kept: dict = {}

    def fw_compiler(gm, example_inputs):
        kept["graph"] = gm
        return make_boxed_func(gm.forward)

    backend = aot_autograd(fw_compiler=fw_compiler, partition_fn=min_cut_rematerialization_partition)
    torch._dynamo.reset()
    with quiet_dynamo():
        torch.compile(f, backend=backend, fullgraph=True)(*args)
    torch._dynamo.reset()
    return kept["graph"]


VIEW_OPS = {"t", "transpose", "view", "reshape", "permute", "expand", "detach", "alias", "_unsafe_view"}


def kept_by_compile(f, *args, names: dict[int, str] | None = None) -> list[str]:
    """The ops whose results the compiled forward keeps for backward, one name each: 'mm', 'sin', 'tanh'...,
    or 'input' for an input of f (or a view of one). A view kept (a transpose, a detach) is traced back to
    the op that made its storage."""
    gm = compiled_forward_graph(f, *args)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outputs = out_node.args[0]
    user_outputs = 1
    kept = []
    for node in outputs[user_outputs:]:
        while node.op == "call_function" and _op_name(node) in VIEW_OPS:
            node = node.args[0]
        kept.append("input" if node.op == "placeholder" else _op_name(node))
    return sorted(kept)


def _op_name(node) -> str:
    target = node.target
    name = getattr(target, "__name__", str(target))
    return name.split(".")[0]


# =====================================================================================================
# Per-sample gradients the plain way (the exercise's reference), and the programs the experiments compile
# =====================================================================================================


def sample_loss(model, xi, yi):
    return ((model(xi) - yi) ** 2).sum()


def loop_grads(model, x, y) -> dict[str, torch.Tensor]:
    """The plain way: one autograd.grad per sample, stacked."""
    params = dict(model.named_parameters())
    rows = []
    for i in range(x.shape[0]):
        loss = sample_loss(model, x[i], y[i])
        rows.append(torch.autograd.grad(loss, list(params.values())))
    return {name: torch.stack([r[k] for r in rows]) for k, name in enumerate(params)}


def count_activations(bill) -> int:
    return sum(1 for e in bill.entries if e.what == "an activation")


def sin_cos(x, w):
    return (x @ w).sin().cos().sum()


def with_item(x):
    h = x.sin()
    scale = h.sum().item()
    return h * scale


def ops_compiled_around_retain_grad(
    prefix: str, suffix: str, x: torch.Tensor, *, through_helper: bool = False
) -> list[int]:
    """The number of operations in each graph Dynamo makes of ``def f(x): h = <prefix>; h.retain_grad(); return
    <suffix>, h`` (``suffix`` an expression in h), called once; backward is run on the result. With
    ``through_helper`` the suffix is the body of a function ``tail(h)`` that f calls instead."""
    import torch._dynamo

    graphs: list = []
    namespace: dict = {}
    tail = f"def tail(h):\n    return {suffix}\n\n\n" if through_helper else ""
    result = "tail(h)" if through_helper else suffix
    source = f"{tail}def f(x):\n    h = {prefix}\n    h.retain_grad()\n    return {result}, h\n"
    exec(compile(source, f"<retain_grad between {prefix} and {suffix}>", "exec"), namespace)
    torch._dynamo.reset()
    with quiet_dynamo():
        out, _ = torch.compile(namespace["f"], backend=counting_backend(graphs))(x)
        out.backward()
    torch._dynamo.reset()
    return [sum(node.op in ("call_function", "call_method") for node in gm.graph.nodes) for gm in graphs]
