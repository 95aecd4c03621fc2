"""Unit 03's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader import probes
from grader.engine.claims import Trial, claim, sweeps
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


@sweeps("03.to-records-a-copy-when-it-changes", ops=("to",))
def to_records_a_copy_on(sample):
    """op_db's .to() samples: the tensor's own dtype and device, with and without copy=True, the memory format
    preserved or channels_last."""
    run = sample.shared()
    if run is None:
        return None
    x, y = run.tensors[0], run.output
    flags = [a for a in run.args if isinstance(a, bool)]
    copy = run.kwargs.get("copy", len(flags) > 1 and flags[1])
    changes = y.dtype != x.dtype or bool(copy)
    recorded = probes.node_name(y.grad_fn) == "ToCopyBackward0" and not y.is_leaf
    label = f"{sample.label}: copy={copy}, memory_format={str(run.kwargs.get('memory_format')).replace('torch.', '')}"
    return Trial(label, changes, recorded, op=sample.op)


@claim(
    "03.backward-writes-every-reachable-leaf",
    sentence="`backward()` writes every reachable leaf's `.grad`",
    holds_when="backward() is called without `inputs=`; with `inputs=` it writes only the leaves named there",
    not_swept="about what backward writes into .grad, the same for every graph",
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
    not_swept="about the order backward runs nodes in, not what an operation records",
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
    not_swept="about hooks on tensors, not what an operation records",
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
    sentence="Backward computes a gradient for every tensor on the path from the loss to the leaves, and stores only "
    "the leaves' ones.",
    holds_when="no retain_grad() was called; retain_grad() on a non-leaf stores its gradient too",
    not_swept="about what backward writes into .grad, the same for every graph",
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
    not_swept="about autograd.grad and hooks, not what an operation records",
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


@claim(
    "03.hooks-stay-until-removed",
    sentence="A hook stays on its tensor, and runs in every backward pass through it, until `handle.remove()` "
    "takes it off.",
    not_swept="about hooks on tensors, not what an operation records",
)
def hooks_stay_until_removed():
    for seed in range(16):
        rng = random.Random(seed)
        w = torch.randn(rng.randint(1, 3), requires_grad=True)
        on_leaf = seed % 2 == 0
        t = w if on_leaf else w * 2  # an intermediate is used by several passes with retain_graph
        out = (t.sin() * 3).sum()
        handles: list = []
        calls: list[int] = []
        ok = True
        for step in range(rng.randint(2, 5)):
            handles.append(t.register_hook(lambda g, step=step, calls=calls: calls.append(step)))
            if handles and rng.random() < 0.4:
                handles.pop(rng.randrange(len(handles))).remove()
            calls.clear()
            out.backward(retain_graph=True) if not on_leaf else (t.sin() * 3).sum().backward()
            ok = ok and len(calls) == len(handles)
        yield Trial(f"seed {seed}: hooks on {'a leaf' if on_leaf else 'an intermediate'}", True, ok)


@claim(
    "03.returned-tensor-replaces-the-gradient",
    sentence="A hook may return a tensor, and if it does, that tensor *replaces* the gradient for everything "
    "further down",
    not_swept="about hooks on tensors, not what an operation records",
)
def returned_tensor_replaces_the_gradient():
    ops = {"sin": torch.sin, "square": lambda v: v**2, "exp": torch.exp, "scale": lambda v: v * 3}
    for seed in range(16):
        rng = random.Random(seed)
        shape = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
        w = torch.randn(shape, requires_grad=True)
        first, second = rng.choice(sorted(ops)), rng.choice(sorted(ops))
        t = ops[first](w)
        replacement = torch.randn(shape)
        t.register_hook(lambda g, r=replacement: r)
        ops[second](t).sum().backward()
        fresh = w.detach().clone().requires_grad_()
        (expected,) = torch.autograd.grad(ops[first](fresh), [fresh], replacement)
        yield Trial(f"seed {seed}: {first} then {second}, {shape}", True, torch.allclose(w.grad, expected))


@claim(
    "03.retain-grad-obeyed-by-any-backward",
    sentence="it is an instruction attached to the tensor, and any backward pass that goes through `x` obeys it, "
    "`autograd.grad`'s included",
    not_swept="about retain_grad and the backward calls, not what an operation records",
)
def retain_grad_obeyed_by_any_backward():
    rng = random.Random(9)
    for case in programs(20, seed=9, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        inner = [n for n, t in sorted(ns.items()) if _is_intermediate(t) and n != case.output and _feeds(out, t)]
        if not inner:
            continue
        name = rng.choice(inner)
        x = ns[name]
        x.retain_grad()
        others = [n for n, t in sorted(ns.items()) if isinstance(t, torch.Tensor) and t.requires_grad and n != name]
        way = rng.choice(["backward()", "autograd.grad of x", "autograd.grad of another"] if others else ["backward()"])
        if way == "backward()":
            out.sum().backward()
            through = True
        elif way == "autograd.grad of x":
            torch.autograd.grad(out.sum(), [x])
            through = True
        else:
            asked = ns[rng.choice(others)]
            torch.autograd.grad(out.sum(), [asked], allow_unused=True)
            through = _upstream(asked, x)
        yield Trial(f"{case.label}: {name} retained, {way}", True, (x.grad is not None) == through)


def _is_intermediate(t: object) -> bool:
    return isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is not None


def _upstream(asked: torch.Tensor, x: torch.Tensor) -> bool:
    """Whether the gradient for ``asked`` has to pass through x's node (asked lies below x in the graph)."""
    target = asked.grad_fn
    seen, stack = set(), [x.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if (target is not None and node is target) or (target is None and getattr(node, "variable", None) is asked):
            return True
        stack.extend(n for n, _ in node.next_functions)
    return False


_LAST = 2**64 - 1


@claim(
    "03.ready-nodes-run-by-sequence-number",
    sentence="among the nodes that are ready, it runs the one with the highest *sequence number*, a counter every "
    "node receives when the forward pass creates it (later nodes get larger numbers). `AccumulateGrad` gets the "
    "largest number there is",
    not_swept="about the order backward runs nodes in, not what an operation records",
)
def ready_nodes_run_by_sequence_number():
    for case in programs(18, seed=10, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        nodes = probes.nodes(out)
        ran: list = []
        for node in nodes:
            node.register_prehook(lambda g, node=node, ran=ran: ran.append(node))
        out.sum().backward() if out.dim() else out.backward()
        simulated = _simulate(ran[0], nodes)
        leaves_last = all(n._sequence_nr() == _LAST for n in nodes if hasattr(n, "variable"))
        later_larger = all(
            child._sequence_nr() < n._sequence_nr()
            for n in nodes
            for child, _ in n.next_functions
            if child is not None and not hasattr(child, "variable")
        )
        yield Trial(case.label, True, ran == simulated and leaves_last and later_larger)


def _simulate(root, nodes: list) -> list:
    """The order the two rules give: run a node once all its edges delivered; among ready ones, the highest number."""
    waiting = {id(n): 0 for n in nodes}
    for n in nodes:
        for child, _ in n.next_functions:
            if child is not None:
                waiting[id(child)] += 1
    ready, order = [root], []
    while ready:
        ready.sort(key=lambda n: n._sequence_nr())
        node = ready.pop()
        order.append(node)
        for child, _ in node.next_functions:
            if child is None:
                continue
            waiting[id(child)] -= 1
            if waiting[id(child)] == 0:
                ready.append(child)
    return order


_MODULES = {
    "Linear": lambda: torch.nn.Linear(3, 2),
    "Linear-ReLU-Linear": lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)),
    "Conv1d": lambda: torch.nn.Conv1d(3, 2, kernel_size=1),
    "Tanh": lambda: torch.nn.Tanh(),
}


