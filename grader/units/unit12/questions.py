"""Unit 12, finding the fault: anomaly mode, hunting non-finite gradients, memory that grows, and a
checklist for a loop you did not write.

Tools, the programs the experiments run and the grader's own diagnosis live in
:mod:`grader.units.unit12.support`, the exercise's generated setups in :mod:`grader.units.unit12.cases`. Every
answer is read from torch at check time: what anomaly mode raised and named, which gradients are NaN, which
module hooks saw a non-finite gradient, what the objects a loop keeps hold, what the collector's observer found,
which parameters the optimizer holds and which a loss reaches.
"""

from __future__ import annotations

import gc

import torch
from torch import nn

from grader import probes
from grader.engine.kinds import Choice, Function, Name, Names
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.switches import guarded
from grader.units.unit12 import support as kit
from grader.units.unit12.cases import setup_cases
from grader.units.unit12.generators import (
    FIXES,
    GROWTH,
    ORIGINS,
    anomaly_program,
    ema_program,
    first_hook_program,
    fix_program,
)
from grader.units.unit12.kinds import FaultInModule
from grader.units.unit12.support import (
    CYCLES,
    FAULTS,
    hook_model,
    leak_loop,
    make_cycle,
    masked_root,
    their_param_names,
)

# --- 1. anomaly mode --------------------------------------------------------------------------------

LOSS_AND_GRAD = (
    "loss finite, x.grad finite",
    "loss finite, NaN in x.grad",
    "loss NaN, NaN in x.grad",
    "backward raises",
)
PROGRAM = (
    "x = torch.tensor([4.0, -1.0, 9.0], requires_grad=True); mask = torch.tensor([1.0, 0.0, 1.0]); "
    "y = x.sqrt(); loss = (y * mask).sum(); loss.backward()"
)


@predict_then_run(
    "12.masked-loss-nan",
    Choice(*LOSS_AND_GRAD),
    prompt=PROGRAM
    + ". Without anomaly mode, what are the loss and x.grad: "
    + ", ".join(repr(s) for s in LOSS_AND_GRAD)
    + "?",
    explain="Multiplying by 0 does not remove a NaN: sqrt(-1) is NaN and NaN * 0 is NaN, so the loss itself is NaN. "
    "In backward the product sends 0 to y[1], and sqrt's backward divides it by 2 * sqrt(-1): 0 / NaN is NaN. "
    "Nothing raises: plain autograd never checks a value.",
    misconceptions=[
        (
            "loss finite, NaN in x.grad",
            "that is torch.where's guard (unit 10), which picks values; a multiplication by 0 keeps the NaN: "
            "NaN * 0 is NaN, in the loss too",
        ),
        (
            "loss finite, x.grad finite",
            "NaN * 0 is NaN: the mask removes nothing, in the forward pass or in backward",
        ),
    ],
)
def masked_loss_nan():
    x, loss = masked_root()
    loss_finite = bool(torch.isfinite(loss))
    try:
        loss.backward()
    except RuntimeError:
        return LOSS_AND_GRAD[3]
    grad_finite = kit.finite(x.grad)
    if loss_finite:
        return LOSS_AND_GRAD[0] if grad_finite else LOSS_AND_GRAD[1]
    return LOSS_AND_GRAD[2] if not grad_finite else "loss NaN, x.grad finite"


NAN_TO_NUM_OUTCOMES = (
    "no error: nan_to_num removed the NaN",
    "raises at loss.backward(), naming SqrtBackward0",
    "raises at loss.backward(), naming NanToNumBackward0",
    "raises at y = x.sqrt()",
)


