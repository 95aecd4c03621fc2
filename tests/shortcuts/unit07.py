"""Unit 07's shortcuts: the program run again and the write tried out, or undone; and a version guard that leaves
the check to torch."""

import torch

from tests.reference.unit07 import Pair
from tests.shortcuts._around import graders_answer, in_child


def _stale_nodes(out):
    broken, seen, stack = set(), set(), [out.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                try:
                    getattr(fn, attr)
                except RuntimeError:
                    broken.add(type(fn).__name__)
        stack.extend(child for child, _ in fn.next_functions)
    return broken


def rerun_source(program):
    """[rerun] The reviewer's shortcut: run the source again in a fresh namespace, do the write there, and list the
    nodes whose saved tensors no longer read."""
    ns = {"torch": torch}
    exec(
        "\n".join(
            line for line in program.source.splitlines() if "# the write" not in line and line != "out.backward()"
        ),
        ns,
    )
    try:
        exec(program.write, ns)
    except RuntimeError:
        return "at the write"
    broken = _stale_nodes(ns["out"])
    return ("at backward", broken) if broken else "no error"


def write_then_undo(program):
    """[rerun] Do the write on the real tensors, read which saves went stale, then put the values and the counters
    back as they were."""
    ns = program.ns
    kept = {name: (t.detach().clone(), t._version) for name, t in ns.items()}
    try:
        exec(program.write, {"torch": torch, **ns})
    except RuntimeError:
        return "at the write"
    broken = _stale_nodes(ns["out"])
    with torch.no_grad():
        for name, (values, version) in kept.items():
            ns[name].detach().copy_(values)
            torch._C._autograd._unsafe_set_version_counter((ns[name],), (version,))
    return ("at backward", broken) if broken else "no error"


def write_in_place_and_read(program):
    """[rerun] Do the write on the real tensors and read the saves: the write the exercise says not to run."""
    ns = program.ns
    try:
        exec(program.write, {"torch": torch, **ns})
    except RuntimeError:
        return "at the write"
    broken = _stale_nodes(ns["out"])
    return ("at backward", broken) if broken else "no error"


def by_producing_op(program):
    """[heuristic] A rule read off the node that made the target: an op that keeps its output (exp, tanh, sigmoid,
    relu) is broken by writing that output, an op that keeps its input is broken by writing the input; no
    storage is compared, so views, detach() and the leaf rule are never looked at."""
    t = program.ns[program.target]
    if t.is_leaf and t.requires_grad:
        return "at the write"
    keeps_output = ("ExpBackward0", "TanhBackward0", "SigmoidBackward0", "ReluBackward0")
    fn = t.grad_fn
    if fn is not None and type(fn).__name__ in keeps_output:
        return ("at backward", {type(fn).__name__})
    readers, seen, stack = set(), set(), [program.ns["out"].grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for child, _ in node.next_functions:
            if child is fn and type(node).__name__ in ("PowBackward0", "SinBackward0", "CosBackward0", "MulBackward0"):
                readers.add(type(node).__name__)
            stack.append(child)
    return ("at backward", readers) if readers else "no error"


# --- 07.version-guard ----------------------------------------------------------------------------------


def pack_itself(t):
    """[heuristic] keeps t itself, 'so torch can check it': a node that saved its own output now holds itself."""
    return t, t._version


def unpack_itself(packed):
    t, version = packed
    if t._version != version:
        raise RuntimeError("written after it was saved")
    return t


def pack_identity(t):
    """[wrapper] Hands the tensor straight back, trusting torch's own check (which hooks switch off)."""
    return t


def unpack_identity(t):
    return t


SHORTCUTS = {
    "07.predict-inplace": [rerun_source, write_then_undo, write_in_place_and_read, by_producing_op],
    "07.version-guard": [Pair(pack_itself, unpack_itself), Pair(pack_identity, unpack_identity)],
}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


def predict_from_the_grader(program):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack."""
    return graders_answer()


@in_child
def write_in_a_forked_child(program):
    """[switch] The write done for real, in a forked copy of the process, and the stale saves read there: the
    parent's tensors (and their versions, all the check looks at) are never touched."""
    return write_in_place_and_read(program)


def pack_with_a_copy(t):
    """[heuristic] Compares values instead of versions: a copy kept at pack, compared at unpack. A write that
    leaves the values as they were (add_(0), a relu_ of positives, a copy of the same numbers) goes unseen."""
    return t.detach(), t.detach().clone()


def unpack_compares_values(packed):
    t, copy = packed
    if not torch.equal(t, copy):
        raise RuntimeError("a saved tensor was written in place after it was packed")
    return t


SHORTCUTS["07.version-guard"] += [Pair(pack_with_a_copy, unpack_compares_values)]
OPEN = {"07.predict-inplace": [predict_from_the_grader, write_in_a_forked_child]}