@claim(
    "03.module-hook-speaks-of-inputs",
    sentence="`grad_input` holds the gradients with respect to the tensors passed to `forward` (`None` for one that "
    "needs none; torch warns when none does), `grad_output` those with respect to what it returned. The "
    "parameters' gradients are not in it",
    not_swept="about a module's backward hook, not what an operation records",
)
def module_hook_speaks_of_inputs():
    import warnings

    for seed in range(12):
        rng = random.Random(seed)
        name = sorted(_MODULES)[seed % len(_MODULES)]
        torch.manual_seed(seed)
        module = _MODULES[name]()
        needs = rng.random() < 0.5 or name == "Tanh"  # a parameterless module needs an input that requires grad
        x = torch.randn(rng.randint(1, 4), 3, *([5] if name == "Conv1d" else []), requires_grad=needs)
        seen: dict = {}
        module.register_full_backward_hook(lambda m, gi, go, seen=seen: seen.update(gi=gi, go=go))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = module(x)
            y.sum().backward()
        gi, go = seen["gi"], seen["go"]
        inputs_ok = len(gi) == 1 and ((gi[0] is None) != needs) and (gi[0] is None or gi[0].shape == x.shape)
        outputs_ok = len(go) == 1 and go[0].shape == y.shape
        shapes = {tuple(p.shape) for p in module.parameters()} - {tuple(x.shape)}
        no_params = all(g is None or tuple(g.shape) not in shapes for g in gi)
        warned = any("no inputs require gradients" in str(w.message) for w in caught)
        yield Trial(
            f"seed {seed}: {name}, input requires grad {needs}",
            True,
            inputs_ok and outputs_ok and no_params and warned == (not needs),
        )


