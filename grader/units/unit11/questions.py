"""Unit 11, writing a backward: vector–Jacobian products, torch.autograd.Function, gradcheck.

The Functions the experiments use and the report that grades a learner's Function live in
:mod:`grader.units.unit11.support`, the exercises' generated inputs in :mod:`grader.units.unit11.cases`, the
kinds that read a report in :mod:`grader.units.unit11.kinds`.
"""

from __future__ import annotations

import gc
import warnings
import weakref

import torch
from torch.autograd import Function as AutogradFunction
from torch.autograd.gradcheck import GradcheckError

from grader.engine.kinds import Boolean, Choice, Error, Number
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.causes import FREED, NO_GRAD_FN, UNUSED, WRITE_SEEN
from grader.units.unit11.generators import (
    GRADGRAD_OPTIONS,
    LEAF_OPTIONS,
    decoder_program,
    gradgrad_program,
    leaf_program,
    stash_program,
)
from grader.units.unit11.kinds import exercise_kind
from grader.units.unit11.support import (
    CubeOnce,
    CubeSaved,
    CubeStashed,
    SplitPair,
    describe_received,
    function_report,
    live_apply,
    matrix_after,
    passes_for_whole_jacobian,
)

# --- 1. every node is a vector–Jacobian product -----------------------------------------------------


# --- 2. torch.autograd.Function -------------------------------------------------------------------------


@predict_then_run(
    "11.fn-backward-wins",
    Number(),
    prompt="class Twice(torch.autograd.Function): forward(x) returns x.exp(); setup_context keeps nothing; "
    "backward(ctx, grad) returns grad * 2 (wrong for exp, on purpose). x = torch.tensor([0.0, 1.0], "
    "requires_grad=True); Twice.apply(x).sum().backward(). What is x.grad? (4 decimals)",
    explain="apply records one node for the whole Function, and that node's backward is yours: autograd never "
    "looks at the exp inside forward (forward ran with grad mode off and recorded nothing). Whatever your "
    "backward returns is the gradient, right or wrong: here 2 * 1 for each entry.",
    misconceptions=[
        (
            lambda truth: torch.tensor([0.0, 1.0]).exp().tolist(),
            "that is exp's true slope, exp(x); but the x.exp() inside forward is not recorded: the "
            "Function's one node runs your backward, which returns grad * 2",
        )
    ],
)
def fn_backward_wins():
    class Twice(AutogradFunction):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = torch.tensor([0.0, 1.0], requires_grad=True)
    Twice.apply(x).sum().backward()
    return x.grad.tolist()


NEEDS_OPTIONS = ("(True, True, True)", "(True, False, False)", "(True, False)", "(True, True, False)")


@predict_then_run(
    "11.needs-input-grad",
    Choice(*NEEDS_OPTIONS),
    prompt="class Scale(torch.autograd.Function) with forward(a, b, k): return a * b * k. "
    "a = torch.ones(2, requires_grad=True); b = torch.ones(2); Scale.apply(a, b, 3.0). What is "
    "ctx.needs_input_grad in setup_context? One of " + ", ".join(NEEDS_OPTIONS) + ".",
    explain="One entry per argument of forward, True where that input is a tensor requiring grad: b does "
    "not, and the Python number 3.0 never can. Backward may skip the work for a False entry and return "
    "None there.",
    misconceptions=[
        (
            "(True, False)",
            "there is one entry for every argument of forward, tensors or not: "
            "the number 3.0 gets one too, always False",
        )
    ],
)
def needs_input_grad():
    seen = []

    class Scale(AutogradFunction):
        @staticmethod
        def forward(a, b, k):
            return a * b * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(str(tuple(ctx.needs_input_grad)))
            ctx.save_for_backward(inputs[1])
            ctx.k = inputs[2]

        @staticmethod
        def backward(ctx, grad):
            (b,) = ctx.saved_tensors
            return grad * b * ctx.k, None, None

    Scale.apply(torch.ones(2, requires_grad=True), torch.ones(2), 3.0)
    return seen[0]


