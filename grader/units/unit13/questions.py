"""Unit 13, autograd beyond eager: torch.func, forward mode, and what torch.compile keeps for backward.

The compile instruments (a graph-counting backend, the partitioned forward graph, the bill on both runs) and the
functions the experiments compile live in :mod:`grader.units.unit13.support`, the exercises' generated cases in
:mod:`grader.units.unit13.cases`.
"""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as fwAD

from grader import probes
from grader.engine.kinds import Choice, Error, Function, Number
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.causes import FREED, NO_GRAD_FN, STALE
from grader.units.unit13.cases import (
    by_hooks_result,
    call_by_hooks,
    call_per_sample,
    flatten_grads,
    hooks_cases,
    per_sample_cases,
    per_sample_result,
)
from grader.units.unit13.generators import (
    KEEP_OPTIONS,
    accumulate_program,
    branch_program,
    dual_program,
    keeps_program,
)
from grader.units.unit13.support import (
    count_activations,
    graphs_made,
    graphs_with_hook,
    kept_by_compile,
    loop_grads,
    quiet_dynamo,
    sin_cos,
    with_item,
)

# --- 1. torch.func ----------------------------------------------------------------------------------

GRAD_OPTIONS = ("None", "equal to g", "twice g", "a tensor of zeros")


@predict_then_run(
    "13.func-grad-no-grad",
    Choice(*GRAD_OPTIONS),
    prompt="w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True); g = torch.func.grad(lambda t: (t ** 3).sum())(w). "
    "What is w.grad afterwards? One of " + ", ".join(repr(o) for o in GRAD_OPTIONS) + ".",
    explain="torch.func.grad returns the gradient as a value, like torch.autograd.grad: it writes no .grad and "
    "accumulates nothing.",
    misconceptions=[
        (
            "equal to g",
            "that is what .backward() would leave; torch.func.grad returns the gradient and writes nothing into w.grad",
        )
    ],
)
def func_grad_no_grad():
    w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    g = torch.func.grad(lambda t: (t**3).sum())(w)
    if w.grad is None:
        return GRAD_OPTIONS[0]
    if torch.equal(w.grad, g):
        return GRAD_OPTIONS[1]
    return GRAD_OPTIONS[2] if torch.allclose(w.grad, 2 * g) else GRAD_OPTIONS[3]


@predict_then_run(
    "13.per-sample-shape",
    Number(tol=0),
    prompt="model = torch.nn.Linear(3, 2); params = dict(model.named_parameters()); "
    "loss(p, xi, yi) = ((torch.func.functional_call(model, p, (xi,)) - yi) ** 2).sum(); x of shape (5, 3), "
    "y of shape (5, 2); grads = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y). "
    "What is the shape of grads['weight']? Answer it as a list of numbers.",
    explain="grad(loss) gives, for one sample, a dict shaped like params; vmap maps it over dimension 0 of x "
    "and y (in_dims None: the same params for all) and stacks the results along a new first dimension.",
    misconceptions=[
        (lambda truth: list(truth[1:]), "that is one sample's gradient; vmap stacks one per sample in front")
    ],
)
def per_sample_shape():
    model = torch.nn.Linear(3, 2)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return ((torch.func.functional_call(model, p, (xi,)) - yi) ** 2).sum()

    grads = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, torch.randn(5, 3), torch.randn(5, 2))
    return list(grads["weight"].shape)


# --- 2. forward mode ------------------------------------------------------------------------------------


@predict_then_run(
    "13.dual-tangent",
    Number(tol=1e-4),
    prompt="with torch.autograd.forward_ad.dual_level(): x = fwAD.make_dual(torch.tensor(2.0), torch.tensor(0.5)); "
    "y = x ** 3; t = fwAD.unpack_dual(y).tangent. What is t (4 decimals)?",
    explain="A dual number carries a value and a tangent; every op moves the tangent by its derivative as it "
    "computes the value: the tangent of x ** 3 is 3 x ** 2 times x's tangent, 3 * 4 * 0.5.",
    misconceptions=[
        (
            lambda truth: truth * 2,
            "that is the derivative 3 x ** 2 alone; the tangent is the "
            "derivative times the tangent x came in with, 0.5",
        )
    ],
)
def dual_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(torch.tensor(2.0), torch.tensor(0.5))
        y = x**3
        return fwAD.unpack_dual(y).tangent.item()


