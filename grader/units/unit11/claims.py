"""Unit 11's general rules, each checked on generated programs (see grader.engine.claims)."""

import random
import re

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable
from torch.autograd.gradcheck import GradcheckError

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
    not_swept="about a custom autograd.Function, which op_db does not list",
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
    not_swept="about a custom autograd.Function, which op_db does not list",
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
    not_swept="about a custom autograd.Function, which op_db does not list",
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


# --- section 2: what apply records -----------------------------------------------------------------------

_OPS = (("exp", torch.exp), ("sin", torch.sin), ("x * 3", lambda t: t * 3), ("x ** 2", lambda t: t**2))


def _chain(ops, seen: list) -> type[Function]:
    """A Function whose forward runs a chain of ops and notes grad mode and the ctx it was given."""

    class Chain(Function):
        @staticmethod
        def forward(x):
            seen.append(torch.is_grad_enabled())
            for _, op in ops:
                x = op(x)
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(ctx)

        @staticmethod
        def backward(ctx, grad):
            return grad

    return Chain


@claim(
    "11.apply-records-one-node",
    sentence="`apply` runs `forward` with grad mode off, so the `x ** 3` (or `exp`) inside records nothing, and "
    "it records one node for the whole Function: a class torch makes from yours, named `CubeBackward`",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def apply_records_one_node():
    for seed in range(8):
        rng = random.Random(seed)
        ops = [rng.choice(_OPS) for _ in range(rng.randint(1, 4))]
        x = torch.rand(rng.randint(1, 4), requires_grad=True)
        before = x * 2 if seed % 2 else x  # a leaf, or a recorded op before the Function
        seen: list = []
        y = _chain(ops, seen).apply(before)
        children = [type(fn).__name__ for fn, _ in y.grad_fn.next_functions]
        expected_child = "MulBackward0" if seed % 2 else "AccumulateGrad"
        holds = seen[0] is False and type(y.grad_fn).__name__ == "ChainBackward" and children == [expected_child]
        label = f"seed {seed}: forward {' -> '.join(n for n, _ in ops)} on {'x * 2' if seed % 2 else 'a leaf'}"
        yield Trial(label, condition=True, holds=holds)


@claim(
    "11.ctx-is-the-node",
    sentence="`ctx` is the node itself (`y.grad_fn`)",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def ctx_is_the_node():
    for seed in range(6):
        rng = random.Random(seed)
        ops = [rng.choice(_OPS) for _ in range(rng.randint(1, 3))]
        seen: list = []
        y = _chain(ops, seen).apply(torch.rand(rng.randint(1, 4), requires_grad=True))
        yield Trial(
            f"seed {seed}: forward {' -> '.join(n for n, _ in ops)}", condition=True, holds=seen[1] is y.grad_fn
        )


def _recorder(arity: int, seen: list) -> type[Function]:
    class Recorder(Function):
        @staticmethod
        def forward(*args):
            return args[0] * 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(ctx.needs_input_grad)

        @staticmethod
        def backward(ctx, grad):
            return (grad,) + (None,) * (arity - 1)

    return Recorder


@claim(
    "11.needs-input-grad-per-argument",
    sentence="One entry per argument of `forward`, `True` only for a tensor that requires grad",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def needs_input_grad_per_argument():
    for seed in range(10):
        rng = random.Random(seed)
        args: list = [torch.ones(2, requires_grad=True)]  # the first always needs grad, so a node is made
        for _ in range(rng.randint(0, 4)):
            kind = rng.choice(["grad", "plain", "number", "none", "int tensor"])
            args.append(
                {
                    "grad": lambda: torch.ones(2, requires_grad=True),
                    "plain": lambda: torch.ones(2),
                    "number": lambda: 3.0,
                    "none": lambda: None,
                    "int tensor": lambda: torch.ones(2, dtype=torch.long),
                }[kind]()
            )
        seen: list = []
        _recorder(len(args), seen).apply(*args)
        expected = tuple(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
        kinds = [
            "number"
            if not isinstance(a, torch.Tensor) and a is not None
            else repr(a)
            if a is None
            else f"tensor(requires_grad={a.requires_grad})"
            for a in args
        ]
        yield Trial(f"seed {seed}: forward({', '.join(kinds)})", condition=True, holds=seen[0] == expected)


# --- section 3: save_for_backward or a stash ---------------------------------------------------------------


def _keeper(save: tuple[str, ...], stash: tuple[str, ...]) -> type[Function]:
    """x * y, keeping each of 'x', 'y', 'out' through save_for_backward or as a ctx attribute."""

    class Keeper(Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            named = {"x": inputs[0], "y": inputs[1], "out": output}
            ctx.save_for_backward(*(named[n] for n in save))
            for n in stash:
                setattr(ctx, "kept_" + n, named[n])

        @staticmethod
        def backward(ctx, grad):
            ctx.saved_tensors  # noqa: B018 - reading them is what the version check guards
            return grad * 2, grad * 3

    return Keeper


def _split(rng: random.Random) -> tuple[tuple[str, ...], tuple[str, ...]]:
    names = ["x", "y", "out"]
    rng.shuffle(names)
    cut = rng.randint(0, 3)
    return tuple(names[:cut]), tuple(names[cut:])


@claim(
    "11.only-saved-are-packed",
    sentence="only `save_for_backward` goes through saved-tensor hooks",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def only_saved_are_packed():
    for seed in range(8):
        rng = random.Random(seed)
        save, stash = _split(rng)
        packed: list = []
        x, y = torch.rand(3, requires_grad=True), torch.rand(3, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(lambda t, packed=packed: packed.append(t) or t, lambda t: t):
            _keeper(save, stash).apply(x, y)
        yield Trial(
            f"seed {seed}: saves {save or '()'}, stashes {stash or '()'}",
            condition=True,
            holds=len(packed) == len(save),
        )


@claim(
    "11.saved-tensors-are-version-checked",
    sentence="`save_for_backward` gives your node the check built-in nodes have",
    holds_when="the tensor written in place was kept through save_for_backward; a stash on ctx is never checked",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def saved_tensors_are_version_checked():
    for seed in range(8):
        rng = random.Random(seed)
        save, stash = _split(rng)
        written = rng.choice(["x", "y"])
        a, b = torch.rand(3, requires_grad=True), torch.rand(3, requires_grad=True)
        x, y = a * 1, b * 1
        out = _keeper(save, stash).apply(x, y)
        (x if written == "x" else y).add_(1)
        try:
            out.sum().backward()
            raised = False
        except RuntimeError as exc:
            raised = "modified by an inplace operation" in str(exc)
        label = f"seed {seed}: saves {save or '()'}, stashes {stash or '()'}, writes {written}"
        yield Trial(label, condition=written in save, holds=raised)


# --- section 5: outputs that get no gradient --------------------------------------------------------------


def _pair(materialize: bool, got: list) -> type[Function]:
    class Pair(Function):
        @staticmethod
        def forward(x):
            return x * 2, x**2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.set_materialize_grads(materialize)

        @staticmethod
        def backward(ctx, g_first, g_second):
            got.append(g_second)
            return 2 * g_first if g_first is not None else None

    return Pair


_USES = (
    ("d.sum()", lambda d, s: d.sum(), False),
    ("d.sum() + 0 * s.sum()", lambda d, s: d.sum() + 0 * s.sum(), True),
    ("(d * 3).mean()", lambda d, s: (d * 3).mean(), False),
    ("d.sum() + (s * 0).sum()", lambda d, s: d.sum() + (s * 0).sum(), True),
)


@claim(
    "11.materialize-only-unreached",
    sentence="That setting changes only what stands in for a gradient that never arrives",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def materialize_only_unreached():
    for seed in range(8):
        rng = random.Random(seed)
        materialize = seed % 2 == 0
        label, loss_of, reached = _USES[(seed // 2) % len(_USES)]
        got: list = []
        d, s = _pair(materialize, got).apply(torch.rand(rng.randint(1, 4), requires_grad=True))
        loss_of(d, s).backward()
        g = got[0]
        if reached or materialize:
            holds = isinstance(g, torch.Tensor) and bool((g == 0).all())
        else:
            holds = g is None
        yield Trial(f"seed {seed}: set_materialize_grads({materialize}), loss {label}", condition=True, holds=holds)


# --- section 7: torch.func ---------------------------------------------------------------------------------


class _CubeOldForm(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2


_TRANSFORMS = (
    ("grad", lambda f, x: torch.func.grad(lambda t: f(t).sum())(x)),
    ("vmap", lambda f, x: torch.func.vmap(f)(x.unsqueeze(0))),
    ("jvp", lambda f, x: torch.func.jvp(f, (x,), (torch.ones_like(x),))),
    ("vjp", lambda f, x: torch.func.vjp(f, x)[1](torch.ones_like(x))),
    ("jacrev", lambda f, x: torch.func.jacrev(f)(x)),
    ("jacfwd", lambda f, x: torch.func.jacfwd(f)(x)),
)


@claim(
    "11.old-form-refused-by-func",
    sentence="The old form (`ctx` in `forward`) is refused by every `torch.func` transform",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def old_form_refused_by_func():
    for seed, (name, transform) in enumerate(_TRANSFORMS):
        rng = random.Random(seed)
        x = torch.tensor([rng.uniform(0.5, 2.0) for _ in range(rng.randint(1, 3))])
        try:
            transform(_CubeOldForm.apply, x)
            refused = False
        except (RuntimeError, NotImplementedError) as exc:
            refused = "setup_context" in str(exc) or "functorch" in str(exc) or "torch.func" in str(exc)
        yield Trial(f"seed {seed}: torch.func.{name} through the old form", condition=True, holds=refused)


def _linear_with_wrong_backward(a: torch.Tensor) -> type[Function]:
    """f(x) = a @ x, whose backward is off by a factor of 2."""

    class Lin(Function):
        @staticmethod
        def forward(x):
            return a @ x

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            return 2 * (a.T @ grad)

    return Lin


def _printed_rows(message: str, label: str, until: str) -> list[list[float]]:
    block = message.split(label, 1)[1].split(until, 1)[0]
    return [[float(v) for v in row.split(",") if v.strip()] for row in re.findall(r"\[([^\[\]]+)\]", block)]


@claim(
    "11.gradcheck-prints-input-rows",
    sentence="then come the numerical and analytical Jacobians, printed **one row per input number and one column "
    "per output number**",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def gradcheck_prints_input_rows():
    for seed in range(6):
        rng = random.Random(seed)
        m, n = rng.randint(1, 4), rng.randint(1, 4)
        a = torch.tensor([[float(rng.randint(1, 9)) for _ in range(n)] for _ in range(m)], dtype=torch.float64)
        x = torch.ones(n, dtype=torch.float64, requires_grad=True)
        try:
            torch.autograd.gradcheck(_linear_with_wrong_backward(a).apply, (x,))
            holds = False
        except GradcheckError as exc:
            rows = _printed_rows(str(exc), "numerical:", "analytical:")
            holds = torch.allclose(torch.tensor(rows, dtype=torch.float64), a.T, atol=1e-4)
        yield Trial(f"seed {seed}: f(x) = A @ x, {n} inputs, {m} outputs", condition=True, holds=holds)


def _returning(arity: int, returned: int) -> type[Function]:
    class Returning(Function):
        @staticmethod
        def forward(*args):
            return args[0] * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            return (grad * 2,) + (None,) * (returned - 1)

    return Returning


@claim(
    "11.backward-returns-one-per-input",
    sentence="Backward must return a gradient for every input of `forward`, tensors or not",
    not_swept="about a custom autograd.Function, which op_db does not list",
)
def backward_returns_one_per_input():
    for seed in range(8):
        rng = random.Random(seed)
        extras = [
            rng.choice([torch.ones(2), 3.0, None, torch.ones(2, requires_grad=True)]) for _ in range(rng.randint(1, 3))
        ]
        arity = 1 + len(extras)
        returned = rng.randint(1, arity)
        x = torch.ones(2, requires_grad=True)
        try:
            _returning(arity, returned).apply(x, *extras).sum().backward()
            raised = False
        except RuntimeError as exc:
            raised = "incorrect number of gradients" in str(exc)
        yield Trial(
            f"seed {seed}: forward of {arity} arguments, backward returns {returned}",
            True,
            raised == (returned < arity),
        )


def _second_grad_raises(g: torch.Tensor, x: torch.Tensor, how: str) -> str:
    """The message a second derivative of g raises (asked by g.backward() or torch.autograd.grad), '' if none."""
    try:
        if how == "backward":
            g.sum().backward()
        else:
            torch.autograd.grad(g.sum(), x)
    except RuntimeError as exc:
        return str(exc)
    return ""


@claim(
    "11.once-diff-error-node",
    sentence="`g.backward()` reaches the `Error` node, which raises. `torch.autograd.grad(g, x)` does not: the "
    "`Error` node's inputs are detached stand-ins, so nothing leads from `g` back to `x`, and torch raises that "
    "`x` was not used in the graph.",
    holds_when="the gradient coming into the once_differentiable backward needs grad (its output went through an "
    "op whose backward reads its input: sin, y * y, exp), so that g carries an Error node; otherwise g has no "
    "history and both ways raise that it does not require grad",
    not_swept="about a custom Function marked once_differentiable, not an operation of op_db",
)
def once_diff_error_node():
    for seed, (label, after, incoming_needs_grad) in enumerate(_AFTER * 2):
        rng = random.Random(seed)
        how = "backward" if seed % 2 == 0 else "autograd.grad"
        x = torch.tensor([rng.uniform(0.2, 1.5) for _ in range(rng.randint(1, 4))], requires_grad=True)
        (g,) = torch.autograd.grad(after(_cube_once().apply(x)), x, create_graph=True)
        message = _second_grad_raises(g, x, how)
        if how == "backward":
            holds = "once_differentiable" in message
        else:
            holds = "not have been used in the graph" in message
        yield Trial(f"seed {seed}: Cube-once then {label}, {how}", condition=incoming_needs_grad, holds=holds)
