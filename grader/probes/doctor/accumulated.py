"""Gradients accumulated across optimizer steps without a clear (unit 02): ``zero_grad`` missing, so a
step applies the sum of this step's gradient and every earlier one.

Accumulating on purpose is accumulating *between* clears: several backward calls (nanoGPT's
micro-batches), then one step, then ``zero_grad``. The mistake is a gradient that an optimizer step
already applied, still there (the same tensor, unwritten since) when the next backward adds into it, and
applied again by the next step of that optimizer. So:

* after each step, each held parameter's ``.grad`` is remembered (a weak reference and its version);
* at a backward's start, a parameter it reaches whose ``.grad`` is still that tensor at that version
  becomes *pending* (nothing cleared it since the step);
* a pending gradient written in between (``zero_()`` bumps the version) or replaced (``set_to_none``) is
  cleared; one still pending when its optimizer steps again is the finding, at the backward that added
  into it: the place to clear first.

A GAN's generator backward that adds into the discriminator's used gradients is no finding as long as
the discriminator clears them before its own next step.
"""

from __future__ import annotations

import weakref

from grader.probes.doctor.findings import Mechanism
from grader.probes.doctor.nonleaf import raw_grad


def install(d) -> None:
    d.after_step = {}  # id(param) -> (weakref(grad), version) right after a step that held it
    d.pending = {}  # id(param) -> [weakref(grad), version after the backward, backward line]


def after_step(d, opt) -> None:
    for group in opt.param_groups:
        for p in group["params"]:
            g = raw_grad(p)
            if g is not None:
                d.after_step[id(p)] = (weakref.ref(g), g._version)


def before_backward(d, leaves, site) -> None:
    for p in leaves:
        key = id(p)
        g = raw_grad(p)
        entry = d.pending.get(key)
        if entry is not None and (g is None or entry[0]() is not g or g._version != entry[1]):
            del d.pending[key]  # cleared (or rewritten) since that backward
            entry = None
        stepped = d.after_step.get(key)
        if entry is None and stepped is not None and g is not None and stepped[0]() is g and g._version == stepped[1]:
            d.pending[key] = [stepped[0], g._version, site]


def after_backward(d, leaves) -> None:
    for p in leaves:
        entry = d.pending.get(id(p))
        if entry is not None:
            g = raw_grad(p)
            if g is not None and entry[0]() is g:
                entry[1] = g._version
            else:
                del d.pending[id(p)]


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
