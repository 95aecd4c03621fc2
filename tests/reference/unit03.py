"""Unit 03's exercises: known-good implementations, written as a learner would, and plausible bugs."""

import torch

# --- 03.nonfinite-watch --------------------------------------------------------------------


def make_watch():
    state = {"step": 0, "first": None}

    def hook(g):
        if state["first"] is None and not torch.isfinite(g).all():
            state["first"] = state["step"]
        state["step"] += 1

    def report():
        return state["first"]

    return hook, report


def watch_nan_only():
    """Looks for NaN and forgets the infinities."""
    state = {"step": 0, "first": None}

    def hook(g):
        if state["first"] is None and torch.isnan(g).any():
            state["first"] = state["step"]
        state["step"] += 1

    return hook, lambda: state["first"]


def watch_last_bad_step():
    """Overwrites the step at every bad gradient, so it reports the last one."""
    state = {"step": 0, "bad": None}

    def hook(g):
        if not torch.isfinite(g).all():
            state["bad"] = state["step"]
        state["step"] += 1

    return hook, lambda: state["bad"]


def watch_that_cleans():
    """Means well: records the step, then hands back a cleaned gradient, which replaces the real one."""
    state = {"step": 0, "first": None}

    def hook(g):
        if state["first"] is None and not torch.isfinite(g).all():
            state["first"] = state["step"]
        state["step"] += 1
        return torch.nan_to_num(g)

    return hook, lambda: state["first"]


def watch_chatty():
    """Prints the gradient's size at every step, so it is never silent."""
    state = {"step": 0, "first": None}

    def hook(g):
        print(f"step {state['step']}: |g| = {g.abs().max().item():.3g}")
        if state["first"] is None and not torch.isfinite(g).all():
            state["first"] = state["step"]
        state["step"] += 1

    return hook, lambda: state["first"]


def watch_counts_from_one():
    """Counts the first step as step 1."""
    state = {"step": 0, "first": None}

    def hook(g):
        state["step"] += 1
        if state["first"] is None and not torch.isfinite(g).all():
            state["first"] = state["step"]

    return hook, lambda: state["first"]


def watch_big_is_bad():
    """Treats any very large gradient as the fault: large but finite is still finite."""
    state = {"step": 0, "first": None}

    def hook(g):
        bad = torch.isnan(g).any() or g.abs().max() > 1e9
        if state["first"] is None and bad:
            state["first"] = state["step"]
        state["step"] += 1

    return hook, lambda: state["first"]


# --- 03.three-ways --------------------------------------------------------------------------


def _set_grads(named):
    return {name for name, t in named.items() if t.grad is not None}


def three_ways(build):
    result = {}

    out, t, named = build()
    seen = []
    t.register_hook(lambda g: seen.append(g))
    out.backward()
    result["hook"] = (seen[0], _set_grads(named))

    out, t, named = build()
    t.retain_grad()
    out.backward()
    result["retain_grad"] = (t.grad, _set_grads(named))

    out, t, named = build()
    (g,) = torch.autograd.grad(out, t)
    result["autograd.grad"] = (g, _set_grads(named))
    return result


def three_ways_one_graph(build):
    """Builds once and reuses the graph, so each way inherits the .grad fields the previous one set."""
    out, t, named = build()
    result = {}
    seen = []
    handle = t.register_hook(lambda g: seen.append(g))
    out.backward(retain_graph=True)
    handle.remove()
    result["hook"] = (seen[0], _set_grads(named))
    t.retain_grad()
    out.backward(retain_graph=True)
    result["retain_grad"] = (t.grad, _set_grads(named))
    (g,) = torch.autograd.grad(out, t)
    result["autograd.grad"] = (g, _set_grads(named))
    return result


def three_ways_retain_too_late(build):
    """Calls retain_grad() after backward, when the gradient has already passed."""
    result = three_ways(build)
    out, t, named = build()
    out.backward()
    t.retain_grad()
    result["retain_grad"] = (t.grad, _set_grads(named))
    return result


def three_ways_requires_grad(build):
    """Names what requires grad instead of what holds a .grad."""
    result = three_ways(build)
    return {way: (g, {n for n, t in build()[2].items() if t.requires_grad}) for way, (g, _) in result.items()}


def three_ways_hook_reads_field(build):
    """Registers a hook but then reads t.grad, as if the hook had stored the gradient there."""
    result = three_ways(build)
    out, t, named = build()
    t.register_hook(lambda g: None)
    out.backward()
    result["hook"] = (t.grad, _set_grads(named))
    return result


def three_ways_belt_and_braces(build):
    """Calls out.backward() after autograd.grad 'to be safe', which fills the leaves' .grad after all."""
    result = three_ways(build)
    out, t, named = build()
    (g,) = torch.autograd.grad(out, t, retain_graph=True)
    out.backward()
    result["autograd.grad"] = (g, _set_grads(named))
    return result


REFERENCE = {
    "03.nonfinite-watch": make_watch,
    "03.three-ways": three_ways,
}

BUGGY = {
    "03.nonfinite-watch": [
        watch_nan_only,
        watch_last_bad_step,
        watch_that_cleans,
        watch_chatty,
        watch_counts_from_one,
        watch_big_is_bad,
    ],
    "03.three-ways": [
        three_ways_one_graph,
        three_ways_retain_too_late,
        three_ways_requires_grad,
        three_ways_hook_reads_field,
        three_ways_belt_and_braces,
    ],
}
