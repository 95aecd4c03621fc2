"""Unit 07's general rules, each checked on generated programs (see grader.engine.claims)."""

import gc
import random
import weakref

import torch

from grader import probes
from grader.engine.claims import Trial, claim, sweeps
from grader.probes import opdb, saves


def _saved_tensors(root) -> int:
    """How many tensors the nodes of ``root``'s graph keep in their ``_saved_*`` attributes."""
    count, seen, stack = 0, set(), [root]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        stack.extend(child for child, _ in fn.next_functions)
        for name in dir(fn):
            if name.startswith("_saved_"):
                value = getattr(fn, name)
                count += isinstance(value, torch.Tensor)
                count += sum(isinstance(v, torch.Tensor) for v in value) if isinstance(value, (tuple, list)) else 0
    return count


# (program, whether every tensor the node keeps is a real tensor rather than a wrapped Python number)
_PROGRAMS = (
    ("x * x", lambda x, w: x * x, True),
    ("x * w", lambda x, w: x * w, True),
    ("x.exp()", lambda x, w: x.exp(), True),
    ("x.sigmoid()", lambda x, w: x.sigmoid(), True),
    ("x.pow(2)", lambda x, w: x.pow(2), True),
    ("torch.atan2(x, w)", lambda x, w: torch.atan2(x, w), True),
    ("x * 2", lambda x, w: x * 2, False),
    ("x / 3.0", lambda x, w: x / 3.0, False),
    ("x ** 2 * 1.5", lambda x, w: (x**2) * 1.5, False),
)


@claim(
    "07.pack-once-per-save",
    sentence="`pack` runs once per *save*, so a tensor kept twice is packed twice",
    holds_when="every saved value is a tensor; a Python number an op keeps as a 0-dim tensor (`x * 2` keeps "
    "the 2 as `_saved_other`) is saved without calling pack",
)
def pack_once_per_save():
    for seed, (label, program, all_tensors) in enumerate(_PROGRAMS * 2):
        rng = random.Random(seed)
        shape = (rng.randint(1, 5),)
        x = torch.randn(shape, requires_grad=True)
        w = torch.rand(shape, requires_grad=seed % 2 == 0) + 0.5
        packs: list = []

        def pack(t, packs=packs):
            packs.append(t)
            return t.detach()

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = program(x, w)
        yield Trial(
            f"seed {seed}: {label}, w requires grad {w.requires_grad}",
            condition=all_tensors,
            holds=len(packs) == _saved_tensors(out.grad_fn),
        )


@sweeps("07.pack-once-per-save")
def pack_once_per_save_on(sample):
    """Every operation whose graph keeps something: each slot of each node, read back, must hold a pack of its
    own (a tensor kept twice is packed twice). Its condition: every slot went through pack (no wrapped number)."""
    _, found, _ = saves.slots(sample)
    if not found:
        return None
    tokens = [s.packed for s in found if s.unpacked]
    wrapped = sum(not s.unpacked for s in found)
    rule = not wrapped and len(set(tokens)) == len(tokens)
    label = f"{sample.label}: {len(found)} slots, {wrapped} wrapped numbers, {len(set(tokens))} packs"
    return Trial(label, not wrapped, rule, op=sample.op)


_STEPS = ("sin", "exp", "sigmoid", "tanh", "square", "reciprocal")
_WRITES = ("add_(1)", "mul_(2)", "zero_()", "[0] = 5")


def _mutated_grad(rng: random.Random, inside: bool):
    """x.grad for a chain of saving ops on x, the loss taken, then 1-3 writes into the chain's tensors, all
    under allow_mutation_on_saved_tensors; backward inside the block or after it. Also the reference x.grad
    of the same chain without the writes, and a label."""
    from torch.autograd.graph import allow_mutation_on_saved_tensors

    ops = [rng.choice(_STEPS) for _ in range(rng.randint(1, 4))]
    n = rng.randint(1, 6)
    start = [rng.uniform(0.2, 1.5) for _ in range(n)]

    def chain(x):
        h = [x * 1]  # a tensor of the graph, not the leaf
        for op in ops:
            h.append(getattr(torch, op)(h[-1]))
        return h

    ref = torch.tensor(start, requires_grad=True)
    chain(ref)[-1].sum().backward()
    x = torch.tensor(start, requires_grad=True)
    writes = [(rng.randrange(len(ops) + 1), rng.choice(_WRITES)) for _ in range(rng.randint(1, 3))]
    with allow_mutation_on_saved_tensors():
        h = chain(x)
        loss = h[-1].sum()
        for i, write in writes:
            exec(f"h[{i}]{'' if write.startswith('[') else '.'}{write}", {}, {"h": h})
        if inside:
            loss.backward()
    if not inside:
        try:
            loss.backward()
        except (AssertionError, RuntimeError):  # 2.13 asserts that backward runs inside the block
            return None, ref.grad, ops, writes
    return x.grad, ref.grad, ops, writes


