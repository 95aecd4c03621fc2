"""The non-leaf ``.grad`` read (unit 03): seen directly, through a ``.grad`` property on ``torch.Tensor`` that
reads torch's own attribute, even when the program silences warnings; torch's warning is given again from
the learner's line. The same property tells :mod:`.intent` which leaves' gradients the program reads (an
input whose gradient it uses is no unregistered parameter), and :mod:`.accumulated` which gradients of
leaves no optimizer holds a hand-written update may apply. An optimizer that refuses a non-leaf ("can't
optimize a non-leaf Tensor") is the same mistake, read from the program's error."""

from __future__ import annotations

import warnings

import torch

from grader import probes
from grader.probes.doctor import intent
from grader.probes.doctor.findings import Mechanism
from grader.probes.doctor.frames import outside_doctor

_BASE = torch._C.TensorBase.__dict__["grad"]


def raw_grad(t):
    """``t.grad`` as torch stores it, past the doctor's property."""
    return _BASE.__get__(t)


def install(d, on_leaf_grad):
    """Put the property on torch.Tensor; returns the undo. ``on_leaf_grad(d, leaf, grad)`` is told of each
    read of a gradient of a leaf that no optimizer held at a step (:func:`.accumulated.note_read`)."""

    def read(t):
        if t.is_leaf or t.retains_grad or not t.requires_grad:
            value = _BASE.__get__(t)
            if t.is_leaf and t.requires_grad:
                if type(t) is torch.Tensor:
                    d.guarded(intent.note_read, d, t)
                if value is not None and id(t) not in d.held:  # a gradient a hand-written update may apply
                    d.guarded(on_leaf_grad, d, t, value)
            return value
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


def on_program_error(d, exc):
    """The error the program stopped with: an optimizer given a tensor that is not a leaf."""
    if isinstance(exc, ValueError) and "can't optimize a non-leaf Tensor" in str(exc):
        line = d.traceback_line(exc)
        d.add(
            ("nonleaf-optimizer", line),
            Mechanism.NONLEAF_GRAD,
            line,
            "an optimizer was given a tensor that is not a leaf (an operation made it, after it was set to require "
            "grad: .to(), .cuda(), arithmetic): backward fills .grad only on leaves, so the optimizer refuses it",
            "make the tensor where it will live and then set requires_grad (torch.randn(..., device=d).requires_grad_()), "
            "or pass the leaf itself to the optimizer",
        )
