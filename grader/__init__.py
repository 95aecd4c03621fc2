"""autograd-lab's grader: live-truth questions about PyTorch autograd.

In a notebook::

    from grader import predict, reveal, check, mark_passed

    predict("01.pow-node", "PowBackward0")   # lock in a prediction (or predict("01.pow-node") for an input)
    ...                                        # run the experiment yourself
    reveal("01.pow-node")                      # torch's live answer beside yours
    check("01.graph-walk", graph_nodes)        # exercises and self-test
    mark_passed("01")                          # or the "Mark passed" button of unit_panel("01")

The interactive layer: ``draw(y, names=...)`` (the graph with its saved tensors),
``stepper(y)`` / ``trace_backward(y)`` (backward node by node), ``unit_panel("01")``,
``course_map()``, and the labs ``neuron_lab``, ``memory_bill_lab``, ``depth_lab``.
"""
import importlib
import warnings

# Deprecation notices that torch raises from its own modules (torch 2.15's torch.func.hessian, via
# torch.jit.script, prints a FutureWarning) say nothing about autograd, yet land on stderr and fail
# strict nbval. Silence only those: FutureWarning and DeprecationWarning whose origin is a torch
# module. A learner's own warnings, and torch's other warnings (UserWarning...), stay visible; a cell
# that records warnings with simplefilter("always") still sees them.
for _category in (FutureWarning, DeprecationWarning):
    warnings.filterwarnings("ignore", category=_category, module=r"torch(\.|$)")
del _category

from .learner import check, hint, mark_passed, predict, reset, reveal, status

# The interactive tools load on first use, so `import grader` costs little beyond `import torch`.
_LAZY = {
    "draw": "drawing", "stepper": "stepping", "trace_backward": "stepping",
    "unit_panel": "widgets", "course_map": "widgets",
    "neuron_lab": "labs", "memory_bill_lab": "labs", "depth_lab": "labs",
}

__all__ = ["predict", "reveal", "check", "mark_passed", "reset", "hint", "status", *_LAZY]
__version__ = "0.1.0"


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'grader' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value