@predict_then_run(
    "11.saved-write",
    Error("at the write", "at backward", causes=WRITE_SEEN),
    prompt=(
        "Cube saves x with ctx.save_for_backward. a = torch.tensor([1.5], requires_grad=True); x = a * 1; y ="
        " Cube.apply(x); x.add_(1); y.backward(). Does it raise, and where: 'no error', 'at the write' or 'at"
        " backward'? For an error, answer a pair (place, cause), the cause chosen from the candidates listed "
        "with the answer's form; your own words may follow as a third item, a note shown beside torch's "
        "message and never graded."
    ),
    explain="save_for_backward keeps x with its version, as a built-in node does (unit 07): the write moves "
    "x to version 1 and backward refuses the stale value.",
    misconceptions=[
        (
            "no error",
            "a tensor kept through save_for_backward gets the same version check as a "
            "built-in node's saved tensor: the write is caught at backward",
        )
    ],
)
def saved_write():
    a = torch.tensor([1.5], requires_grad=True)
    x = a * 1
    y = CubeSaved.apply(x)
    yield "at the write"
    x.add_(1)
    yield "at backward"
    y.backward()


@predict_then_run(
    "11.stashed-write",
    Number(tol=1e-4),
    prompt="The same Cube, but setup_context stashes x as ctx.x = x and backward returns grad * 3 * ctx.x ** 2. "
    "a = torch.tensor([1.5], requires_grad=True); x = a * 1; y = Cube.apply(x); x.add_(1); "
    "y.backward(). What is a.grad[0] (to 4 decimals)?",
    explain="A tensor stashed on ctx is an ordinary Python attribute: no version is recorded and nothing is "
    "checked. Backward reads x as it is now, 2.5, and returns 3 * 2.5 ** 2 = 18.75 instead of 6.75, "
    "without a word.",
    misconceptions=[
        (
            lambda truth: truth * (1.5 / 2.5) ** 2,
            "that is the right slope at 1.5, but ctx.x is the written tensor: a stash has no version "
            "check, so backward computes with 2.5",
        )
    ],
)
def stashed_write():
    a = torch.tensor([1.5], requires_grad=True)
    x = a * 1
    y = CubeStashed.apply(x)
    x.add_(1)
    y.backward()
    return a.grad[0].item()


@predict_then_run(
    "11.stash-output-alive",
    Boolean(),
    prompt="class Square(torch.autograd.Function) whose setup_context stashes its output, ctx.y = output "
    "(backward uses it). With Python's cyclic collector paused (gc.disable()): x = torch.ones(1000, "
    "requires_grad=True); y = Square.apply(x); r = weakref.ref(y); del y. Is r() still alive?",
    explain="ctx is y.grad_fn, so ctx.y = y makes y hold ctx and ctx hold y: a reference cycle that only "
    "Python's cyclic collector frees. save_for_backward keeps an output without that cycle.",
    misconceptions=[
        (
            False,
            "y.grad_fn is ctx itself: stashing y on it makes a cycle, and reference counting alone cannot free a cycle",
        )
    ],
)
def stash_output_alive():
    class Square(AutogradFunction):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.y = output

        @staticmethod
        def backward(ctx, grad):
            return grad * 2 * ctx.y.sqrt()

    was = gc.isenabled()
    gc.disable()
    try:
        x = torch.ones(1000, requires_grad=True)
        y = Square.apply(x)
        r = weakref.ref(y)
        del y
        alive = r() is not None
    finally:
        if was:
            gc.enable()
    gc.collect()
    return alive


