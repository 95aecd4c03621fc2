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


# --- 04.why-grad-none -------------------------------------------------------------------------


def _cut_of(step):
    line = step.line
    if "no_grad" in line:
        return "no_grad region"
    if "inference_mode" in line:
        return "inference_mode region"
    if ".detach(" in line:
        return "detached"
    if ".item(" in line or ".tolist(" in line:
        return "left via .item()"
    return "non-differentiable op"  # argmax, a comparison, an integer cast: no grad_fn, no error


def _had_grad(trace, name):
    """Did name's tensor hold a .grad at some step after it was bound? (then backward ran)"""
    return any(name in s.grad_names for s in trace)


def why_grad_none(trace, name):
    t = trace.names[name]
    used = next(s.tensor for s in trace if s.name == name)
    if t is not used:
        return "rebound name"
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    if any(leaf is t for leaf in reachable_leaves(trace.loss)):
        return "cleared after backward" if _had_grad(trace, name) else "backward not run"
    return _cut_of(first_broken_edge(trace, name))


def why_zero_grad_read_as_no_backward(trace, name):
    """The old procedure: a whole record means backward did not run, even when zero_grad() ran after it."""
    t = trace.names[name]
    if t is not next(s.tensor for s in trace if s.name == name):
        return "rebound name"
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    if any(leaf is t for leaf in reachable_leaves(trace.loss)):
        return "backward not run"
    return _cut_of(first_broken_edge(trace, name))


def why_cleared_by_text(trace, name):
    """Any zero_grad() or '.grad = None' in the source is taken as the cause, wherever it stands."""
    t = trace.names[name]
    if t is not next(s.tensor for s in trace if s.name == name):
        return "rebound name"
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    if any(leaf is t for leaf in reachable_leaves(trace.loss)):
        if any("zero_grad" in s.line or ".grad = None" in s.line for s in trace):
            return "cleared after backward"
        return "backward not run"
    return _cut_of(first_broken_edge(trace, name))


def why_inference_is_no_grad(trace, name):
    """inference_mode taken for a kind of no_grad."""
    answer = why_grad_none(trace, name)
    return "no_grad region" if answer == "inference_mode region" else answer


def why_quiet_break_missed(trace, name):
    """Only the loud cuts are known; anything else on the path is put down to .item()."""
    answer = why_grad_none(trace, name)
    return "left via .item()" if answer == "non-differentiable op" else answer


def why_always_never_entered(trace, name):
    return "never entered"


def why_without_rebinding(trace, name):
    t = trace.names[name]
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    if any(leaf is t for leaf in reachable_leaves(trace.loss)):
        return "backward not run"
    edge = first_broken_edge(trace, name)
    return _cut_of(edge) if edge is not None else "detached"


def why_detached_same_as_no_grad(trace, name):
    t = trace.names[name]
    if t is not next(s.tensor for s in trace if s.name == name):
        return "rebound name"
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    if any(leaf is t for leaf in reachable_leaves(trace.loss)):
        return "backward not run"
    edge = first_broken_edge(trace, name)
    if ".item(" in edge.line or ".tolist(" in edge.line:
        return "left via .item()"
    return "detached"  # no_grad and detach both "turn gradients off"


def why_by_searching_the_source(trace, name):
    t = trace.names[name]
    if t is not next(s.tensor for s in trace if s.name == name):
        return "rebound name"
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    if any(leaf is t for leaf in reachable_leaves(trace.loss)):
        return "backward not run"
    for s in trace:  # the first suspicious line anywhere, used or not
        if "no_grad" in s.line or ".detach(" in s.line or ".item(" in s.line or ".tolist(" in s.line:
            return _cut_of(s)
    return "detached"


def why_reachability_before_leaf(trace, name):
    t = trace.names[name]
    if t is not next(s.tensor for s in trace if s.name == name):
        return "rebound name"
    if not t.requires_grad:
        return "never entered"
    if any(leaf is t for leaf in reachable_leaves(trace.loss)):
        return "backward not run"
    edge = first_broken_edge(trace, name)
    if edge is None:
        return "non-leaf not retained"
    return _cut_of(edge)


def why_backward_by_text(trace, name):
    t = trace.names[name]
    if not any("backward" in s.line for s in trace):
        return "backward not run"
    if t is not next(s.tensor for s in trace if s.name == name):
        return "rebound name"
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    edge = first_broken_edge(trace, name)
    return _cut_of(edge) if edge is not None else "never entered"


REFERENCE = {
    "04.reachable-leaves": reachable_leaves,
    "04.first-broken-edge": first_broken_edge,
    "04.why-grad-none": why_grad_none,
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
    "04.why-grad-none": [
        why_always_never_entered,
        why_without_rebinding,
        why_detached_same_as_no_grad,
        why_by_searching_the_source,
        why_reachability_before_leaf,
        why_backward_by_text,
        why_zero_grad_read_as_no_backward,
        why_cleared_by_text,
        why_inference_is_no_grad,
        why_quiet_break_missed,
    ],
}
