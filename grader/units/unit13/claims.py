"""Unit 13's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim
from grader.units.unit13.support import graphs_with_hook, graphs_with_retain_grad, kept_by_compile


def _pure_double(g):
    return g * 2


def _pure_shift(g):
    return g + 1


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
        graphs = graphs_with_hook(hook, x)
        ran = torch.allclose(x.grad, _eager_grad(hook, x))  # the hook's effect on the gradient is there
        yield Trial(f"hook {label}: {graphs} graph(s)", condition=pure, holds=graphs == 1 and ran)


_ONE_OP = ("x * 2", "x.sin()", "x + 1", "x.exp()")
_MORE_OPS = ("x.sin() * 2", "x.sin().cos() * 2", "(x + 1).exp()")


@claim(
    "13.retain-grad-after-one-op",
    sentence="Here a single op comes before it, and Dynamo compiles no graph for the frame at all and runs it "
    "eagerly, so `h.grad` is still filled in",
    holds_when="exactly one op makes h before h.retain_grad(); with two or more ops before it (x.sin() * 2) "
    "Dynamo compiles them into a graph",
)
def retain_grad_after_one_op():
    for index, prefix in enumerate(_ONE_OP + _MORE_OPS):
        torch.manual_seed(index)
        graphs, h_grad = graphs_with_retain_grad(prefix, torch.randn(2 + index, requires_grad=True))
        yield Trial(
            f"h = {prefix}: {graphs} graph(s)", condition=prefix in _ONE_OP, holds=graphs == 0 and h_grad is not None
        )


_READ_OWN_OUTPUT = ("exp", "tanh", "sigmoid")
_BEFORE = ("", ".sin()", ".cos()", " * 2")
_AFTER = ("", ".sin()", " * 3")


@claim(
    "13.partitioner-keeps-self-read-outputs",
    sentence="where a pointwise op's backward reads its own output (`exp`, `tanh`, `sigmoid`), the partitioner "
    "keeps that output rather than recomputing it",
)
def partitioner_keeps_self_read_outputs():
    for seed in range(5):
        rng = random.Random(seed)
        op, before, after = rng.choice(_READ_OWN_OUTPUT), rng.choice(_BEFORE), rng.choice(_AFTER)
        source = f"(((x @ w){before}).{op}(){after}).sum()"
        f = eval(f"lambda x, w: {source}")  # a program of the family, written out so the label can show it
        n, k, m = rng.randint(2, 5), rng.randint(2, 6), rng.randint(2, 4)
        kept = kept_by_compile(f, torch.randn(n, k), torch.randn(k, m, requires_grad=True))
        yield Trial(f"seed {seed}: {source} keeps {kept}", condition=True, holds=op in kept)


_KEEP_THEIR_INPUT = ("t.sin()", "t.cos()", "t * t", "t ** 3")


@claim(
    "13.compiled-keeps-version-checks",
    sentence="Compiling changes *what* is kept, never whether a kept tensor is checked.",
)
def compiled_keeps_version_checks():
    import torch._dynamo

    from grader.units.unit13.support import quiet_dynamo

    for index, source in enumerate(_KEEP_THEIR_INPUT):
        f = eval(f"lambda t: {source}")  # a program whose compiled forward keeps its input t
        torch.manual_seed(index)
        b = torch.randn(2 + index, requires_grad=True) * 1
        torch._dynamo.reset()
        with quiet_dynamo():
            y = torch.compile(f, backend="aot_eager")(b)
            b.add_(1)
            try:
                y.sum().backward()
                raised = False
            except RuntimeError as exc:
                raised = "inplace" in str(exc)
        torch._dynamo.reset()
        yield Trial(f"compiled {source}, its input written after the call", condition=True, holds=raised)
