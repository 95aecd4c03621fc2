"""Unit 09's instruments, models and pairs: :class:`MemoryWatch` (a dispatch mode that counts the memory an
operation creates, as the allocator would), the :class:`Block` chain the compression questions run (and unit
09b's checkpointing questions), and the pack/unpack pairs the notebook builds (alias, copy, float16), with what
the experiments measure through them.
"""

from __future__ import annotations

import gc
import math
import weakref

import torch
from torch import nn
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# =====================================================================================================
# Instruments and models
# =====================================================================================================


class MemoryWatch(TorchDispatchMode):
    """Bytes of tensor memory created while the watch is active: alive now (``held()``) and at most (``peak``).

    Every operation's outputs are looked at as it runs; a storage that no input of the operation
    shares is new memory, counted once at its full size until it is freed. Memory that existed before
    the watch started (parameters, inputs) is never counted, as with ``torch.cuda.memory_allocated()``
    read before and after.

        with MemoryWatch() as watch:
            loss = model(x).sum()
            after_forward = watch.held()
            loss.backward()
        watch.peak
    """

    def __init__(self):
        super().__init__()
        self._live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.peak = 0

    def _alive(self) -> int:
        for key in [k for k, (ref, _) in self._live.items() if ref.expired()]:
            del self._live[key]
        return sum(n for _, n in self._live.values())

    def held(self, *exclude: torch.Tensor, collect: bool = True) -> int:
        """Bytes created under the watch and still alive, leaving out the storages of ``exclude``.

        ``collect`` runs the garbage collector first, for memory held only by reference cycles.
        """
        if collect:
            gc.collect()
        alive = self._alive()
        skip = {t.untyped_storage()._cdata for t in exclude if isinstance(t, torch.Tensor)}
        return alive - sum(n for key, (_, n) in self._live.items() if key in skip)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        given = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            if storage.nbytes() == 0 or storage.data_ptr() in given:
                continue  # a view of an input, or an in-place write: no new memory
            key = storage._cdata
            if key not in self._live or self._live[key][0].expired():
                self._live[key] = (StorageWeakRef(storage), storage.nbytes())
        self.peak = max(self.peak, self._alive())
        return out


def held_after(forward, *, exclude_output: bool = False) -> int:
    """Run ``forward()`` under a watch; bytes it created that are still alive once it returned."""
    with MemoryWatch() as watch:
        out = forward()
    return watch.held(out) if exclude_output else watch.held()


class Block(nn.Module):
    """Linear up to a wider layer, GELU, Linear back down; counts its forward calls in ``calls``."""

    def __init__(self, width: int = 128, hidden: int = 512):
        super().__init__()
        self.up, self.act, self.down = nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width)
        self.calls = 0

    def forward(self, t):
        self.calls += 1
        return self.down(self.act(self.up(t)))


def block_chain(batch: int = 256, hidden=(512, 512, 512, 512), width: int = 128, seed: int = 0):
    """nn.Sequential of Blocks (one per entry of ``hidden``) and a (batch, width) input without grad."""
    torch.manual_seed(seed)
    model = nn.Sequential(*[Block(width, h) for h in hidden])
    return model, torch.randn(batch, width)


# --- the pairs the notebook builds ----------------------------------------------------------------


def half_pack(t):
    """Naive compression: every saved tensor kept in float16, with its dtype to restore."""
    return t.dtype, t.detach().to(torch.float16)


def half_unpack(packed):
    dtype, small = packed
    return small.to(dtype)


def is_parameter(t: torch.Tensor) -> bool:
    """A leaf that requires grad, or a view of one (Linear saves weight.t())."""
    base = t._base if t._base is not None else t
    return base.is_leaf and base.requires_grad


def half_pack_activations(t):
    """Compression that leaves parameters (and views of them) alone: the model holds them anyway."""
    if is_parameter(t):
        return None, t.detach()
    return t.dtype, t.detach().to(torch.float16)


def half_unpack_activations(packed):
    dtype, kept = packed
    return kept if dtype is None else kept.to(dtype)


def under_hooks(hooks, forward):
    """Run forward() under a (pack, unpack) pair, or under a hooks object such as save_on_cpu()."""
    if isinstance(hooks, tuple):
        hooks = torch.autograd.graph.saved_tensors_hooks(*hooks)
    with hooks:
        return forward()


def _grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def relative_error(exact: dict[str, torch.Tensor], approx: dict[str, torch.Tensor]) -> float:
    """max over parameters of max|approx - exact| / max|exact|."""
    return max(((approx[n] - g).abs().max() / g.abs().max()).item() for n, g in exact.items())


# --- offloading: a pair that keeps an alias, one that keeps a copy --------------------------------


def alias_pack(t):
    """Keeps the memory it is handed, detached, so no reference cycle. save_on_cpu() on a CPU keeps the same
    memory but not detached (``tensor.cpu()`` is the tensor itself): an output it saves keeps its own graph alive."""
    return t.detach()


def copy_pack(t):
    """Keeps a copy taken at save time: what save_on_cpu() does on a GPU, or with pin_memory=True on a CPU."""
    return t.detach().clone()


def noting_pack(into: list):
    """A pack that appends each tensor it is handed to ``into`` and keeps it detached (what a pair is handed)."""

    def pack(t):
        into.append(t)
        return t.detach()

    return pack


def keep_as_is(packed):
    return packed


ALIAS_PAIR, COPY_PAIR = (alias_pack, keep_as_is), (copy_pack, keep_as_is)


