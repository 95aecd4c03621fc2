"""Unit 01's general rules, each checked on generated programs (see grader.engine.claims)."""

import random
import re

import torch

from grader import probes
from grader.engine.claims import Trial, claim, sweeps
from grader.units.programs import programs


def _pairs_follow_the_inputs(out: torch.Tensor, inputs: list[torch.Tensor]) -> bool:
    """The rule on one call: each input that requires grad has exactly one pair, in the order given, and every
    other pair is (None, 0) (a Python number the operation took as a tensor, an optional tensor left out)."""
    pairs = out.grad_fn.next_functions
    pointed = [nxt.variable for nxt, _ in pairs if nxt is not None and hasattr(nxt, "variable")]
    others = [nxt for nxt, _ in pairs if nxt is not None and not hasattr(nxt, "variable")]
    return not others and [id(t) for t in pointed] == [id(t) for t in inputs if t.requires_grad]


# (label, the call, whether the function called is itself the one operation torch records, whether b is an input)
_CALLS = {
    "a * b": (lambda a, b, m, i: a * b, True, True),
    "a - b": (lambda a, b, m, i: a - b, True, True),
    "a * 3": (lambda a, b, m, i: a * 3, True, False),
    "a + 1.5": (lambda a, b, m, i: a + 1.5, True, False),
    "a ** 2": (lambda a, b, m, i: a**2, True, False),
    "a.clamp(min=0)": (lambda a, b, m, i: a.clamp(min=0), True, False),
    "torch.maximum(a, b)": (lambda a, b, m, i: torch.maximum(a, b), True, True),
    "torch.where(m, a, b)": (lambda a, b, m, i: torch.where(m, a, b), True, True),
    "a.index_select(0, i)": (lambda a, b, m, i: a.index_select(0, i), True, False),
    "F.embedding(i, a)": (lambda a, b, m, i: torch.nn.functional.embedding(i, a), True, False),
    "a.view_as(b)": (lambda a, b, m, i: a.view_as(b), False, True),
    "F.linear(a, b, b[0])": (lambda a, b, m, i: torch.nn.functional.linear(a, b, b[0]), False, True),
}


@claim(
    "01.one-pair-per-input",
    sentence="a tuple of pairs `(node, number)`, one per input of the recorded operation that can carry a "
    "gradient, in the order that operation takes its inputs",
    holds_when="the function you call is the operation torch records: one node, named after it (`torch.where` "
    "records a `WhereBackward0`). An integer or bool tensor (an index, a mask) carries no gradient and has no "
    "pair: `torch.where(m, a, b)` has two, `a.index_select(0, i)`, `a[i]` and `F.embedding(i, E)` one. A Python "
    "number the operation takes as a tensor has its pair, `(None, 0)` (`w * 3`, `w + 1`), while one it takes as "
    "a plain number has none (`w ** 2`, `1 - w`, `w.clamp(min=0)`). An optional tensor left out keeps its pair, "
    "`(None, 0)` (a convolution's bias). A floating-point tensor the operation has no derivative for can carry "
    "no gradient and has no pair (`F.nll_loss`'s `weight`: torch refuses it with `requires_grad`, so the sweep "
    "cannot try it). What runs can differ from what you wrote: `2 * w` runs `w.__rmul__(2)`, a "
    "`MulBackward0` that takes w first; `x.view_as(y)` records a `ViewBackward0` of x alone; a function built "
    "from several operations (`F.linear`, `torch.cov`) records several nodes, and `grad_fn` is the last one",
)
def one_pair_per_input():
    for seed in range(36):
        rng = random.Random(seed)
        name = sorted(_CALLS)[seed % len(_CALLS)]
        call, itself, with_b = _CALLS[name]
        n = rng.randint(2, 4)
        a = torch.randn(n, n, requires_grad=True)
        b = torch.randn(n, n, requires_grad=rng.random() < 0.7)
        m, i = torch.rand(n, n) < 0.5, torch.tensor([rng.randrange(n) for _ in range(rng.randint(1, 3))])
        out = call(a, b, m, i)
        used = [a, b] if with_b else [a]
        yield Trial(f"seed {seed}: {name}, {n}x{n}", itself, _pairs_follow_the_inputs(out, used))


