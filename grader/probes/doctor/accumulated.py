"""Gradients accumulated across optimizer steps without a clear (unit 02): ``zero_grad`` missing, so a
step applies the sum of this step's gradient and every earlier one.

Accumulating on purpose is accumulating *between* clears: several backward calls (nanoGPT's
micro-batches), then one step, then ``zero_grad``. The mistake is a gradient that an optimizer step
already applied, still there (the same tensor, unwritten since) when the next backward adds into it, and
applied again by the next step of that optimizer. So:

* after each step, each held parameter's ``.grad`` is remembered (a weak reference and its version);
* at a backward's start, a parameter it reaches whose ``.grad`` is still that tensor at that version
  becomes *pending* (nothing cleared it since the step), unless it holds only zeros (zeroed through
  ``.data``, which leaves the version alone: adding into zeros applies nothing twice);
* a pending gradient written in between (``zero_()`` bumps the version) or replaced (``set_to_none``) is
  cleared; one still pending when its optimizer steps again is the finding, at the backward that added
  into it: the place to clear first.

A GAN's generator backward that adds into the discriminator's used gradients is no finding as long as
the discriminator clears them before its own next step.

Leaves updated by hand (no optimizer holds them: ``p -= lr * p.grad`` under ``no_grad``) are followed the
same way, with the program's own update in place of the optimizer's step: an update is a read of the
leaf's ``.grad`` (seen through the doctor's ``.grad`` property, :mod:`.nonleaf`) followed by a write of
the leaf itself (its version moves; a write through ``.data`` does not move it and is not seen). A gradient
read and applied that way, still the same tensor at the same version when the next backward adds into it,
is pending; read again at that new version and applied again before the following backward, it is the
finding, at the backward that added into it.
"""

from __future__ import annotations

import weakref
from collections import Counter

from grader.probes.doctor.findings import Mechanism
from grader.probes.doctor.nonleaf import raw_grad


def install(d) -> None:
    d.after_step = {}  # id(param) -> (weakref(grad), version) right after a step that held it
    d.pending = {}  # id(param) -> [weakref(grad), version after the backward, backward line]
    # leaves no optimizer holds: id -> (weakref(leaf), weakref(grad), grad's version, leaf's version) at the
    # first read of its .grad since the leaf's last backward
    d.grad_reads = {}
    d.hand_pending = {}  # id(leaf) -> [weakref(grad), version after the backward, backward line]


def note_read(d, t, g) -> None:
    """The program read ``g``, the gradient of ``t``, a leaf that no optimizer held at a step."""
    read = d.grad_reads.get(id(t))
    if read is None or read[1]() is not g or read[0]() is not t:
        d.grad_reads[id(t)] = (weakref.ref(t), weakref.ref(g), g._version, t._version)


def after_step(d, opt) -> None:
    for group in opt.param_groups:
        for p in group["params"]:
            g = raw_grad(p)
            if g is not None:
                d.after_step[id(p)] = (weakref.ref(g), g._version)


def before_backward(d, leaves, site) -> None:
    by_hand: list = []
    for p in leaves:
        key = id(p)
        g = raw_grad(p)
        if (d.grad_reads or d.hand_pending) and key not in d.held:
            _by_hand(d, p, g, site, by_hand)
        entry = d.pending.get(key)
        if entry is not None and (g is None or entry[0]() is not g or g._version != entry[1]):
            del d.pending[key]  # cleared (or rewritten) since that backward
            entry = None
        stepped = d.after_step.get(key)
        if entry is None and stepped is not None and g is not None and stepped[0]() is g and g._version == stepped[1]:
            if _nonzero(g):
                d.pending[key] = [stepped[0], g._version, site]
    if by_hand:
        _report_by_hand(d, by_hand)


def _by_hand(d, p, g, site, again) -> None:
    """A leaf updated by hand, at a backward that reaches it: was its gradient applied (read, then the leaf
    written) and left uncleared? Pending if so; the finding (into ``again``) if the pending one was applied
    again."""
    read = d.grad_reads.pop(id(p), None)
    entry = d.hand_pending.pop(id(p), None)
    if read is None or g is None or read[0]() is not p or read[1]() is not g:
        return
    if g._version != read[2] or p._version <= read[3] or not _nonzero(g):  # cleared since, or never applied
        return
    if entry is not None and entry[0]() is g and entry[1] == read[2]:  # the sum a backward made, applied again
        again.append((p, entry[2]))
    d.hand_pending[id(p)] = [weakref.ref(g), g._version, site]


def _nonzero(g) -> bool:
    """Whether ``g`` still holds something to apply again: a gradient zeroed through ``.data`` (which leaves
    its version alone: ``p.grad.data.zero_()``) is cleared all the same."""
    try:
        return bool(g.any())
    except RuntimeError:  # (a layout without any(): taken as holding something)
        return True


def _report_by_hand(d, again) -> None:
    site = again[0][1]
    labels = Counter(d.name_of.get(id(p)) or f"shape {list(p.shape)}" for p, _ in again)
    names = ", ".join(f"{label} (x{n})" if n > 1 else label for label, n in list(labels.items())[:4])
    d.add(
        ("accumulated", site),
        Mechanism.ACCUMULATED_GRAD,
        site,
        f"the backward at {site or '?'} added into gradients that the program had already applied by hand (it read "
        f".grad, then wrote the leaf), and nothing cleared them: the next update applied their sum again "
        f"({len(again)} leaf tensor(s): {names}); gradients add up across steps",
        "clear each gradient once it is applied, before the next backward: p.grad = None (or p.grad.zero_()) "
        "after the update",
    )


def after_backward(d, leaves) -> None:
    for pending in (d.pending, d.hand_pending) if d.hand_pending else (d.pending,):
        for p in leaves:
            entry = pending.get(id(p))
            if entry is not None:
                g = raw_grad(p)
                if g is not None and entry[0]() is g:
                    entry[1] = g._version
                else:
                    del pending[id(p)]


def before_step(d, opt) -> None:
    again = []
    for group in opt.param_groups:
        for p in group["params"]:
            entry = d.pending.pop(id(p), None)
            if entry is not None and entry[0]() is raw_grad(p):
                again.append((p, entry[2]))
    if not again:
        return
    site = again[0][1]
    names = ", ".join(d.name_of.get(id(p), f"a tensor {list(p.shape)}") for p, _ in again[:4])
    d.add(
        ("accumulated", site),
        Mechanism.ACCUMULATED_GRAD,
        site,
        f"the backward at {site or '?'} added into gradients that an earlier optimizer step already applied, and "
        f"nothing cleared them: this step applies their sum again ({len(again)} parameter(s), {names}); "
        "gradients add up across steps",
        "clear the gradients once per step, before its backward calls: optimizer.zero_grad() (or model.zero_grad()); "
        "to accumulate on purpose, clear after each optimizer step, not in between",
    )
