"""Unit 13's general rules, each checked on generated programs (see grader.engine.claims)."""

import torch

from grader.engine.claims import Trial, claim
from grader.units.unit13.support import counting_backend, quiet_dynamo


def _pure_double(g):
    return g * 2


def _pure_shift(g):
    return g + 1


def _compiled(hook, x: torch.Tensor) -> int:
    """Graphs Dynamo makes for f(x) = sum(h * h), h = x * 2 with ``hook`` registered on h; backward is run."""
    import torch._dynamo

    graphs: list = []

    def f(x):
        h = x * 2
        h.register_hook(hook)
        return (h * h).sum()

    torch._dynamo.reset()
    with quiet_dynamo():
        torch.compile(f, backend=counting_backend(graphs))(x).backward()
    torch._dynamo.reset()
    return len(graphs)


def _eager_grad(hook, x: torch.Tensor) -> torch.Tensor:
    x = x.detach().requires_grad_()
    h = x * 2
    h.register_hook(hook)
    (h * h).sum().backward()
    return x.grad


@claim(
    "13.pure-hooks-are-traced",
    sentence="On this torch (2.13) Dynamo traces a hook with no Python side effects into the graph (one graph, and "
    "the hook still runs at backward); a hook with a side effect, such as appending to a list, breaks the graph",
    holds_when="the hook has no Python side effects (it only computes a new gradient); one that appends to a "
    "list or counts its calls in a dict makes Dynamo break the graph",
)
def pure_hooks_are_traced():
    seen: list = []
    calls: dict = {"n": 0}

    def appends(g):
        seen.append(g)

    def counts(g):
        calls["n"] += 1

    for index, (label, hook, pure) in enumerate(
        [
            ("g * 2", _pure_double, True),
            ("g + 1", _pure_shift, True),
            ("seen.append(g)", appends, False),
            ("calls['n'] += 1", counts, False),
        ]
    ):
        torch.manual_seed(index)
        x = torch.randn(3 + index, requires_grad=True)
        graphs = _compiled(hook, x)
        ran = torch.allclose(x.grad, _eager_grad(hook, x))  # the hook's effect on the gradient is there
        yield Trial(f"hook {label}: {graphs} graph(s)", condition=pure, holds=graphs == 1 and ran)
