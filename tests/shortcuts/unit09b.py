"""Unit 09b's shortcuts: torch's checkpoint wrapped, the function run as it is, and the reentrant design written by
hand (an autograd Function), which cuts the graph where no input requires grad."""

import torch
from torch.utils.checkpoint import checkpoint as imported_checkpoint  # bound before any check

from tests.reference import unit09b as ref
from tests.shortcuts._around import fresh_copy, in_thread, restored


def torch_checkpoint(fn, *args):
    """[wrapper] torch.utils.checkpoint.checkpoint itself."""
    return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)


def torch_checkpoint_imported(fn, *args):
    """[wrapper] The same, through a name imported before the check."""
    return imported_checkpoint(fn, *args, use_reentrant=False)


def torch_checkpoint_reentrant(fn, *args):
    """[wrapper] The reentrant implementation, through the same function."""
    return imported_checkpoint(fn, *args, use_reentrant=True)


def plain_call(fn, *args):
    """[heuristic] fn(*args) as it is: right gradients, one run each, and every activation kept."""
    return fn(*args)


class _Rerun(torch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *args):
        ctx.fn, ctx.state = fn, torch.get_rng_state()
        ctx.save_for_backward(*args)
        with torch.no_grad():
            return fn(*args)

    @staticmethod
    def backward(ctx, grad):
        inputs = [a.detach().requires_grad_(a.requires_grad) for a in ctx.saved_tensors]
        with torch.random.fork_rng(devices=[]), torch.enable_grad():
            torch.set_rng_state(ctx.state)
            out = ctx.fn(*inputs)
        torch.autograd.backward(out, grad)
        return (None, *[a.grad for a in inputs])


def reentrant_by_hand(fn, *args):
    """[heuristic] The reentrant design written out: an autograd Function that runs fn under no_grad and reruns it
    in its backward. Its output requires grad only if an input does: where x does not, the first function's
    parameters are cut off (section 2's trap)."""
    return _Rerun.apply(fn, *args)


def keeps_what_it_packs(fn, *args):
    """[heuristic] A pair that keeps each saved tensor as it is: the gradients right, the memory all kept."""
    return ref.keeps_what_it_packs(fn, *args)


SHORTCUTS = {
    "09b.checkpoint-by-hand": [
        torch_checkpoint,
        torch_checkpoint_imported,
        torch_checkpoint_reentrant,
        plain_call,
        reentrant_by_hand,
        keeps_what_it_packs,
    ]
}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


@in_thread
def torch_checkpoint_in_a_thread(fn, *args):
    """[switch] torch's checkpoint, called from a thread started inside the call (refused: the switch reaches
    threads started while the function runs)."""
    return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)


@restored("torch.utils.checkpoint")
def torch_checkpoint_switched_back_on(fn, *args):
    """[switch] torch's checkpoint with torch.utils.checkpoint's attributes put back for the call, as they were
    before any check switched them off."""
    return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)


def everything_kept_in_numpy(fn, *args):
    """[measure] Nothing recomputed that is used: pack keeps every saved tensor whole, as a NumPy array (memory
    the check's count of torch's storages does not see), and the first unpack runs fn once more under the
    forward pass's random state, only so that the count of runs looks right."""
    state = torch.get_rng_state()
    rerun = []

    def pack(t):
        return t.detach().numpy().copy()

    def unpack(kept):
        if not rerun:
            rerun.append(True)
            with torch.random.fork_rng(devices=[]), torch.no_grad():
                torch.set_rng_state(state)
                fn(*args)
        return torch.from_numpy(kept)

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return fn(*args)


def torch_checkpoint_from_a_fresh_copy(fn, *args):
    """[switch] torch's checkpoint from a second copy of torch/utils/checkpoint.py, loaded under another name: the
    switch replaced the attributes of the module everyone imports, not the copy's."""
    return fresh_copy("torch.utils.checkpoint").checkpoint(fn, *args, use_reentrant=False)


SHORTCUTS["09b.checkpoint-by-hand"] += [torch_checkpoint_in_a_thread]
OPEN = {
    "09b.checkpoint-by-hand": [
        torch_checkpoint_switched_back_on,
        torch_checkpoint_from_a_fresh_copy,
    ]
}
SHORTCUTS["09b.checkpoint-by-hand"].append(everything_kept_in_numpy)  # refused since unit09.support.watching_packs