# --- 3. torch.compile ------------------------------------------------------------------------------------


@predict_then_run(
    "13.compile-saves",
    Number(tol=0),
    prompt="f(x, w) = (x @ w).sin().cos().sum() with x = torch.randn(4, 3) and w = torch.randn(3, 5, "
    "requires_grad=True). Count the activations kept for backward (storages that are neither x nor w, as "
    "unit 05's bill labels them), run eagerly and through torch.compile(f, backend='aot_eager'). "
    "Answer [eager, compiled].",
    explain="Eagerly each node keeps its own input: the matmul's result for sin, sin's result for cos. "
    "AOTAutograd traces forward and backward as one graph and its partitioner cuts it where few bytes cross, "
    "recomputing cheap pointwise ops (never a matmul): here it keeps the matmul's result and recomputes sin "
    "from it in the backward graph, as checkpointing would, chosen automatically.",
    misconceptions=[
        (
            lambda truth: [truth[0], truth[0]],
            "the compiled forward does not keep what eager nodes keep: "
            "the partitioner recomputes cheap pointwise results",
        )
    ],
)
def compile_saves():
    import torch._dynamo

    x, w = torch.randn(4, 3), torch.randn(3, 5, requires_grad=True)
    eager = probes.bill(lambda: sin_cos(x, w), names={"x": x, "w": w})
    torch._dynamo.reset()
    with quiet_dynamo():
        compiled = torch.compile(sin_cos, backend="aot_eager")
        compiled(x, w)
        kept = probes.bill(lambda: compiled(x, w), names={"x": x, "w": w})
    torch._dynamo.reset()
    return [count_activations(eager), count_activations(kept)]


@predict_then_run(
    "13.item-graphs",
    Number(tol=0),
    prompt="def f(x): h = x.sin(); scale = h.sum().item(); return h * scale. torch.compile(f) with a backend that "
    "counts the graphs it is handed, called once on x = torch.randn(3, requires_grad=True) (default "
    "settings). How many graphs does Dynamo make?",
    explain=".item() turns a tensor into a Python number, which a graph of tensor ops cannot hold (by default): "
    "Dynamo ends the graph there (a graph break), runs .item() in Python, and starts a second graph for "
    "the rest. Autograd still links the two: the gradient flows through both.",
    misconceptions=[(1, "a Python number cannot live in the graph by default: .item() breaks it in two")],
)
def item_graphs():
    return graphs_made(with_item, torch.randn(3, requires_grad=True))


HOOK_OPTIONS = ("both", "only double", "only record", "neither")


def _record(seen: list):
    def record(g):
        seen.append(g)

    return record


@predict_then_run(
    "13.hook-side-effects",
    Choice(*HOOK_OPTIONS),
    prompt="Two hooks: double = lambda g: g * 2, and record, which appends each gradient it sees to a list. "
    "def f(x): h = x * 2; h.register_hook(HOOK); return (h * h).sum(), once with HOOK = double and once "
    "with HOOK = record. Each is compiled with torch.compile and a graph-counting backend, called once on "
    "x = torch.randn(3, requires_grad=True), then .backward() on the result. Which version does Dynamo "
    "compile into one graph? One of " + ", ".join(repr(o) for o in HOOK_OPTIONS) + ".",
    explain="What breaks the graph is a Python side effect, not the hook. double only computes a new gradient: "
    "Dynamo traces its registration into the graph (torch.ops.higher_order.register_hook) and the hook runs "
    "at backward, one graph. record appends to a list, which a graph cannot do: Dynamo compiles the part "
    "before it, lets Python register the hook on the real h, and compiles the rest, two graphs. Both hooks "
    "run at backward, as in eager.",
    misconceptions=[
        (
            "neither",
            "Dynamo can trace a hook's registration into the graph; only record's append to a list, a Python "
            "side effect, forces a break",
        ),
        (
            "both",
            "record appends to a list, a Python side effect one graph cannot hold: Dynamo breaks the graph there",
        ),
        ("only record", "it is the other way round: the hook with a side effect (record's append) breaks the graph"),
    ],
)
def hook_side_effects():
    one_graph = {
        name: graphs_with_hook(hook, torch.randn(3, requires_grad=True)) == 1
        for name, hook in (("double", lambda g: g * 2), ("record", _record([])))
    }
    if one_graph["double"] and one_graph["record"]:
        return HOOK_OPTIONS[0]
    if one_graph["double"]:
        return HOOK_OPTIONS[1]
    return HOOK_OPTIONS[2] if one_graph["record"] else HOOK_OPTIONS[3]