@claim(
    "07.allow-mutation-keeps-the-saved-value",
    sentence="inside `allow_mutation_on_saved_tensors()`, a write to a tensor that a node saved leaves that node "
    "the value it saved: no error, and the gradient of the program without the write",
    holds_when="backward runs inside the same block and the write goes to the tensor the node saved; once the "
    "block is left, backward over its graph is refused. A write to the base of a tensor whose view a node saved "
    "is not seen: the node silently reads the new values (`torch.gradient` keeps slices of its input), and "
    "`F.rrelu` in training gets a wrong gradient inside the block even without a write",
)
def allow_mutation_keeps_the_saved_value():
    for seed in range(8):
        rng = random.Random(seed)
        inside = seed % 4 != 3
        grad, ref, ops, writes = _mutated_grad(rng, inside)
        label = f"seed {seed}: x*1 -> {' -> '.join(ops)}, writes {[f'h{i}.{w}' for i, w in writes]}, backward " + (
            "inside" if inside else "after the block"
        )
        yield Trial(label, condition=inside, holds=grad is not None and torch.allclose(grad, ref))


def _gradients(run) -> list | None:
    """The gradients of the leaves the run's arguments were made from (a seed of ones on every output)."""
    try:
        seeds = [torch.ones_like(t) for t in run.recorded]
        leaves = [t for t in run.sources if t.requires_grad]
        return list(torch.autograd.grad(run.recorded, leaves, seeds, allow_unused=True))
    except RuntimeError:
        return None


def _copy_of(leaf: torch.Tensor) -> torch.Tensor:
    """A tensor of the graph with the leaf's values (``clone`` keeps nothing), so that it may be written."""
    return leaf.clone()


def _write(t: torch.Tensor) -> None:
    """One write that changes every value: torch refuses nothing here (t is not a leaf)."""
    t.add_(1.0)


def _same(got: list | None, expected: list) -> bool:
    return got is not None and all(
        (a is None and b is None) or (a is not None and b is not None and torch.allclose(a, b, equal_nan=True))
        for a, b in zip(got, expected)
    )


def _in_the_block(sample, write: int | None, inside: bool = True) -> list | None:
    """The gradients of the program run inside allow_mutation_on_saved_tensors, its argument at ``write``
    written after the call (None: no write), backward inside the block or after it (None if refused)."""
    from torch.autograd.graph import allow_mutation_on_saved_tensors

    try:
        with allow_mutation_on_saved_tensors():
            run = sample.run(prepare=_copy_of)
            if run is None:
                return None
            if write is not None:
                _write(run.tensors[write])
            got = _gradients(run) if inside else None
        return got if inside else _gradients(run)
    except (AssertionError, RuntimeError):  # 2.13 asserts that backward runs inside the block
        return None


@sweeps("07.allow-mutation-keeps-the-saved-value", per_op=2)
def allow_mutation_keeps_the_saved_value_on(sample):
    """Every operation that keeps one of its arguments (or a view of it): that argument written after the call
    inside the block; backward inside it must give the gradient of the unwritten program, and after it is
    refused. Its condition: backward inside, the node kept the written tensor itself (not a view of it), and
    the block alone (no write) leaves the gradient as it is."""
    reference = sample.run(prepare=_copy_of)
    if reference is None or not reference.recorded:
        return
    kept = [i for i, t in enumerate(reference.tensors) if t.requires_grad and _kept(reference, t)]
    if not kept:
        return
    itself = any(opdb.same_view(v, reference.tensors[kept[0]]) for fn in reference.nodes() for v in saves.raw_saved(fn))
    expected = _gradients(reference)  # backward frees what the nodes saved: read them first
    if expected is None:
        return
    if sample.op == "nn.functional.rrelu" or not _same(_in_the_block(sample, None), expected):
        # rrelu in training reads memory the block never filled: wrong even with no write (see holds_when)
        yield Trial(f"{sample.label}: no write, backward inside the block", False, False, op=sample.op)
        return
    for inside in (True, False):
        same = _same(_in_the_block(sample, kept[0], inside), expected)
        what = "it" if itself else "a view of it"
        label = f"{sample.label}: argument {kept[0]} written, the node kept {what}, backward " + (
            "inside the block" if inside else "after the block"
        )
        yield Trial(label, inside and itself, same, op=sample.op)


def _kept(run, t: torch.Tensor) -> bool:
    """Whether some node of the run keeps a tensor in ``t``'s memory."""
    return any(opdb.shares_memory(v, t) for fn in run.nodes() for _, v in saves.saved_values(fn))


# --- the counter ------------------------------------------------------------------------------------------------

# one write each, as c004 lists them: a method ending in _, an augmented assignment, an index assignment, out=
_ONE_WRITE = (
    ("t.add_(1)", lambda t: t.add_(1)),
    ("t.mul_(2)", lambda t: t.mul_(2)),
    ("t.zero_()", lambda t: t.zero_()),
    ("t.copy_(t * 3)", lambda t: t.copy_(t * 3)),
    ("t += 1", lambda t: t.__iadd__(1)),
    ("t *= 2", lambda t: t.__imul__(2)),
    ("t[0] = 5", lambda t: t.__setitem__(0, 5.0)),
    ("t[1:] = 0", lambda t: t.__setitem__(slice(1, None), 0.0)),
    ("torch.add(t, 1, out=t)", lambda t: torch.add(t, 1, out=t)),
    ("torch.exp(t, out=t)", lambda t: torch.exp(t, out=t)),
)
# operations that make a new tensor (or a view) and write nothing
_NO_WRITE = (
    ("t + 1", lambda t: t + 1),
    ("t.clone()", lambda t: t.clone()),
    ("t * 2", lambda t: t * 2),
    ("t[1:]", lambda t: t[1:]),
    ("t.exp()", lambda t: t.exp()),
)
# an augmented assignment to an indexed view: an in-place op on the view, then an index assignment of the result
_TWO_WRITES = (("t[1:] += 1", lambda t: t.__setitem__(slice(1, None), t[1:].__iadd__(1))),)