@predict_then_run(
    "12.anomaly-nan-to-num",
    Choice(*NAN_TO_NUM_OUTCOMES),
    prompt="Inside `with torch.autograd.detect_anomaly():` x = torch.tensor([4.0, -1.0, 9.0], requires_grad=True); "
    "y = x.sqrt().nan_to_num() (the NaN of sqrt(-1) replaced by 0); loss = y.sum(), which is 5.0; "
    "loss.backward(). What happens: " + ", ".join(repr(s) for s in NAN_TO_NUM_OUTCOMES) + "?",
    explain="nan_to_num cleans the forward value only. Its backward sends 0 to the entry it replaced, and sqrt's "
    "backward still runs on every entry: 0 / (2 * sqrt(-1)) is NaN. Anomaly mode checks what each backward node "
    "returns, not forward values: SqrtBackward0 is the first to return a NaN, and anomaly mode raises there, "
    "naming it (its warning points at the forward line).",
    misconceptions=[
        (
            NAN_TO_NUM_OUTCOMES[0],
            "the forward value is clean, but sqrt's backward still runs on sqrt(-1): it turns the 0 that "
            "nan_to_num's backward sends into 0 / NaN",
        ),
        (
            NAN_TO_NUM_OUTCOMES[3],
            "anomaly mode does not check forward values; it checks what backward nodes return",
        ),
    ],
)
def anomaly_nan_to_num():
    def run():
        x = torch.tensor([4.0, -1.0, 9.0], requires_grad=True)
        x.sqrt().nan_to_num().sum().backward()

    report = kit.anomaly_report(run)
    if not report.raised:
        return NAN_TO_NUM_OUTCOMES[0]
    if report.node in ("SqrtBackward0", "NanToNumBackward0"):
        return f"raises at loss.backward(), naming {report.node}"
    return f"raises: {report.raised}"


INF_OUTCOMES = (
    "raises, naming SqrtBackward0",
    "raises, naming SumBackward0",
    "no error: x.grad holds inf",
    "no error: x.grad is finite",
)
INF_PROGRAM = "x = torch.tensor([0.0, 4.0], requires_grad=True); x.sqrt().sum().backward()"


@predict_then_run(
    "12.anomaly-inf",
    Choice(*INF_OUTCOMES),
    prompt="Inside `with torch.autograd.detect_anomaly():`, "
    + INF_PROGRAM
    + ". What happens: "
    + ", ".join(repr(o) for o in INF_OUTCOMES)
    + "?",
    explain="sqrt's backward returns 1 / (2 * sqrt(0)) = inf for x[0], and 0.25 for x[1]. Anomaly mode checks "
    "what each backward node returns for NaN only: an inf passes, and lands in x.grad without a word.",
    misconceptions=[
        (
            INF_OUTCOMES[0],
            "1 / (2 * sqrt(0)) is inf, not NaN, and anomaly mode's check is a NaN check: it lets inf through",
        ),
        (INF_OUTCOMES[3], "sqrt's slope at 0 is 1 / (2 * sqrt(0)): a division by zero, which is inf"),
    ],
)
def anomaly_inf():
    holder = {}

    def run():
        x = torch.tensor([0.0, 4.0], requires_grad=True)
        holder["x"] = x
        x.sqrt().sum().backward()

    report = kit.anomaly_report(run)
    if report.raised:
        return INF_OUTCOMES[0] if report.node == "SqrtBackward0" else INF_OUTCOMES[1]
    return INF_OUTCOMES[3] if kit.finite(holder["x"].grad) else INF_OUTCOMES[2]


ADDS = (
    "the stack of the forward line, kept on each node",
    "a copy of every saved tensor",
    "a NaN check of every forward output",
    "nothing until backward fails",
)


@predict_then_run(
    "12.anomaly-cost",
    Choice(*ADDS),
    prompt="A small MLP's forward pass (Linear(8, 16), Tanh, Linear(16, 16), Tanh, Linear(16, 1) on a 32 x 8 "
    "batch; loss = out.pow(2).mean()) runs under torch.autograd.set_detect_anomaly(True). What does "
    "anomaly mode add during the forward pass, before any backward: " + ", ".join(repr(a) for a in ADDS) + "?",
    explain="Anomaly mode records, for every node the forward pass makes, the Python stack that made it (in "
    "node.metadata), so that a failure in backward can name the forward line. Forward values are not "
    "checked (NaN checks run on backward's outputs) and nothing is copied. Capturing a stack for every "
    "op is what makes anomaly mode slow on a model of small ops.",
    misconceptions=[
        (
            ADDS[2],
            "the NaN checks run in backward, on what each node returns; a NaN made in the "
            "forward pass goes through silently",
        ),
        (
            ADDS[3],
            "the stacks are captured while the forward pass runs: that is what lets the error "
            "name the forward line later",
        ),
    ],
)
def anomaly_cost():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
    x = torch.randn(32, 8)
    x[0, 0] = float("nan")  # a NaN in the forward pass: is it checked there?
    with torch.autograd.set_detect_anomaly(True):
        loss = model(x).pow(2).mean()  # no error: forward outputs are not checked
    ops = [n for n in probes.nodes(loss) if not hasattr(n, "variable")]
    if ops and all("traceback_" in n.metadata for n in ops):
        return ADDS[0]
    return ADDS[3]