@predict_then_run(
    "13.compile-version",
    Error("at the write", "at backward", causes=(FREED, STALE, NO_GRAD_FN)),
    prompt=(
        "f(t) = t.sin(), compiled with torch.compile(f, backend='aot_eager'). a = torch.randn(3, "
        "requires_grad=True); b = a * 1; y = compiled(b); b.add_(1); y.sum().backward(). Does it raise, and "
        "where: 'no error', 'at the write' or 'at backward'? For an error, answer a pair (place, cause), the "
        "cause chosen from the candidates listed with the answer's form; your own words may follow as a third"
        " item, a note shown beside torch's message and never graded."
    ),
    explain="The compiled function is one autograd node (CompiledFunctionBackward) that keeps what its forward "
    "graph returned through save_for_backward, versions and all: the write moves b to version 1 and "
    "backward refuses, as in eager (unit 07).",
    misconceptions=[
        (
            "no error",
            "compiling does not drop the version check: the compiled node saves b with "
            "save_for_backward, and backward finds it written",
        )
    ],
)
def compile_version():
    import torch._dynamo

    torch._dynamo.reset()
    with quiet_dynamo():
        compiled = torch.compile(lambda t: t.sin(), backend="aot_eager")
        a = torch.randn(3, requires_grad=True)
        b = a * 1
        y = compiled(b)
        yield "at the write"
        b.add_(1)
        yield "at backward"
        try:
            y.sum().backward()
        finally:
            torch._dynamo.reset()


# --- 4. exercises ------------------------------------------------------------------------------------


@exercise(
    "13.per-sample-grads",
    Function(
        returns=Number(tol=1e-4),
        cases=per_sample_cases,
        call=call_per_sample,
        convert=per_sample_result,
        per_case_s=10.0,
        budget_s=60.0,
    ),
    prompt="Write per_sample_grads(model, x, y) with torch.func: for each sample i, the gradient of "
    "((model(x[i]) - y[i]) ** 2).sum() with respect to every parameter, returned as a dict "
    "{name: tensor of shape (batch, *param.shape)} keyed by model.named_parameters()'s names. It is "
    "checked on generated models (Linear, Tanh, Linear) against a loop of one autograd.grad per "
    "sample, to 1e-4, with that other way switched off: while your function runs, .backward() and "
    "torch.autograd.grad raise (torch.func.grad's own backward passes still run), and the model must run "
    "fewer times than there are samples (vmap runs it once for the batch; a loop, once per sample).",
    explain="functional_call(model, params, (xi,)) makes the loss a function of the parameters; grad "
    "differentiates it for one sample, and vmap(..., in_dims=(None, 0, 0)) runs that for every sample at "
    "once, the same params for all.",
    hints=(
        "Write the loss of one sample as a function of a dict of parameters: torch.func.functional_call(model, "
        "params, (xi,)) runs the model with them.",
        "torch.func.grad(loss) returns a function giving a dict shaped like params; torch.func.vmap maps it "
        "over the batch: which arguments are batched, and which are shared?",
        "in_dims=(None, 0, 0): params shared, x and y batched on dimension 0. Take params as "
        "{k: v.detach() for k, v in model.named_parameters()}, and sum (not mean) the squared error.",
    ),
)
def per_sample_grads(case):
    ns = case.fresh()
    return flatten_grads(loop_grads(ns["model"], ns["x"], ns["y"]), case, ns)


