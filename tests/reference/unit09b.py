"""Unit 09b's exercise: a checkpoint written by hand with a pair of saved-tensor hooks, the way a learner would, and
plausible ways to get one part wrong."""

import torch


def checkpoint_by_hand(fn, *args):
    state = torch.get_rng_state()
    saved = []  # what the rerun saved, in order; filled at the first unpack of a backward

    def pack(t):
        pack.count += 1
        return pack.count - 1

    pack.count = 0

    def unpack(i):
        if not saved:
            inputs = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]
            with torch.random.fork_rng(devices=[]), torch.enable_grad():
                torch.set_rng_state(state)
                with torch.autograd.graph.saved_tensors_hooks(
                    lambda t: saved.append(t) or len(saved) - 1, saved.__getitem__
                ):
                    fn(*inputs)
        return saved[i]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return fn(*args)


REFERENCE = {"09b.checkpoint-by-hand": checkpoint_by_hand}


# --- plausible bugs: each must be refused -------------------------------------------------------


def _by_hand(fn, args, restore_rng=True, once=True, detach_inputs=True):
    state = torch.get_rng_state()
    cache = []

    def rerun():
        out = []
        inputs = [
            a.detach().requires_grad_(a.requires_grad) if detach_inputs and isinstance(a, torch.Tensor) else a
            for a in args
        ]
        with torch.random.fork_rng(devices=[]), torch.enable_grad():
            if restore_rng:
                torch.set_rng_state(state)
            with torch.autograd.graph.saved_tensors_hooks(lambda t: out.append(t) or len(out) - 1, out.__getitem__):
                fn(*inputs)
        return out

    def pack(t):
        pack.count += 1
        return pack.count - 1

    pack.count = 0

    def unpack(i):
        if not once:
            return rerun()[i]
        if not cache:
            cache.extend(rerun())
        return cache[i]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return fn(*args)


def without_the_generator(fn, *args):
    """Reruns fn with the generator wherever it now is: dropout draws another mask than the forward pass."""
    return _by_hand(fn, args, restore_rng=False)


def rerun_per_unpack(fn, *args):
    """Reruns fn for every tensor a node reads, instead of once per backward."""
    return _by_hand(fn, args, once=False)


def keeps_what_it_packs(fn, *args):
    """A pair that keeps each saved tensor (t.detach()): right gradients, and all the memory checkpointing saves."""
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        return fn(*args)


def reruns_without_grad(fn, *args):
    """Reruns fn as backward runs code, with grad mode off: the rerun saves nothing, and unpack finds no tensor."""
    state = torch.get_rng_state()
    cache = []

    def unpack(i):
        if not cache:
            with torch.random.fork_rng(devices=[]):
                torch.set_rng_state(state)
                with torch.autograd.graph.saved_tensors_hooks(
                    lambda t: cache.append(t) or len(cache) - 1, cache.__getitem__
                ):
                    fn(*[a.detach() for a in args])
        return cache[i]

    counter = iter(range(10**6))
    with torch.autograd.graph.saved_tensors_hooks(lambda t: next(counter), unpack):
        return fn(*args)


BUGGY = {"09b.checkpoint-by-hand": [without_the_generator, rerun_per_unpack, keeps_what_it_packs, reruns_without_grad]}
