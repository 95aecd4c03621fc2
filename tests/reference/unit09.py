"""Unit 09's exercise: a known-good float16 pair that keeps the version check, written the way a learner
would, and plausible pairs that each get one part wrong."""

import weakref

import torch


def _is_parameter(t):
    base = t._base if t._base is not None else t
    return base.is_leaf and base.requires_grad


def pack_half(t):
    if not t.is_floating_point() or _is_parameter(t):  # indices exact; a parameter is held anyway: no copy
        return "as is", t.detach(), t._version  # detach(): shares memory and counter, makes no cycle
    owner = t._base if t._base is not None else t  # a view shares its base's counter; a temporary view dies
    return "float16", t.dtype, t.detach().to(torch.float16), weakref.ref(owner), t._version


def unpack_half(packed):
    if packed[0] == "as is":
        _, t, version = packed
        if t._version != version:
            raise RuntimeError(f"a saved tensor was written in place: version {version} at save, now {t._version}")
        return t
    _, dtype, small, owner_ref, version = packed
    owner = owner_ref()  # None: the tensor is gone (only an alias could still write)
    if owner is not None and owner._version != version:
        raise RuntimeError(f"a saved tensor was written in place: version {version} at save, now {owner._version}")
    return small.to(dtype)


class Pair(tuple):
    """(pack, unpack), as a learner passes it, with a __name__ for test ids."""

    def __new__(cls, pack, unpack):
        pair = super().__new__(cls, (pack, unpack))
        pair.__name__ = f"{pack.__name__}+{unpack.__name__}"
        return pair


REFERENCE = {"09.half-guard": Pair(pack_half, unpack_half)}


# --- plausible buggy pairs: each must be refused -------------------------------------------------


def pack_no_check(t):
    """Compresses well, and forgets that hooks switched the version check off."""
    return t.dtype, t.detach().to(torch.float16)


def unpack_no_check(packed):
    dtype, small = packed
    return small.to(dtype)


def pack_checks_the_copy(t):
    """Remembers the version of the float16 copy, which nothing ever writes."""
    small = t.detach().to(torch.float16)
    return t.dtype, small, small._version


def unpack_checks_the_copy(packed):
    dtype, small, version = packed
    if small._version != version:
        raise RuntimeError("written in place")
    return small.to(dtype)


def pack_keeps_original(t):
    """Keeps the tensor itself to read its version later: the original's memory stays alive beside the copy."""
    return t, t._version, t.dtype, t.detach().to(torch.float16)


def unpack_keeps_original(packed):
    t, version, dtype, small = packed
    if t._version != version:
        raise RuntimeError("written in place")
    return small.to(dtype)


def pack_guard_like_unit07(t):
    """Unit 07's guard, (t, t._version), kept beside a float16 copy: the copy is exact enough, but what pack
    returns holds t itself, and a tensor its own node saved (an exp or tanh output) can never be freed."""
    if not t.is_floating_point():
        return "as is", t, t._version
    return "float16", t.dtype, t.detach().to(torch.float16), t, t._version


def unpack_guard_like_unit07(packed):
    if packed[0] == "as is":
        return unpack_half(packed)
    _, dtype, small, t, version = packed
    if t._version != version:
        raise RuntimeError("written in place")
    return small.to(dtype)


def pack_any_dtype(t):
    owner = t._base if t._base is not None else t
    return weakref.ref(owner), t._version, t.detach().to(torch.float16)


def unpack_always_float32(packed):
    """'The model is float32': gives back float32 whatever was saved (float64 values, int64 indices)."""
    owner_ref, version, small = packed
    owner = owner_ref()
    if owner is not None and owner._version != version:
        raise RuntimeError("written in place")
    return small.float()


def unpack_dead_is_written(packed):
    """Treats a weak reference that died as a write: a temporary nobody holds is refused."""
    if packed[0] == "as is":
        return unpack_half(packed)
    _, dtype, small, owner_ref, version = packed
    owner = owner_ref()
    if owner is None or owner._version != version:
        raise RuntimeError("saved tensor gone or written")
    return small.to(dtype)


def pack_watches_the_view(t):
    """A weak reference to the tensor handed over, not its base: a temporary view dies at once, so a write
    to its base goes unseen."""
    if not t.is_floating_point() or _is_parameter(t):
        return "as is", t.detach(), t._version
    return "float16", t.dtype, t.detach().to(torch.float16), weakref.ref(t), t._version


def pack_parameters_too(t):
    """Issue 45: every floating tensor in float16, parameters included, as the old prompt asked: section 3
    showed a copy of a parameter adds memory, since the program holds the parameter anyway."""
    if not t.is_floating_point():
        return "as is", t.detach(), t._version
    owner = t._base if t._base is not None else t
    return "float16", t.dtype, t.detach().to(torch.float16), weakref.ref(owner), t._version


def pack_indices_through_float16(t):
    """Issue 45: the index too goes through float16 and back to its dtype: exact up to 2048, and 2049 comes back
    as 2048."""
    if _is_parameter(t):
        return "as is", t.detach(), t._version
    owner = t._base if t._base is not None else t
    return "float16", t.dtype, t.detach().to(torch.float16), weakref.ref(owner), t._version


BUGGY = {
    "09.half-guard": [
        Pair(pack_no_check, unpack_no_check),
        Pair(pack_checks_the_copy, unpack_checks_the_copy),
        Pair(pack_keeps_original, unpack_keeps_original),
        Pair(pack_guard_like_unit07, unpack_guard_like_unit07),
        Pair(pack_any_dtype, unpack_always_float32),
        Pair(pack_half, unpack_dead_is_written),
        Pair(pack_watches_the_view, unpack_half),
        Pair(pack_parameters_too, unpack_half),
        Pair(pack_indices_through_float16, unpack_half),
    ],
}