@claim(
    "07.each-write-adds-one",
    sentence="Any operation that writes into `t`'s memory adds one: methods ending in `_`, `+=` and friends, index "
    "assignment, `out=` arguments. An operation that makes a new tensor leaves it alone.",
    holds_when="one operation, one write, made by the operation as its result (an in-place method, an augmented "
    "or index assignment, an `out=` tensor); `t[1:] += 1` is two (an in-place add on the view, then the index "
    "assignment writes the result back) and adds two; a write a function makes on the side into a buffer it was "
    "given is counted or not as that function chose (`F.batch_norm` in training updates its running mean and "
    "variance without counting, `F.instance_norm` counts), and on torch 2.13 `torch.fft.ihfftn(x, s=..., out=t)` "
    "writes t without counting",
)
def each_write_adds_one():
    for seed in range(12):
        rng = random.Random(seed)
        ops = [rng.choice(_ONE_WRITE + _NO_WRITE) for _ in range(rng.randint(1, 5))]
        combo = seed % 4 == 3
        if combo:
            ops.insert(rng.randint(0, len(ops)), _TWO_WRITES[0])
        t = torch.rand(rng.randint(2, 6)) + 0.5
        for _, op in ops:
            op(t)
        writes = sum(op in _ONE_WRITE for op in ops)
        label = f"seed {seed}: {'; '.join(name for name, _ in ops)}: version {t._version}, {writes} one-write ops"
        yield Trial(label, condition=not combo, holds=t._version == writes)