@exercise(
    "13.per-sample-by-hooks",
    Function(
        returns=Number(tol=1e-4),
        cases=hooks_cases,
        call=call_by_hooks,
        convert=by_hooks_result,
        per_case_s=10.0,
        budget_s=60.0,
    ),
    prompt="Write per_sample_by_hooks(model, x, y): the same per-sample gradients as 13.per-sample-grads, a dict "
    "{name: tensor of shape (batch, *param.shape)}, for a model that is a stack of Linear layers with "
    "activations between them, from ONE backward pass of the batch's loss ((model(x) - y) ** 2).sum(). Every "
    "parameter here belongs to a Linear, and the batch's gradient of a Linear's weight is a sum over the "
    "samples of one product each: catch what that sum adds up, with hooks. It is checked on generated models "
    "against a loop of one autograd.grad per sample, to 1e-4, with torch.func switched off (its transforms, "
    "and autograd.grad's is_grads_batched, raise while your function runs) and your backward passes counted: "
    "exactly one.",
    explain="A Linear's weight gradient is grad_out.T @ input: a sum over the batch of one outer product per "
    "sample, g_i ⊗ a_i, where a_i is the sample's input to the layer and g_i the gradient of its output. "
    "Backward adds them up; a forward hook that keeps each Linear's input and a tensor hook on its output that "
    "keeps the gradient arriving there give every term before the sum. The bias's terms are g_i themselves. "
    "Because the loss is a sum over the samples, the gradient arriving at sample i's row is that sample's own.",
    hints=(
        "What does backward compute for a Linear's weight from the batch? Write it as a sum over the rows of the "
        "batch: each row contributes one term.",
        "register_forward_hook on each Linear: keep args[0] (its input, one row per sample), and on its output "
        "register_hook a function that keeps the gradient arriving there. Then one loss.backward().",
        "The weight's per-sample gradient is torch.einsum('bo,bi->boi', g, a) (g the output's gradient, a the "
        "input), the bias's is g; the names come from model.named_modules(). Remove your hooks afterwards.",
    ),
)
def per_sample_by_hooks(case):
    ns = case.fresh()
    return flatten_grads(loop_grads(ns["model"], ns["x"], ns["y"]), case, ns)


# --- self-test (closed book) ----------------------------------------------------------------------------


@self_test(
    "13.self-accumulate",
    Number(tol=1e-4),
    program=accumulate_program,
    explain="Each .backward() adds its gradient into w.grad; torch.func.grad and torch.autograd.grad return theirs "
    "and write nothing; w.grad = None drops what was there. w.grad is the sum of the backward calls since the last "
    "clear.",
    hints=(
        "Which of the calls write into w.grad, and do they overwrite or add?",
        "torch.func.grad and torch.autograd.grad return their gradient; .backward() accumulates into .grad; "
        "w.grad = None starts it again.",
    ),
    misconceptions=[
        (
            lambda truth, p: (
                [v * (p.facts["backwards"] + p.facts["returns"]) / p.facts["backwards"] for v in truth]
                if p.facts["returns"]
                else None
            ),
            "torch.func.grad and torch.autograd.grad return their gradient and add nothing to w.grad: only the "
            "backward calls do",
        ),
        (
            lambda truth, p: [v / p.facts["backwards"] for v in truth] if p.facts["backwards"] > 1 else None,
            ".backward() adds into w.grad: a later call does not replace an earlier one",
        ),
        (
            lambda truth, p: (
                [v * p.facts["all backwards"] / p.facts["backwards"] for v in truth]
                if p.facts["backwards"] != p.facts["all backwards"] != p.facts["backwards"] + p.facts["returns"]
                else None  # (a count the previous misconception gives already is left to it)
            ),
            "w.grad = None dropped what the earlier backward calls had added: only those after it count",
        ),
    ],
)
def self_accumulate(p):
    return p.run()["w"].grad.tolist()