@predict_then_run(
    "11.no-mark-dirty",
    Number(tol=1e-4),
    prompt="class DoubleInPlace(torch.autograd.Function): forward(x) returns x.mul_(2); setup_context does "
    "nothing (no mark_dirty); backward returns grad * 2. a = torch.tensor([1.5, -2.0], requires_grad=True); "
    "h = a * 1; DoubleInPlace.apply(h); h.sum().backward(). What is a.grad? Answer [a.grad[0], a.grad[1]].",
    explain="Without mark_dirty, autograd is not told that h was written: h keeps its old history (MulBackward0) "
    "while holding the doubled values, and apply hands back a new view of h carrying the Function's "
    "node. Backward through h never meets your node: the slope 2 is lost.",
    misconceptions=[
        (
            lambda truth: [2 * v for v in truth],
            "2 is the right slope, and you get it with ctx.mark_dirty(x); without it h's history still "
            "ends in a * 1, and the values were doubled behind autograd's back",
        )
    ],
)
def no_mark_dirty():
    class DoubleInPlace(AutogradFunction):
        @staticmethod
        def forward(x):
            return x.mul_(2)

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    a = torch.tensor([1.5, -2.0], requires_grad=True)
    h = a * 1
    DoubleInPlace.apply(h)
    h.sum().backward()
    return a.grad.tolist()


MATERIALIZE = ("None", "a tensor of zeros", "a tensor of ones", "another tensor")


@predict_then_run(
    "11.materialize-zero-path",
    Choice(*MATERIALIZE),
    prompt="class SplitPair(torch.autograd.Function): forward(x) returns (x * 2, x ** 2); setup_context calls "
    "ctx.set_materialize_grads(False) and saves x; backward(ctx, g_double, g_square). "
    "x = torch.ones(2, requires_grad=True); d, s = SplitPair.apply(x); (d.sum() + 0 * s.sum()).backward(). "
    "What does backward receive as g_square? One of " + ", ".join(repr(m) for m in MATERIALIZE) + ".",
    explain="None stands for 'no gradient reached this output', not for 'the gradient is zero'. Here s is on "
    "the path to the loss, through 0 * s.sum(): the multiplication's backward sends grad * 0 and sum's "
    "backward spreads it over s's shape, so a real tensor of zeros arrives. set_materialize_grads(False) "
    "changes only what stands in for a gradient that never arrives.",
    misconceptions=[
        (
            "None",
            "None is passed only for an output no gradient reached; s is on the path to the loss "
            "(0 * s.sum()), so a real gradient arrives, and it is zeros",
        )
    ],
)
def materialize_zero_path():
    SplitPair.seen.clear()
    SplitPair.materialize = False
    try:
        x = torch.ones(2, requires_grad=True)
        d, s = SplitPair.apply(x)
        (d.sum() + 0 * s.sum()).backward()
    finally:
        SplitPair.materialize = True
    return describe_received(SplitPair.seen[-1][1])


@predict_then_run(
    "11.once-diff",
    Error("at the first grad", "at the second grad", causes=(FREED, NO_GRAD_FN, UNUSED)),
    prompt=(
        "Cube's backward decorated with @once_differentiable. x = torch.tensor([1.5], requires_grad=True); "
        "(g,) = torch.autograd.grad(Cube.apply(x), x, create_graph=True) (the first grad); g.backward() (the "
        "second grad). Does it raise, and where: 'no error', 'at the first grad' or 'at the second grad'? For"
        " an error, answer a pair (place, cause), the cause chosen from the candidates listed with the "
        "answer's form; your own words may follow as a third item, a note shown beside torch's message and "
        "never graded."
    ),
    explain="once_differentiable runs backward with grad mode off, so create_graph records nothing. Here the "
    "gradient coming into CubeOnce's backward is the loss's own seed, which needs no grad, so g comes back "
    "as a plain tensor with no history, and the second backward finds no graph to go through. (Inside a "
    "larger graph, where the incoming gradient needs grad, g would instead carry an Error node that raises "
    "at the second backward.)",
    misconceptions=[
        (
            "no error",
            "once_differentiable runs backward under no_grad, and here the incoming gradient (the seed) "
            "needs no grad: g has no grad_fn, so there is nothing for the second backward to differentiate",
        )
    ],
)
def once_diff():
    x = torch.tensor([1.5], requires_grad=True)
    yield "at the first grad"
    (g,) = torch.autograd.grad(CubeOnce.apply(x), x, create_graph=True)
    yield "at the second grad"
    g.backward()


