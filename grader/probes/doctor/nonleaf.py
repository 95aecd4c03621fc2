"""The non-leaf ``.grad`` read (unit 03): seen directly, through a ``.grad`` property on ``torch.Tensor`` that
reads torch's own attribute, even when the program silences warnings; torch's warning is given again from
the learner's line."""

from __future__ import annotations

import warnings

import torch

from grader import probes
from grader.probes.doctor.findings import Mechanism
from grader.probes.doctor.frames import outside_doctor

_BASE = torch._C.TensorBase.__dict__["grad"]


def raw_grad(t):
    """``t.grad`` as torch stores it, past the doctor's property."""
    return _BASE.__get__(t)


def install(d):
    """Put the property on torch.Tensor; returns the undo."""

    def read(t):
        if t.is_leaf or t.retains_grad or not t.requires_grad:
            return _BASE.__get__(t)
        # torch warns here, from inside this frame; take its warning and give it again from the
        # learner's line, where it would have pointed without the doctor
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = _BASE.__get__(t)
        if value is None:
            d.guarded(
                d.add,
                ("nonleaf", d.line()),
                Mechanism.NONLEAF_GRAD,
                d.line(),
                f".grad was read on a non-leaf tensor (made by {probes.node_name(t.grad_fn)}); backward "
                "fills .grad only on leaves, so it reads None",
                "read .grad on the leaf (the parameter or input you created), or call .retain_grad() on "
                "this tensor before backward",
            )
        for w in caught:
            filename, lineno, registry = outside_doctor()
            warnings.warn_explicit(w.message, w.category, filename, lineno, registry=registry)
        return value

    torch.Tensor.grad = property(read, _BASE.__set__, _BASE.__delete__, _BASE.__doc__)  # type: ignore[assignment]
    return lambda: delattr(torch.Tensor, "grad")


def on_warning(d, message: str):
    """torch's own warning about a non-leaf .grad read, where the program let it through."""
    if "not a leaf Tensor is being accessed" in message:
        line = d.line()
        d.add(
            ("nonleaf", line),
            Mechanism.NONLEAF_GRAD,
            line,
            "torch warned: the .grad attribute of a non-leaf tensor was accessed (it stays None)",
            "read .grad on the leaf, or call .retain_grad() on this tensor before backward",
        )
