"""Unit 11's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable

from grader.engine.claims import Trial, claim


def _scaled(c: float, a: float) -> type[Function]:
    """f(x) = c * x, whose backward claims the slope is ``a`` (right when a == c)."""

    class Scaled(Function):
        @staticmethod
        def forward(x):
            return x * c

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            return grad * a

    return Scaled


def _central(fn, x: torch.Tensor, eps: float) -> torch.Tensor:
    """The numerical Jacobian of an elementwise fn, by central differences one input at a time (its diagonal)."""
    out = torch.empty_like(x)
    with torch.no_grad():
        for i in range(x.numel()):
            up, down = x.clone(), x.clone()
            up[i] += eps
            down[i] -= eps
            out[i] = (fn(up)[i] - fn(down)[i]) / (2 * eps)
    return out


@claim(
    "11.gradcheck-tolerance",
    sentence="They agree when `|analytical - numerical| <= atol + rtol * |numerical|` everywhere",
)
def gradcheck_tolerance():
    # the backward's slope a sits on either side of each reading of the rule: |a - c| against rtol * |c|
    # (the numerical slope, what gradcheck uses) and against rtol * |a| (the analytical one, which it does not)
    rtol = 0.1
    for seed in range(8):
        rng = random.Random(seed)
        c = rng.choice([-1, 1]) * rng.uniform(0.5, 4.0)
        factor = (1.095, 1.105, 0.905, 0.895, 1.0, 1.2, 0.8, 1.05)[seed]
        a = c * factor
        x = torch.tensor([rng.uniform(-2, 2) for _ in range(rng.randint(1, 4))], dtype=torch.float64)
        x.requires_grad_()
        fn = _scaled(c, a).apply
        numerical = _central(fn, x.detach(), 1e-6)
        analytical = torch.full_like(numerical, a)
        rule = bool(((analytical - numerical).abs() <= rtol * numerical.abs()).all())
        passed = torch.autograd.gradcheck(fn, (x,), atol=0.0, rtol=rtol, raise_exception=False)
        yield Trial(
            f"seed {seed}: slope {c:.3f}, backward says {a:.3f}, rtol {rtol}", condition=True, holds=rule == passed
        )


def _cube_once() -> type[Function]:
    class CubeOnce(Function):
        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2

    return CubeOnce


def _node_names(fn) -> set[str]:
    names, stack = set(), [fn]
    while stack:
        node = stack.pop()
        if node is not None and type(node).__name__ not in names:
            names.add(type(node).__name__)
            stack.extend(child for child, _ in node.next_functions)
    return names


# what follows the Function, and whether the gradient it sends into the Function's backward needs grad
_AFTER = (
    ("y.sum()", lambda y: y.sum(), False),
    ("(y * 2).sum()", lambda y: (y * 2).sum(), False),
    ("(y + 1).mean()", lambda y: (y + 1).mean(), False),
    ("y.sin().sum()", lambda y: y.sin().sum(), True),
    ("(y * y).sum()", lambda y: (y * y).sum(), True),
    ("y.exp().sum()", lambda y: y.exp().sum(), True),
)


@claim(
    "11.once-diff-plain-result",
    sentence="under `@once_differentiable` the first grad comes back a plain tensor, with no history, when the "
    "gradient coming into the Function's backward needs no grad",
    holds_when="the gradient flowing into the backward does not require grad (the Function's output goes "
    "straight, or through linear ops, into the loss); after an op whose backward uses its input (sin, y * y), "
    "the result is wrapped in an Error node instead, and a second backward through it raises",
)
def once_diff_plain_result():
    for seed, (label, after, incoming_needs_grad) in enumerate(_AFTER * 2):
        rng = random.Random(seed)
        x = torch.tensor([rng.uniform(0.2, 1.5) for _ in range(rng.randint(1, 4))], requires_grad=True)
        before = x * 2 if seed >= len(_AFTER) else x  # a recorded op before the Function changes nothing
        (g,) = torch.autograd.grad(after(_cube_once().apply(before)), x, create_graph=True)
        plain = g.grad_fn is None and not g.requires_grad
        if not plain:  # the other side, as the sentence's condition says: an Error node that refuses to run
            assert "Error" in _node_names(g.grad_fn), _node_names(g.grad_fn)
            try:
                g.sum().backward()
                raise AssertionError("a second backward through the Error node ran")
            except RuntimeError as exc:
                assert "once_differentiable" in str(exc), str(exc)
        yield Trial(f"seed {seed}: Cube-once then {label}", condition=not incoming_needs_grad, holds=plain)


def _cube(with_jvp: bool, vmap_rule: bool) -> type[Function]:
    class Cube(Function):
        generate_vmap_rule = vmap_rule

        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2

    if with_jvp:

        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return tangent * 3 * x**2

        Cube.jvp = staticmethod(jvp)
    return Cube


@claim(
    "11.jvp-needs-jvp",
    sentence="`torch.func.jvp` runs through a Function that has a `jvp` staticmethod",
    holds_when="the Function defines jvp; without one, jvp raises NotImplementedError even with setup_context "
    "and generate_vmap_rule = True",
)
def jvp_needs_jvp():
    for seed in range(8):
        rng = random.Random(seed)
        with_jvp, vmap_rule = seed % 2 == 0, seed % 4 < 2
        x = torch.tensor([rng.uniform(-2, 2) for _ in range(rng.randint(1, 5))], dtype=torch.float64)
        v = torch.randn(x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        try:
            _, tangent = torch.func.jvp(_cube(with_jvp, vmap_rule).apply, (x,), (v,))
            ran = torch.allclose(tangent, 3 * x**2 * v)
        except NotImplementedError:
            ran = False
        label = f"seed {seed}: jvp {'defined' if with_jvp else 'absent'}, generate_vmap_rule={vmap_rule}"
        yield Trial(label, condition=with_jvp, holds=ran)
