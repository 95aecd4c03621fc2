"""Unit 05, saved tensors and what they cost: what each node keeps, storage versus identity, the memory bill.

"What backward keeps" has one definition here, the one :func:`grader.probes.bill` counts and
:func:`grader.draw` totals: every saved tensor that reaches a saved-tensor pack hook, each storage once at
its whole size. Python numbers wrapped as 0-dim tensors (the ``2`` of ``h * 2``) are kept by their node
but never reach a pack hook, so they are not in the bill; the notebook shows this in a cell, and
``tests/test_unit05.py`` checks that ``draw`` and the bill agree on every program in
:data:`grader.units.unit05.support.BILL_PROGRAMS`.

The programs the bill questions measure (and the syllabus MLP) live in :mod:`grader.units.unit05.support`;
the exercises' generated models in :mod:`grader.units.unit05.cases`.
"""

from __future__ import annotations

import torch

from grader import probes
from grader.engine.kinds import Choice, Error, Function, Names, Number, saved_key
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.unit05.cases import call_with_spec, mlp_cases
from grader.units.unit05.generators import (
    RELU_SIN,
    frozen_program,
    identity_program,
    outputs_program,
    storages_program,
    view_bill_program,
    writes_program,
)
from grader.units.unit05.support import (
    BillProgram,
    frozen_first_program,
    input_grad_program,
    lowered,
    param_bytes,
    plain_bill,
    state_bytes,
    storage_ptr,
    syllabus_mlp,
    tensor_saves,
    view_program,
    view_shape_bytes,
    wrapped_bytes,
)

# --- 1. ask the node ------------------------------------------------------------------


@predict_then_run(
    "05.tanh-saves",
    Names(key=saved_key, pool=("_saved_self", "_saved_other")),
    prompt="x = torch.ones(3, requires_grad=True); y = x.tanh(). Which tensor-valued _saved_ attributes does "
    "y.grad_fn have? Answer a set of names.",
    explain="The derivative of tanh is 1 - tanh(x)², a formula in the output alone, and the output is already "
    "computed: the node keeps its result, as exp's does, and not its input.",
    misconceptions=[
        (
            {"_saved_self"},
            "tanh's slope, 1 - tanh(x)², can be computed from the output alone, so the node keeps the output "
            "(_saved_result) and lets the input go",
        )
    ],
)
def tanh_saves():
    x = torch.ones(3, requires_grad=True)
    return tensor_saves(x.tanh().grad_fn)


_OPS = {
    "sin": lambda x: x.sin(),
    "exp": lambda x: x.exp(),
    "relu": lambda x: x.relu(),
    "mul": lambda x: x * x.detach().clone().requires_grad_(),
}


@predict_then_run(
    "05.keeps-result",
    Names(key=lowered, pool=tuple(_OPS)),
    prompt="For x = torch.ones(3, requires_grad=True), consider x.sin(), x.exp(), x.relu() and x * w (w another "
    "tensor requiring grad). Which of the operations sin, exp, relu, mul keep their own output "
    "(a _saved_result) rather than their inputs? Answer a set such as {'sin'}.",
    explain="exp's derivative is its own output, and relu's gradient only needs to know where the output "
    "was positive, so both keep the result. sin needs its input; mul needs each operand for the other.",
)
def keeps_result():
    x = torch.ones(3, requires_grad=True)
    return {op for op, make in _OPS.items() if "_saved_result" in tensor_saves(make(x).grad_fn)}


# --- 2. identity or storage --------------------------------------------------------------

_SAME, _SHARED, _COPY = "the same object", "another object over the same storage", "a copy in new storage"


@predict_then_run(
    "05.exp-saved-result",
    Choice(_SAME, _SHARED, _COPY),
    prompt="x = torch.ones(3, requires_grad=True); y = x.exp(); s = y.grad_fn._saved_result. What is s, "
    f"compared with y? Answer one of {_SAME!r}, {_SHARED!r}, {_COPY!r}.",
    explain="A node may not hold a strong reference to its own output (that would be a reference cycle), "
    "so reading the saved output rebuilds a new tensor object over the same memory. Identity says "
    "nothing; compare storages.",
    misconceptions=[
        (
            _SAME,
            "y points to its node through y.grad_fn; a node holding y itself would close a "
            "reference cycle, so it keeps y's data and builds a new tensor object when asked.",
        )
    ],
)
def exp_saved_result():
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    s = y.grad_fn._saved_result
    if s is y:
        return _SAME
    return _SHARED if storage_ptr(s) == storage_ptr(y) else _COPY