@predict_then_run(
    "11.double-value",
    Number(tol=1e-4),
    prompt="Cube as first written: backward returns grad * 3 * x ** 2 in torch ops, no decorator. "
    "x = torch.tensor([1.5], requires_grad=True); (g,) = torch.autograd.grad(Cube.apply(x), x, "
    "create_graph=True); (gg,) = torch.autograd.grad(g, x). Answer [g, gg] (4 decimals).",
    explain="With create_graph=True, autograd records the ops backward runs, like any forward pass (unit 06): "
    "grad * 3 * x ** 2 is differentiable in x, so the second grad gives 6x = 9 at 1.5.",
    misconceptions=[
        (
            lambda truth: [truth[0], 0.0],
            "the backward was written in torch ops and recorded under create_graph: its own "
            "derivative, 6x, comes out, not zero",
        )
    ],
)
def double_value():
    x = torch.tensor([1.5], requires_grad=True)
    (g,) = torch.autograd.grad(CubeSaved.apply(x), x, create_graph=True)
    (gg,) = torch.autograd.grad(g, x)
    return [g.item(), gg.item()]


JVP_OPTIONS = ("runs", "raises: no vmap rule", "raises: no forward-mode rule", "runs, with other values")


@predict_then_run(
    "11.jvp-rule",
    Choice(*JVP_OPTIONS),
    prompt="Cube as written (forward(x) alone, setup_context saving x, backward returning grad * 3 * x ** 2), "
    "with generate_vmap_rule = True and nothing else. torch.func.jvp(Cube.apply, (torch.tensor([1.0, 2.0]),), "
    "(torch.ones(2),)), a forward-mode derivative: what happens? One of "
    + ", ".join(repr(o) for o in JVP_OPTIONS)
    + ".",
    explain="Forward mode pushes a tangent forward and needs a Jacobian-vector product; your backward gives "
    "vector-Jacobian products, which torch does not turn around for you. A Function needs a jvp "
    "staticmethod (with what it reads kept by ctx.save_for_forward) for torch.func.jvp and jacfwd.",
    misconceptions=[
        (
            "runs",
            "backward gives vector-Jacobian products (reverse mode); jvp needs the other product, "
            "and a Function supplies it only through a jvp staticmethod",
        )
    ],
)
def jvp_rule():
    class CubeBatched(CubeSaved):
        generate_vmap_rule = True

    try:
        _, tangent = torch.func.jvp(CubeBatched.apply, (torch.tensor([1.0, 2.0]),), (torch.ones(2),))
    except NotImplementedError:
        return JVP_OPTIONS[2]
    except RuntimeError as exc:
        return JVP_OPTIONS[1] if "vmap" in str(exc) else JVP_OPTIONS[2] + "?"
    right = torch.allclose(tangent, 3 * torch.tensor([1.0, 2.0]) ** 2)
    return JVP_OPTIONS[0] if right else JVP_OPTIONS[3]


# --- 3. gradcheck -------------------------------------------------------------------------------

FLOAT32_OPTIONS = ("passes", "passes, with a warning", "fails: Jacobian mismatch", "raises: float32 refused")


@predict_then_run(
    "11.gradcheck-float32",
    Choice(*FLOAT32_OPTIONS),
    prompt="Cube is right. torch.autograd.gradcheck(Cube.apply, (torch.tensor([1.0, 2.0], requires_grad=True),)) "
    "with float32 input and the default eps (1e-6) and tolerances: what happens? One of "
    + ", ".join(repr(o) for o in FLOAT32_OPTIONS)
    + ".",
    explain="float32 keeps about 7 digits; a difference of two values 2e-6 apart loses most of them, so the "
    "numerical Jacobian is off by more than atol + rtol * |numerical| allows. gradcheck warns that the "
    "input is not float64 and then fails: run it in float64.",
    misconceptions=[
        (
            "passes, with a warning",
            "it does warn, and then the check itself fails: central "
            "differences 2e-6 apart in float32 have only a digit or two left",
        )
    ],
)
def gradcheck_float32():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ok = torch.autograd.gradcheck(CubeSaved.apply, (x,))
        except GradcheckError:
            return FLOAT32_OPTIONS[2]
        except Exception:
            return FLOAT32_OPTIONS[3]
    return FLOAT32_OPTIONS[1] if ok and caught else FLOAT32_OPTIONS[0]


