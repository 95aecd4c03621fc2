"""autograd-lab's grader: live-truth questions about PyTorch autograd.

In a notebook::

    from grader import predict, reveal, check, mark_passed

    predict("01.pow-node", "PowBackward0")   # lock in a prediction
    ...                                        # run the experiment yourself
    reveal("01.pow-node")                      # torch's live answer beside yours
    check("01.graph-walk", graph_nodes)        # exercises and self-test
    mark_passed("01")
"""
from .learner import check, mark_passed, predict, reset, reveal, status

__all__ = ["predict", "reveal", "check", "mark_passed", "reset", "status"]
__version__ = "0.1.0"