# --- 2. where a non-finite gradient starts ------------------------------------------------------------

WHERE_ENTRIES = ("x[0]", "x[1]", "x[2]")


@predict_then_run(
    "12.where-log-nan",
    Names(pool=WHERE_ENTRIES),
    prompt="x = torch.tensor([-4.0, 0.0, 4.0], requires_grad=True); y = torch.where(x > 0, x.log(), 0.0); "
    "y.sum().backward(). log(-4) is NaN and log(0) is -inf, and where picks neither. Which entries of x.grad are "
    "NaN? Answer a set of 'x[0]', 'x[1]', 'x[2]' (an empty set if none).",
    explain="torch.where sends 0 to the branch it did not pick, and log's backward divides that 0 by its saved "
    "input x: log's slope 1 / x is read from the input, not from the NaN the forward pass returned. At x = -4 that "
    "is 0 / -4, a harmless -0; at x = 0 it is 0 / 0, NaN. What decides is what the branch's backward reads at a "
    "masked entry: log's reads the input, while sqrt's reads its output, so the NaN sqrt(-4) made does reach it.",
    misconceptions=[
        (
            {"x[0]", "x[1]"},
            "log's backward reads its input x, not the NaN log(-4) it returned: at x = -4 it computes 0 / -4, which "
            "is finite; only 0 / 0 at x = 0 is NaN",
        ),
        (
            set(),
            "where does send zero to the branch not taken, but log's backward divides that zero by x, and at x = 0 "
            "that is 0 / 0, NaN",
        ),
    ],
)
def where_log_nan_entries():
    x = torch.tensor([-4.0, 0.0, 4.0], requires_grad=True)
    torch.where(x > 0, x.log(), 0.0).sum().backward()
    return {name for name, v in zip(WHERE_ENTRIES, x.grad.tolist()) if v != v}


HOOK_MODULES = ("enc", "act", "gate", "head")


@predict_then_run(
    "12.hook-nonfinite",
    Names(pool=HOOK_MODULES),
    prompt="model = nn.Sequential(OrderedDict(enc=nn.Linear(3, 4), act=nn.Tanh(), gate=<a module returning "
    "torch.where(h > 0, h.sqrt(), 0.0)>, head=nn.Linear(4, 1))), a 6 x 3 input x (not requiring grad) "
    "with negative values after tanh. register_full_backward_hook(hook) on each of the four modules; "
    "model(x).sum().backward(). Which modules' hooks see a non-finite gradient in grad_input (the "
    "gradient the module sends back to its input)? Answer a set of module names.",
    explain="Hooks fire from the loss backwards: head sends back a finite gradient; gate's backward makes "
    "the NaN, so it goes out of gate and into tanh, which passes it on. enc's input is the data, "
    "which needs no gradient: its grad_input is (None,). The NaN still lands in enc.weight.grad, "
    "which a module hook does not show.",
    misconceptions=[
        (
            set(HOOK_MODULES[:3]),
            "enc's input x does not require grad, so enc's grad_input is "
            "(None,); the NaN reaches enc.weight.grad instead",
        ),
        ({"gate"}, "tanh's backward multiplies the NaN by 1 - tanh^2: NaN goes out of act too"),
    ],
)
def hook_nonfinite():
    model, x = hook_model()
    with kit.BackwardWatch(model) as watch:
        model(x).sum().backward()
    return {e.module for e in watch.events if e.module and not e.grad_input_finite}


# --- 3. memory that grows -----------------------------------------------------------------------------

LOOPS = ("list of val losses", "running total", "list of floats")