@predict_then_run(
    "11.relu-kink",
    Number(tol=1e-4),
    prompt="torch.autograd.gradcheck(torch.relu, (torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64, "
    "requires_grad=True),)) raises a GradcheckError that prints the numerical and the analytical "
    "Jacobians. What is the numerical Jacobian's entry [0][0], for the input at 0 (4 decimals)?",
    explain="The numerical Jacobian is a central difference, (f(x + eps) - f(x - eps)) / (2 eps). At the kink, "
    "relu(eps) - relu(-eps) = eps, so the entry is 0.5, while relu's backward says 0 there.",
    misconceptions=[(0.0, "0 is the analytical entry (relu's backward at 0); the numerical one straddles the kink")],
)
def relu_kink():
    x = torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64, requires_grad=True)
    try:
        torch.autograd.gradcheck(torch.relu, (x,))
    except GradcheckError as exc:
        return matrix_after("numerical:", str(exc))[0]
    return float("nan")


# --- 4. exercises ------------------------------------------------------------------------------------


@exercise(
    "11.stable-softplus",
    exercise_kind("softplus"),
    prompt="Write StableSoftplus, a torch.autograd.Function in the setup_context form: forward(x) gives "
    "log(1 + exp(x)) without overflow for any float64 x (inputs reach 950), backward the gradient for "
    "the output's gradient, written in torch ops so that double backward works, keeping one tensor of "
    "x's size at most, through ctx.save_for_backward; it must also run under torch.func.vmap. It is "
    "checked on generated inputs against torch.nn.functional.softplus: value, gradient, gradcheck, "
    "gradgradcheck, vmap, and what it keeps; while your Function runs, torch's softplus (F.softplus, nn.Softplus) "
    "and the log-sum-exp family that computes it stably (logaddexp, logsumexp) are switched off: they raise.",
    explain="log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): the exponent is never positive. The slope is "
    "sigmoid(x), which torch.sigmoid computes without overflow; saving x (or the output) is enough, and "
    "a backward in torch ops is itself differentiable.",
    hints=(
        "Naive log(1 + exp(x)) overflows once exp(x) does (x > 709 in float64): rewrite it so that exp only "
        "ever sees a number <= 0.",
        "For x > 0, log(1 + exp(x)) = x + log(1 + exp(-x)). torch.log1p and x.abs() give one formula for "
        "both signs. The derivative is sigmoid(x): do not build it from exp(x) / (1 + exp(x)).",
        "Keep only x (or the output) with ctx.save_for_backward, nothing on ctx; no @once_differentiable; "
        "set generate_vmap_rule = True on the class so vmap works.",
    ),
)
def stable_softplus(case):
    return function_report("softplus", live_apply("softplus"), case)


@exercise(
    "11.sigmoid-inplace",
    exercise_kind("sigmoid_"),
    prompt="Write SigmoidInPlace, a torch.autograd.Function in the setup_context form that writes sigmoid(x) "
    "into x itself and returns it, telling autograd so with ctx.mark_dirty, and whose backward keeps "
    "what it needs without a copy of the input. It is checked on generated inputs against h.sigmoid_(): "
    "h is a non-leaf, and the gradient is taken through h itself.",
    explain="mark_dirty rewrites h's history so that h's grad_fn is your node. After the write the input is "
    "gone, but sigmoid's slope is y * (1 - y): save the output. Saving 'the input' saves the same "
    "tensor, already overwritten; a clone of it doubles what is kept.",
    hints=(
        "forward writes with an in-place op (it ends in _) and returns that same tensor; setup_context must "
        "tell autograd which input was written.",
        "ctx.mark_dirty(inputs[0]) in setup_context. Without it, h keeps its old history and a gradient "
        "through h skips your node.",
        "Once forward has run, inputs[0] and output are the same tensor and hold sigmoid(x): the original x "
        "is gone. Write the slope from the output: y * (1 - y).",
    ),
)
def sigmoid_inplace(case):
    return function_report("sigmoid_", live_apply("sigmoid_"), case)


