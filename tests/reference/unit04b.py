"""Unit 04b's exercise: a known-good why_grad_none written the way a learner would (on top of their unit 04
functions), and plausible bugs."""

from tests.reference.unit04 import first_broken_edge, reachable_leaves

# --- 04b.why-grad-none -------------------------------------------------------------------------


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


def _used(trace, name):
    """The tensor the name held when the loss was computed: its last binding before the loss's statement."""
    steps = list(trace)
    at = max(i for i, s in enumerate(steps) if s.name == "loss")
    return [s.tensor for s in steps[: at + 1] if s.name == name][-1]


def why_grad_none(trace, name):
    t = trace.names[name]
    used = _used(trace, name)
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
    if t is not _used(trace, name):
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
    if t is not _used(trace, name):
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
    if t is not _used(trace, name):
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
    if t is not _used(trace, name):
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
    if t is not _used(trace, name):
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
    if t is not _used(trace, name):
        return "rebound name"
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    edge = first_broken_edge(trace, name)
    return _cut_of(edge) if edge is not None else "never entered"


REFERENCE = {"04b.why-grad-none": why_grad_none}

BUGGY = {
    "04b.why-grad-none": [
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