def _changed(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Whether a tensor's values moved (a NaN that stayed a NaN did not)."""
    same = (before == after) | (before.isnan() & after.isnan())
    return not bool(same.all())


@sweeps("07.each-write-adds-one")
def each_write_adds_one_on(sample):
    """Every operation, on op_db's own flags: each argument's version goes up by one where the call wrote into
    it (its values changed) and stays where it did not; an in-place method (``mul_``) and an ``out=`` tensor
    are written once. A floating-point argument op_db gives without requires_grad may be a buffer the function
    writes on the side (a running statistic): outside the condition."""
    args, kwargs, tensors = sample.arguments(requires_grad=False)
    copies = [t.detach().clone() for t in tensors]
    try:
        sample.function(*args, **kwargs)
    except Exception:
        return
    for i, (t, old) in enumerate(zip(tensors, copies)):
        written = t.is_floating_point() and _changed(old, t.detach())
        buffer = t.is_floating_point() and not t.requires_grad
        label = f"{sample.label}: argument {i}{' (a buffer)' if buffer else ''}, written {written}"
        yield Trial(label, not buffer, t._version == written, op=sample.op)
    if sample.inplace is not None and getattr(sample.inplace, "__name__", "").endswith("_"):
        args, kwargs, tensors = sample.arguments(requires_grad=False)
        if tensors and args and args[0] is tensors[0]:
            try:
                sample.inplace(*args, **kwargs)
            except Exception:  # the method refuses this sample (a dtype it cannot write back, a broadcast)
                pass
            else:
                label = f"{sample.label}: {sample.inplace.__name__}, version {tensors[0]._version}"
                yield Trial(label, True, tensors[0]._version == 1, op=sample.op)
    result = sample.shared()
    if sample.info.supports_out and result is not None and isinstance(result.output, torch.Tensor):
        args, kwargs, _ = sample.arguments(requires_grad=False)
        out = torch.empty_like(result.output)
        try:
            sample.function(*args, **kwargs, out=out)
        except Exception:
            return
        plain = sample.op != "fft.ihfftn"  # the one out= path torch 2.13 does not count (see holds_when)
        yield Trial(f"{sample.label}: out=, version {out._version}", plain, out._version == 1, op=sample.op)


_ALIASES = (
    ("v = b[1:]", lambda b: b[1:], True),
    ("v = b.view(-1)", lambda b: b.view(-1), True),
    ("v = b.t()", lambda b: b.t(), True),
    ("v = b.unsqueeze(0)", lambda b: b.unsqueeze(0), True),
    ("v = b[::2]", lambda b: b[::2], True),
    ("v = b.detach()", lambda b: b.detach(), True),
    ("v = b.data", lambda b: b.data, False),
    ("v = b.clone()", lambda b: b.clone(), False),
)


@claim(
    "07.views-and-detach-share-the-counter",
    sentence="A view (a slice, `.view`, `.t()`, `.unsqueeze()`) shares its base's counter, and so does `detach()`",
    holds_when="the alias is a view or detach(); `.data` is the same memory with a counter of its own, and clone() "
    "is other memory",
)
def views_and_detach_share_the_counter():
    for seed in range(14):
        rng = random.Random(seed)
        label, make, shares = _ALIASES[seed % len(_ALIASES)]
        b = torch.rand(rng.randint(1, 3), 4)
        v = make(b)
        before = b._version
        (v.mul_ if rng.random() < 0.5 else v.add_)(2)
        yield Trial(
            f"seed {seed}: {label}, v written once", condition=shares, holds=b._version == before + 1 == v._version
        )


@sweeps("07.views-and-detach-share-the-counter")
def views_and_detach_share_the_counter_on(sample):
    """Every output of every operation, on tensors that need no gradient, written once in place: does the
    argument whose memory it shares count the write? Its condition: torch marks the output a view."""
    run = sample.run(requires_grad=False)
    if run is None:
        return
    for i, out in enumerate(run.outputs):
        bases = [t for t in run.tensors if opdb.shares_memory(out, t) and t is not out]
        if not bases or any(out is t for t in run.tensors) or not out.is_floating_point():
            continue
        base = bases[0]
        before = base._version
        try:
            out.mul_(1)
        except RuntimeError:  # an expanded view (overlapping memory) cannot be written in place
            continue
        shares = base._version == before + 1 == out._version
        yield Trial(f"{sample.label}: output {i}, a view {out._is_view()}", out._is_view(), shares, op=sample.op)


# --- what backward compares ---------------------------------------------------------------------------------------

_SAVING = ("exp", "sigmoid", "tanh", "sin", "square", "relu")


def _chain_with_write(rng: random.Random):
    """A chain of ops on x (each its own tensor), the loss taken, one write into one of them. Returns the label,
    whether some node under the loss kept a tensor over the written memory, whether reading every saved tensor
    raised, and whether backward raised."""
    ops = [rng.choice(_SAVING + ("add", "mul3")) for _ in range(rng.randint(1, 4))]
    x = torch.rand(rng.randint(1, 5), requires_grad=True)
    h = [x * 1]
    for op in ops:
        h.append(h[-1] + 1 if op == "add" else h[-1] * 3 if op == "mul3" else getattr(torch, op)(h[-1]))
    loss = h[-1].sum()
    i = rng.randrange(len(h))
    memory = h[i].untyped_storage().data_ptr()
    kept = False
    for fn in probes.nodes(loss.grad_fn):
        for name in dir(fn):
            if name.startswith("_saved_"):
                value = getattr(fn, name)
                kept |= isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() == memory
    h[i].mul_(2)
    read_raised = False
    for fn in probes.nodes(loss.grad_fn):
        for name in dir(fn):
            if name.startswith("_saved_"):
                try:
                    getattr(fn, name)
                except RuntimeError:
                    read_raised = True
    try:
        loss.backward()
        backward_raised = False
    except RuntimeError:
        backward_raised = True
    label = f"x*1 -> {' -> '.join(ops)}, loss taken, then h{i}.mul_(2)"
    return label, kept, read_raised, backward_raised


@claim(
    "07.the-consumer-decides",
    sentence="In-place writes are not forbidden; what matters is whether some node kept the tensor you wrote.",
)
def the_consumer_decides():
    for seed in range(12):
        label, kept, _, backward_raised = _chain_with_write(random.Random(seed))
        yield Trial(
            f"seed {seed}: {label}: kept {kept}, backward raised {backward_raised}", True, kept == backward_raised
        )


def _written(sample, position: int, hooks: bool) -> tuple[bool, bool, bool] | None:
    """The operation on tensors of the graph (clones of the leaves), then one write into its argument at
    ``position``: (kept: a node keeps that tensor, or a view of it, so that the write moved its version;
    reading every saved tensor raised; backward raised); None when the program cannot be run or
    differentiated."""
    if hooks:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
            run = sample.run(prepare=_copy_of)
    else:
        run = sample.run(prepare=_copy_of)
    if run is None or not run.recorded:
        return None
    target = [t for t in run.tensors if t.requires_grad][position]
    nodes = run.nodes()
    # what the nodes keep, read without the check, and at which version: a kept tensor that shares the written
    # tensor's counter moves with the write (a view of it does; kron's _unsafe_view alias of it does not)
    kept_now = [(t, t._version) for fn in nodes for t in saves.raw_saved(fn)]
    try:
        target.mul_(2)
    except RuntimeError:  # a view of several outputs (chunk's) may not be written in place
        return None
    kept = not hooks and any(t._version != v for t, v in kept_now)
    read_raised = False
    for fn in nodes:
        for attr in dir(fn):
            if attr.startswith("_saved_") or attr == "saved_tensors":
                try:
                    getattr(fn, attr)
                except RuntimeError:
                    read_raised = True
    try:
        torch.autograd.backward(run.recorded, [torch.ones_like(t) for t in run.recorded])
        raised = False
    except RuntimeError as exc:
        if "modified by an inplace operation" not in str(exc):
            return None  # a derivative torch does not implement, a view's own rule: nothing to compare
        raised = True
    return kept, read_raised, raised


def _each_argument(sample):
    plain = sample.shared()
    if plain is None or not plain.recorded:
        return []
    return range(min(2, len(plain.leaves)))


@sweeps("07.the-consumer-decides")
def the_consumer_decides_on(sample):
    for position in _each_argument(sample):
        found = _written(sample, position, hooks=False)
        if found is not None:
            kept, _, raised = found
            label = f"{sample.label}: argument {position} written, kept {kept}, backward raised {raised}"
            yield Trial(label, True, kept == raised, op=sample.op)


@claim(
    "07.reading-a-saved-tensor-checks-it",
    sentence="reading a saved tensor runs the same check backward runs, so a write that will break backward already "
    "shows here as `STALE`, before you call backward",
)
def reading_a_saved_tensor_checks_it():
    for seed in range(12):
        label, _, read_raised, backward_raised = _chain_with_write(random.Random(100 + seed))
        yield Trial(
            f"seed {seed}: {label}: reading raised {read_raised}, backward raised {backward_raised}",
            True,
            read_raised == backward_raised,
        )


@sweeps("07.reading-a-saved-tensor-checks-it")
def reading_a_saved_tensor_checks_it_on(sample):
    for position in _each_argument(sample):
        found = _written(sample, position, hooks=False)
        if found is not None:
            _, read, raised = found
            label = f"{sample.label}: argument {position} written, reading raised {read}, backward raised {raised}"
            yield Trial(label, True, read == raised, op=sample.op)


_LEAF_WRITES = (
    ("w.add_(1)", lambda w: w.add_(1)),
    ("w.mul_(2)", lambda w: w.mul_(2)),
    ("w[0] = 5", lambda w: w.__setitem__(0, 5.0)),
    ("w[1:].mul_(2)", lambda w: w[1:].mul_(2)),
    ("w.view(-1).zero_()", lambda w: w.view(-1).zero_()),
    ("w.t().add_(1)", lambda w: w.t().add_(1)),
)


@claim(
    "07.a-leaf-refuses-the-write",
    sentence="torch refuses the write itself, at the write, for views of the leaf too",
    holds_when="grad mode is on and the leaf requires grad; under torch.no_grad() the write is allowed (and not "
    "recorded)",
)
def a_leaf_refuses_the_write():
    for seed in range(12):
        rng = random.Random(seed)
        label, write = _LEAF_WRITES[seed % len(_LEAF_WRITES)]
        w = torch.rand(rng.randint(2, 4), 2, requires_grad=True)
        recorded = seed % 3 != 2
        try:
            if recorded:
                write(w)
            else:
                with torch.no_grad():
                    write(w)
            refused = False
        except RuntimeError as exc:
            refused = "leaf Variable that requires grad" in str(exc)
        yield Trial(f"seed {seed}: {label}{'' if recorded else ' under no_grad'}", recorded, refused)


@sweeps("07.a-leaf-refuses-the-write")
def a_leaf_refuses_the_write_on(sample):
    """Every in-place variant that writes (under no_grad the leaf's version moves: dropout with p=0 writes
    nothing), on a leaf that requires grad and on a view of it, in grad mode and under no_grad."""
    if sample.inplace is None:
        return
    for through_view in (False, True):
        found = {}
        for recorded in (False, True):
            args, kwargs, tensors = sample.arguments()
            if not tensors or args[0] is not tensors[0] or not tensors[0].requires_grad:
                return
            target = tensors[0].view(tensors[0].shape) if through_view else tensors[0]
            try:
                with torch.set_grad_enabled(recorded):
                    sample.inplace(target, *args[1:], **kwargs)
                found[recorded] = (False, tensors[0]._version)
            except RuntimeError as exc:
                found[recorded] = ("leaf Variable that requires grad" in str(exc), None)
            except Exception:
                break
        if len(found) < 2 or not found[False][1]:
            continue  # refused under no_grad for another reason, or no write at all
        how = ("a view of " if through_view else "") + "the leaf"
        yield Trial(f"{sample.label}: {how}, under no_grad", False, found[False][0], op=sample.op)
        yield Trial(f"{sample.label}: {how}", True, found[True][0], op=sample.op)


@claim(
    "07.backward-inputs-accumulates-only-those",
    sentence="`g_loss.backward(inputs=list(G.parameters()))` accumulates into the tensors listed and no others",
    not_swept="about backward's inputs= option, the same for every graph",
)
def backward_inputs_accumulates_only_those():
    for seed in range(8):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        layers = [torch.nn.Linear(3, 3) for _ in range(rng.randint(2, 4))]
        params = [p for layer in layers for p in layer.parameters()]
        listed = rng.sample(params, rng.randint(1, len(params) - 1))
        h = torch.randn(2, 3)
        for layer in layers:
            h = layer(h).tanh()
        h.sum().backward(inputs=listed)
        ok = all((p.grad is not None) == any(p is q for q in listed) for p in params)
        yield Trial(
            f"seed {seed}: {len(layers)} Linear layers, {len(listed)} of {len(params)} tensors listed", True, ok
        )


@claim(
    "07.relu-keeps-its-output",
    sentence="ReLU keeps its output (the slope is 1 where the output is positive), in place or not.",
)
def relu_keeps_its_output():
    makers = (
        ("torch.relu(h)", lambda h: torch.relu(h)),
        ("h.relu_()", lambda h: h.relu_()),
        ("nn.ReLU()(h)", lambda h: torch.nn.ReLU()(h)),
        ("nn.ReLU(inplace=True)(h)", lambda h: torch.nn.ReLU(inplace=True)(h)),
        ("F.relu(h, inplace=True)", lambda h: torch.nn.functional.relu(h, inplace=True)),
    )
    for seed in range(10):
        rng = random.Random(seed)
        label, relu = makers[seed % len(makers)]
        x = torch.randn(rng.randint(1, 4), rng.randint(1, 4), requires_grad=True)
        out = relu(x * 1)
        kept = out.grad_fn._saved_result
        same = kept.untyped_storage().data_ptr() == out.untyped_storage().data_ptr() and kept.shape == out.shape
        yield Trial(f"seed {seed}: {label}, node {type(out.grad_fn).__name__}", True, same)


@sweeps("07.relu-keeps-its-output", ops=("nn.functional.relu",))
def relu_keeps_its_output_on(sample):
    for inplace in (False, True):
        call = (lambda x, **kw: torch.nn.functional.relu(x, inplace=True)) if inplace else None
        run = sample.run(prepare=_copy_of, call=call)
        if run is None or not run.recorded:
            continue
        out = run.output
        kept = [v for _, v in saves.saved_values(out.grad_fn)]
        same = any(opdb.same_view(v, out) for v in kept) or (not out.numel() and bool(kept))
        label = f"{sample.label}{', in place' if inplace else ''}: {probes.node_name(out.grad_fn)}"
        yield Trial(label, True, same, op=sample.op)


# --- under saved-tensor hooks --------------------------------------------------------------------------------------

_PAIRS = (
    ("pack t", lambda t: t),
    ("pack t.detach()", lambda t: t.detach()),
    ("pack t.detach().clone()", lambda t: t.detach().clone()),
    ("pack (t.detach(),)", lambda t: (t.detach(),)),
)


def _unpack(kept):
    return kept[0] if isinstance(kept, tuple) else kept


@claim(
    "07.hooks-skip-the-check",
    sentence="whoever installs a pack/unpack pair has taken over the check",
    holds_when="the pair itself does not compare versions; without hooks the same writes raise at backward",
)
def hooks_skip_the_check():
    for seed in range(12):
        rng = random.Random(seed)
        hooked = seed % 3 != 2
        name, pack = _PAIRS[seed % len(_PAIRS)]
        op = rng.choice(("exp", "sigmoid", "tanh", "sin", "square"))
        p = torch.rand(rng.randint(1, 5), requires_grad=True)
        h = p * 1
        if hooked:
            with torch.autograd.graph.saved_tensors_hooks(pack, _unpack):
                out = getattr(torch, op)(h)
        else:
            out = getattr(torch, op)(h)
        loss = out.sum()
        (out if op in ("exp", "sigmoid", "tanh") else h).add_(1)  # a tensor the op kept: its output or its input
        try:
            loss.backward()
            raised = False
        except RuntimeError:
            raised = True
        label = f"seed {seed}: torch.{op}, the kept tensor written" + (f", under '{name}'" if hooked else ", no hooks")
        yield Trial(label, condition=hooked, holds=not raised)


@sweeps("07.hooks-skip-the-check")
def hooks_skip_the_check_on(sample):
    """Every operation whose node keeps an argument: that argument written, backward run, with no hooks and
    under a pair that packs ``t.detach()`` and compares nothing."""
    for position in _each_argument(sample):
        plain = _written(sample, position, hooks=False)
        if plain is None or not plain[0]:
            continue
        hooked = _written(sample, position, hooks=True)
        if hooked is None:
            continue
        yield Trial(f"{sample.label}: argument {position} written, no hooks", False, not plain[2], op=sample.op)
        yield Trial(f"{sample.label}: argument {position} written, under the pair", True, not hooked[2], op=sample.op)


_OWN_OUTPUT = ("exp", "sigmoid", "tanh", "relu")  # ops whose node keeps its output
_INPUT_ONLY = ("sin", "cos", "square", "log")


@claim(
    "07.pack-returning-t-makes-a-cycle",
    sentence="a `pack` that returns `t` itself, where a node saved its own output, makes a cycle that "
    "`gc.collect()` never frees",
    holds_when="the node saved its own output (exp, sigmoid, tanh, relu); an op that keeps only its input (sin, "
    "square) has no cycle and its output is freed",
)
def pack_returning_t_makes_a_cycle():
    made = []
    for seed in range(8):
        rng = random.Random(seed)
        own = seed % 2 == 0
        op = rng.choice(_OWN_OUTPUT if own else _INPUT_ONLY)
        p = torch.rand(rng.randint(1, 64), requires_grad=True) + 0.1
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            out = getattr(torch, op)(p)
        made.append((f"seed {seed}: torch.{op}, pack returns t", own, weakref.ref(out)))
        del out
    gc.collect()  # once for all of them
    for label, own, ref in made:
        kept = ref()
        if kept is not None:
            kept.sum().backward()  # backward releases what the node kept, and with it the cycle
        yield Trial(label, condition=own, holds=kept is not None)


@sweeps("07.pack-returning-t-makes-a-cycle", batch=True)
def pack_returning_t_makes_a_cycle_on(samples):
    """Every operation run under a pair whose pack returns t itself; each output dropped; one gc.collect() for
    all of them. Its condition: the output reached pack (its node saved it)."""
    made = []
    for sample in samples:
        seen: list = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t, seen=seen: seen.append(t) or t, lambda t: t):
            run = sample.run()
        if run is None or not run.recorded:
            continue
        for i, out in enumerate(run.recorded):
            if any(out is t for t in run.tensors):
                continue
            own = any(out is t for t in seen)
            made.append((f"{sample.label}: output {i}, saved by its node {own}", own, weakref.ref(out), sample.op))
        del run, out, seen
    gc.collect()  # once for all of them
    alive = [ref() is not None for _, _, ref, _ in made]
    for _, _, ref, _ in made:  # backward releases what the node kept, and with it the cycle
        kept = ref()
        if kept is not None and kept.grad_fn is not None:
            try:
                kept.backward(torch.ones_like(kept), retain_graph=False)
            except RuntimeError:
                pass
            del kept
    for (label, own, _, op), survived in zip(made, alive):
        yield Trial(label, own, survived, op=op)


