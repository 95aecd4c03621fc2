"""Unit 04, where the path stops: never entered, detach, no_grad, inference_mode, .item(), the quiet breaks, the
leaves a loss reaches and the first broken edge. (Its second half, modules and optimizers, is unit 04b.)"""

from __future__ import annotations

import torch

from grader import probes
from grader.engine.kinds import Error, Function, Name, Names, Number, Sequence
from grader.engine.question import exercise, predict_then_run, self_test
from grader.probes import traces
from grader.units.causes import FREED, INFERENCE, INPUT_NO_GRAD, NO_GRAD_FN, NOT_SCALAR, STALE, UNUSED
from grader.units.switches import COURSE_PATHS, COURSE_WALKER, guarded
from grader.units.unit04.cases import (
    INTACT,
    as_edge_line,
    as_leaf_names,
    edge_cases,
    leaf_cases,
    line_key,
)
from grader.units.unit04.generators import allow_unused_program, edge_program, names_of, shares_program
from grader.units.unit04.support import (
    FROZEN_FACTS,
    QUIET_LOSSES,
    detached_stage,
    evaluate,
    frozen_facts,
    pq_leaves,
    quiet_loss_moves_w,
    returned_grad_word,
    syllabus_loop,
    train_frozen,
    train_repaired,
)

# --- 1. a loss that never entered -------------------------------------------------------------


@predict_then_run(
    "04.never-entered",
    Error("at the multiplication", "at backward", causes=(NOT_SCALAR, NO_GRAD_FN, INPUT_NO_GRAD)),
    prompt=(
        "x = torch.tensor([2.0]) (no requires_grad); y = x * 3; loss = y.sum(); loss.backward(). Does it "
        "raise, where ('at the multiplication' or 'at backward'), and why? For an error, answer a pair "
        "(place, cause), the cause chosen from the candidates listed with the answer's form; your own words "
        "may follow as a third item, a note shown beside torch's message and never graded."
    ),
    explain="Nothing on the way to the loss required grad, so nothing was recorded: the loss has no grad_fn "
    "and backward has no node to start from. The message describes that state, not its cause.",
)
def never_entered():
    x = torch.tensor([2.0])
    yield "at the multiplication"
    y = x * 3
    loss = y.sum()
    yield "at backward"
    loss.backward()


# --- 2. detach: one tensor, the same storage, a cut record -------------------------------------


@predict_then_run(
    "04.detach-write",
    Number(),
    prompt="w = torch.tensor([1.0, 4.0], requires_grad=True); h = w * 3; d = h.detach(); d[0] = 99.0. "
    "What does h hold now? Answer [h[0], h[1]].",
    explain="detach() copies nothing: d is a second tensor over h's storage (same data_ptr) with no "
    "history. A write through d is a write into h.",
)
def detach_write():
    w = torch.tensor([1.0, 4.0], requires_grad=True)
    h = w * 3
    d = h.detach()
    d[0] = 99.0
    return h.tolist()


# --- 3. detach acts on a tensor, no_grad on a region -------------------------------------------


@predict_then_run(
    "04.detach-one-operand",
    Names(pool=("p", "q")),
    prompt="p = torch.tensor(1.5, requires_grad=True); q = torch.tensor(4.0, requires_grad=True); "
    "out1 = p.detach() * q; out1.backward(). Which of p, q have a .grad that is not None? "
    "Answer a set of names.",
    explain="detach removed one operand from the record; q still required grad, so the multiplication "
    "was recorded with one live edge, to q.",
)
def detach_one_operand():
    p, q = pq_leaves()
    out1 = p.detach() * q
    out1.backward()
    return {n for n, t in (("p", p), ("q", q)) if t.grad is not None}


@predict_then_run(
    "04.no-grad-region",
    Sequence(),
    prompt="The same p and q, both requiring grad. out1 = p.detach() * q, and with torch.no_grad(): "
    "out2 = p * q. What do out1.grad_fn and out2.grad_fn hold? Answer [class name of out1's node, "
    "class name of out2's node], writing 'None' where there is no node.",
    explain="detach took one operand out of the record, so the product was still recorded (q needs it). "
    "Inside no_grad no operation is recorded, whatever its operands require: out2 has no node, and "
    "p and q still require grad once the block ends.",
)
def no_grad_region():
    p, q = pq_leaves()
    out1 = p.detach() * q
    with torch.no_grad():
        out2 = p * q
    return [probes.node_name(out1.grad_fn), probes.node_name(out2.grad_fn)]


