"""Unit 03's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim
from grader.units.programs import programs

_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


@claim(
    "03.to-records-a-copy-when-it-changes",
    sentence="`.to(...)` is an operation too when it changes the dtype or the device: it records a "
    "`ToCopyBackward0` node, and the copy is not a leaf",
    holds_when="the dtype changes (or copy=True); `.to()` to the tensor's own dtype and device returns the "
    "tensor itself, still a leaf (checked on dtypes and the CPU device: this machine may have no other)",
)
def to_records_a_copy():
    for seed in range(24):
        rng = random.Random(seed)
        start, target = rng.choice(_DTYPES[:2]), rng.choice(_DTYPES)
        copy = rng.random() < 0.2
        w = torch.randn([rng.randint(1, 5)] * rng.randint(1, 2), dtype=start, requires_grad=True)
        y = w.to(target, copy=True) if copy else (w.to("cpu") if rng.random() < 0.3 else w.to(target))
        changes = y.dtype != start or copy
        recorded = type(y.grad_fn).__name__ == "ToCopyBackward0" and not y.is_leaf
        yield Trial(f"seed {seed}: {start} -> {y.dtype}{', copy=True' if copy else ''}", changes, recorded)


@claim(
    "03.backward-writes-every-reachable-leaf",
    sentence="`backward()` writes every reachable leaf's `.grad`",
    holds_when="backward() is called without `inputs=`; with `inputs=` it writes only the leaves named there",
)
def backward_writes_every_reachable_leaf():
    rng = random.Random(3)
    for case in programs(16, seed=3, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        leaves = [t for t in ns.values() if isinstance(t, torch.Tensor) and t.is_leaf and t.requires_grad]
        reachable = [t for t in leaves if _reaches(out, t)]
        if not reachable:
            continue
        named = None
        if len(reachable) > 1 and rng.random() < 0.5:
            named = reachable[: rng.randint(1, len(reachable) - 1)]
        out.sum().backward(inputs=named) if named else out.sum().backward()
        written = all(t.grad is not None for t in reachable)
        yield Trial(
            f"{case.label}{' with inputs= ' + str(len(named)) + ' leaf(s)' if named else ''}", named is None, written
        )


def _reaches(out: torch.Tensor, leaf: torch.Tensor) -> bool:
    seen, stack = set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "variable", None) is leaf:
            return True
        stack.extend(n for n, _ in node.next_functions)
    return False


@claim(
    "03.a-node-runs-once",
    sentence="a node runs after all its gradients have arrived, exactly once per backward pass",
)
def a_node_runs_once():
    for case in programs(16, seed=11, need_backward=True):
        out = case.fresh()[case.output]
        nodes, stack = {}, [out.grad_fn]
        while stack:
            node = stack.pop()
            if node is None or id(node) in nodes:
                continue
            nodes[id(node)] = node
            stack.extend(n for n, _ in node.next_functions)
        edges_in: dict[int, int] = {}
        for node in nodes.values():
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    edges_in[id(nxt)] = edges_in.get(id(nxt), 0) + 1
        runs, ready = _watch(nodes)
        out.sum().backward()
        once = all(runs.get(key, 0) == 1 for key in nodes)
        waited = all(ready.get(key, 0) == edges_in.get(key, 0) for key in nodes)
        yield Trial(f"{case.label}: {len(nodes)} nodes", True, once and waited)


@claim(
    "03.post-accumulate-only-on-leaves",
    sentence="It exists only on leaves: only they have an `AccumulateGrad` node.",
    holds_when="the tensor is a leaf that requires grad; registering it on a non-leaf raises",
)
def post_accumulate_only_on_leaves():
    for case in programs(10, seed=5, need_graph=True):
        ns = case.fresh()
        for name, t in sorted(ns.items()):
            if not isinstance(t, torch.Tensor) or not t.requires_grad:
                continue
            try:
                t.register_post_accumulate_grad_hook(lambda p: None)
                registered = True
            except RuntimeError:
                registered = False
            leaf = t.is_leaf
            has_node = leaf == (t.grad_fn is None)
            yield Trial(f"{case.label}: {name} ({'leaf' if leaf else 'non-leaf'})", leaf, registered and has_node)


def _deliveries(node, arrived: dict):
    def hook(grad_inputs, grad_outputs):
        for nxt, _ in node.next_functions:
            if nxt is not None:
                arrived[id(nxt)] = arrived.get(id(nxt), 0) + 1

    return hook


def _watch(nodes: dict) -> tuple[dict, dict]:
    """Hooks on every node: ({node: times it ran}, {node: gradients delivered to it when it started})."""
    runs: dict[int, int] = {}
    ready: dict[int, int] = {}
    arrived: dict[int, int] = {}
    for key, node in nodes.items():

        def before(grads, key=key):
            runs[key] = runs.get(key, 0) + 1
            ready[key] = arrived.get(key, 0)

        node.register_prehook(before)
        node.register_hook(_deliveries(node, arrived))  # after it runs: what it sent to each node it feeds
    return runs, ready


@claim(
    "03.backward-stores-only-leaves",
    sentence="Backward computes a gradient for every tensor on the path from the loss to the leaves, and, unless "
    "`retain_grad()` asks for more, stores only the leaves' ones.",
    holds_when="no retain_grad() was called; retain_grad() on a non-leaf stores its gradient too",
)
def backward_stores_only_leaves():
    import warnings

    rng = random.Random(8)
    for case in programs(16, seed=8, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        tensors = {name: t for name, t in sorted(ns.items()) if isinstance(t, torch.Tensor) and t.requires_grad}
        on_path = {name: t for name, t in tensors.items() if t is out or _reaches(out, t) or _feeds(out, t)}
        heard: set[str] = set()
        for name, t in on_path.items():
            t.register_hook(lambda g, name=name, heard=heard: heard.add(name))
        retained = rng.random() < 0.4 and any(not t.is_leaf for t in on_path.values())
        if retained:
            next(t for t in on_path.values() if not t.is_leaf).retain_grad()
        out.sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading a non-leaf's .grad warns
            stored = {name for name, t in on_path.items() if t.grad is not None}
        leaves = {name for name, t in on_path.items() if t.is_leaf}
        label = f"{case.label}{', one retain_grad()' if retained else ''}"
        yield Trial(label, not retained, heard == set(on_path) and stored == leaves)


def _feeds(out: torch.Tensor, t: torch.Tensor) -> bool:
    """Whether the non-leaf t's node lies on out's graph."""
    if t.grad_fn is None:
        return False
    seen, stack = set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        if node is t.grad_fn:
            return True
        seen.add(id(node))
        stack.extend(n for n, _ in node.next_functions)
    return False


@claim(
    "03.autograd-grad-writes-nothing",
    sentence="a hook and `autograd.grad` write nothing themselves",
)
def autograd_grad_writes_nothing():
    for index, case in enumerate(programs(12, seed=4, need_backward=True)):
        ns = case.fresh()
        out = ns[case.output]
        tensors = [t for _, t in sorted(ns.items()) if isinstance(t, torch.Tensor) and t.requires_grad]
        leaves = [t for t in tensors if t.is_leaf and _reaches(out, t)]
        if index % 2:  # autograd.grad: every leaf's gradient returned, none stored
            torch.autograd.grad(out.sum(), leaves, allow_unused=True)
            yield Trial(f"{case.label}: autograd.grad", True, all(t.grad is None for t in leaves))
            continue
        # a hook that only looks, on every tensor: the same .grad fields as without it
        plain = case.fresh()
        plain[case.output].sum().backward()
        for t in tensors:
            t.register_hook(lambda g: None)
        out.sum().backward()
        written = {n for n, t in ns.items() if isinstance(t, torch.Tensor) and t.is_leaf and t.grad is not None}
        expected = {n for n, t in plain.items() if isinstance(t, torch.Tensor) and t.is_leaf and t.grad is not None}
        yield Trial(f"{case.label}: a hook on every tensor", True, written == expected)
