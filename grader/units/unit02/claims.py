"""Unit 02's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader import probes
from grader.engine.claims import Trial, claim, sweeps
from grader.units.programs import programs


def _broadcastable_pair(rng: random.Random) -> tuple[list[int], list[int]]:
    """Two shapes that broadcast: the second may drop leading dimensions and have 1 where the first does not."""
    full = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
    other = [1 if rng.random() < 0.4 else n for n in full][rng.randint(0, len(full) - 1) :]
    return (full, other) if rng.random() < 0.5 else (other, full)


@claim(
    "02.gradient-in-the-operands-shape",
    sentence="The gradient always comes back in the operand's own shape",
)
def gradient_in_the_operands_shape():
    ops = (lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b, lambda a, b: torch.maximum(a, b))
    for seed in range(30):
        rng = random.Random(seed)
        sa, sb = _broadcastable_pair(rng)
        a, b = torch.randn(sa, requires_grad=True), torch.randn(sb, requires_grad=True)
        rng.choice(ops)(a, b).sum().backward()
        yield Trial(f"seed {seed}: {sa} with {sb}", True, a.grad.shape == a.shape and b.grad.shape == b.shape)


def _gradients(run) -> list | None:
    """The gradient of every argument that requires grad (None where no path reaches it), from a seed of ones
    on every recorded output; None when torch has no derivative for the operation."""
    seeds = [torch.ones_like(t) for t in run.recorded]
    try:
        return list(torch.autograd.grad(run.recorded, run.leaves, seeds, allow_unused=True))
    except RuntimeError:  # a derivative torch does not implement ("the derivative for ... is not implemented")
        return None


@sweeps("02.gradient-in-the-operands-shape")
def gradient_in_the_operands_shape_on(sample):
    run = sample.run()
    if run is None or not run.recorded or not run.leaves:
        return None
    grads = _gradients(run)
    if grads is None:
        return None
    shapes = [(tuple(g.shape), tuple(t.shape)) for g, t in zip(grads, run.leaves) if g is not None]
    return Trial(f"{sample.label}: {shapes}", True, all(a == b for a, b in shapes), op=sample.op)


@claim(
    "02.view-never-copies",
    sentence="`view` never copies: it raises instead.",
)
def view_never_copies():
    for seed in range(30):
        rng = random.Random(seed)
        t = torch.randn(rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4))
        t = t.permute(*rng.sample(range(3), 3)) if rng.random() < 0.6 else t
        t = t[:, ::2] if rng.random() < 0.3 else t
        shape = rng.choice([[-1], [t.shape[0], -1], [-1, t.shape[-1]]])
        try:
            v = t.view(shape)
        except RuntimeError:
            yield Trial(f"seed {seed}: {list(t.shape)} stride {t.stride()} -> {shape}: raised", True, True)
            continue
        shares = v.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        yield Trial(f"seed {seed}: {list(t.shape)} stride {t.stride()} -> {shape}", True, shares)


@sweeps("02.view-never-copies", ops=("view", "view_as"))
def view_never_copies_on(sample):
    """op_db's view samples, on the input as given and on a transposed copy of it (which view may refuse)."""
    for turned in (False, True):
        args, kwargs, tensors = sample.arguments()
        if turned and tensors[0].dim() < 2:
            continue
        if turned:
            args = (args[0].mT, *args[1:])
        try:
            v = sample.function(*args, **kwargs)
        except RuntimeError:
            yield Trial(f"{sample.label}{', transposed' if turned else ''}: raised", True, True, op=sample.op)
            continue
        shares = v.untyped_storage().data_ptr() == args[0].untyped_storage().data_ptr()
        label = f"{sample.label}{', transposed' if turned else ''}: {list(args[0].shape)} -> {list(v.shape)}"
        yield Trial(label, True, shares and v._is_view(), op=sample.op)