LOOP_CODE = (
    "model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)); each of 4 steps trains on "
    "a batch (loss.backward(); opt.step()) and then computes val = model(xv).pow(2).mean() on a "
    "32 x 16 validation batch, with grad mode on. Three loops keep val differently: 'list of val "
    "losses': vals.append(val); 'running total': total = val at step 1, then total = total + val; "
    "'list of floats': vals.append(val.item())."
)


@predict_then_run(
    "12.leak-held",
    Names(pool=LOOPS),
    prompt=LOOP_CODE + " In which loops do the bytes that the kept objects' graphs hold for backward "
    "(saved tensors not yet freed) grow from step 1 to step 4? Answer a set of the labels.",
    explain="Nobody calls backward on val, so its graph keeps everything its forward saved (the input, the "
    "hidden activations, a weight). Keeping the tensor, in a list or in a sum, keeps one such graph "
    "per step. .item() keeps a Python float and lets the graph go.",
    misconceptions=[
        (
            {"list of val losses"},
            "the sum total + val has a graph that reaches every earlier val: it keeps all their graphs too",
        )
    ],
)
def leak_held():
    out = set()
    for kind in LOOPS:
        after, *_ = leak_loop(kind)
        if after[-1][0] > after[0][0]:
            out.add(kind)
    return out


@predict_then_run(
    "12.leak-depth",
    Names(pool=LOOPS),
    prompt=LOOP_CODE + " In which loops does the depth (probes.depth, the longest path to a leaf) of the "
    "deepest graph kept grow from step 1 to step 4? Answer a set of the labels.",
    explain="A list keeps graphs side by side: each val is one forward pass deep. The running total chains "
    "them: every step puts one more addition on top of all earlier ones, so its depth grows with "
    "the step count, like unit 08's carried state.",
    misconceptions=[(set(LOOPS[:2]), "a list holds many graphs side by side; each of them is one step deep")],
)
def leak_depth():
    out = set()
    for kind in LOOPS:
        after, *_ = leak_loop(kind)
        if after[-1][1] > after[0][1]:
            out.add(kind)
    return out


@predict_then_run(
    "12.cycle-seen",
    Names(pool=CYCLES),
    prompt="torch.utils.viz._cycles.observe_garbage(observer) makes Python's collector hand every object it "
    "finds in an unreachable reference cycle to observer before freeing it. Three cycles, each holding a "
    "1000-float tensor, with every name dropped: 'tensor that names itself': t = torch.randn(1000); t.me = t; "
    "'gradient set by hand': w = torch.randn(1000, requires_grad=True); w.grad = w * 2; 'gradient kept as an "
    "attribute': w = torch.randn(1000, requires_grad=True); (w.kept,) = torch.autograd.grad((w.sin() ** 2).sum(), "
    "w, create_graph=True). Then gc.collect(). For which cycles does the observer receive the tensor? Answer a set "
    "of the labels.",
    explain="The collector walks Python objects only, and frees a cycle only when it can follow every link of it. "
    "The tensor that names itself is held by its own attribute dict, a Python reference: the collector finds that "
    "cycle, shows it to the observer and frees the tensor. The gradient set by hand has a graph (w * 2 was "
    "recorded), and that graph's AccumulateGrad node holds w: w -> w.grad -> MulBackward0 -> AccumulateGrad -> w, "
    "all C++ references inside torch. The kept gradient's cycle has one Python link, w's attribute dict holding "
    "the gradient, but the way back from the gradient to w runs through its graph, C++ again: the collector cannot "
    "follow it, so it never learns that w is unreachable, and no observer built on it reports either.",
    misconceptions=[
        (
            set(CYCLES),
            "a gradient's graph leads back to its parameter through C++ references inside torch, which Python's "
            "collector never follows (unit 06's backward(create_graph=True) cycle)",
        ),
        (
            {CYCLES[0], CYCLES[2]},
            "one Python link is not enough: the kept gradient's way back to w runs through its graph, C++ "
            "references the collector cannot follow, so it cannot tell that w is unreachable",
        ),
        (
            set(),
            "a tensor's attribute is a Python reference the collector follows, so a tensor that names itself is a "
            "cycle of Python references, found and freed like a dict that holds itself",
        ),
    ],
)
def cycle_seen():
    out = set()
    for kind in CYCLES:
        found, alive = kit.gc_tensor_cycles(lambda kind=kind: make_cycle(kind))
        if (1000,) in found:
            out.add(kind)
    gc.collect()
    return out