@predict_then_run(
    "05.view-bill",
    Number(tol=0),
    prompt="h = torch.randn(1000, requires_grad=True) * 2 is an activation of 1000 float32 values. "
    "out = h[:10].sin(). How many bytes does out's graph keep for backward, counted as the bill "
    "counts (what reaches a pack hook, each storage once at its full size)?",
    explain="sin saves its input, and its input is a view of h: a saved view keeps its whole base "
    "allocation alive, 4 bytes times 1000, not the 40 bytes its shape suggests.",
    misconceptions=[
        (
            lambda truth: view_shape_bytes(),
            "That is the slice's shape times 4 bytes. A view has no memory of its own: saving it keeps the "
            "whole storage of h alive.",
        ),
    ],
)
def view_bill():
    return view_program().bill().total


# --- 3. the memory bill of a small network -------------------------------------------------


LATE_FLAG = ("None", "a tensor equal to x", "an error at backward")


@predict_then_run(
    "05.owed-at-forward",
    Choice(*LATE_FLAG),
    prompt="x = torch.randn(3, requires_grad=True); c = torch.randn(3) (no grad); m = x * c; then "
    "c.requires_grad_() and m.sum().backward(). What is c.grad afterwards: 'None', 'a tensor equal to x' "
    "or 'an error at backward'?",
    explain="When m = x * c ran, only x's gradient was owed: the node recorded an edge for x alone (its "
    "next_functions hold None for c) and saved only c, which x's gradient reads. Setting the flag on c "
    "afterwards changes c, not the record already made: backward never reaches c, and c.grad stays None.",
    misconceptions=[
        (
            "a tensor equal to x",
            "the record was made when m = x * c ran, when c did not require grad: m's node has no edge to c, "
            "and it did not keep x, which c's gradient would read",
        )
    ],
)
def owed_at_forward():
    x = torch.randn(3, requires_grad=True)
    c = torch.randn(3)
    m = x * c
    c.requires_grad_()
    try:
        m.sum().backward()
    except RuntimeError:
        return "an error at backward"
    if c.grad is None:
        return "None"
    return "a tensor equal to x" if torch.equal(c.grad, x) else f"a tensor {c.grad.tolist()}"


_MLP = (
    "torch.manual_seed(0); model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), "
    "nn.ReLU(), nn.Linear(512, 1)); x = torch.randn(256, 512); loss = model(x).sum()"
)
_PARAMS = ("0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias")


@predict_then_run(
    "05.mlp-saved-params",
    Names(pool=_PARAMS),
    prompt=f"{_MLP}. Which of the model's parameters does the forward pass save for backward? Answer a "
    "set of names such as {'0.weight'}.",
    explain="Each Linear keeps its weight only if its input needs a gradient. The raw input does not, "
    "so 0.weight is not kept; the ReLU outputs do, so 2.weight and 4.weight are. Biases never are.",
    misconceptions=[
        (
            {"0.weight", "2.weight", "4.weight"},
            "A Linear keeps its weight for one purpose: the gradient of its "
            "input. Layer 0's input x does not require grad, so 0.weight is never needed.",
        ),
    ],
)
def mlp_saved_params():
    return plain_bill().names() & set(_PARAMS)


@predict_then_run(
    "05.mlp-bill",
    Number(tol=0),
    prompt=f"The same: {_MLP}. How many distinct storages does autograd keep, and how many bytes do they "
    "take together? Answer [storages, bytes].",
    explain="The input (kept by layer 0 for its weight's gradient), both ReLU outputs (each kept by its "
    "ReLU and by the next Linear: one storage, two saves), 2.weight and 4.weight.",
    misconceptions=[
        (
            lambda truth: [
                sum(e.saves for e in plain_bill().entries),
                sum(e.bytes * e.saves for e in plain_bill().entries),
            ],
            "You counted saves, not storages. Each ReLU output is saved twice (by its ReLU and by the next "
            "Linear) but it is one block of memory, counted once.",
        ),
    ],
)
def mlp_bill():
    bill = plain_bill()
    return [bill.count, bill.total]