@claim(
    "02.ones-seed-is-sum",
    sentence="A seed of ones adds every output's gradient together, which is exactly what `.sum()` followed by "
    "`backward()` does.",
    not_swept="about backward's seed, the same for every graph",
)
def ones_seed_is_sum():
    for case in programs(16, seed=2, need_backward=True):
        grads = []
        for seeded in (True, False):
            ns = case.fresh()
            out = ns[case.output]
            out.backward(torch.ones_like(out)) if seeded else out.sum().backward()
            leaves = [t for _, t in sorted(ns.items()) if isinstance(t, torch.Tensor) and t.is_leaf]
            grads.append([t.grad for t in leaves])
        same = all(
            (a is None and b is None) or (a is not None and b is not None and torch.allclose(a, b))
            for a, b in zip(*grads)
        )
        yield Trial(case.label, True, same)


@claim(
    "02.clamp-sends-one-at-its-bound",
    sentence="`z.clamp(min=0)`, which computes the same numbers as `relu`, sends 1 at 0 on torch 2.13",
    holds_when="the corner is clamp's (any bound m, at z == m); relu, whose numbers are the same for m = 0, "
    "sends 0 at 0",
    torch=">=2.13,<2.15",
    not_swept="one operation's gradient exactly at its bound, a point op_db's random samples never hold",
)
def clamp_sends_one_at_its_bound():
    for seed in range(12):
        rng = random.Random(seed)
        bound = 0.0 if seed < 6 else rng.choice([-1.0, 0.5, 2.0])
        z = torch.full((rng.randint(1, 5),), bound, requires_grad=True)
        is_clamp = seed % 3 != 2 or bound != 0.0
        y = z.clamp(min=bound) if is_clamp else z.relu()
        same_numbers = bound != 0.0 or torch.equal(y, z.detach().relu())
        y.sum().backward()
        label = f"seed {seed}: {'clamp(min=' + str(bound) + ')' if is_clamp else 'relu'} at {bound}"
        yield Trial(label, is_clamp, same_numbers and bool((z.grad == 1).all()))


@claim(
    "02.embedding-is-one-node",
    sentence="Looking up rows of a table with an embedding (`nn.Embedding`, `F.embedding`) records **one** node, "
    "`EmbeddingBackward0`, with one edge to the table.",
    holds_when="the lookup is an embedding; indexing the table yourself, `table[idx]`, records an `IndexBackward0`",
)
def embedding_is_one_node():
    for seed in range(16):
        rng = random.Random(seed)
        rows, width = rng.randint(3, 12), rng.randint(1, 5)
        shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 2))]
        table = torch.randn(rows, width, requires_grad=True)
        index = torch.randint(0, rows, shape)
        embedding = seed % 4 != 3
        if embedding:
            looked_up = (
                torch.nn.functional.embedding(index, table) if seed % 2 else torch.nn.Embedding(rows, width)(index)
            )
            leaf = table if seed % 2 else None
        else:
            looked_up, leaf = table[index], table
        node = looked_up.grad_fn
        edges = [n for n, _ in node.next_functions if n is not None]
        holds = (
            type(node).__name__ == "EmbeddingBackward0"
            and len(edges) == 1
            and hasattr(edges[0], "variable")
            and (leaf is None or edges[0].variable is leaf)
        )
        way = "table[idx]" if not embedding else ("F.embedding" if seed % 2 else "nn.Embedding")
        yield Trial(f"seed {seed}: {way}, table ({rows}, {width}), index {shape}", embedding, holds)


@sweeps("02.embedding-is-one-node", ops=("nn.functional.embedding",))
def embedding_is_one_node_on(sample):
    run = sample.shared()
    if run is None or not run.recorded:
        return None
    table = run.leaves[0]
    node = run.output.grad_fn
    edges = [n for n, _ in node.next_functions if n is not None]
    holds = (
        probes.node_name(node) == "EmbeddingBackward0"
        and len(edges) == 1
        and getattr(edges[0], "variable", None) is table
    )
    return Trial(f"{sample.label}: {sorted(run.kwargs)}", True, holds, op=sample.op)