@claim(
    "07.unpack-runs-per-read",
    sentence="a built-in node's `unpack` runs for every tensor it saved, each time backward runs that node, so a "
    "retained graph unpacks again on each pass",
    holds_when="the node is one of torch's own; a custom `autograd.Function` unpacks when its backward reads "
    "`ctx.saved_tensors`, once per read (never, for a backward that does not read them)",
)
def unpack_runs_per_read():
    for seed in range(12):
        rng = random.Random(seed)
        custom = seed % 3 == 2
        ops = [rng.choice(("exp", "sin", "sigmoid", "tanh", "square")) for _ in range(rng.randint(1, 4))]
        passes = rng.randint(1, 3)
        reads = rng.choice((0, 2))  # a custom backward that reads ctx.saved_tensors never, or twice
        calls = {"pack": 0, "unpack": 0}

        def pack(t, calls=calls):
            calls["pack"] += 1
            return t.detach()

        def unpack(t, calls=calls):
            calls["unpack"] += 1
            return t

        x = torch.rand(rng.randint(1, 5), requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            if custom:
                loss = _Reads.apply(x, reads).sum()
            else:
                h = x
                for op in ops:
                    h = getattr(torch, op)(h) * (h if rng.random() < 0.3 else 1.0)
                loss = h.sum()
        for i in range(passes):
            loss.backward(retain_graph=i < passes - 1)
        what = f"a custom Function whose backward reads its saved tensors {reads} times" if custom else " -> ".join(ops)
        label = f"seed {seed}: {what}, {passes} backward pass(es): {calls}"
        yield Trial(label, not custom, calls["unpack"] == passes * calls["pack"] > 0)


class _Reads(torch.autograd.Function):
    """Saves its input; its backward reads ctx.saved_tensors ``reads`` times."""

    @staticmethod
    def forward(ctx, t, reads):
        ctx.save_for_backward(t)
        ctx.reads = reads
        return t * 2

    @staticmethod
    def backward(ctx, grad):
        for _ in range(ctx.reads):
            ctx.saved_tensors  # noqa: B018  (each read unpacks)
        return grad * 2, None


# (label, the optimizer over params, writes per step; None: a step outside the rule: fused (its writes the counter
# does not see), or an optimizer that writes more than once or once per inner iteration)
_OPTIMIZER_STEPS = (
    ("SGD", lambda p: torch.optim.SGD(p, lr=0.1), 1),
    ("SGD, momentum", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), 1),
    ("SGD, weight_decay", lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=0.01), 1),
    ("SGD, nesterov, foreach", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, foreach=True), 1),
    ("Adam", lambda p: torch.optim.Adam(p, lr=0.1), 1),
    ("Adam, weight_decay, amsgrad", lambda p: torch.optim.Adam(p, lr=0.1, weight_decay=0.01, amsgrad=True), 1),
    ("Adamax", lambda p: torch.optim.Adamax(p, lr=0.1), 1),
    ("RAdam", lambda p: torch.optim.RAdam(p, lr=0.1), 1),
    ("RMSprop", lambda p: torch.optim.RMSprop(p, lr=0.01), 1),
    ("RMSprop, momentum, centered", lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True), 1),
    ("Adagrad", lambda p: torch.optim.Adagrad(p, lr=0.1), 1),
    ("Adadelta", lambda p: torch.optim.Adadelta(p), 1),
    ("Rprop", lambda p: torch.optim.Rprop(p), 1),
    ("AdamW", lambda p: torch.optim.AdamW(p, lr=0.1), 2),
    ("AdamW, weight_decay=0.1", lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.1), 2),
    ("AdamW, weight_decay=0", lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0), 1),
    ("Adam, fused", lambda p: torch.optim.Adam(p, lr=0.1, fused=True), None),
    ("AdamW, fused", lambda p: torch.optim.AdamW(p, lr=0.1, fused=True), None),
    ("NAdam", lambda p: torch.optim.NAdam(p, lr=0.1), None),
    (
        "NAdam, decoupled weight decay",
        lambda p: torch.optim.NAdam(p, lr=0.1, weight_decay=0.01, decoupled_weight_decay=True),
        None,
    ),
    (
        "RAdam, decoupled weight decay",
        lambda p: torch.optim.RAdam(p, lr=0.1, weight_decay=0.01, decoupled_weight_decay=True),
        None,
    ),
    ("ASGD", lambda p: torch.optim.ASGD(p, lr=0.1), None),
    ("LBFGS", lambda p: torch.optim.LBFGS(p, lr=0.1, max_iter=4), None),
)