@predict_then_run(
    "05.input-grad-bill",
    Number(tol=0),
    prompt="The same MLP, but the input is made with x = torch.randn(256, 512).requires_grad_(). How many "
    "bytes are saved now?",
    explain="The first layer now owes a gradient to its input, which needs its weight: 0.weight joins the "
    "bill. The input was already kept (for 0.weight's gradient), so it adds nothing new.",
    misconceptions=[
        (
            lambda truth: truth - param_bytes("0.weight"),
            "That is the bill as before. Layer 0 now owes a gradient to x, and that gradient is grad @ W: "
            "0.weight must be kept.",
        ),
    ],
)
def input_grad_bill():
    return input_grad_program().bill().total


@predict_then_run(
    "05.frozen-bill",
    Number(tol=0),
    prompt="The same MLP with the plain input again (no grad), but the first layer frozen: "
    "model[0].requires_grad_(False). How many bytes are saved now?",
    explain="Nothing before layer 2 needs a gradient, so layer 0 keeps nothing, its ReLU records nothing, "
    "and layer 2 needs its input but not its weight: the input and 2.weight leave the bill at once.",
    misconceptions=[
        (
            lambda truth: truth + param_bytes("2.weight"),
            "2.weight leaves too: layer 2 keeps its weight only for its input's gradient, and with layer 0 "
            "frozen nothing before layer 2 needs one.",
        ),
    ],
)
def frozen_bill():
    return frozen_first_program().bill().total


# --- 4. a write after the forward pass: what the node saved decides ---------------------------


@predict_then_run(
    "05.sigmoid-write",
    Error("at the write", "at backward"),
    prompt="a = torch.tensor([1., 2., 3.], requires_grad=True); b = a.sigmoid(); then b[1] = 2 (the write); "
    "then b.sum().backward(). Where, if anywhere, does it fail? 'at the write', 'at backward' or "
    "'no error'.",
    explain="The sigmoid node saved its output b. The write changed b after it was saved, so the node "
    "refuses to use it when backward reaches it.",
)
def sigmoid_write():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.sigmoid()
    yield "at the write"
    b[1] = 2
    yield "at backward"
    b.sum().backward()


# --- 5. a memory budget ------------------------------------------------------------------------


@predict_then_run(
    "05.adam-state-ratio",
    Number(tol=0.005),
    prompt=f"{_MLP}; opt = torch.optim.Adam(model.parameters()); loss.backward(); opt.step(). Divide the "
    "bytes of every tensor in opt.state by the bytes of the parameters. What is the ratio (2 decimals)?",
    explain="Adam keeps two running averages shaped like each parameter (exp_avg and exp_avg_sq), plus a "
    "one-number step count per parameter: just over twice the parameters.",
    misconceptions=[
        (
            lambda truth: round(truth) - 1,
            "Adam keeps two tensors shaped like each parameter, not "
            "one: the running mean of the gradient and the running mean of its square.",
        )
    ],
)
def adam_state_ratio():
    model, x = syllabus_mlp()
    opt = torch.optim.Adam(model.parameters())
    model(x).sum().backward()
    opt.step()
    params = sum(p.untyped_storage().nbytes() for p in model.parameters())
    return state_bytes(opt) / params


# --- self-test: programs the notebook never runs ---------------------------------------------------


