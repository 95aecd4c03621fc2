"""Unit 06's shortcuts: the gradients the exercises ask of torch.autograd.grad taken from torch.func, or from finite
differences, instead (the buggy implementations hold them; the corpus names their family)."""

from tests.reference import unit06 as ref


def one_call_by_jacrev(forward, w, way):
    """[wrapper] torch.func.jacrev for the 'one_call' way: no torch.autograd.grad call at all."""
    return ref.one_call_by_jacrev(forward, w, way)


def one_call_by_captured_jacrev(forward, w, way):
    """[wrapper] The same, through a jacrev captured before the check."""
    return ref.one_call_by_captured_jacrev(forward, w, way)


def one_call_that_is_two_calls(forward, w, way):
    """[heuristic] Two autograd.grad calls where one batched call is asked for."""
    return ref.one_call_that_is_two_calls(forward, w, way)


def hvp_by_torch_func(f, x, v):
    """[wrapper] Forward-over-reverse with torch.func, copied from the cell above the exercise."""
    return ref.hvp_by_torch_func(f, x, v)


def hvp_by_captured_torch_func(f, x, v):
    """[wrapper] The same, through functions captured before the check."""
    return ref.hvp_by_captured_torch_func(f, x, v)


def hvp_by_finite_differences(f, x, v):
    """[heuristic] Central finite differences of the gradient: numbers close enough, no graph differentiated."""
    return ref.hvp_by_finite_differences(f, x, v)


SHORTCUTS = {
    "06.two-losses": [one_call_by_jacrev, one_call_by_captured_jacrev, one_call_that_is_two_calls],
    "06.hvp": [hvp_by_torch_func, hvp_by_captured_torch_func, hvp_by_finite_differences],
}