@claim(
    "07.a-step-writes-once",
    sentence="A step of `SGD`, `Adam`, `Adamax`, `RAdam`, `RMSprop`, `Adagrad`, `Adadelta` or `Rprop` writes each "
    "parameter once, whatever its momentum or coupled weight decay; `AdamW` with a weight decay (its default is "
    "0.01) writes it twice, the decay being a write of its own",
    holds_when="the optimizer is one of those and its step is not fused (with fused=True the update is written "
    "without moving the counter, CPU, torch 2.13); NAdam and ASGD write twice per step, NAdam and RAdam with "
    "decoupled weight decay three and two times, LBFGS once per inner iteration",
    not_swept="about an optimizer's step, not what an operation records",
)
def a_step_writes_once():
    from torch import nn

    for seed in range(2 * len(_OPTIMIZER_STEPS)):
        rng = random.Random(seed)
        label, make, writes = _OPTIMIZER_STEPS[seed % len(_OPTIMIZER_STEPS)]
        torch.manual_seed(seed)
        layer = nn.Linear(rng.randint(1, 4), rng.randint(1, 3))
        opt = make(layer.parameters())
        x = torch.randn(2, layer.in_features)
        before = [p._version for p in layer.parameters()]
        steps = rng.randint(1, 3)

        def closure(layer=layer, opt=opt, x=x):
            opt.zero_grad()
            loss = layer(x).pow(2).sum()
            loss.backward()
            return loss

        for _ in range(steps):
            closure()
            opt.step(closure) if isinstance(opt, torch.optim.LBFGS) else opt.step()
        moved = [p._version - v for p, v in zip(layer.parameters(), before)]
        holds = writes is not None and moved == [writes * steps] * len(moved)
        yield Trial(f"seed {seed}: {label}, {steps} step(s): versions moved {moved}", writes is not None, holds)