@self_test(
    "05.closed-book-view-tanh",
    Number(tol=0),
    program=view_bill_program,
    explain="An op that keeps its output (tanh, exp, sigmoid, relu) keeps a fresh tensor of the view's size; the view "
    "itself is read once and dropped, so h's big storage is not held. An op that keeps its input (sin, cos) keeps the "
    "view, and a kept view pins its base's whole storage. Whether a view costs its base depends on whether a node "
    "saves the view. The * 2 keeps its 2 as a wrapped number: kept, but outside the bill.",
    hints=(
        "Which does the op keep, its input or its output? tanh's slope is 1 - tanh(x)^2; sin's is cos(x).",
        "A fresh output is a tensor of its own, the view's size. A saved view is a view of h: the bill counts the "
        "storage it shares, at its full size.",
        "The multiplication by 2 keeps the 2 as a wrapped number: kept, but outside the bill.",
    ),
    misconceptions=[
        (
            lambda truth, p: p.facts["h bytes"] if p.facts["keeps"] == "output" else None,
            "That is all of h. It would be kept if a node saved the view, but this op keeps its output, not its input.",
        ),
        (
            lambda truth, p: truth + p.facts["h bytes"] if p.facts["keeps"] == "output" else None,
            "the op's output is all it keeps; the view of h is read once and dropped, so h's storage is not held for "
            "backward.",
        ),
        (
            lambda truth, p: p.facts["view bytes"] if p.facts["keeps"] == "input" else None,
            "that is the view's own size; but this op keeps its input, the view, and a kept view holds its base's "
            "whole storage.",
        ),
        (
            lambda truth: truth + wrapped_bytes(2),
            "You added the 2 of '* 2' (an 8-byte int64). It is kept, but as a wrapped Python number it never reaches a "
            "pack hook, so the bill leaves it out.",
        ),
    ],
)
def closed_book_view_tanh(p):
    ns = p.run(until="forward")
    return probes.bill(lambda: eval(p.facts["forward"], {**ns, "torch": torch})).total


@self_test(
    "05.closed-book-relu-sin-identity",
    Choice(*RELU_SIN),
    program=identity_program,
    explain="To the node that made y, y is its own output: holding y would close a reference cycle (y.grad_fn is that "
    "node), so it keeps the data and rebuilds a tensor object when asked. To a node that reads y, y is an input, "
    "which it may hold as it is. Both share y's storage: saving never copies. A node after y that keeps its own "
    "output (exp) keeps that output, a new storage.",
    hints=(
        "Ask, for each node, whether y is that node's output or its input.",
        "y.grad_fn is the node that made y. What would happen if that node also held a strong reference to y?",
        "A node rebuilds only its own saved output; a saved input comes back as the very object.",
    ),
    misconceptions=[
        (
            lambda truth: RELU_SIN[1] if truth == RELU_SIN[2] else None,
            "It is the other way round: a node may not hold its own output (y -> its node -> y would be a cycle), "
            "but it may hold its inputs.",
        ),
        (
            lambda truth: RELU_SIN[4] if truth != RELU_SIN[4] else None,
            "Saving never copies; both nodes keep y's memory, which is why an in-place write to y would spoil both.",
        ),
        (
            lambda truth: RELU_SIN[3] if truth == RELU_SIN[4] else None,
            "exp after y keeps its own output, a new tensor in new storage, not y",
        ),
        (
            lambda truth: RELU_SIN[3] if truth == RELU_SIN[0] else None,
            "a node keeps its input as the very object: both nodes here read y as an input",
        ),
        (
            lambda truth: RELU_SIN[0] if truth == RELU_SIN[3] else None,
            "the node that made y may not hold y itself (y -> its node -> y would be a cycle): each time you ask, it "
            "rebuilds another object over y's storage",
        ),
    ],
)
def closed_book_relu_sin_identity(p):
    ns = p.run()
    y, r, s = ns["y"], ns["r"], ns["s"]
    if storage_ptr(r) != storage_ptr(y) or storage_ptr(s) != storage_ptr(y):
        return RELU_SIN[4]
    return {
        (True, True): RELU_SIN[0],
        (True, False): RELU_SIN[1],
        (False, True): RELU_SIN[2],
        (False, False): RELU_SIN[3],
    }[(r is y, s is y)]