def write_after_save(pair) -> float:
    """p.grad[0] for q = p.exp() under ``pair`` (a (pack, unpack) tuple or a hooks object such as save_on_cpu()),
    q written in place after the block, then backward."""
    p = torch.ones(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(*pair) if isinstance(pair, tuple) else pair:
        q = p.exp()
    q.add_(1)
    q.sum().backward()
    return p.grad[0].item()


def leaks(pack) -> bool:
    """Does the output of p.exp() outlive `del` and gc.collect() when it was saved through ``pack``?"""
    p = torch.ones(1000, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda packed: packed):
        q = p.exp()
    ref = weakref.ref(q)
    del q
    gc.collect()
    return ref() is not None


# --- compression: what float16 costs in accuracy and memory ---------------------------------------


def decade(error: float) -> str:
    exponent = min(5, max(1, round(-math.log10(error))))
    return f"about 1e-{exponent}"


def _chain_grads(model, x, pair=None):
    model.zero_grad(set_to_none=True)
    loss = model(x).sum() if pair is None else under_hooks(pair, lambda: model(x).sum())
    loss.backward()
    return _grads(model)


def half_error_on_chain() -> float:
    model, x = block_chain(batch=64)
    exact = _chain_grads(model, x)
    return relative_error(exact, _chain_grads(model, x, (half_pack, half_unpack)))


SHARES = ("about half of the plain run", "between half and all of it", "more than the plain run")


def share(ratio: float) -> str:
    return SHARES[0] if ratio <= 0.55 else SHARES[1] if ratio < 1 else SHARES[2]


def chain_held(pair=None, batch: int = 64) -> int:
    model, x = block_chain(batch=batch)
    if pair is None:
        return held_after(lambda: model(x).sum())
    return held_after(lambda: under_hooks(pair, lambda: model(x).sum()))


def gelu_mlp():
    """Unit 05's MLP (seed 0) with nn.GELU() in place of each ReLU: GELU keeps its input, not its output."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 1))
    return model, torch.randn(256, 512)


OVERFLOW = ("exp(12) to 4 digits", "a little off (rounding)", "inf", "nan", "0")


def _classify(value: float, exact: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    if value == 0:
        return "0"
    return OVERFLOW[0] if abs(value - exact) <= 1e-4 * abs(exact) else OVERFLOW[1]


def exp_grad(dtype) -> str:
    def pack(t):
        return t.dtype, t.detach().to(dtype)

    x = torch.tensor([10.0, 12.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, half_unpack):
        y = x.exp()
    y.sum().backward()
    return _classify(x.grad[1].item(), math.exp(12.0))


def square_grad(dtype) -> str:
    """x.grad[0] for y = x ** 2 at x = 300 with saved tensors stored in ``dtype``: '600 to 3 digits' while the
    saved input fits (the output, 90,000, is never saved), else 'inf', 'nan' or '0'."""

    def pack(t):
        return t.dtype, t.detach().to(dtype)

    x = torch.tensor([300.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, half_unpack):
        y = x**2
    y.sum().backward()
    value = x.grad[0].item()
    if math.isnan(value) or math.isinf(value) or value == 0:
        return _classify(value, 600.0)
    return "600 to 3 digits" if abs(value - 600.0) < 0.5 else f"{value:.4g}"


# What a pack may keep beside its tensors: a version, a flag, a count. More plain numbers than this are the values
# themselves, kept where the memory a measure counts (torch's storages) does not see them.
NUMBERS_KEPT = 4


def outside_torch(packed) -> str:
    """Why what a pack hook returned keeps the values outside torch's storages ('' where it does not): a NumPy
    array, raw bytes, or more than NUMBERS_KEPT plain numbers (``t.tolist()``). Memory is memory wherever it is
    kept; the course's measures count torch's storages, so an answer must keep its values there."""
    numbers, stack, seen = 0, [packed], 0
    while stack and seen < 10_000:
        item, seen = stack.pop(), seen + 1
        kind = type(item)
        if kind.__module__ == "numpy" and hasattr(item, "nbytes") and getattr(item, "ndim", 0) > 0:
            return f"pack kept a NumPy array ({item.nbytes:,} bytes), outside torch's storages"
        if isinstance(item, (bytes, bytearray, memoryview)) and len(item) > 4 * NUMBERS_KEPT:
            return f"pack kept {len(item):,} raw bytes, outside torch's storages"
        if isinstance(item, (int, float, complex)) and not isinstance(item, bool):
            numbers += 1
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)) and not isinstance(item, torch.Size):
            stack.extend(item)
    if numbers > NUMBERS_KEPT:
        return f"pack kept {numbers:,} plain Python numbers (a list of the values?), outside torch's storages"
    return ""


def watching_packs(problems: list):
    """A context in which every saved_tensors_hooks pair made has its pack watched with :func:`outside_torch`: the
    first such keeping is appended to ``problems`` (a checkpoint written by hand keeps through a pair of its own)."""
    import contextlib

    hooks = torch.autograd.graph.saved_tensors_hooks
    made = hooks.__init__

    def init(self, pack_hook, unpack_hook):
        def pack(t):
            packed = pack_hook(t)
            why = outside_torch(packed)
            if why and not problems:
                problems.append(why)
            return packed

        made(self, pack, unpack_hook)

    @contextlib.contextmanager
    def watching():
        hooks.__init__ = init
        try:
            yield problems
        finally:
            hooks.__init__ = made

    return watching()