# --- 4. inference_mode: a stricter region whose tensors carry the restriction ------------------


@predict_then_run(
    "04.inference-reuse",
    Error("in the helper", "at the multiplication", "at backward", causes=(STALE, INFERENCE, NO_GRAD_FN)),
    prompt=(
        "evaluate(w, x) returns (w * x).relu() computed inside torch.inference_mode(). w = torch.tensor([0.5,"
        " 2.0], requires_grad=True); x = torch.tensor([1.0, 3.0]); cached = evaluate(w, x)  (in the helper); "
        "head = torch.tensor([1.0, 1.0], requires_grad=True); pred = cached * head  (at the multiplication); "
        "pred.sum().backward()  (at backward). Does it raise, where, and why? For an error, answer a pair "
        "(place, cause), the cause chosen from the candidates listed with the answer's form; your own words "
        "may follow as a third item, a note shown beside torch's message and never graded."
    ),
    explain="cached is an inference tensor. Multiplying it by head needs cached saved for head's gradient, "
    "and inference tensors may not be saved: the failure appears at the first recorded operation "
    "that must keep it, far from the helper.",
)
def inference_reuse():
    w = torch.tensor([0.5, 2.0], requires_grad=True)
    x = torch.tensor([1.0, 3.0])
    yield "in the helper"
    cached = evaluate(w, x)
    head = torch.tensor([1.0, 1.0], requires_grad=True)
    yield "at the multiplication"
    pred = cached * head
    yield "at backward"
    pred.sum().backward()


# --- 5. a value that left through .item() --------------------------------------------------------


@predict_then_run(
    "04.item-new-start",
    Number(),
    prompt="w = torch.tensor(1.5, requires_grad=True); prediction = w * 4; "
    "bad = torch.tensor((prediction - 5.0).item() ** 2, requires_grad=True); bad.backward(). "
    "What is bad.grad?",
    explain="bad is a brand-new leaf built from a Python number: its graph is bad alone, so backward gives "
    "d bad / d bad = 1 and nothing reaches w.",
)
def item_new_start():
    w = torch.tensor(1.5, requires_grad=True)
    prediction = w * 4
    bad = torch.tensor((prediction - 5.0).item() ** 2, requires_grad=True)
    bad.backward()
    return bad.grad.item()


# --- 5b. the quiet breaks: operations with no derivative ---------------------------------------------


@predict_then_run(
    "04.quiet-break-paths",
    Names(pool=tuple(QUIET_LOSSES)),
    prompt="w = torch.tensor([0.4, -1.3, 2.6], requires_grad=True); h = w * 2. Four losses, each built and "
    "backpropagated on its own with a fresh w: 'h[h.argmax()]', '(h * (h > 0)).sum()', "
    "'((h > 0).float() * 3).sum()', 'h.round().sum()'. After loss.backward(), which of them leave w.grad a "
    "nonzero tensor (a backward that raises leaves none)? Answer a set of the losses.",
    explain="An integer or bool tensor cuts only its own path. Used as an index or as a mask, it picks which "
    "entries of h go on, and those keep their path to w: the gradient is 2 where they were picked. A "
    "loss made of the mask alone has no grad_fn, so backward raises. round() is recorded, with a "
    "derivative of zero almost everywhere: w.grad is a tensor of zeros.",
    misconceptions=[
        (
            lambda truth: set(truth) - {"h[h.argmax()]", "(h * (h > 0)).sum()"},
            "argmax and > are not recorded, but here they only choose entries of h: the chosen entries of h "
            "are still on w's path, and carry its gradient",
        ),
        (
            lambda truth: set(truth) | {"h.round().sum()"},
            "round() is recorded, but its derivative is zero almost everywhere: w.grad is a tensor of zeros",
        ),
    ],
)
def quiet_break_paths():
    return {label for label in QUIET_LOSSES if quiet_loss_moves_w(label)}


