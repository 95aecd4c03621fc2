"""torch's own operator database as programs: every operation of OpInfo's ``op_db`` on its own sample inputs.

A claim about what an operation records, saves, counts or versions is checked on the unit's generated
programs and also over ``torch.testing._internal.common_methods_invocations.op_db``: torch's list of its
operations (about 550 entries that support autograd), each with sample inputs its own test suite uses.
This module turns that database into programs a claim's sweep can run (:class:`OpSample`); the sweep
itself is :mod:`grader.probes.sweep`.

* Each operation that supports autograd is taken in float64 and float32 (where it supports them on the
  CPU), on up to ``per_op`` of its samples, spread evenly over the list its OpInfo generates (the list is
  made with a fixed seed, so the same samples come back every time).
* :meth:`OpSample.run` calls the operation on fresh copies of the sample's tensors, every floating-point
  one a leaf that requires grad (same values, same strides). Where the operation refuses a gradient on one
  of them (a loss's target, batch norm's running statistics), the run falls back to the sample's own flags.
* Importing op_db needs the small ``expecttest`` package (the test extra) and takes a few CPU-seconds (up
  to about 14 s with a cold file cache);
  :func:`unavailable` says why it cannot be imported, and the database is loaded once per process.
"""

from __future__ import annotations

import contextlib
import random
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from grader import probes

DTYPES = (torch.float64, torch.float32)
PER_OP = 4  # samples per operation and dtype in the whole sweep (verify, make drift)

# The fixed sample `make test` sweeps: everyday operations, each family the claims speak of (pointwise, a
# reduction with indices, products, indexing and a lookup, a multi-output view, optional tensor arguments, a
# function built of several operations, a normalisation with running statistics)
SAMPLE_OPS = (
    "mul",
    "exp",
    "sigmoid",
    "where",
    "sum",
    "max",
    "matmul",
    "index_select",
    "nn.functional.embedding",
    "split",
    "clamp",
    "nn.functional.linear",
    "nn.functional.layer_norm",
    "nn.functional.batch_norm",
)
SAMPLE_PER_OP = 2


def unavailable() -> str:
    """Why op_db cannot be imported here ('' when it can)."""
    try:
        import expecttest  # noqa: F401  (op_db's test helpers import it)
    except ImportError:
        return (
            "op_db needs the expecttest package (pip install expecttest, or the test extra: pip install -e '.[test]')"
        )
    return ""


_DB: list | None = None


def database() -> list:
    """op_db's entries that support autograd (imported once; ImportError with the reason when it cannot be)."""
    global _DB
    if _DB is None:
        reason = unavailable()
        if reason:
            raise ImportError(reason)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.testing._internal.common_methods_invocations import op_db
        _DB = [info for info in op_db if info.supports_autograd]
    return _DB


@dataclass
class Run:
    """One call of the operation: its (fresh) arguments and what it returned."""

    args: tuple
    kwargs: dict
    tensors: list[torch.Tensor]  # every tensor argument, in the order of the call (input, args, kwargs)
    output: Any
    outputs: list[torch.Tensor]  # every tensor it returned, in order
    warned: list[str] = field(default_factory=list)  # the warnings the call raised
    sources: list[torch.Tensor] = field(default_factory=list)  # before ``prepare``: the leaves they came from

    def nodes(self) -> list:
        """Every node of the graph under the recorded outputs (each once)."""
        out, seen = [], set()
        for t in self.recorded:
            for fn in probes.nodes(t):
                if fn not in seen:
                    seen.add(fn)
                    out.append(fn)
        return out

    def owner(self, t: torch.Tensor) -> str:
        """'input 2' or 'output 0' when ``t`` is that very tensor object, or shares its storage, offset, shape and
        strides (the same view of the same memory); '' otherwise."""
        for kind, group in (("input", self.tensors), ("output", self.outputs)):
            for i, other in enumerate(group):
                if t is other or same_view(t, other):
                    return f"{kind} {i}"
        return ""

    @property
    def floats(self) -> list[torch.Tensor]:
        """The floating-point tensor arguments (those that can carry a gradient), in order."""
        return [t for t in self.tensors if t.is_floating_point() or t.is_complex()]

    @property
    def leaves(self) -> list[torch.Tensor]:
        """The arguments that require grad, in order."""
        return [t for t in self.tensors if t.requires_grad]

    @property
    def recorded(self) -> list[torch.Tensor]:
        """The outputs autograd recorded (those with a grad_fn)."""
        return [t for t in self.outputs if t.grad_fn is not None]