@exercise(
    "11.round-ste",
    exercise_kind("ste"),
    prompt="Write RoundSTE, a torch.autograd.Function in the setup_context form: forward(x, step) returns x "
    "rounded to the nearest multiple of step (a Python float), backward passes the output's gradient "
    "straight through to x, as if forward were the identity (a straight-through estimator). It keeps "
    "nothing. It is checked on generated inputs against x + (torch.round(x / step) * step - x).detach(), "
    "whose gradient autograd works out itself.",
    explain="Rounding has slope 0 almost everywhere, which would stop all learning; the straight-through "
    "estimator uses the identity's slope instead. Backward needs nothing from forward, and must return "
    "None for step, which is not a tensor.",
    hints=(
        "backward returns one entry per input of forward: x and step.",
        "The gradient for x is the output's gradient unchanged. step is a Python float: its entry must be "
        "None, or backward raises.",
        "The identity's backward reads nothing from forward: save nothing. The true slope of round, zero, "
        "is what a straight-through estimator replaces.",
    ),
)
def round_ste(case):
    return function_report("ste", lambda x, step: live_apply("ste", step)(x), case)


# --- self-test (closed book) ------------------------------------------------------------------------------


@self_test(
    "11.self-stash",
    Number(tol=1e-4),
    program=stash_program,
    explain="Nothing checks a stash: a plain attribute keeps the tensor, not its version, so backward reads u as it "
    "is after the write and computes the slope there. save_for_backward would have raised at backward.",
    hints=(
        "Which way of keeping a tensor records its version?",
        "ctx.inp is a plain attribute: backward reads the tensor's current values, after the write.",
    ),
    misconceptions=[
        (
            lambda truth, p: p.facts["right slope"],
            "that is the right slope, at u before the write; a stash has no version check, so backward used u after "
            "the write",
        )
    ],
)
def self_stash(p):
    return p.run()["b"].grad[0].item()


@self_test(
    "11.self-decoder-passes",
    Number(tol=0),
    program=decoder_program,
    explain="The Jacobian has one row per output and one column per input. A reverse pass gives one row (one "
    "output's gradient), a forward-mode pass one column (one input's direction): with few inputs and many outputs "
    "forward mode is the cheap way, with many inputs and few outputs reverse mode.",
    hints=(
        "Draw the Jacobian: one row per output, one column per input.",
        "A vector-Jacobian product gives one row of the Jacobian, a Jacobian-vector product one column.",
    ),
    misconceptions=[
        (
            lambda truth: [1, truth[1]],
            "one reverse pass gives the gradient of one output number; there are many outputs here",
        ),
        (
            lambda truth: [truth[1], truth[0]],
            "a reverse pass gives a row (one output), a forward-mode pass a column (one input): count the outputs "
            "for the first",
        ),
    ],
)
def self_decoder_passes(p):
    ns = p.run()
    return passes_for_whole_jacobian(ns["decode"], ns["z"])