def _accumulated(model: torch.nn.Module, X: torch.Tensor, Y: torch.Tensor, sizes: list[int]) -> list[torch.Tensor]:
    """The parameters' .grad after one backward per micro-batch of the given sizes, each mean loss / their number."""
    model.zero_grad(set_to_none=True)
    for xb, yb in zip(X.split(sizes), Y.split(sizes)):
        (((model(xb) - yb) ** 2).mean() / len(sizes)).backward()
    return [p.grad.clone() for p in model.parameters()]


@claim(
    "02.microbatches-add-up-to-the-batch",
    sentence="For the sum in `.grad` to be the full batch's mean-loss gradient, each micro-batch's loss is divided "
    "by the number of micro-batches.",
    holds_when="the micro-batches are of equal size and the model treats each sample on its own; micro-batches of "
    "unequal size (torch.split with sizes such as [5, 3]), or a BatchNorm in training mode, whose statistics are "
    "per micro-batch, give a different gradient",
    not_swept="about a training loop's losses, not one operation",
)
def microbatches_add_up_to_the_batch():
    for seed in range(18):
        rng = random.Random(seed)
        pieces = rng.choice([2, 3, 4])
        width = rng.randint(1, 4)
        kind = ("equal", "equal", "unequal", "batchnorm")[seed % 4]
        n = pieces * rng.randint(2, 4) + (1 if kind == "unequal" else 0)
        torch.manual_seed(seed)
        layers = [torch.nn.Linear(width, 3)]
        layers += [torch.nn.BatchNorm1d(3)] if kind == "batchnorm" else [torch.nn.Tanh()]
        model = torch.nn.Sequential(*layers, torch.nn.Linear(3, 1))
        X, Y = torch.randn(n, width), torch.randn(n, 1)
        sizes = [n // pieces] * pieces
        sizes[0] += n - sum(sizes)
        if kind == "unequal":
            sizes = [1] * (pieces - 1) + [n - pieces + 1]

        full, accumulated = _accumulated(model, X, Y, [n]), _accumulated(model, X, Y, sizes)
        same = all(torch.allclose(a, b, atol=1e-6, rtol=1e-5) for a, b in zip(full, accumulated))
        yield Trial(f"seed {seed}: {kind}, {n} samples in {sizes}", kind == "equal", same)


def _leaves(ns: dict) -> list[torch.Tensor]:
    return [t for _, t in sorted(ns.items()) if isinstance(t, torch.Tensor) and t.is_leaf and t.requires_grad]


@claim(
    "02.seed-scales-every-gradient",
    sentence="Pass your own seed and every number after it scales with it",
    not_swept="about backward's seed, the same for every graph",
)
def seed_scales_every_gradient():
    for i, case in enumerate(programs(14, seed=5, need_backward=True)):
        factor = random.Random(i).choice([2.0, -0.5, 3.0, 0.25])
        grads, arrivals = [], []
        for seed in (1.0, factor):
            ns = case.fresh()
            received: list[torch.Tensor] = []
            for node in probes.nodes(ns[case.output]):
                node.register_prehook(lambda g, received=received: received.append(g[0].detach().clone()))
            ns[case.output].backward(torch.tensor(seed))
            grads.append([t.grad for t in _leaves(ns)])
            arrivals.append(received)
        scaled = all(
            (a is None and b is None) or (a is not None and b is not None and torch.allclose(a * factor, b))
            for a, b in zip(*grads)
        ) and all(torch.allclose(a * factor, b) for a, b in zip(*arrivals))
        yield Trial(f"{case.label}, seed {factor}", True, scaled and len(arrivals[0]) == len(arrivals[1]))


@claim(
    "02.seed-must-have-the-outputs-shape",
    sentence="The seed must have `z`'s shape.",
    not_swept="about backward's seed, the same for every graph",
)
def seed_must_have_the_outputs_shape():
    for seed in range(24):
        rng = random.Random(seed)
        shape = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
        v = torch.randn(shape, requires_grad=True)
        z = v * 2
        options = [shape, [1] + shape, shape[1:], [v.numel()], [*shape, 1], [n + 1 for n in shape]]
        seed_shape = rng.choice([s for s in options if s != shape] if seed % 2 else [shape])
        try:
            z.backward(torch.ones(seed_shape))
            accepted = True
        except RuntimeError:
            accepted = False
        yield Trial(f"seed {seed}: output {shape}, seed {seed_shape}", True, accepted == (seed_shape == shape))


@claim(
    "02.wrong-seed-refused-before-anything-runs",
    sentence="A seed of the wrong shape is refused before anything runs",
    not_swept="about backward's seed, the same for every graph",
)
def wrong_seed_refused_before_anything_runs():
    for case in programs(12, seed=6, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        ran = []
        for node in probes.nodes(out):
            node.register_prehook(lambda g, ran=ran: ran.append(1))
        try:
            out.backward(torch.ones(*out.shape, 2))
            refused = False
        except RuntimeError:
            refused = True
        yield Trial(case.label, True, refused and not ran and all(t.grad is None for t in _leaves(ns)))


@claim(
    "02.arrivals-add-before-the-node-runs",
    sentence="Backward runs each node once, after every gradient headed for it has arrived, and it adds the arrivals "
    "for the same input before the node runs.",
    not_swept="about the order backward runs nodes in, not what an operation records",
)
def arrivals_add_before_the_node_runs():
    for case in programs(16, seed=7, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        calls: dict = {}
        for node in probes.nodes(out):
            node.register_prehook(lambda g, node=node, calls=calls: calls.setdefault(node, []).append(g[0].clone()))
        out.backward()
        once = all(len(v) == 1 for v in calls.values())
        summed = all(
            torch.allclose(calls[node][0], node.variable.grad)
            for node in calls
            if hasattr(node, "variable") and node.variable.grad is not None
        )
        yield Trial(case.label, True, once and summed)


@claim(
    "02.plain-backward-adds-in-place",
    sentence='"Adds in place" holds for a plain `backward()`.',
    holds_when="create_graph is not set; with create_graph=True, AccumulateGrad puts a new tensor in .grad",
    not_swept="about what AccumulateGrad writes into .grad, not one operation",
)
def plain_backward_adds_in_place():
    import warnings

    for i, case in enumerate(programs(14, seed=8, need_backward=True)):
        create = i % 3 == 2
        ns = case.fresh()
        ns[case.output].backward(retain_graph=True)
        leaves = [t for t in _leaves(ns) if t.grad is not None]
        kept = [(t.grad, t.grad.clone()) for t in leaves]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_graph=True warns of the cycle it makes
            ns[case.output].backward(create_graph=create)
        in_place = all(t.grad is g and torch.allclose(g, 2 * old) for t, (g, old) in zip(leaves, kept))
        for t in leaves:
            t.grad = None
        if leaves:
            yield Trial(f"{case.label}{', create_graph=True' if create else ''}", not create, in_place)


_OPTIMIZERS = {
    "SGD": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "SGD momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "SGD weight_decay": lambda ps: torch.optim.SGD(ps, lr=0.1, weight_decay=0.1),
    "Adam": lambda ps: torch.optim.Adam(ps, lr=0.1),
    "AdamW": lambda ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.1),
    "RMSprop": lambda ps: torch.optim.RMSprop(ps, lr=0.1),
    "Adagrad": lambda ps: torch.optim.Adagrad(ps, lr=0.1),
}


@claim(
    "02.step-skips-none-grads",
    sentence="A parameter whose `.grad` is `None` is skipped by `step()`",
    not_swept="about an optimizer's step",
)
def step_skips_none_grads():
    for seed in range(14):
        rng = random.Random(seed)
        name = sorted(_OPTIMIZERS)[seed % len(_OPTIMIZERS)]
        a, b = torch.randn(rng.randint(1, 4), requires_grad=True), torch.randn(rng.randint(1, 4), requires_grad=True)
        opt = _OPTIMIZERS[name]([a, b])
        for _ in range(rng.randint(1, 2)):  # some steps with both gradients, so the optimizer has state
            opt.zero_grad()
            ((a**2).sum() + (b**2).sum()).backward()
            opt.step()
        opt.zero_grad()  # set_to_none: both None
        (a**2).sum().backward()  # only a gets a gradient
        before = b.detach().clone()
        opt.step()
        yield Trial(f"seed {seed}: {name}", True, b.grad is None and torch.equal(b.detach(), before))


@claim(
    "02.where-sends-zero-to-the-unchosen",
    sentence="`where` sends the unchosen element a 0",
)
def where_sends_zero_to_the_unchosen():
    for seed in range(16):
        rng = random.Random(seed)
        shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 2))]
        a, b = torch.randn(shape, requires_grad=True), torch.randn(shape, requires_grad=True)
        cond = torch.rand(shape) < 0.5
        g = torch.randn(shape)
        ga, gb = torch.autograd.grad(torch.where(cond, a, b), [a, b], g)
        zero = bool((ga[~cond] == 0).all() and (gb[cond] == 0).all())
        passed = torch.equal(ga[cond], g[cond]) and torch.equal(gb[~cond], g[~cond])
        yield Trial(f"seed {seed}: {shape}", True, zero and passed)