@self_test(
    "05.closed-book-mul-exp-storages",
    Names(pool=("a", "b", "m", "p")),
    program=storages_program,
    explain="Each node keeps what its own backward reads, and only for the gradients owed. A product keeps, for each "
    "factor that needs a gradient, the other factor; a quotient keeps its divisor (and its dividend when the divisor "
    "needs a gradient); a sum keeps nothing. exp, relu and tanh keep their output p; sin and a square keep their "
    "input m.",
    hints=(
        "Take the two nodes one at a time: the one that made m, and the one that made p.",
        "A product keeps the operand that the other operand's gradient needs, and only for operands that require "
        "grad. Does the op on m read its input or its output?",
    ),
    misconceptions=[
        (
            lambda truth, p: set(truth) | {"m"} if p.facts["keeps"] == "output" and "m" not in truth else None,
            "exp, relu and tanh keep their output p, not their input m: their slope is read off the output.",
        ),
        (
            lambda truth, p: set(truth) | {"p"} if p.facts["keeps"] == "input" and "p" not in truth else None,
            "sin and a square keep their input m: their slope is read at m, not at p.",
        ),
        (
            lambda truth, p: (
                set(truth) | {"a"}
                if p.facts["who"] == "a" and p.facts["combine"] == "a * b" and "a" not in truth
                else None
            ),
            "The product keeps a only if someone needs b's gradient (grad * a). b does not require grad, so a is not "
            "kept.",
        ),
        (
            lambda truth, p: set(truth) - {"b"} if "b" in truth and p.facts["combine"] != "a + b" else None,
            "a's gradient reads b (grad * b, or grad / b): the node keeps b.",
        ),
    ],
)
def closed_book_mul_exp_storages(p):
    ns = p.run()
    kept = [e.storage for e in probes.saved_tensors(ns["p"]) if e.state == "ok" and not e.wrapped]
    return {name for name in ("a", "b", "m", "p") if storage_ptr(ns[name]) in kept}


def _bill_of(p, ns, forward):
    model, x = ns[p.facts["model"]], ns[p.facts["x"]]
    return BillProgram(forward, names=model, inputs={"input": x}).bill()


@self_test(
    "05.closed-book-middle-frozen",
    Number(tol=0),
    program=frozen_program,
    explain="Walk the layers with one flag: does the tensor entering this layer need a gradient? A layer keeps its "
    "input when its weight trains, and its weight when its input needs a gradient, frozen or not: the gradient "
    "still has to pass back through it. A frozen layer whose input needs no gradient keeps nothing. An activation "
    "keeps its output (ReLU, Tanh) or its input (GELU) once its input needs a gradient; a storage kept twice is "
    "counted once.",
    hints=(
        "Walk the layers with one flag: does the tensor entering this layer need a gradient?",
        "From the first layer that trains (or from an input that requires grad) on, every tensor needs a gradient, "
        "frozen layers or not.",
        "A frozen layer whose input needs a gradient still has to send grad @ W back: it keeps its weight.",
    ),
    misconceptions=[
        (
            lambda truth, p: (
                truth - p.facts["weight_bytes"] if p.facts["frozen"] > 0 or p.facts["grad_input"] else None
            ),
            "Freezing a layer stops its weight from training, not from being saved: the gradient still has to pass "
            "through it to reach the layers before it, and that takes its weight.",
        ),
        (
            lambda truth, p: (
                truth + p.facts["input_bytes"] if p.facts["frozen"] == 0 and not p.facts["grad_input"] else None
            ),
            "a frozen first layer on an input that needs no gradient owes no gradient at all: it keeps nothing, not "
            "even its input.",
        ),
    ],
)
def closed_book_middle_frozen(p):
    ns = p.run()
    return _bill_of(p, ns, lambda: ns[p.facts["model"]](ns[p.facts["x"]]).sum()).total


def _one_pass(p) -> list:
    """[storages, bytes] one forward pass of the drawn model keeps (what keeping a single output keeps)."""
    ns = p.run(until="forward")
    bill = _bill_of(p, ns, lambda: ns[p.facts["model"]](ns[p.facts["x"]]))
    return [bill.count, bill.total]


@self_test(
    "05.closed-book-kept-outputs",
    Number(tol=0),
    program=outputs_program,
    explain="Each pass makes new activations, but the input and the weights are the same storages every time: kept "
    "by every graph, counted once. The total is the shared storages once plus each pass's own activations.",
    hints=(
        "Which storages are new in each pass, and which are the same tensors every time?",
        "x and the weights are one storage each, however many graphs keep them. Each pass makes its own activations.",
        "Bill one pass first: which of its storages would a second pass share?",
    ),
    misconceptions=[
        (
            lambda truth, p: [v * p.facts["passes"] for v in _one_pass(p)],
            "The graphs share x and the weights: one storage each, counted once. Only the activations are new in "
            "every pass.",
        ),
        (
            lambda truth, p: _one_pass(p),
            "Each output keeps its own graph alive, with its own activations: several graphs, not one.",
        ),
    ],
)
def closed_book_kept_outputs(p):
    ns = p.run(until="forward")
    bill = _bill_of(p, ns, lambda: eval(p.facts["forward"], ns))
    return [bill.count, bill.total]