@self_test(
    "11.self-leaf-inplace",
    Choice(*LEAF_OPTIONS),
    program=leaf_program,
    explain="mark_dirty tells autograd a custom Function wrote its input. A leaf that requires grad may not be "
    "written in place while grad mode is on, whoever writes it: refused at apply. A tensor another node kept (exp "
    "keeps its output) is stale once written: refused at backward. On a fresh non-leaf the write is allowed, and "
    "w.grad is right if backward reads the output it saved, wrong if it reads its input, overwritten since.",
    hints=(
        "Unit 07 met these rules for built-in in-place ops: a leaf, and a tensor some node kept.",
        "Where would the leaf's gradient accumulate if its values were replaced by the op's output? Which node kept "
        "the tensor the op writes, and what does backward read?",
    ),
    misconceptions=[
        (
            lambda truth: LEAF_OPTIONS[0] if truth == LEAF_OPTIONS[2] else None,
            "a leaf that requires grad may not be written in place while grad mode is on, whoever writes it: "
            "mark_dirty on a leaf is refused at apply",
        ),
        (
            lambda truth: LEAF_OPTIONS[0] if truth == LEAF_OPTIONS[3] else None,
            "exp kept its output, and the in-place sigmoid wrote that very tensor: exp's saved output is stale when "
            "backward reads it",
        ),
        (
            lambda truth: LEAF_OPTIONS[0] if truth == LEAF_OPTIONS[1] else None,
            "backward reads the input it stashed, which forward overwrote with its output: the slope of the sigmoid "
            "at the wrong point",
        ),
        (
            lambda truth: LEAF_OPTIONS[2] if truth == LEAF_OPTIONS[0] else None,
            "the op writes a fresh non-leaf, which is allowed: mark_dirty says so, and backward reads the output it "
            "saved",
        ),
    ],
)
def self_leaf_inplace(p):
    ns = p.run(until="at apply")
    try:
        exec(p.steps[1][1], ns)
    except RuntimeError:
        return LEAF_OPTIONS[2]
    try:
        exec(p.steps[2][1], ns)
    except RuntimeError:
        return LEAF_OPTIONS[3]
    w = torch.tensor(eval(p.facts["w"]), requires_grad=True)
    (reference,) = torch.autograd.grad(torch.sigmoid(eval(p.facts["target"], {"w": w})).sum(), w)
    return LEAF_OPTIONS[0] if torch.allclose(ns["w"].grad, reference) else LEAF_OPTIONS[1]


@self_test(
    "11.self-gradgrad-once",
    Choice(*GRADGRAD_OPTIONS),
    program=gradgrad_program,
    explain="gradgradcheck's analytical side differentiates what your backward returned, with a gradient coming in "
    "that itself needs grad. Under once_differentiable torch wraps backward's result in a node whose inputs are "
    "detached stand-ins, so nothing leads back to t: the analytical second derivative comes out all zeros, while "
    "the numerical side, which only calls backward at nearby points, finds the real one. A second "
    "torch.autograd.grad by hand finds no graph at all and raises. Without the decorator backward is recorded like "
    "any code, and both agree.",
    hints=(
        "What does gradgradcheck compare, and which of the two depends on your backward being recorded?",
        "The numerical side only calls backward at nearby points; the analytical side (and a second grad by hand) "
        "needs a graph of backward that leads back to t, which once_differentiable does not give.",
    ),
    misconceptions=[
        (
            lambda truth: GRADGRAD_OPTIONS[0] if truth == GRADGRAD_OPTIONS[1] else None,
            "gradgradcheck's analytical side differentiates what backward returned; once_differentiable gave it no "
            "graph back to t, so it comes out zeros",
        ),
        (
            lambda truth: GRADGRAD_OPTIONS[1] if truth == GRADGRAD_OPTIONS[0] else None,
            "without once_differentiable backward's operations are recorded like any others: its result has a graph "
            "back to t, and both sides agree",
        ),
        (
            lambda truth: GRADGRAD_OPTIONS[0] if truth == GRADGRAD_OPTIONS[3] else None,
            "a once_differentiable backward's result carries no graph: the second torch.autograd.grad finds nothing "
            "to differentiate and raises",
        ),
    ],
)
def self_gradgrad_once(p):
    ns = p.run(until="check")
    try:
        exec(p.steps[1][1], ns)
    except GradcheckError as exc:
        text = str(exc)
        if "analytical" in text and not any(matrix_after("analytical:", text)):
            return GRADGRAD_OPTIONS[1]
        if "numerical" in text and not any(matrix_after("numerical:", text)):
            return GRADGRAD_OPTIONS[2]
        raise RuntimeError(f"gradgradcheck failed in a way none of the options names: {text[:200]}") from exc
    except RuntimeError:
        return GRADGRAD_OPTIONS[3]
    return GRADGRAD_OPTIONS[0]