# --- 4. a checklist for a loop you did not write --------------------------------------------------------

THEIR_PARAMS = their_param_names()


@predict_then_run(
    "12.not-in-optimizer-after-double",
    Names(pool=THEIR_PARAMS),
    prompt="their_setup() (its source is printed in the notebook) builds model = Regressor(), then opt = "
    "torch.optim.SGD(model.parameters(), lr=0.05), then model.head = nn.Linear(6, 1). Then model.double() "
    "turns every parameter to float64. Which of the model's parameters (model.named_parameters()) are not "
    "among the tensors in opt.param_groups? Answer a set of names.",
    explain="The optimizer keeps the tensors it was given, not a view of the model. model.double() converts "
    "each parameter in place: the same Parameter objects, their data swapped for float64, so the ones the "
    "optimizer holds are still the model's (torch's default; torch.__future__.set_overwrite_module_params_on_"
    "conversion(True) would make new Parameters instead). The head assigned after the optimizer was made brought new "
    "tensors it has never seen, before and after the conversion.",
    misconceptions=[
        (
            lambda truth: set(THEIR_PARAMS),
            "model.double() keeps every Parameter object and changes its data in place: the optimizer's "
            "tensors are still the model's, now float64",
        ),
        (
            set(),
            "the optimizer keeps the tensors it was given: the head assigned after it was made brings "
            "tensors it has never seen",
        ),
    ],
)
def not_in_optimizer_after_double():
    model, opt, _ = kit.their_setup()
    model.double()
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    return {n for n, p in model.named_parameters() if id(p) not in held}


@predict_then_run(
    "12.unused-params",
    Names(pool=THEIR_PARAMS),
    prompt="With their_setup()'s model and first batch (x, y), loss = ((model(x) - y) ** 2).mean(); grads = "
    "torch.autograd.grad(loss, list(model.parameters()), allow_unused=True). For which parameters is the "
    "gradient None? Answer a set of names.",
    explain="Encoder multiplies by sigmoid(gate(x)).detach(): the detach cuts the only path from the loss to "
    "gate's weight and bias, so autograd.grad reports them unused (None). Without allow_unused it "
    "would raise instead.",
    misconceptions=[
        (
            {"head.weight", "head.bias"},
            "the new head is on the loss's path: it gets a gradient, whatever the optimizer holds",
        )
    ],
)
def unused_params():
    model, _, batches = kit.their_setup()
    x, y = batches[0]
    loss = ((model(x) - y) ** 2).mean()
    names = [n for n, _ in model.named_parameters()]
    grads = torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)
    return {n for n, g in zip(names, grads) if g is None}


# --- the exercise -----------------------------------------------------------------------------------


@exercise(
    "12.diagnose",
    Function(
        returns=FaultInModule(),
        cases=setup_cases,
        call=guarded(
            "read torch's record yourself: hooks, .grad, the module attributes",
            {
                "grader.units.unit12.support.find_fault": "grader.units.unit12.support.find_fault",
                "grader.units.unit12.support.readings": "grader.units.unit12.support.readings",
            },
            call=lambda fn, case, ns: fn(ns["model"], ns["loss_fn"], ns["batches"]),
        ),
        per_case_s=3.0,
    ),
    prompt="Write diagnose(model, loss_fn, batches): train the model with torch.optim.SGD(model.parameters(), "
    "lr=0.1) for one step per batch (loss = loss_fn(model(x), y)) and return the first fault found, as "
    "(fault, module name): " + ", ".join(repr(k) for k in FAULTS) + "; or 'no fault'. The module is "
    "where the evidence points: for a non-finite gradient the module whose backward first made one; for "
    "a frozen parameter a module owning a parameter that requires grad and that step 1's backward leaves "
    "without .grad (one frozen on purpose, requires_grad_(False), is no fault); for a stale graph or growing "
    "memory the module whose attribute keeps a graph from step to step. Restore any global state you change. "
    "Setups draw their class names, and the same class can hold a fault in one setup and none in another: "
    "where it sits, or what is frozen, decides. The course's own diagnosis (find_fault, readings) is switched "
    "off while your function runs.",
    explain="Each fault leaves its own evidence in torch's record: a backward that raises because it walks a "
    "graph an earlier step freed; a module whose full backward hook sees a finite gradient come in "
    "and a non-finite one go out; a parameter whose .grad is still None after backward; a module "
    "attribute that still holds a tensor with a grad_fn after the steps. Asked in that order, step by "
    "step, they name the fault and its module.",
    hints=(
        "Run the steps yourself, and after each backward ask: did it raise? is any gradient non-finite? is "
        "any .grad still None? After the last step: does any module keep a tensor with a grad_fn?",
        "For the non-finite origin, register_full_backward_hook on every module (model.named_modules()); hooks "
        "fire from the loss backwards, so the first hook whose grad_output is finite and grad_input is not "
        "names the module. For the graph kept, look in vars(module) for tensors (or lists of them) with a "
        "grad_fn; remove your hooks when you are done.",
        "A stale graph raises at step 2's backward ('backward through the graph a second time'); growing memory "
        "never raises: the graph is kept but never walked again.",
    ),
)
def diagnose_setup(case):
    return kit.find_fault(**case.fresh())