_WRITES = ("b", "c", "d", "e")


@self_test(
    "05.closed-book-which-writes",
    Names(pool=_WRITES),
    program=writes_program,
    explain="A write spoils backward only if some node saved that storage: an op that reads its input (sin, cos, a "
    "square, abs) keeps the tensor it was given; one that reads its output (exp, relu, tanh, sigmoid) keeps the "
    "tensor it made; a product by a number and the final addition keep no tensor.",
    hints=(
        "List what each node keeps: the one that made b, c, d, e, and the addition.",
        "For each node ask: does its local rule read its input, its output, or neither?",
        "A write is harmless to backward when no node saved the storage written.",
    ),
    misconceptions=[
        (
            lambda truth: set(truth) | {"d"} if "d" not in truth else None,
            "d is written safely: its maker kept its input or nothing, and the addition keeps nothing.",
        ),
        (
            lambda truth: set(_WRITES) if set(truth) | {"d"} != set(_WRITES) else None,
            "not every tensor is kept: each node keeps only what its own backward reads (its input, its output, or "
            "nothing), and the addition keeps nothing.",
        ),
        (
            lambda truth: set(truth) - {"b"} if "b" in truth else None,
            "b is kept: a node that reads b in its backward (sin, cos, a square, abs) kept it, or b's own maker keeps "
            "its output.",
        ),
    ],
)
def closed_book_which_writes(p):
    build = p.run()["build"]
    broken = set()
    for name in _WRITES:
        ns = build()
        ns[name].add_(1)
        try:
            ns["loss"].backward()
        except RuntimeError as exc:
            if "modified by an inplace operation" not in str(exc):
                raise
            broken.add(name)
    return broken


# --- exercises: predict the bill of a generated model ------------------------------------------


@exercise(
    "05.predict-bill",
    Function(returns=Number(tol=0), cases=mlp_cases, call=call_with_spec),
    prompt="Write predict_bill(spec): for the model the spec describes (spec.layers, spec.batch, "
    "spec.input_requires_grad, spec.dtype), return (storages, bytes): how many distinct storages "
    "model(x).sum() keeps for backward and their total size. Work it out from the spec by "
    "reasoning; do not build the model and measure it: torch's tensor operations are switched off (they "
    "raise) while your function runs. It is checked on 40 generated models.",
    hints=(
        "Walk the layers carrying one flag: does the tensor entering this layer need a gradient? It starts "
        "as spec.input_requires_grad and turns true after the first layer that trains.",
        "A Linear keeps its input when its weight trains, and its weight when its input needs a gradient; "
        "a ReLU is recorded (and keeps its output) only when its input needs a gradient.",
        "The ReLU output and the next Linear's input are one storage: count it once, whoever saves it. "
        "Bytes per element are spec.dtype.itemsize.",
    ),
    explain="Walk the layers carrying one flag, 'does the tensor entering this layer need a gradient'. A "
    "Linear keeps its input when its weight trains, and its weight when its input needs a gradient; "
    "a ReLU keeps its output when it was recorded at all. An activation saved by a ReLU and by the "
    "next Linear is one storage.",
)
def predict_bill(case):
    bill = case.bill()
    return [bill.count, bill.total]


@exercise(
    "05.saved-parameters",
    Function(returns=Names(), cases=mlp_cases, call=call_with_spec),
    prompt="Write saved_parameters(spec): the set of parameter names (such as '2.weight') whose storage "
    "model(x).sum() keeps for backward, for the model the spec describes. Reason from the spec; do "
    "not build the model: torch's tensor operations are switched off (they raise) while your function runs. "
    "It is checked on 40 generated models.",
    hints=(
        "A weight is kept for one purpose only. Which gradient needs W?",
        "The gradient of a Linear's input is grad @ W. It is needed when the tensor entering the layer needs "
        "a gradient, whether the layer itself is frozen or not.",
        "A bias's gradient is a sum of the incoming gradient: no bias is ever kept.",
    ),
    explain="A weight is saved exactly when the tensor entering its layer needs a gradient, whether the "
    "layer itself is frozen or not; a bias never is.",
)
def saved_parameters(case):
    ns = case.fresh()
    params = {n for n, _ in ns["model"].named_parameters()}
    return case.bill(ns).names() & params