def same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors look at the same memory the same way (storage, offset, shape, strides, dtype); an
    empty tensor has no memory to share."""
    if a.layout != torch.strided or b.layout != torch.strided or not a.numel() or not b.numel():
        return a is b
    return (
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and a.storage_offset() == b.storage_offset()
        and a.shape == b.shape
        and a.stride() == b.stride()
        and a.dtype == b.dtype
    )


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two strided tensors live in the same storage (an empty tensor has none: every empty storage's
    address reads 0)."""
    if a.layout != torch.strided or b.layout != torch.strided or not a.numel() or not b.numel():
        return a is b
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _fresh(value: Any, requires_grad: bool) -> Any:
    """A copy of one sample argument: a tensor gets its own storage with the same strides; a floating-point
    one becomes a leaf that requires grad (when asked), the others keep the sample's flag."""
    if not isinstance(value, torch.Tensor):
        return value
    base = value.detach()
    copy = base.clone()  # clone keeps the strides of a dense layout
    if copy.layout == torch.strided and copy.stride() != base.stride() and base.numel() > 1:
        # a slice with gaps, an expanded tensor: the same strides over a copy of the whole storage
        copy = torch.empty(0, dtype=base.dtype, device=base.device)
        copy.set_(base.untyped_storage().clone(), base.storage_offset(), base.size(), base.stride())
        reset = getattr(torch._C._autograd, "_unsafe_set_version_counter", None)
        if reset is not None:  # set_ counts as a write; this is a new tensor, at version 0
            reset((copy,), (0,))
    floating = base.is_floating_point() or base.is_complex()
    if floating and (requires_grad or value.requires_grad):
        copy.requires_grad_()
    return copy


@dataclass
class OpSample:
    """One sample input of one operation, in one dtype: a program a claim's sweep can run."""

    op: str  # the operation's name in op_db ("max", "nn.functional.linear")
    variant: str  # op_db's variant of it ("reduction_with_dim"), "" for none
    dtype: torch.dtype
    index: int  # which of the OpInfo's samples
    info: Any = field(repr=False)
    sample: Any = field(repr=False)
    _all_grad: bool | None = field(default=None, repr=False)  # learned on the first run
    _shared: tuple | None = field(default=None, repr=False)
    error: str = field(default="", repr=False)  # why the last run() returned None ("" if it did not)

    @property
    def label(self) -> str:
        name = self.op + (f".{self.variant}" if self.variant else "")
        return f"{name} {str(self.dtype).replace('torch.', '')} sample {self.index}"

    @property
    def function(self):
        """The callable op_db tests (torch.mul, F.linear, a lambda for an operator such as __getitem__)."""
        return self.info.op

    @property
    def inplace(self):
        """The in-place variant (``Tensor.mul_``), or None."""
        return self.info.inplace_variant

    @property
    def pointwise(self) -> bool:
        """Whether torch tags the operation pointwise (elementwise: mul, where, sigmoid), on any overload."""
        packet = getattr(torch.ops.aten, self.info.aten_name, None)
        if packet is None:
            return False
        return any(torch.Tag.pointwise in getattr(packet, name).tags for name in packet.overloads())

    @property
    def has_number(self) -> bool:
        """Whether a Python number (not a bool) is one of the operands."""
        leaves, _ = tree_flatten(((self.sample.input, *self.sample.args), self.sample.kwargs))
        return any(isinstance(v, (int, float, complex)) and not isinstance(v, bool) for v in leaves)

    def arguments(self, requires_grad: bool = True) -> tuple[tuple, dict, list[torch.Tensor]]:
        """(args, kwargs, tensors): fresh copies of the sample's arguments, and their tensors in order."""
        flat, spec = tree_flatten(((self.sample.input, *self.sample.args), self.sample.kwargs))
        fresh = [_fresh(v, requires_grad) for v in flat]
        args, kwargs = tree_unflatten(fresh, spec)
        return tuple(args), dict(kwargs), [v for v in fresh if isinstance(v, torch.Tensor)]

    def run(self, requires_grad: bool = True, call=None, prepare=None) -> Run | None:
        """Call the operation (or ``call(*args, **kwargs)``) on fresh arguments; None if it raises.

        ``requires_grad``: every floating-point tensor a leaf that requires grad (falling back to the
        sample's own flags where the operation refuses that); False: the sample's flags, all cleared.
        ``prepare(leaf)`` replaces each argument that requires grad by a tensor made from it (a view of it,
        a piece of a bigger one) before the call; ``Run.sources`` keeps the leaves."""
        call = call or self.function
        if not requires_grad:
            tries = [False]
        else:
            tries = [True, False] if self._all_grad is None else [self._all_grad]
        self.error = ""
        for all_grad in tries:
            args, kwargs, tensors = self.arguments(all_grad)
            if not requires_grad:
                for t in tensors:
                    t.requires_grad_(False)
            sources = list(tensors)
            if prepare is not None:
                args, kwargs, tensors = _replaced(args, kwargs, prepare)
            torch.manual_seed(self.index)  # random operations (dropout) draw the same numbers every run
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    output = call(*args, **kwargs)
            except Exception as exc:  # the last refusal stays readable in .error
                self.error = f"{type(exc).__name__}: {exc}"
                continue
            if requires_grad and self._all_grad is None and call is self.function and prepare is None:
                self._all_grad = all_grad
            outputs = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor)]
            if any(t.layout != torch.strided for t in outputs):  # to_sparse: not the tensors the course is about
                return None
            return Run(args, kwargs, tensors, output, outputs, [str(w.message) for w in caught], sources)
        return None

    def shared(self) -> Run | None:
        """The plain run (:meth:`run` with its defaults), made once and shared: read it, never write it, never
        run backward through it."""
        if self._shared is None:
            self._shared = (self.run(),)
        return self._shared[0]


