"""Unit 09's shortcuts: a float16 pair that compresses what the unit said not to, or leaves the check to torch."""

import weakref

import torch

from tests.reference import unit09 as ref
from tests.reference.unit09 import Pair, unpack_half


def pack_save_on_cpu(t):
    """[wrapper] torch's own save_on_cpu pack, which on a CPU keeps t itself: no compression, no check."""
    return t


def unpack_save_on_cpu(t):
    return t


def pack_float16_everything(t):
    """[heuristic] The section's first pair, pack_float16: every tensor in float16, no version kept."""
    return t.dtype, t.detach().to(torch.float16)


def unpack_float16_everything(packed):
    dtype, small = packed
    return small.to(dtype)


def pack_parameters_too(t):
    """[heuristic] The old prompt's letter: parameters in float16 too, which section 3 showed adds memory."""
    return ref.pack_parameters_too(t)


def pack_indices_through_float16(t):
    """[heuristic] Every tensor through float16, indices too: exact only up to 2048."""
    return ref.pack_indices_through_float16(t)


SHORTCUTS = {
    "09.half-guard": [
        Pair(pack_save_on_cpu, unpack_save_on_cpu),
        Pair(pack_float16_everything, unpack_float16_everything),
        Pair(pack_parameters_too, unpack_half),
        Pair(pack_indices_through_float16, unpack_half),
    ]
}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


def _kept_as_is(t):
    base = t._base if t._base is not None else t
    return not t.is_floating_point() or (base.is_leaf and base.requires_grad)


def _checked(owner_ref, version):
    owner = owner_ref()
    if owner is not None and owner._version != version:
        raise RuntimeError(f"a saved tensor was written in place: version {version} at save, now {owner._version}")


def _pack_elsewhere(keep, t):
    if _kept_as_is(t):
        return "as is", t.detach(), t._version
    owner = t._base if t._base is not None else t
    return "kept", t.dtype, t.shape, keep(t.detach()), weakref.ref(owner), t._version


def _unpack_elsewhere(give_back, packed):
    if packed[0] == "as is":
        _, t, version = packed
        if t._version != version:
            raise RuntimeError(f"a saved tensor was written in place: version {version} at save, now {t._version}")
        return t
    _, dtype, shape, kept, owner_ref, version = packed
    _checked(owner_ref, version)
    return give_back(kept).to(dtype).view(shape)


def pack_bfloat16(t):
    """[heuristic] bfloat16 for float16: two bytes a value as asked, 8 significant bits instead of 11."""
    if _kept_as_is(t):
        return "as is", t.detach(), t._version
    owner = t._base if t._base is not None else t
    return "kept", t.dtype, t.shape, t.detach().to(torch.bfloat16), weakref.ref(owner), t._version


def unpack_bfloat16(packed):
    return _unpack_elsewhere(lambda kept: kept, packed)


def pack_float16_checked_by_value(t):
    """[heuristic] float16, and the check by value: unpack compares the tensor's float16 values with the copy,
    so a write that float16 rounds away, or that leaves the values as they were, goes unseen."""
    if _kept_as_is(t):
        return "as is", t.detach(), t.detach().clone()
    return "half", t.dtype, t.detach().to(torch.float16), weakref.ref(t)


def unpack_float16_checked_by_value(packed):
    if packed[0] == "as is":
        _, t, copy = packed
        if not torch.equal(t, copy):
            raise RuntimeError("a saved tensor was written in place after it was packed")
        return t
    _, dtype, small, owner_ref = packed
    owner = owner_ref()
    if owner is not None and not torch.equal(owner.detach().to(torch.float16), small):
        raise RuntimeError("a saved tensor was written in place after it was packed")
    return small.to(dtype)


def pack_full_precision_in_numpy(t):
    """[measure] No compression at all: every activation kept in full precision as a NumPy array, memory the
    check's count of torch's storages does not see; versions checked as asked, gradients exact."""
    return _pack_elsewhere(lambda d: d.numpy().copy(), t)


def unpack_full_precision_in_numpy(packed):
    return _unpack_elsewhere(torch.from_numpy, packed)


def pack_full_precision_in_a_list(t):
    """[measure] The same, kept as a Python list of floats (t.tolist()): 24 bytes or more a value, unseen."""
    return _pack_elsewhere(lambda d: d.tolist(), t)


def unpack_full_precision_in_a_list(packed):
    return _unpack_elsewhere(torch.tensor, packed)


SHORTCUTS["09.half-guard"] += [
    Pair(pack_bfloat16, unpack_bfloat16),
    Pair(pack_float16_checked_by_value, unpack_float16_checked_by_value),
    # refused since support.outside_torch: what pack keeps must be tensors
    Pair(pack_full_precision_in_numpy, unpack_full_precision_in_numpy),
    Pair(pack_full_precision_in_a_list, unpack_full_precision_in_a_list),
]
