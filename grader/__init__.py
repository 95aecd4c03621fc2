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
from .draw import draw
from .labs import depth_lab, memory_bill_lab, neuron_lab
from .learner import check, mark_passed, predict, reset, reveal, status
from .stepper import stepper, trace_backward
from .widgets import course_map, unit_panel

__all__ = ["predict", "reveal", "check", "mark_passed", "reset", "status",
           "draw", "stepper", "trace_backward", "unit_panel", "course_map",
           "neuron_lab", "memory_bill_lab", "depth_lab"]
__version__ = "0.1.0"