@sweeps("02.where-sends-zero-to-the-unchosen", ops=("where",))
def where_sends_zero_to_the_unchosen_on(sample):
    """op_db's where(cond, x, y) samples where x and y have the output's shape (broadcasting would add up
    several elements' gradients in one)."""
    run = sample.run()
    if run is None or not run.recorded:
        return None
    x, cond, y = run.tensors
    out = run.output
    if x.shape != out.shape or y.shape != out.shape:
        return None
    cond = cond.expand(out.shape)
    g = torch.randn(out.shape, dtype=out.dtype)
    gx, gy = torch.autograd.grad(out, [x, y], g)
    zero = bool((gx[~cond] == 0).all() and (gy[cond] == 0).all())
    passed = torch.equal(gx[cond], g[cond]) and torch.equal(gy[~cond], g[~cond])
    return Trial(f"{sample.label}: {list(out.shape)}", True, zero and passed, op=sample.op)


def _maybe_strided(rng: random.Random) -> torch.Tensor:
    t = torch.randn(rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 3))
    if rng.random() < 0.5:
        t = t.permute(*rng.sample(range(3), 3))
    if rng.random() < 0.3:
        t = t[:, ::2]
    return t


@claim(
    "02.flatten-numbers-row-by-row",
    sentence="`flatten()` numbers the elements of a tensor in its own shape, row by row, the last index running "
    "fastest, whatever its memory layout",
)
def flatten_numbers_row_by_row():
    for seed in range(20):
        t = _maybe_strided(random.Random(seed))
        flat = t.flatten()
        ok = all(
            flat[i].item() == t[tuple(int(k) for k in torch.unravel_index(torch.tensor(i), t.shape))].item()
            for i in range(t.numel())
        )
        yield Trial(f"seed {seed}: shape {list(t.shape)}, stride {t.stride()}", True, ok)


