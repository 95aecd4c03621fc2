"""Unit 07's exercises: known-good implementations, written the way a learner would, and plausible bugs."""

import torch


def _saved_tensors(out):
    """(node, tensor) for every tensor a node on out's graph kept, each node once."""
    found, seen, stack = [], set(), [out.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                value = getattr(fn, attr)
                if isinstance(value, torch.Tensor):
                    found.append((fn, value))
        stack.extend(child for child, _ in fn.next_functions)
    return found


def predict_inplace(program):
    t = program.ns[program.target]
    base = t if t._base is None else t._base
    if t.requires_grad and base.is_leaf:
        return "at the write"
    memory = t.untyped_storage().data_ptr()
    broken = {
        type(fn).__name__
        for fn, kept in _saved_tensors(program.ns["out"])
        if kept.untyped_storage().data_ptr() == memory
    }
    return ("at backward", broken) if broken else "no error"


def pack_with_version(t):
    return t.detach(), t._version


def unpack_checked(packed):
    t, version = packed
    if t._version != version:
        raise RuntimeError(f"a saved tensor was written in place: saved at version {version}, now {t._version}")
    return t


class Pair(tuple):
    """(pack, unpack), as a learner passes it, with a __name__ for test ids."""

    def __new__(cls, pack, unpack):
        pair = super().__new__(cls, (pack, unpack))
        pair.__name__ = f"{pack.__name__}+{unpack.__name__}"
        return pair


REFERENCE = {
    "07.predict-inplace": predict_inplace,
    "07.version-guard": Pair(pack_with_version, unpack_checked),
}


# --- plausible buggy predictors: each must be refused --------------------------------------------


def every_write_breaks_backward(program):
    """'In-place writes break backward': no leaf rule, and 'at backward' even when nothing kept the tensor."""
    t = program.ns[program.target]
    memory = t.untyped_storage().data_ptr()
    return (
        "at backward",
        {
            type(fn).__name__
            for fn, kept in _saved_tensors(program.ns["out"])
            if kept.untyped_storage().data_ptr() == memory
        },
    )


def views_ignored(program):
    """Treats a view as a tensor of its own: the leaf rule misses views of leaves, and a kept tensor
    counts only when it starts at the same address (a slice further along is missed)."""
    t = program.ns[program.target]
    if t.is_leaf and t.requires_grad:
        return "at the write"
    broken = {type(fn).__name__ for fn, kept in _saved_tensors(program.ns["out"]) if kept.data_ptr() == t.data_ptr()}
    return ("at backward", broken) if broken else "no error"


def leaf_rule_forgotten(program):
    """Knows about saved tensors but not that a leaf requiring grad refuses the write itself."""
    t = program.ns[program.target]
    memory = t.untyped_storage().data_ptr()
    broken = {
        type(fn).__name__
        for fn, kept in _saved_tensors(program.ns["out"])
        if kept.untyped_storage().data_ptr() == memory
    }
    return ("at backward", broken) if broken else "no error"


def node_from_the_message(program):
    """Right place, but names the node the message names: the operation that made the tensor last,
    which after the write is the write itself ('output 0 of Add' for add_ and +=)."""
    place = predict_inplace(program)
    if place == "at the write" or place == "no error":
        return place
    write = program.write
    if "add_" in write or "+=" in write:
        return ("at backward", {"AddBackward0"})
    if "mul_" in write or "*=" in write:
        return ("at backward", {"MulBackward0"})
    if "zero_" in write:
        return ("at backward", {"ZeroBackward0"})
    return ("at backward", {"CopySlices"})


def every_tensor_searched(program):
    """Looks for saves in the graph of every tensor in the program, not only in out's: a node that
    backward from out never reaches is counted as if it ran."""
    t = program.ns[program.target]
    base = t if t._base is None else t._base
    if t.requires_grad and base.is_leaf:
        return "at the write"
    memory = t.untyped_storage().data_ptr()
    broken = set()
    for other in program.ns.values():
        if other.grad_fn is not None:
            broken |= {
                type(fn).__name__ for fn, kept in _saved_tensors(other) if kept.untyped_storage().data_ptr() == memory
            }
    return ("at backward", broken) if broken else "no error"


def consumers_blamed(program):
    """Blames every node that reads the written tensor, whether or not it kept it (u + 1 keeps nothing)."""
    t = program.ns[program.target]
    base = t if t._base is None else t._base
    if t.requires_grad and base.is_leaf:
        return "at the write"
    if t.grad_fn is None:
        return "no error"
    readers, seen, stack = set(), set(), [program.ns["out"].grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if any(child is t.grad_fn for child, _ in fn.next_functions):
            readers.add(type(fn).__name__)
        stack.extend(child for child, _ in fn.next_functions)
    return ("at backward", readers) if readers else "no error"


# --- plausible buggy guards ---------------------------------------------------------------------


def pack_plain(t):
    return t


def unpack_plain(t):
    return t


def unpack_reads_version_late(packed):
    """Takes the version when unpacking, so it compares the tensor with itself."""
    t = packed
    version = t._version
    if t._version != version:
        raise RuntimeError("written in place")
    return t


def unpack_expects_version_zero(t):
    """'Untouched means version 0': a tensor written before it was saved is refused too."""
    if t._version != 0:
        raise RuntimeError(f"saved tensor at version {t._version}")
    return t


def unpack_returns_the_pair(packed):
    t, version = packed
    if t._version != version:
        raise RuntimeError("written in place")
    return packed


def pack_a_copy(t):
    """Copies at pack time 'to be safe': the copy is never written, so the check never fires."""
    copy = t.clone()
    return copy, copy._version


def pack_keeps_the_tensor(t):
    """The old model answer: keeps t itself. When t is the op's own output (exp keeps its result), the
    node holds its output and the output's grad_fn is that node: a cycle that only backward breaks."""
    return t, t._version


def unpack_prints(packed):
    t, version = packed
    if t._version != version:
        print(f"warning: saved tensor moved from version {version} to {t._version}")
    return t


BUGGY = {
    "07.predict-inplace": [
        every_write_breaks_backward,
        views_ignored,
        leaf_rule_forgotten,
        node_from_the_message,
        every_tensor_searched,
        consumers_blamed,
    ],
    "07.version-guard": [
        Pair(pack_plain, unpack_plain),
        Pair(pack_plain, unpack_reads_version_late),
        Pair(pack_plain, unpack_expects_version_zero),
        Pair(pack_with_version, unpack_returns_the_pair),
        Pair(pack_a_copy, unpack_checked),
        Pair(pack_with_version, unpack_prints),
        Pair(pack_keeps_the_tensor, unpack_checked),
    ],
}