@claim(
    "07.some-views-refuse-the-write",
    sentence="the pieces of `chunk`, `split` or `unbind`, and a view made under `no_grad` and written with grad mode "
    "on, refuse an in-place write at the write when the tensor they view, or the value written into them, "
    "requires grad",
    holds_when="the viewed tensor or the value written requires grad; a view of a tensor that requires nothing "
    "takes the write of a value that requires nothing",
)
def some_views_refuse_the_write():
    makers = {
        "chunk": lambda y: y.chunk(2)[0],
        "split": lambda y: y.split(1)[-1],
        "unbind": lambda y: y.unbind()[0],
        "a view made under no_grad": None,
    }
    for seed in range(20):
        rng = random.Random(seed)
        label = sorted(makers)[seed % len(makers)]
        needs = rng.random() < 0.5
        value_needs = rng.random() < 0.4
        x = torch.randn(rng.randint(2, 5), requires_grad=needs)
        y = x * 2 if needs else x.clone()
        if makers[label] is None:
            with torch.no_grad():
                piece = y[: rng.randint(1, y.shape[0])]
        else:
            piece = makers[label](y)
        value = torch.ones(piece.shape, requires_grad=value_needs)
        try:
            piece.add_(value)
            refused = False
        except RuntimeError:
            refused = True
        what = f"the viewed tensor requires grad: {needs}, the value written: {value_needs}"
        yield Trial(f"seed {seed}: {label}, {what}", needs or value_needs, refused)