def _turned(t: torch.Tensor) -> torch.Tensor:
    """The same elements read in another layout: a transposed copy turned back (not contiguous)."""
    return t.mT.contiguous().mT if t.dim() >= 2 else t


@sweeps("02.flatten-numbers-row-by-row", ops=("flatten",))
def flatten_numbers_row_by_row_on(sample):
    for layout in (False, True):
        run = sample.run(prepare=_turned) if layout else sample.shared()
        if run is None:
            continue
        t = run.tensors[0]
        rule = torch.equal(run.output, t.contiguous().view(run.output.shape))
        how = f", stride {t.stride()}" if layout else ""
        yield Trial(f"{sample.label}{how}: {list(t.shape)} -> {list(run.output.shape)}", True, rule, op=sample.op)


@claim(
    "02.flatten-views-when-it-can",
    sentence="`flatten()` (like `reshape`) returns a view when it can and a copy when it cannot",
)
def flatten_views_when_it_can():
    for seed in range(20):
        rng = random.Random(seed)
        t = _maybe_strided(rng)
        try:
            t.view(-1)
            can = True
        except RuntimeError:
            can = False
        way = "reshape" if seed % 3 == 2 else "flatten"
        r = t.reshape(-1) if way == "reshape" else t.flatten()
        shares = r.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        yield Trial(f"seed {seed}: {way} of {list(t.shape)} stride {t.stride()}", True, shares == can)