def _named_after(op: str, node) -> bool:
    """Whether a node is named after the function op_db calls: 'index_select' -> IndexSelectBackward0,
    'nn.functional.embedding' -> EmbeddingBackward0, 'linalg.svd' -> LinalgSvdBackward0."""
    name = re.sub(r"Backward\d*$", "", probes.node_name(node)).lower()
    squeeze = lambda text: text.replace("_", "").replace(".", "").lower()
    return name in (squeeze(op), squeeze(op.rsplit(".", 1)[-1]))


@sweeps("01.one-pair-per-input")
def one_pair_per_input_on(sample):
    """Each floating-point argument that requires grad has exactly one pair, in the order of the call; any
    other pair is (None, 0) (a Python number the operation took as a tensor, an optional tensor left out)."""
    run = sample.run()
    if run is None or not run.recorded:
        return None
    nodes = {id(t.grad_fn): t.grad_fn for t in run.recorded}
    node = run.recorded[0].grad_fn
    leaves_below = all(nxt is None or hasattr(nxt, "variable") for nxt, _ in node.next_functions)
    itself = len(nodes) == 1 and leaves_below and _named_after(sample.op, node)
    rule = _pairs_follow_the_inputs(run.recorded[0], run.leaves)
    return Trial(f"{sample.label}: {probes.node_name(node)}", itself, rule, op=sample.op)


@claim(
    "01.leaf-means-nothing-recorded",
    sentence='For a tensor that requires grad it means "no recorded operation produced it"; a tensor that does '
    "not require grad counts as a leaf whatever produced it, because nothing was recorded.",
)
def leaf_means_nothing_recorded():
    for case in programs(14, seed=1, cuts=("detach", "no_grad", "inference", "item", "tolist", "rebuilt")):
        for name, t in sorted(case.fresh().items()):
            if not isinstance(t, torch.Tensor):
                continue
            rule = t.is_leaf == (t.grad_fn is None) if t.requires_grad else t.is_leaf
            yield Trial(f"{case.label}: {name}", True, rule)


@sweeps("01.leaf-means-nothing-recorded")
def leaf_means_nothing_recorded_on(sample):
    """Every tensor the operation returns, with and without an argument that requires grad."""
    for grad in (True, False):
        run = sample.shared() if grad else sample.run(requires_grad=False)
        if run is None or not run.outputs:
            continue
        rule = all(t.is_leaf == (t.grad_fn is None) if t.requires_grad else t.is_leaf for t in run.outputs)
        yield Trial(f"{sample.label}, {'with' if grad else 'without'} grad", True, rule, op=sample.op)


@claim(
    "01.split-makes-one-node",
    sentence="`split` cuts a tensor into pieces, and one node, `SplitBackward0`, produces them all",
    holds_when="split is given one size (an int); given a list of sizes, the one node is a `SplitWithSizesBackward0`",
)
def split_makes_one_node():
    for seed in range(16):
        rng = random.Random(seed)
        shape = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
        dim = rng.randrange(len(shape))
        x = torch.randn(shape, requires_grad=True)
        by_size = seed % 2 == 0
        if by_size:
            arg = rng.randint(1, shape[dim])
        else:
            cut = rng.randint(0, shape[dim])
            arg = [cut, shape[dim] - cut]
        pieces = x.split(arg, dim=dim)
        nodes = {id(p.grad_fn) for p in pieces}
        one_split = len(nodes) == 1 and type(pieces[0].grad_fn).__name__ == "SplitBackward0"
        yield Trial(f"seed {seed}: shape {shape}, split({arg}, dim={dim})", by_size, one_split)


@sweeps("01.split-makes-one-node", ops=("split", "split_with_sizes"))
def split_makes_one_node_on(sample):
    run = sample.shared()
    if run is None or not run.recorded:
        return None
    nodes = {id(t.grad_fn) for t in run.recorded}
    by_size = isinstance(run.args[1], int)
    named = probes.node_name(run.recorded[0].grad_fn)
    one_split = len(nodes) == 1 and len(run.recorded) == len(run.outputs) and named == "SplitBackward0"
    return Trial(f"{sample.label}: split({run.args[1]!r}): {named}", by_size, one_split, op=sample.op)