# --- 6. asking the graph which inputs it reaches -----------------------------------------------


@predict_then_run(
    "04.unused-input",
    Error("at autograd.grad", causes=(INPUT_NO_GRAD, UNUSED, FREED)),
    prompt=(
        "x = [1., 2., 3., 4.], target = 3 * x, w1 = 0.5 and w2 = 1.0 requiring grad; f = (w1 * x).detach(); "
        "loss = ((w2 * f - target) ** 2).mean(); then torch.autograd.grad(loss, [w1, w2]) without "
        "allow_unused. Does it raise ('at autograd.grad' or 'no error'), and why? For an error, answer a pair"
        " (place, cause), the cause chosen from the candidates listed with the answer's form; your own words "
        "may follow as a third item, a note shown beside torch's message and never graded."
    ),
    explain="autograd.grad is asked for d loss / d w1, and the graph under loss has no path to w1. By "
    "default that is an error; allow_unused=True turns it into a None in the answer.",
)
def unused_input():
    w1, w2, loss = detached_stage()
    yield "at autograd.grad"
    torch.autograd.grad(loss, [w1, w2])


# --- 7. a loop that trains with half its model frozen ------------------------------------------


@predict_then_run(
    "04.frozen-loop-facts",
    Names(pool=FROZEN_FACTS),
    prompt="x = [1., 2., 3., 4.], target = 3 * x, w1 = 0.5 and w2 = 1.0 requiring grad, lr = 0.02, 400 "
    "steps of train_frozen as the notebook defines it. Which of these hold at the end: 'the loss fell "
    "below 0.001', 'w1 moved', 'w2 moved', 'w1.grad is None', 'w2.grad is None' (moved: by more than "
    "0.001)? Answer a set.",
    explain="stage_one returns a detached copy of w1 * x (the one made for the log), so no path leads from "
    "w1 to the loss: w1.grad stays None and the update skips it every step. w2 is reached, and "
    "p.grad.zero_() leaves it a tensor of zeros, not None. w2 alone absorbs the whole job, settling "
    "where 0.5 * w2 = 3, and the loss falls to zero anyway.",
    misconceptions=[
        (
            lambda truth: set(truth) - {"the loss fell below 0.001"},
            "w2 alone can fit the target: 0.5 * w2 = 3 at w2 = 6, so the loss falls to zero while w1 never "
            "moves. The loss curve cannot show the cut.",
        ),
        (
            lambda truth: (set(truth) - {"w1.grad is None"}) | {"w1 moved"},
            "read what stage_one returns: the detached copy made for the log, so no path leads from w1 to the loss",
        ),
        (
            lambda truth: set(truth) | {"w2.grad is None"},
            "w2 is reached every step; p.grad.zero_() fills its .grad with zeros, it does not set it to None",
        ),
    ],
)
def frozen_loop_facts():
    return frozen_facts(train_frozen)


REPAIRED_FACTS = ("w1 moved", "w2 moved", "w1 * w2 reached 3", "w2 reached 6")


@predict_then_run(
    "04.repaired-loop",
    Names(pool=REPAIRED_FACTS),
    prompt="The same loop and start (w1 = 0.5, w2 = 1.0, lr = 0.02, 400 steps), repaired: stage one logs "
    "f.detach() but returns f itself. Which of these hold at the end: 'w1 moved', 'w2 moved', "
    "'w1 * w2 reached 3', 'w2 reached 6' (each to 3 decimals)? Answer a set.",
    explain="Both weights now receive gradients, so both move. The target pins only the product, w1 * w2 = 3; "
    "with w1 moving too, w2 no longer has to carry the whole job alone, so it stops short of 6.",
    misconceptions=[
        (
            lambda truth: set(truth) | {"w2 reached 6"},
            "w2 reached 6 only because w1 was stuck at 0.5 (0.5 * 6 = 3). Once w1 moves, the product "
            "splits between them.",
        )
    ],
)
def repaired_loop():
    _, w1, w2, _ = syllabus_loop(train_repaired)
    a, b = w1.item(), w2.item()
    facts = {
        "w1 moved": abs(a - 0.5) > 1e-3,
        "w2 moved": abs(b - 1.0) > 1e-3,
        "w1 * w2 reached 3": abs(a * b - 3.0) < 1e-3,
        "w2 reached 6": abs(b - 6.0) < 1e-3,
    }
    return {f for f, held in facts.items() if held}


