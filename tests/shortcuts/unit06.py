"""Unit 06's shortcuts: the gradients asked of autograd.grad taken from torch.func or finite differences
instead (each already among the buggy implementations: the corpus names their family)."""

from tests.reference.unit06 import (
    hvp_by_captured_torch_func,
    hvp_by_finite_differences,
    hvp_by_torch_func,
    one_call_by_captured_jacrev,
    one_call_by_jacrev,
    one_call_that_is_two_calls,
)

SHORTCUTS = {
    "06.two-losses": [one_call_by_jacrev, one_call_by_captured_jacrev, one_call_that_is_two_calls],
    "06.hvp": [hvp_by_torch_func, hvp_by_captured_torch_func, hvp_by_finite_differences],
}