@claim(
    "01.slot-is-output-nr",
    sentence="The number is the **slot**: which output of the producing node this input is (`t.output_nr` on the "
    "tensor).",
)
def slot_is_output_nr():
    cutters = {
        "split": lambda x, k: x.split(1, dim=k),
        "chunk": lambda x, k: x.chunk(x.shape[k], dim=k),
        "unbind": lambda x, k: x.unbind(k),
        "sort": lambda x, k: (x.sort(dim=k).values, x),
        "leaf": lambda x, k: (x, x * 2),
    }
    for seed in range(24):
        rng = random.Random(seed)
        shape = [rng.randint(2, 4) for _ in range(rng.randint(1, 2))]
        x = torch.randn(shape, requires_grad=True)
        name = rng.choice(sorted(cutters))
        pieces = cutters[name](x, rng.randrange(len(shape)))
        inputs = [rng.choice(pieces) for _ in range(rng.randint(2, 3))]
        y = torch.stack(inputs) if len(inputs) == 3 else inputs[0] * inputs[1]
        slots = [slot for _, slot in y.grad_fn.next_functions]
        yield Trial(f"seed {seed}: {name} of {shape}", True, slots == [t.output_nr for t in inputs])


def _piece_of_a_pair(leaf: torch.Tensor) -> torch.Tensor:
    """``leaf`` as output 1 of a two-output node (unbind of a stack): a tensor whose output_nr is 1."""
    return torch.stack([leaf.detach(), leaf]).unbind(0)[1]


@sweeps("01.slot-is-output-nr")
def slot_is_output_nr_on(sample):
    """Each argument that requires grad arrives as output 1 of an UnbindBackward0; every pair pointing at one
    of those nodes, in any node of the graph, must carry that argument's output_nr."""
    run = sample.run(prepare=_piece_of_a_pair)
    if run is None or not run.recorded:
        return None
    producers = {t.grad_fn: t.output_nr for t in run.tensors if t.grad_fn is not None}
    slots = [(slot, producers[nxt]) for fn in run.nodes() for nxt, slot in fn.next_functions if nxt in producers]
    if not slots:
        return None
    rule = all(a == b for a, b in slots)
    return Trial(f"{sample.label}: {len(slots)} pair(s) to a split input", True, rule, op=sample.op)


@claim(
    "01.to-returns-itself-when-nothing-changes",
    sentence="When the dtype and device are already what you ask for, `.to()` returns the very same tensor object, "
    "still the leaf (unless you pass `copy=True`, or ask for a memory layout the tensor does not have, such as "
    "`memory_format=torch.channels_last`).",
    holds_when="the dtype, device and memory layout already match and copy=True is not passed; a new dtype, "
    "copy=True or memory_format=torch.channels_last on a 4-D tensor stored row by row gives a copy (checked on "
    "the CPU device: this machine may have no other)",
)
def to_returns_itself():
    dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
    for seed in range(24):
        rng = random.Random(seed)
        start = rng.choice(dtypes)
        w = torch.randn([rng.randint(1, 4)] * rng.randint(0, 2), dtype=start, requires_grad=True)
        target = start if rng.random() < 0.6 else rng.choice(dtypes)
        copy = rng.random() < 0.25
        how = rng.choice(["dtype", "device and dtype", "another tensor"])
        if how == "dtype":
            y = w.to(target, copy=copy)
        elif how == "device and dtype":
            y = w.to("cpu", target, copy=copy)
        else:
            y = w.to(torch.empty(0, dtype=target), copy=copy)
        unchanged = target == start and not copy
        yield Trial(f"seed {seed}: {start} .to({how} {target}, copy={copy})", unchanged, y is w and y.is_leaf)