# --- self-test -------------------------------------------------------------------------------------


@self_test(
    "04.closed-book-shares",
    Names(pool=("d1", "d2", "d3", "d4")),
    program=shares_program,
    explain="detach() and .data give a new tensor over the same memory; a slice or view() is a view of it; a "
    "conversion to the dtype the tensor already has returns it as it is. clone(), another dtype, arithmetic and a "
    "rebuild from Python numbers make new memory.",
    hints=(
        "For each, ask: was any memory allocated, or is this a second look at the same numbers?",
        "detach() and .data cut the history and copy nothing; clone() copies; .tolist() leaves tensors "
        "altogether, so torch.tensor(...) must allocate anew; .to(torch.float32) on a float32 tensor has nothing to "
        "convert.",
    ),
    misconceptions=[
        (
            lambda truth, p: set(truth) - names_of(p, "data") if names_of(p, "data") else None,
            ".data, like detach(), is a history-free tensor over the same memory: it copies nothing.",
        ),
        (
            lambda truth, p: set(truth) - names_of(p, "same dtype") if names_of(p, "same dtype") else None,
            "a conversion to the dtype the tensor already has converts nothing: torch returns the same memory.",
        ),
        (
            lambda truth, p: set(truth) - names_of(p, "view") if names_of(p, "view") else None,
            "a slice or view() is a view: another shape or offset over the same storage, not a copy.",
        ),
        (
            lambda truth, p: set(truth) | names_of(p, "copy") if names_of(p, "copy") else None,
            "clone(), another dtype and arithmetic all write their result to new memory, even when the values "
            "are equal.",
        ),
    ],
)
def closed_book_shares(p):
    ns = p.run()
    ptr = ns[p.facts["base"]].untyped_storage().data_ptr()
    return {n for n in ("d1", "d2", "d3", "d4") if ns[n].untyped_storage().data_ptr() == ptr}


@self_test(
    "04.closed-book-edge",
    Number(tol=0),
    program=edge_program,
    explain="An op that autograd records keeps the route, whatever its derivative: round, floor and clamp are "
    "recorded (their slope is 0, not missing). A comparison, argsort, .item(), .tolist() and detach() give a result "
    "with no record of w: the first such statement on each route is where that route stops. No error is raised: b "
    "gets a gradient, w gets None.",
    hints=(
        "List the statements that carry w's numbers towards the loss, and for each ask: does its result's "
        "record still lead back to w?",
        "A comparison returns a bool tensor, which cannot require grad; Python numbers and detach() leave the "
        "record too. Autograd records nothing for them, and no error says so. A zero derivative is not a cut.",
    ),
    misconceptions=[
        (
            lambda truth, p: p.facts["later"],
            "the detach or rebuild in that statement does cut a route from w, but an earlier statement has "
            "already cut the other one.",
        ),
        (
            lambda truth, p: p.facts["flat"],
            "that op is recorded: its derivative is 0, which passes zeros back, but the route from w goes on.",
        ),
        (
            lambda truth, p: p.facts["cut"],
            "that statement cuts a route too, but an earlier one already reads w with its record cut off.",
        ),
    ],
)
def closed_book_edge(p):
    tr = traces.trace(p.source)
    return traces.first_broken_edge(tr, "w").number