@sweeps("07.some-views-refuse-the-write", ops=("chunk", "split", "unbind", "split_with_sizes"))
def some_views_refuse_the_write_on(sample):
    """Every piece of chunk, split and unbind (and split_with_sizes, split's form for a list of sizes), each on a
    fresh run: of a non-leaf that requires grad, written with a number (refused); of a tensor that requires
    nothing, written with a number (taken) and with a tensor that requires grad (refused). One trial per pair."""
    for needs, value_needs in ((True, False), (False, False), (False, True)):
        refused = _pieces_refused(sample, needs, value_needs)
        if refused is None:
            return
        if refused:
            expected = needs or value_needs
            label = f"{sample.label}: {len(refused)} pieces, the viewed tensor requires grad: {needs}, the value: {value_needs}"
            yield Trial(label, expected, all(refused) if expected else not any(refused), op=sample.op)


def _pieces_refused(sample, needs: bool, value_needs: bool) -> list[bool] | None:
    """For each floating, non-empty piece of a fresh run: whether writing a tensor of ones into it was refused
    (None: the sample does not run)."""
    first = _views_run(sample, needs)
    if first is None:
        return None
    refused = []
    for i in range(len(first.outputs)):
        piece = _views_run(sample, needs).outputs[i]
        if not piece.is_floating_point() or not piece.numel():
            continue
        value = torch.ones(piece.shape, dtype=piece.dtype, requires_grad=value_needs)
        try:
            piece.add_(value)
            refused.append(False)
        except RuntimeError:
            refused.append(True)
    return refused


def _views_run(sample, needs: bool):
    """The operation on a non-leaf copy of its input that requires grad (a leaf would be refused by the leaf
    rule), or on tensors that require nothing."""
    return sample.run(prepare=lambda leaf: leaf * 1) if needs else sample.run(requires_grad=False)


@sweeps("07.unpack-runs-per-read")
def unpack_runs_per_read_on(sample):
    """Every operation whose graph keeps something: two backward passes over the retained graph; each pass
    unpacks every slot of the graph once."""
    unpacked: list[int] = []
    run, found, _ = saves.slots(sample, unpack=unpacked.append)
    tokens = sorted(s.packed for s in found if s.unpacked)
    if run is None or not tokens:
        return None
    try:
        for retain in (True, False):
            torch.autograd.backward(run.recorded, [torch.ones_like(t) for t in run.recorded], retain_graph=retain)
    except RuntimeError:
        return None
    rule = sorted(unpacked) == sorted(tokens * 2)
    return Trial(f"{sample.label}: {len(tokens)} slots, {len(unpacked)} unpacks", True, rule, op=sample.op)


@claim(
    "07.data-writes-unseen",
    sentence="`e.data` has a counter of its own, so the write through it left `e._version` at 0, as exp kept it, and "
    "backward trusted the doubled value",
    not_swept="about the .data attribute, not an operation",
)
def data_writes_unseen():
    for seed in range(10):
        rng = random.Random(seed)
        w = torch.randn(rng.randint(2, 6), requires_grad=True)
        h = w * rng.choice([2.0, 3.0, -1.5])
        y = h.sin() if seed % 2 else h * h  # both keep h itself for backward
        version = h._version
        h.data.add_(1.0)
        unheard = h._version == version
        try:
            y.sum().backward()
            silent = True
        except RuntimeError:
            silent = False
        yield Trial(
            f"seed {seed}: write through h.data after {'h.sin()' if seed % 2 else 'h * h'}", True, unheard and silent
        )