@sweeps("02.flatten-views-when-it-can", ops=("flatten", "reshape", "reshape_as"))
def flatten_views_when_it_can_on(sample):
    """Each sample as given and with its input in another layout (view may then be impossible)."""
    for layout in (False, True):
        run = sample.run(prepare=_turned) if layout else sample.shared()
        if run is None:
            continue
        t, r = run.tensors[0], run.output
        try:
            t.view(r.shape)
            can = True
        except RuntimeError:
            can = False
        shares = r.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        label = f"{sample.label}: stride {t.stride()} -> {list(r.shape)}, view {'possible' if can else 'impossible'}"
        yield Trial(label, True, shares == can, op=sample.op)


@claim(
    "02.no-seed-is-one",
    sentence="When the output is a single number and you pass nothing, `backward()` uses 1.",
    not_swept="about backward's seed, the same for every graph",
)
def no_seed_is_one():
    for case in programs(12, seed=12, need_backward=True):
        grads = []
        for seed in (None, 1.0):
            ns = case.fresh()
            out = ns[case.output]
            out.backward() if seed is None else out.backward(torch.tensor(seed, dtype=out.dtype))
            grads.append([t.grad for t in _leaves(ns)])
        same = all(
            (a is None and b is None) or (a is not None and b is not None and torch.equal(a, b)) for a, b in zip(*grads)
        )
        yield Trial(case.label, True, same)


_VECTOR_FUNCTIONS = {
    "v ** 2": lambda v: v**2,
    "v.cumsum(0)": lambda v: v.cumsum(0),
    "v * v.sum()": lambda v: v * v.sum(),
    "v.flip(0).sin() * v": lambda v: v.flip(0).sin() * v,
    "stack of sum, prod": lambda v: torch.stack([v.sum(), v.prod()]),
}


@claim(
    "02.seed-gives-s-times-j",
    sentence="`z.backward(s)` puts `s · J` into `v.grad`: each output's gradient weighted by `s`, added up.",
    not_swept="about backward's seed, the same for every graph",
)
def seed_gives_s_times_j():
    for seed in range(15):
        rng = random.Random(seed)
        name = sorted(_VECTOR_FUNCTIONS)[seed % len(_VECTOR_FUNCTIONS)]
        f = _VECTOR_FUNCTIONS[name]
        v0 = torch.randn(rng.randint(1, 5), dtype=torch.float64)
        v = v0.clone().requires_grad_()
        z = f(v)
        s = torch.randn(z.shape, dtype=torch.float64)
        z.backward(s)
        J = torch.autograd.functional.jacobian(f, v0)
        yield Trial(f"seed {seed}: {name} on {v0.numel()} numbers", True, torch.allclose(v.grad, s @ J))