@self_test(
    "04.closed-book-allow-unused",
    Sequence(),
    program=allow_unused_program,
    explain="None means 'no path from out to this input'; zero means a path whose derivative happens to be "
    "zero. Multiplying by 0, floor, round, sign and x - x are recorded, with derivative 0; a comparison, detach() "
    "and a rebuild from .item() record nothing, so their input has no path at all.",
    hints=(
        "For each input, ask first whether out's record reaches it at all, and only then what the derivative is.",
        "Multiplying by 0 and floor() are recorded operations whose derivative is 0; a comparison gives a "
        "bool tensor with no grad_fn.",
    ),
    misconceptions=[
        (
            lambda truth: ["None" if w == "zero" else w for w in truth] if "zero" in truth else None,
            "a zero gradient is still a path: a * 0 and floor() are recorded, and their derivative is 0. "
            "None is kept for inputs the graph does not reach.",
        ),
        (
            lambda truth: ["zero" if w == "None" else w for w in truth] if "None" in truth else None,
            "an input out's record never reaches gets None, not a zero tensor: autograd has no path to "
            "compute a zero along.",
        ),
    ],
)
def closed_book_allow_unused(p):
    ns = p.run()
    return [returned_grad_word(g) for g in ns["g"]]


# --- exercise 1: reachable leaves -----------------------------------------------------------------


@exercise(
    "04.reachable-leaves",
    Function(
        returns=Names(),
        cases=leaf_cases,
        convert=as_leaf_names,
        call=guarded(
            "walk grad_fn and next_functions yourself, without running backward", COURSE_WALKER, backward=True
        ),
    ),
    prompt="Write reachable_leaves(loss): the leaf tensors that loss.backward() would accumulate into, each "
    "once, as a list of tensors; [] when loss has no grad_fn. It is checked on generated programs "
    "with detach, no_grad, inference_mode, .item() and .tolist() cuts, branches and shared leaves, with the "
    "course's own walker (grader.probes.nodes, reachable_leaves) and backward passes (.backward(), "
    "torch.autograd.grad) switched off while your function runs: read the record, do not run it.",
    explain="Walk grad_fn and next_functions as in unit 01; every AccumulateGrad node holds its leaf in "
    ".variable. A leaf behind a cut has no node in this graph, however much it requires grad.",
    hints=(
        "Start from loss.grad_fn and follow next_functions; a None entry there is an input that needs no gradient.",
        "Keep a set of nodes already visited: a shared leaf is one AccumulateGrad node reached by several "
        "routes, and must be listed once. hasattr(node, 'variable') marks an AccumulateGrad node.",
    ),
)
def reachable_leaves_ex(case):
    ns = case.fresh()
    return traces.names_of_leaves(probes.reachable_leaves(ns[case.output]), ns)


# --- exercise 2: the first broken edge of a traced forward pass ----------------------------------


@exercise(
    "04.first-broken-edge",
    Function(
        returns=Name(key=line_key, pool=(INTACT,)),
        cases=edge_cases,
        call=guarded(
            "ask the record with your own reachable_leaves",
            COURSE_PATHS,
            call=lambda fn, case, ns: fn(ns["trace"], ns["name"]),
        ),
        convert=as_edge_line,
    ),
    prompt="Write first_broken_edge(trace, name): trace is a list of steps (step.line, step.name, "
    "step.tensor, step.inputs) and trace.loss the loss tensor. Return the first step, in program "
    "order, that lies on a route from the parameter `name` to the loss (it reads the parameter or a "
    "value computed from it, and the loss is computed from it) and whose tensor's record no longer "
    "leads back to the parameter. Return None when the loss's record reaches the parameter. It is checked on "
    "generated programs, cut by the keywords of this unit and by the quiet breaks of section 6, with the "
    "course's own answers (grader.probes' walker and grader.probes.traces) switched off while it runs.",
    explain="The path stops where the record stops, not where .grad is found to be None: the first value "
    "that carries the parameter's numbers but not its history. Everything after it may be intact, "
    "which is why edits downstream cannot help.",
    hints=(
        "Two walks over the steps: forward, the names computed from the parameter (their inputs include "
        "it or one of them); backward from 'loss', the names the loss was computed from. The route is where "
        "they meet.",
        "On the route, in program order, test each step's tensor with your reachable_leaves: does its record "
        "lead back to the parameter? A Python number (after .item()) leads back to nothing.",
        "Check the loss first: if its record reaches the parameter, return None, whatever cuts lie on "
        "branches the loss never uses.",
    ),
)
def first_broken_edge_ex(case):
    ns = case.fresh()
    step = traces.first_broken_edge(ns["trace"], ns["name"])
    return INTACT if step is None else step.line