@sweeps("01.to-returns-itself-when-nothing-changes", ops=("to",))
def to_returns_itself_on(sample):
    """op_db's .to() samples ask for the tensor's own dtype and device, with and without copy=True, with the
    memory format preserved or channels_last."""
    run = sample.shared()
    if run is None:
        return None
    x, y = run.tensors[0], run.output
    flags = [a for a in run.args if isinstance(a, bool)]
    copy = run.kwargs.get("copy", len(flags) > 1 and flags[1])
    fmt = run.kwargs.get("memory_format", torch.preserve_format)
    same_format = fmt is torch.preserve_format or x.is_contiguous(memory_format=fmt)
    unchanged = y.dtype == x.dtype and y.device == x.device and same_format and not copy
    label = f"{sample.label}: copy={copy}, memory_format={str(fmt).replace('torch.', '')}"
    return Trial(label, unchanged, y is x and y.is_leaf, op=sample.op)


_INTEGER_RESULTS = {
    "argmax": lambda v: v.argmax(),
    "argmin(dim=0)": lambda v: v.argmin(dim=0),
    "argsort": lambda v: v.argsort(dim=0),
    "topk indices": lambda v: v.flatten().topk(1).indices,
    "v > 0": lambda v: v > 0,
    "v == v.max()": lambda v: v == v.max(),
    "v.lt(1)": lambda v: v.lt(1),
    ".long()": lambda v: v.long(),
    ".int()": lambda v: v.int(),
    ".to(torch.int16)": lambda v: v.to(torch.int16),
    ".bool()": lambda v: v.bool(),
}


