"""Unit 04's exercises: known-good implementations written the way a learner would, and plausible bugs."""

import torch

# --- 04.reachable-leaves ----------------------------------------------------------------------


def reachable_leaves(loss):
    found, seen, stack = [], set(), [loss.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if hasattr(fn, "variable"):
            found.append(fn.variable)
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return found


def leaves_one_level_only(loss):
    if loss.grad_fn is None:
        return []
    return [fn.variable for fn, _ in loss.grad_fn.next_functions if fn is not None and hasattr(fn, "variable")]


def leaves_seen_by_class_name(loss):
    found, seen, stack = [], set(), [loss.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or type(fn).__name__ in seen:
            continue
        seen.add(type(fn).__name__)
        if hasattr(fn, "variable"):
            found.append(fn.variable)
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return found


def leaves_without_seen_set(loss):
    found, stack = [], [loss.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None:
            continue
        if hasattr(fn, "variable"):
            found.append(fn.variable)
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return found


def leaves_assuming_a_graph(loss):
    found, seen, stack = [], set(), [nxt for nxt, _ in loss.grad_fn.next_functions]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if hasattr(fn, "variable"):
            found.append(fn.variable)
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return found


def leaves_stopping_at_the_first(loss):
    stack, seen = [loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if hasattr(fn, "variable"):
            return [fn.variable]
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return []


# --- 04.first-broken-edge ---------------------------------------------------------------------


def _reaches(t, param):
    if not isinstance(t, torch.Tensor):
        return False
    return t is param or any(leaf is param for leaf in reachable_leaves(t))


def first_broken_edge(trace, name):
    steps = list(trace)
    at_loss = max(i for i, s in enumerate(steps) if s.name == "loss")
    start = max(i for i, s in enumerate(steps[: at_loss + 1]) if s.name == name)  # the binding the loss used
    param = steps[start].tensor
    if _reaches(trace.loss, param):
        return None
    carries = {name}
    for s in steps[start:]:
        if s.name is not None and carries & set(s.inputs):
            carries.add(s.name)
    feeds = {"loss"}
    for s in reversed(steps[: at_loss + 1]):
        if s.name in feeds:
            feeds.update(s.inputs)
    for s in steps[start:]:
        if s.name in carries and s.name in feeds and not _reaches(s.tensor, param):
            return s
    return None


def edge_ignoring_the_route(trace, name):
    """Issue 29: the first step computed from the parameter that has lost it, whether or not the loss uses it."""
    param = next(s.tensor for s in trace if s.name == name)
    if _reaches(trace.loss, param):
        return None
    carries = {name}
    for s in trace:
        if s.name is not None and carries & set(s.inputs):
            carries.add(s.name)
            if s.name != name and not _reaches(s.tensor, param):
                return s
    return None


def edge_by_requires_grad(trace, name):
    """Follows the routes, but watches requires_grad instead of asking whether the record leads back."""
    param = next(s.tensor for s in trace if s.name == name)
    if _reaches(trace.loss, param):
        return None
    carries = {name}
    for s in trace:
        if s.name is not None and carries & set(s.inputs):
            carries.add(s.name)
    feeds = {"loss"}
    for s in reversed(trace.steps):
        if s.name in feeds:
            feeds.update(s.inputs)
    for s in trace:
        if s.name in carries and s.name in feeds:
            if not isinstance(s.tensor, torch.Tensor) or not s.tensor.requires_grad:
                return s
    return None


def edge_forward_only(trace, name):
    """Never asks whether the loss uses the value, or whether the loss reaches the parameter at all."""
    param = next(s.tensor for s in trace if s.name == name)
    carries = {name}
    for s in trace:
        if s.name is not None and carries & set(s.inputs):
            carries.add(s.name)
            if not _reaches(s.tensor, param):
                return s
    return None


def edge_one_step_early(trace, name):
    """Returns the last step that still reached the parameter."""
    edge = first_broken_edge(trace, name)
    if edge is None:
        return None
    steps = list(trace)
    return steps[steps.index(edge) - 1]


def edge_at_the_loss(trace, name):
    """Reports the line where the missing gradient shows, not where the record stopped."""
    param = next(s.tensor for s in trace if s.name == name)
    if _reaches(trace.loss, param):
        return None
    return next(s for s in reversed(trace.steps) if s.name == "loss")


def edge_first_unreached_step(trace, name):
    """Forgets that the step must carry the parameter's value."""
    param = next(s.tensor for s in trace if s.name == name)
    if _reaches(trace.loss, param):
        return None
    for s in trace:
        if s.name is not None and not _reaches(s.tensor, param):
            return s
    return None


REFERENCE = {
    "04.reachable-leaves": reachable_leaves,
    "04.first-broken-edge": first_broken_edge,
}

BUGGY = {
    "04.reachable-leaves": [
        leaves_one_level_only,
        leaves_seen_by_class_name,
        leaves_without_seen_set,
        leaves_assuming_a_graph,
        leaves_stopping_at_the_first,
    ],
    "04.first-broken-edge": [
        edge_ignoring_the_route,
        edge_by_requires_grad,
        edge_forward_only,
        edge_one_step_early,
        edge_at_the_loss,
        edge_first_unreached_step,
    ],
}