# --- self-test ----------------------------------------------------------------------------------------


@self_test(
    "12.self-anomaly-node",
    Name(),
    program=anomaly_program,
    explain="Anomaly mode checks each backward's output for NaN only. A slope at 0 is inf (sqrt's 1 / (2 * sqrt(0)), "
    "log's 1 / 0), which passes the check; the first NaN is born where that inf meets a zero: a power's or a "
    "product's backward multiplying inf by 2x = 0, abs's by sign(0) = 0, or a backward multiplying the zero sent "
    "back by * 0 by its inf slope.",
    hints=(
        "Walk backward from y node by node and compute what each returns at the zero of x.",
        "Anomaly mode raises on NaN, not on inf. Which backward gives inf at 0, and which node is the first to "
        "multiply an inf by a zero?",
    ),
    misconceptions=[
        (
            lambda truth, p: "SqrtBackward0" if "sqrt" in p.source and truth != "SqrtBackward0" else None,
            "sqrt's backward returns inf at 0 (1 / 0), not NaN; anomaly mode only checks for NaN. The NaN appears in "
            "the next node, where inf meets a zero",
        ),
        (
            lambda truth, p: "MulBackward0" if p.facts["order"] == "zero then" else None,
            "the product by 0 sends back zeros, not NaN; the NaN is born when the next backward multiplies that 0 by "
            "its inf slope",
        ),
    ],
)
def self_anomaly_node(p):
    return kit.anomaly_report(lambda: exec(p.source, {"torch": torch})).node


@self_test(
    "12.self-finite-fix",
    Names(pool=FIXES),
    program=fix_program,
    explain="Where an expression's backward divides by sqrt(0), the result is inf, and what happens next decides. "
    "An outer where still runs sqrt's backward on every entry (NaN or inf where x <= 0, times where's zero: NaN); "
    "a where or relu before sqrt sends inf into a backward that selects zero for masked entries (finite); abs's "
    "backward multiplies by sign(x), and at x = 0 that is 0 * inf = NaN (for (x + 1).abs(), at x = -1). With no "
    "zero or negative in x, every slope is finite.",
    hints=(
        "For each expression, list the backward nodes from y to x and what each computes at each entry of x.",
        "sqrt's backward at 0 gives inf, at a negative NaN. A where or a relu backward picks 0 for masked entries, "
        "whatever came in; abs's backward multiplies by the sign instead.",
    ),
    misconceptions=[
        (
            lambda truth: set(truth) | {FIXES[2]} if FIXES[2] not in truth else None,
            "abs keeps every value non-negative, but its backward multiplies by sign(0) = 0, and 0 times sqrt's inf "
            "at 0 is NaN",
        ),
        (
            lambda truth: set(truth) | {FIXES[0]} if FIXES[0] not in truth else None,
            "the outer where still runs sqrt's backward on every entry: where x <= 0 its slope is inf or NaN, and "
            "where's zero gradient times it is NaN",
        ),
        (
            lambda truth: set(truth) - {FIXES[2]} if FIXES[2] in truth else None,
            "with no zero in x, sqrt's slope is finite at every entry abs passes it: sign times a finite slope stays "
            "finite",
        ),
    ],
)
def self_finite_fix(p):
    return {label for label, grad in p.run()["grads"].items() if kit.finite(grad)}