@claim(
    "01.integer-results-record-nothing",
    sentence="An index (`argmax`, `argsort`), a comparison (a bool mask) or an integer cast is a plain constant to "
    "autograd: "
    "nothing is recorded, and nothing says so.",
)
def integer_results_record_nothing():
    import warnings

    for seed in range(22):
        rng = random.Random(seed)
        name = sorted(_INTEGER_RESULTS)[seed % len(_INTEGER_RESULTS)]
        v = torch.randn([rng.randint(1, 4) for _ in range(rng.randint(1, 2))], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = _INTEGER_RESULTS[name](v)
            constant = r.grad_fn is None and not r.requires_grad
            (v * r.float().mean()).sum().backward()  # the result used downstream, as argmax-silent does
        yield Trial(f"seed {seed}: {name} on {list(v.shape)}", True, constant and not caught)


@sweeps("01.integer-results-record-nothing")
def integer_results_record_nothing_on(sample):
    """Every integer or bool tensor any operation returns (indices of max, sort, topk; masks; casts)."""
    run = sample.shared()
    if run is None:
        return None
    integers = [t for t in run.outputs if not (t.is_floating_point() or t.is_complex())]
    if not integers or not run.leaves:
        return None
    constant = all(t.grad_fn is None and not t.requires_grad for t in integers)
    said = [w for w in run.warned if "grad" in w.lower()]  # torch.lu's deprecation notice says nothing of this
    return Trial(f"{sample.label}: {len(integers)} integer output(s)", True, constant and not said, op=sample.op)


_ALL_DTYPES = (
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.bool,
)
_ANY_RESULT = {
    **_INTEGER_RESULTS,
    "max": lambda v: v.max(),
    "round": lambda v: v.round(),
    ".double()": lambda v: v.double(),
    ".half()": lambda v: v.half(),
    ".to(torch.complex64)": lambda v: v.to(torch.complex64),
    "nonzero": lambda v: v.nonzero(),
    "v.sign()": lambda v: v.sign(),
}


def _can_carry(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


@claim(
    "01.only-floating-point-requires-grad",
    sentence="Only a floating-point (or complex) result can carry a gradient.",
)
def only_floating_point_requires_grad():
    for seed in range(24):
        rng = random.Random(seed)
        shape = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
        if seed % 2:  # made so: requires_grad=True on creation, or requires_grad_() later
            dtype = _ALL_DTYPES[seed // 2 % len(_ALL_DTYPES)]
            try:
                if rng.random() < 0.5:
                    t = torch.zeros(shape, dtype=dtype, requires_grad=True)
                else:
                    t = torch.zeros(shape, dtype=dtype).requires_grad_()
                accepted = t.requires_grad
            except RuntimeError:
                accepted = False
            yield Trial(f"seed {seed}: a {dtype} tensor asked to require grad", True, accepted == _can_carry(dtype))
        else:  # computed from a leaf that requires grad
            name = rng.choice(sorted(_ANY_RESULT))
            r = _ANY_RESULT[name](torch.randn(shape, requires_grad=True))
            yield Trial(f"seed {seed}: {name} -> {r.dtype}", True, r.requires_grad == _can_carry(r.dtype))


@sweeps("01.only-floating-point-requires-grad")
def only_floating_point_requires_grad_on(sample):
    run = sample.shared()
    if run is None or not run.outputs or not run.leaves:
        return None
    rule = all(_can_carry(t.dtype) for t in run.outputs if t.requires_grad)
    dtypes = sorted({str(t.dtype).replace("torch.", "") for t in run.outputs})
    return Trial(f"{sample.label}: outputs {dtypes}", True, rule, op=sample.op)


@claim(
    "01.one-accumulate-grad-per-leaf",
    sentence="A leaf used twice is one `AccumulateGrad` node, reached twice",
)
def one_accumulate_grad_per_leaf():
    for case in programs(16, seed=11, need_backward=True):
        ns = case.fresh()
        out = ns[case.output]
        seen, edges, stack = set(), {}, [out.grad_fn]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            for child, _ in node.next_functions:
                if child is not None and hasattr(child, "variable"):
                    edges.setdefault(id(child.variable), set()).add(id(child))
                stack.append(child)
        yield Trial(case.label, True, all(len(nodes) == 1 for nodes in edges.values()))


def _accumulators(run) -> dict[int, set]:
    """id(leaf) -> the AccumulateGrad nodes the graph reaches for it."""
    found: dict[int, set] = {}
    for fn in run.nodes():
        for nxt, _ in fn.next_functions:
            if nxt is not None and hasattr(nxt, "variable"):
                found.setdefault(id(nxt.variable), set()).add(nxt)
    return found


@sweeps("01.one-accumulate-grad-per-leaf")
def one_accumulate_grad_per_leaf_on(sample):
    """The same leaf passed for every floating-point argument of one shape (``x * x``, ``torch.cat([x, x])``),
    and the sample as given (an operation built of several may use an input twice itself)."""
    for same in (True, False):
        shared: dict = {}
        pick = lambda t, shared=shared: shared.setdefault((t.shape, t.stride(), t.dtype), t)
        run = sample.run(prepare=pick) if same else sample.shared()
        if run is None or not run.recorded:
            continue
        reached = sum(1 for fn in run.nodes() for nxt, _ in fn.next_functions if hasattr(nxt, "variable"))
        found = _accumulators(run)
        if reached <= len(found):  # no leaf reached twice
            continue
        rule = all(len(nodes) == 1 for nodes in found.values())
        how = ", one leaf for equal arguments" if same else ""
        yield Trial(f"{sample.label}{how}: {reached} pairs to {len(found)} leaves", True, rule, op=sample.op)


_BRANCHES = {
    "x ** 2 + 2 * x": (lambda x: x**2 + 2 * x, {"PowBackward0", "MulBackward0", "AddBackward0"}),
    "(x + 3).abs()": (lambda x: (x + 3).abs(), {"AddBackward0", "AbsBackward0"}),
    "x.sin() * x": (lambda x: x.sin() * x, {"SinBackward0", "MulBackward0"}),
    "x.exp() - 1": (lambda x: x.exp() - 1, {"ExpBackward0", "SubBackward0"}),
    "x.tanh()": (lambda x: x.tanh(), {"TanhBackward0"}),
}


@claim(
    "01.graph-is-what-ran",
    sentence="Autograd records operations as they execute, so Python control flow decides the graph.",
    not_swept="about a program's Python branches, not about what one operation records",
)
def graph_is_what_ran():
    for seed in range(16):
        rng = random.Random(seed)
        first, second = rng.sample(sorted(_BRANCHES), 2)
        x = torch.tensor(rng.uniform(-2, 2), requires_grad=True)
        chosen = first if x.item() > 0 else second
        y = _BRANCHES[first][0](x) if x.item() > 0 else _BRANCHES[second][0](x)
        names = {type(n).__name__ for n in probes.nodes(y)} - {"AccumulateGrad"}
        yield Trial(f"seed {seed}: x = {x.item():+.2f}, ran {chosen}", True, names == _BRANCHES[chosen][1])