def _intermediates(ns: dict, out: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """The named non-leaf tensors of a program's namespace that out's graph goes through, in name order."""
    nodes, stack = set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in nodes:
            continue
        nodes.add(node)
        stack.extend(n for n, _ in node.next_functions)
    return [
        (name, t)
        for name, t in sorted(ns.items())
        if isinstance(t, torch.Tensor) and t is not out and t.grad_fn is not None and t.grad_fn in nodes
    ]


@claim(
    "03.inputs-writes-a-named-non-leaf",
    sentence="naming a non-leaf in `inputs=` marks it to keep its gradient, as `retain_grad()` would",
)
def inputs_writes_a_named_non_leaf():
    for case in programs(16, seed=21, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        inner = _intermediates(ns, out)
        if not inner:
            continue
        name, t = inner[case.seed % len(inner)]
        (expected,) = torch.autograd.grad(out.sum(), t, retain_graph=True)
        out.sum().backward(inputs=[t])
        kept = t.grad is not None and torch.allclose(t.grad, expected, equal_nan=True) and t.retains_grad
        yield Trial(f"{case.label}: backward(inputs=[{name}])", True, kept)


def _first_float_output(run) -> torch.Tensor | None:
    """The first recorded floating-point output of an op_db run, None if it has none."""
    found = [t for t in run.recorded if t.is_floating_point()] if run is not None else []
    return found[0] if found else None


@sweeps("03.inputs-writes-a-named-non-leaf")
def inputs_writes_a_named_non_leaf_on(sample):
    """Every operation's output, named in inputs= of a backward from a product of it: its .grad is written, it is
    marked to retain its gradient, and no leaf below it gets a .grad."""
    run = sample.run()
    t = _first_float_output(run)
    if t is None:
        return None
    try:
        (t * 2).sum().backward(inputs=[t])
    except RuntimeError:  # a derivative torch does not implement
        return None
    kept = t.grad is not None and bool((t.grad == 2).all()) and t.retains_grad
    untouched = all(leaf.grad is None for leaf in run.leaves)
    return Trial(f"{sample.label}: backward(inputs=[output])", True, kept and untouched, op=sample.op)


_OPTIMIZERS = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop)


@claim(
    "03.optimizer-refuses-a-non-leaf",
    sentence="torch refuses a non-leaf when the optimizer is built, unless it retains its grad or the optimizer is "
    "built with `differentiable=True`",
    holds_when="the non-leaf does not retain its grad and the optimizer is not differentiable; one that called "
    "retain_grad(), or any non-leaf given to an optimizer built with differentiable=True, is accepted (SGD, Adam, "
    "AdamW and RMSprop tried)",
    not_swept="about an optimizer's constructor, not what an operation records",
)
def optimizer_refuses_a_non_leaf():
    rng = random.Random(22)
    for case in programs(16, seed=22, need_backward=True):
        ns = case.fresh()
        for name, t in _intermediates(ns, ns[case.output]):
            retained = rng.random() < 0.4
            differentiable = rng.random() < 0.25
            if retained:
                t.retain_grad()
            kind = rng.choice(_OPTIMIZERS)
            try:
                kind([t], lr=0.1, differentiable=differentiable)
                refused = False
            except ValueError:
                refused = True
            label = f"{case.label}: {kind.__name__}([{name}], differentiable={differentiable}), retained: {retained}"
            yield Trial(label, not retained and not differentiable, refused)


@claim(
    "03.intermediate-hook-outlives-its-name",
    sentence="A hook on an intermediate is kept by the node that produced it, not by the Python name: it lasts as "
    "long as that graph does, and runs in a backward through it even after the name is gone",
)
def intermediate_hook_outlives_its_name():
    import gc

    for case in programs(16, seed=23, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        inner = _intermediates(ns, out)
        if not inner:
            continue
        name, t = inner[case.seed % len(inner)]
        calls: list[int] = []
        t.register_hook(lambda g, calls=calls: calls.append(1))
        for other in [n for n, v in ns.items() if v is t]:
            del ns[other]
        del t
        gc.collect()
        out.sum().backward()
        yield Trial(f"{case.label}: a hook on {name}, every name of it deleted", True, calls == [1])


@sweeps("03.intermediate-hook-outlives-its-name")
def intermediate_hook_outlives_its_name_on(sample):
    """Every operation's output hooked, then every name of it dropped: the hook still runs in a backward through
    the graph that made it."""
    import gc

    run = sample.run()
    t = _first_float_output(run)
    if t is None:
        return None
    calls: list[int] = []
    t.register_hook(lambda g: calls.append(1))
    y = (t * 2).sum()
    run.output, run.outputs[:] = None, []
    del t
    gc.collect()
    try:
        y.backward()
    except RuntimeError:  # a derivative torch does not implement
        return None
    return Trial(f"{sample.label}: a hook on the output, every name of it dropped", True, calls == [1], op=sample.op)