@self_test(
    "13.self-dual",
    Number(tol=1e-4),
    program=dual_program,
    explain="A dual number's tangent is moved by each op's derivative (the chain and product rules apply): y's "
    "tangent is the derivative of y at the primal, times the tangent x came in with.",
    hints=(
        "A dual number's tangent is moved by each op's derivative: the product and chain rules apply.",
        "Differentiate y at the primal value, then multiply by the tangent x came in with.",
    ),
    misconceptions=[
        (
            lambda truth, p: truth / p.facts["tangent"],
            "that is the derivative alone; multiply by the tangent x carries",
        )
    ],
)
def self_dual(p):
    return p.run()["tangent"].item()


@self_test(
    "13.self-compiled-keeps",
    Choice(*KEEP_OPTIONS),
    program=keeps_program,
    explain="The min-cut partitioner keeps what backward cannot do without, choosing cheap tensors: the output of "
    "an op whose backward reads its own output (exp, as tanh and sigmoid in section 3), and the matmul's result "
    "where another op's backward reads it as its input (sin, cos, a square, a product with it). Anything cheaper to "
    "recompute than to keep is recomputed; the matmul never is.",
    hints=(
        "What does each op's backward read: its input, or its own output? Could one kept tensor serve several?",
        "Section 3: the partitioner keeps the output of an op whose backward reads it (tanh, sigmoid, exp). Is "
        "anything left whose backward needs the matmul's result?",
    ),
    misconceptions=[
        (
            lambda truth: KEEP_OPTIONS[0] if truth == KEEP_OPTIONS[1] else None,
            "that would work, but the partitioner keeps the output of an op whose backward reads it, as it keeps "
            "tanh's and sigmoid's; with exp's result kept, nothing needs the matmul's",
        ),
        (
            lambda truth: KEEP_OPTIONS[1] if truth == KEEP_OPTIONS[2] else None,
            "exp keeps its output, but another op's backward (sin, a square, the product) reads the matmul's result "
            "as its input: that is kept too",
        ),
        (
            lambda truth: KEEP_OPTIONS[2] if truth == KEEP_OPTIONS[0] else None,
            "cos's backward reads its input, the matmul's result; there is no exp here to keep",
        ),
    ],
)
def self_compiled_keeps(p):
    ns = p.run()
    kept = [k for k in kept_by_compile(ns["f"], ns["x"], ns["w"]) if k != "input"]
    if kept == ["mm"]:
        return KEEP_OPTIONS[0]
    if kept == ["exp"]:
        return KEEP_OPTIONS[1]
    if sorted(kept) == ["exp", "mm"]:
        return KEEP_OPTIONS[2]
    if not kept:
        return KEEP_OPTIONS[3]
    raise RuntimeError(f"the compiled forward keeps {kept}: none of the options")


@self_test(
    "13.self-branch-graphs",
    Number(tol=0),
    program=branch_program,
    explain="A Python if on a tensor's value needs that value in Python, and so does .item(): a graph break. Dynamo "
    "compiles the part before it, Python takes the branch, and the rest is a graph of its own; each break adds one. "
    "A test on the shape or the number of dimensions is known while tracing: no break.",
    hints=(
        "Can a graph of tensor ops hold a Python if that depends on a tensor's value? On its shape?",
        "Where does Dynamo stop, and what does it compile after Python has taken the branch? Count the breaks.",
    ),
    misconceptions=[
        (
            lambda truth: 1 if truth > 1 else None,
            "the branch depends on a tensor's value: Dynamo cannot trace through it, the graph breaks",
        ),
        (
            lambda truth: truth + 1 if truth == 1 else None,
            "a test on the shape or the number of dimensions is known while tracing: Dynamo takes the branch itself, "
            "with no break",
        ),
        (
            lambda truth, p: truth - 1 if p.facts["breaks"] == 2 else None,
            "each break ends one graph and starts another: two breaks make three graphs",
        ),
    ],
)
def self_branch_graphs(p):
    ns = p.run()
    return graphs_made(ns["f"], ns["x"])