def _replaced(args: tuple, kwargs: dict, prepare) -> tuple[tuple, dict, list[torch.Tensor]]:
    flat, spec = tree_flatten((args, kwargs))
    flat = [prepare(v) if isinstance(v, torch.Tensor) and v.requires_grad else v for v in flat]
    new_args, new_kwargs = tree_unflatten(flat, spec)
    return tuple(new_args), dict(new_kwargs), [v for v in flat if isinstance(v, torch.Tensor)]


def _spread(items: Sequence, k: int | None) -> list[tuple[int, Any]]:
    """Up to ``k`` of ``items`` spread evenly over the list (first and last included), with their indices."""
    if k is None or len(items) <= k:
        return list(enumerate(items))
    if k == 1:
        return [(0, items[0])]
    picks = sorted({round(i * (len(items) - 1) / (k - 1)) for i in range(k)})
    return [(i, items[i]) for i in picks]


_CACHE: dict[tuple, list[OpSample]] = {}


def samples(
    names: Iterable[str] | None = None, per_op: int | None = PER_OP, dtypes: Sequence[torch.dtype] = DTYPES
) -> list[OpSample]:
    """The programs of a sweep: each operation (all of op_db's, or those named) in each dtype it supports on
    the CPU, on up to ``per_op`` of its samples (None: all of them). Made once per process and reused:
    a run never touches the sample's own tensors."""
    wanted = None if names is None else tuple(sorted(set(names)))
    key = (wanted, per_op, tuple(dtypes))
    if key not in _CACHE:
        _CACHE[key] = list(_generate(wanted, per_op, dtypes))
    return _CACHE[key]


def _generate(wanted: tuple | None, per_op: int | None, dtypes: Sequence[torch.dtype]) -> Iterator[OpSample]:
    db = database()
    known = {info.name for info in db}
    if wanted is not None and set(wanted) - known:
        raise ValueError(f"op_db has no operation named {sorted(set(wanted) - known)} (with autograd)")
    for info in db:
        if wanted is not None and info.name not in wanted:
            continue
        for dtype in dtypes:
            if dtype not in info.supported_dtypes("cpu"):
                continue
            with _seeded(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    made = list(info.sample_inputs("cpu", dtype, requires_grad=True))
                except Exception:  # an OpInfo whose samples cannot be made here: nothing to run
                    continue
            made = [sample for sample in made if _dense(sample)]
            for index, sample in _spread(made, per_op):
                yield OpSample(info.name, info.variant_test_name, dtype, index, info, sample)


def _dense(sample) -> bool:
    """Whether every tensor of a sample is an ordinary (strided) one: the course is about those, and a sparse
    tensor has no strides or storage to compare."""
    flat, _ = tree_flatten(((sample.input, *sample.args), sample.kwargs))
    return all(t.layout == torch.strided for t in flat if isinstance(t, torch.Tensor))


@contextlib.contextmanager
def _seeded():
    """A fixed seed while samples are made, the caller's generators as they were afterwards."""
    torch_rng, python_rng = torch.get_rng_state(), random.getstate()
    torch.manual_seed(0)
    random.seed(0)
    try:
        yield
    finally:
        torch.set_rng_state(torch_rng)
        random.setstate(python_rng)


def without_grad(positions: Iterable[int], inference: bool = False):
    """``prepare`` for :meth:`OpSample.run`: the arguments at ``positions`` (counting those that require grad,
    in order) become copies that need no gradient (made inside inference_mode when ``inference``)."""
    wanted, count = set(positions), [-1]

    def prepare(leaf: torch.Tensor) -> torch.Tensor:
        count[0] += 1
        if count[0] not in wanted:
            return leaf
        with torch.inference_mode(inference):
            return leaf.detach().clone()

    return prepare