@self_test(
    "12.self-ema",
    Choice(*GROWTH),
    program=ema_program,
    explain="0.9 * ema + 0.1 * loss chains every step's loss, so ema's depth grows each step; but each "
    "loss.backward() already freed what the loss's graph saved, and multiplying by a Python number keeps only that "
    "number, which held_bytes leaves out: the chain keeps nodes, not activations. A retained graph, or a product of "
    "two tensors, keeps tensors the chain reaches: bytes grow too. A detached or .item() value chains nothing; an "
    "ema fed back into the loss makes the next backward walk the freed graph.",
    hints=(
        "Is ema's graph ever walked by backward? Which graphs does it reach, and were they walked and freed?",
        "backward frees the saved tensors of the nodes it runs; the nodes themselves stay while something reaches "
        "them. What does the update of ema save, and does the loss read ema?",
    ),
    misconceptions=[
        (
            lambda truth: "both grow" if truth == "only depth grows" else None,
            "each loss.backward() freed the activations of its graph before ema reached it; the chain keeps nodes, "
            "and the scalar multiplications save nothing a pack hook sees",
        ),
        (
            lambda truth: "only depth grows" if truth == "both grow" else None,
            "ema's chain also reaches tensors still saved: a graph backward was told to retain, or a product of two "
            "tensors, which keeps both",
        ),
        (
            lambda truth: "only depth grows" if truth == "nothing grows" else None,
            "a detached or .item() loss gives ema a value without a graph: nothing is chained",
        ),
        (
            lambda truth: "only depth grows" if truth == "backward raises at step 2" else None,
            "the loss reads ema, so step 2's backward walks ema's graph back into step 1's, which step 1's backward "
            "freed",
        ),
    ],
)
def self_ema(p):
    try:
        seen = p.run()["seen"]
    except RuntimeError as exc:
        if "backward through the graph a second time" in str(exc):
            return GROWTH[4]
        raise
    held = seen[-1][0] > seen[0][0]
    deep = seen[-1][1] > seen[0][1]
    return {(False, False): GROWTH[0], (True, False): GROWTH[1], (False, True): GROWTH[2], (True, True): GROWTH[3]}[
        (held, deep)
    ]


@self_test(
    "12.self-first-hook",
    Choice(*ORIGINS),
    program=first_hook_program,
    explain="Hooks fire from out back to h. A non-finite gradient is born where a backward divides by zero (a zero "
    "norm, log at 0) or meets inf (sqrt's slope at 0 times 2h = 0), and the first hook after it sees it; relu's "
    "backward then picks 0 where h was negative, so the NaN can vanish before h, and an epsilon or a row that is "
    "never all zero keeps every gradient finite.",
    hints=(
        "Compute h, r and n row by row first. Is any row of r all zeros, any entry of n zero?",
        "Hooks fire from out back to h. Which backward divides by a zero (a norm, log at 0) or multiplies inf by 0? "
        "relu's backward keeps the gradient only where h > 0.",
    ),
    misconceptions=[
        (
            lambda truth: "h" if truth == "r" else None,
            "relu's backward selects 0 where h was negative, which replaces the NaN: h's gradient is finite",
        ),
        (
            lambda truth: "none of them" if truth == "r" else None,
            "the division's backward divides by r's zero norm for that row",
        ),
        (
            lambda truth: "r" if truth == "h" else None,
            "r's gradient comes through a product by 2: finite; the square root's backward at h = 0 is inf, and the "
            "power's backward multiplies it by 2h = 0: the NaN is born at h",
        ),
        (
            lambda truth: "r" if truth == "none of them" else None,
            "no backward here divides by zero: an epsilon keeps the norm away from it, or no row of r is all zero",
        ),
        (
            lambda truth: "r" if truth == "n" else None,
            "log's backward divides by n, which is 0 where relu cut a row: the first hook to fire, n's, already sees "
            "NaN",
        ),
    ],
)
def self_first_hook(p):
    seen = p.run()["seen"]
    return next((name for name, ok in seen if not ok), "none of them")