@claim(
    "02.broadcast-records-no-expand",
    sentence="An explicit `b.expand(4, 3)` would record an `ExpandBackward0` node that does the same sum; implicit "
    "broadcasting leaves it to the engine.",
)
def broadcast_records_no_expand():
    ops = {
        "*": lambda a, b: a * b,
        "+": lambda a, b: a + b,
        "-": lambda a, b: a - b,
        "/": lambda a, b: a / (b.abs() + 1),
    }
    for seed in range(16):
        rng = random.Random(seed)
        rows, width = rng.randint(2, 5), rng.randint(1, 4)
        name = rng.choice(sorted(ops))
        X = torch.randn(rows, width)
        b = torch.randn(width, requires_grad=True)
        found, grads = [], []
        for operand in (b, b.expand(rows, width)):
            out = ops[name](X, operand)
            found.append("ExpandBackward0" in {type(n).__name__ for n in probes.nodes(out)})
            (g,) = torch.autograd.grad(out.sum(), [b])
            grads.append(g)
        holds = found == [False, True] and torch.allclose(*grads) and grads[0].shape == b.shape
        yield Trial(f"seed {seed}: X ({rows}, {width}) {name} b ({width},), implicit and b.expand", True, holds)


def _broadcast(t: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether ``t`` was broadcast to make ``out``: another shape, which broadcasts to out's."""
    if t.shape == out.shape or t.dim() > out.dim():
        return False
    try:
        return torch.broadcast_shapes(t.shape, out.shape) == out.shape
    except RuntimeError:
        return False


@sweeps("02.broadcast-records-no-expand")
def broadcast_records_no_expand_on(sample):
    """Every sample of a pointwise operation (torch's own tag: mul, where, lerp...) where op_db broadcast an
    input to the output's shape."""
    if not sample.pointwise:
        return None
    run = sample.shared()
    if run is None or len(run.recorded) != 1 or run.recorded[0] is not run.output:
        return None
    out = run.output
    if not any(_broadcast(t, out) for t in run.leaves):
        return None
    names = [probes.node_name(fn) for fn in run.nodes()]
    return Trial(f"{sample.label}: {names[0]}", True, "ExpandBackward0" not in names, op=sample.op)


def _model(seed: int) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    return model, torch.randn(5, 3)


@claim(
    "02.zero-grad-sets-none",
    sentence="`zero_grad()` now defaults to `set_to_none=True`: it drops the gradient tensors instead of filling them "
    "with zeros.",
    not_swept="about an optimizer's zero_grad",
)
def zero_grad_sets_none():
    for seed in range(len(_OPTIMIZERS) + 3):
        model, x = _model(seed)
        model(x).sum().backward()
        if seed < len(_OPTIMIZERS):
            name = sorted(_OPTIMIZERS)[seed]
            opt = _OPTIMIZERS[name](list(model.parameters()))
            opt.step()
            opt.zero_grad()
        else:
            name = "Module.zero_grad()"
            model.zero_grad()
        yield Trial(f"seed {seed}: {name}", True, all(p.grad is None for p in model.parameters()))


@claim(
    "02.set-to-none-false-creates-nothing",
    sentence="`set_to_none=False` zeros the gradients that exist; it does not create missing ones",
    not_swept="about an optimizer's zero_grad",
)
def set_to_none_false_creates_nothing():
    for seed in range(12):
        rng = random.Random(seed)
        model, x = _model(seed)
        frozen = rng.choice([model[0], model[2]])  # one layer takes no part in the backward: no .grad for it
        model(x)[:, 0].sum().backward(
            inputs=[p for p in model.parameters() if all(p is not q for q in frozen.parameters())]
        )
        had = {id(p): p.grad is not None for p in model.parameters()}
        opt = torch.optim.SGD(model.parameters(), lr=0.1) if seed % 2 else None
        opt.zero_grad(set_to_none=False) if opt else model.zero_grad(set_to_none=False)
        holds = all(
            (p.grad is not None and not p.grad.any()) if had[id(p)] else p.grad is None for p in model.parameters()
        )
        yield Trial(
            f"seed {seed}: {'SGD' if opt else 'Module'}.zero_grad(set_to_none=False)",
            True,
            holds and not all(had.values()),
        )
