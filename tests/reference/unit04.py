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


# --- 04.repair-frozen-loop --------------------------------------------------------------------

def train(x, target, w1, w2, lr, steps, feature_log):
    for step in range(steps):
        f = w1 * x
        feature_log.append(f.detach())
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                p -= lr * p.grad
                p.grad.zero_()


def train_as_found(x, target, w1, w2, lr, steps, feature_log):
    for step in range(steps):
        f = (w1 * x).detach()
        feature_log.append(f)
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                if p.grad is not None:
                    p -= lr * p.grad
                    p.grad.zero_()


def train_logging_the_graph(x, target, w1, w2, lr, steps, feature_log):
    for step in range(steps):
        f = w1 * x
        feature_log.append(f)
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                p -= lr * p.grad
                p.grad.zero_()


def train_rebinding_the_parameters(x, target, w1, w2, lr, steps, feature_log):
    for step in range(steps):
        f = w1 * x
        feature_log.append(f.detach())
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w1 = (w1 - lr * w1.grad).requires_grad_()
            w2 = (w2 - lr * w2.grad).requires_grad_()


def train_without_zeroing(x, target, w1, w2, lr, steps, feature_log):
    for step in range(steps):
        f = w1 * x
        feature_log.append(f.detach())
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                p -= lr * p.grad


def train_with_requires_grad_patch(x, target, w1, w2, lr, steps, feature_log):
    for step in range(steps):
        f = (w1 * x).detach()
        feature_log.append(f)
        f.requires_grad_(True)
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                if p.grad is not None:
                    p -= lr * p.grad
                    p.grad.zero_()


# --- 04.why-grad-none -------------------------------------------------------------------------

def _cut_of(line):
    if "no_grad" in line:
        return "no_grad region"
    if ".detach(" in line:
        return "detached"
    return "left via .item()"


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
        return "backward not run"
    return _cut_of(first_broken_edge(trace, name).line)


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
    return _cut_of(edge.line) if edge is not None else "detached"


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
    return "detached"        # no_grad and detach both "turn gradients off"


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
    for s in trace:           # the first suspicious line anywhere, used or not
        if "no_grad" in s.line or ".detach(" in s.line or ".item(" in s.line or ".tolist(" in s.line:
            return _cut_of(s.line)
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
    return _cut_of(edge.line)


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
    return _cut_of(edge.line) if edge is not None else "never entered"


REFERENCE = {
    "04.reachable-leaves": reachable_leaves,
    "04.first-broken-edge": first_broken_edge,
    "04.repair-frozen-loop": train,
    "04.why-grad-none": why_grad_none,
}

BUGGY = {
    "04.reachable-leaves": [leaves_one_level_only, leaves_seen_by_class_name, leaves_without_seen_set,
                            leaves_assuming_a_graph, leaves_stopping_at_the_first],
    "04.first-broken-edge": [edge_by_requires_grad, edge_forward_only, edge_one_step_early, edge_at_the_loss,
                             edge_first_unreached_step],
    "04.repair-frozen-loop": [train_as_found, train_logging_the_graph, train_rebinding_the_parameters,
                              train_without_zeroing, train_with_requires_grad_patch],
    "04.why-grad-none": [why_always_never_entered, why_without_rebinding, why_detached_same_as_no_grad,
                         why_by_searching_the_source, why_reachability_before_leaf, why_backward_by_text],
}
