"""Unit 03's shortcuts: a non-finite watch that tests a summary of the gradient, or edits it; three ways read
without doing them."""

import torch

from tests.shortcuts._around import graders_answer


def _watch(bad):
    def make_watch():
        state = {"calls": 0, "first": None}

        def hook(g):
            if state["first"] is None and bad(g):
                state["first"] = state["calls"]
            state["calls"] += 1

        return hook, lambda: state["first"]

    return make_watch


watch_sum = _watch(lambda g: not bool(torch.isfinite(g.sum())))
watch_sum.__name__ = "watch_sum"
watch_sum.__doc__ = "[heuristic] Tests g.sum() for a NaN or an infinity: one number, cheap, and it overflows."
watch_norm = _watch(lambda g: not bool(torch.isfinite(g.norm())))
watch_norm.__name__ = "watch_norm"
watch_norm.__doc__ = "[heuristic] Tests the gradient's norm: overflows where every entry is finite."
watch_threshold = _watch(lambda g: bool(g.abs().max() > 1e30) or not bool(torch.isfinite(g).all()))
watch_threshold.__name__ = "watch_threshold"
watch_threshold.__doc__ = "[heuristic] Calls any gradient above 1e30 infinite, 'as good as'."
watch_nan_only = _watch(lambda g: bool(torch.isnan(g).any()))
watch_nan_only.__name__ = "watch_nan_only"
watch_nan_only.__doc__ = "[heuristic] isnan only: the infinities pass."


def watch_returns_g():
    """[heuristic] A correct test, but the hook returns g: 'it is the same tensor, so nothing changes'."""
    state = {"calls": 0, "first": None}

    def hook(g):
        if state["first"] is None and not bool(torch.isfinite(g).all()):
            state["first"] = state["calls"]
        state["calls"] += 1
        return g

    return hook, lambda: state["first"]


def three_ways_one_build(build):
    """[heuristic] All three ways on one build: the second backward finds the graph freed, or the grads added."""
    out, t, named = build()
    seen = []
    t.register_hook(lambda g: seen.append(g.detach().clone()))
    t.retain_grad()
    (g,) = torch.autograd.grad(out, t, retain_graph=True)
    out.backward()
    names = [n for n, v in named.items() if v.grad is not None]
    return {"hook": (seen[0], names), "retain_grad": (t.grad, names), "autograd.grad": (g, names)}


def three_ways_names_by_flag(build):
    """[heuristic] The gradient is right; names = every leaf that requires grad, reached or not."""
    out, t, named = build()
    (g,) = torch.autograd.grad(out, t)
    leaves = [n for n, v in named.items() if v.is_leaf and v.requires_grad]
    return {
        "hook": (g, leaves),
        "retain_grad": (g, leaves + [n for n in named if named[n] is t]),
        "autograd.grad": (g, []),
    }


SHORTCUTS = {
    "03.nonfinite-watch": [watch_sum, watch_norm, watch_threshold, watch_nan_only, watch_returns_g],
    "03.three-ways": [three_ways_one_build, three_ways_names_by_flag],
}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


def three_ways_from_the_grader(build):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack, rebuilt as the dict asked
    for; build() is called three times so that the count of builds is right."""
    truth = graders_answer()
    _, t, _ = build()
    build(), build()
    return {way.way: (torch.tensor(way.grad, dtype=t.dtype).view(t.shape), set(way.stored)) for way in truth}


def watch_from_the_grader():
    """[stack] A hook that does nothing and a report() that returns what the grader's own run of the case,
    q.run(case), reported."""
    truth = graders_answer()
    return (lambda g: None), (lambda: truth.reported)


OPEN = {"03.three-ways": [three_ways_from_the_grader], "03.nonfinite-watch": [watch_from_the_grader]}
