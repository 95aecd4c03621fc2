"""The candidate causes that error questions offer, each with torch's own mark of it.

An error question grades the place and the mechanism, chosen from a few of these (each one a mistake
learners make about that program). Which candidate is right is never declared: it is the one whose
error type and message fragment torch's live outcome carries (``engine.kinds.Error.cause_of``).
"""

from grader.engine.kinds import Cause

NOT_SCALAR = Cause(
    "not scalar",
    "backward() with no argument can seed only an output holding a single number",
    "RuntimeError",
    "grad can be implicitly created only for scalar outputs",
)
NO_GRAD_FN = Cause(
    "no history",
    "the tensor backward starts from has no grad_fn: nothing on its way to it required grad",
    "RuntimeError",
    "does not require grad and does not have a grad_fn",
)
FREED = Cause(
    "freed",
    "a node's saved values were already released by an earlier backward pass",
    "RuntimeError",
    "Trying to backward through the graph a second time",
)
STALE = Cause(
    "stale",
    "a tensor a node saved was written in place after it was saved",
    "RuntimeError",
    "has been modified by an inplace operation",
)
LEAF_WRITE = Cause(
    "leaf write",
    "an in-place write to a leaf that requires grad",
    "RuntimeError",
    "a leaf Variable that requires grad is being used in an in-place operation",
)
INFERENCE = Cause(
    "inference tensor",
    "a tensor made under inference mode would have to be saved for backward",
    "RuntimeError",
    "Inference tensors cannot be saved for backward",
)
UNUSED = Cause(
    "unused",
    "an input asked for has no path to the output in this graph",
    "RuntimeError",
    "appears to not have been used in the graph",
)
INPUT_NO_GRAD = Cause(
    "input without grad",
    "an input asked for does not require grad",
    "RuntimeError",
    "One of the differentiated Tensors does not require grad",
)

HOOKED_VIEW_WRITE = Cause(
    "hooked output written",
    "an in-place operation on an output that a module's full backward hook handed on as a view",
    "RuntimeError",
    "is a view and is being modified inplace",
)

PASS_TWICE = (STALE, FREED, NO_GRAD_FN)  # a second pass through a graph: freed, or something else?
WRITE_SEEN = (FREED, STALE, LEAF_WRITE)  # an in-place write somewhere: which refusal?
