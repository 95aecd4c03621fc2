"""Unit 04, where the path stops: never entered, detach, no_grad, inference_mode, .item(), and the
procedure for "why is .grad None?"."""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

import torch

from grader import probes
from grader.engine.kinds import BadAnswer, Choice, Error, Function, Name, Names, Number, Sequence, short, type_words
from grader.engine.question import exercise, predict_then_run, self_test
from grader.probes import traces
from grader.units import programs

# --- 1. a loss that never entered -------------------------------------------------------------


@predict_then_run(
    "04.never-entered", Error("at the multiplication", "at backward", needs_message=True,
                              terms=(("grad_fn", "require grad", "requires grad", "requires_grad"),)),
    prompt="x = torch.tensor([2.0]) (no requires_grad); y = x * 3; loss = y.sum(); loss.backward(). Does it "
           "raise, where ('at the multiplication' or 'at backward'), and what does the message say? Answer a pair "
           "(place, your words). The place is graded exactly; your words are graded on the key idea: what the "
           "loss lacks (they must mention grad_fn or requiring grad).",
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


def _patched_loop(flag: bool, patch: bool, steps: int = 20):
    x = torch.tensor([1.0, 2.0, 3.0])
    y = 2 * x
    w = torch.tensor(0.0, requires_grad=flag)
    opt = torch.optim.SGD([w], lr=0.05)
    losses = []
    for _ in range(steps):
        loss = ((w * x - y) ** 2).mean()
        if patch:
            loss.requires_grad = True
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, w


@predict_then_run(
    "04.patched-loss", Number(tol=5e-3),
    prompt="x = [1., 2., 3.], y = 2 * x, w = torch.tensor(0.0) created without requires_grad, "
           "opt = torch.optim.SGD([w], lr=0.05). Twenty steps of: loss = ((w * x - y) ** 2).mean(); "
           "loss.requires_grad = True; opt.zero_grad(); loss.backward(); opt.step(). What is loss.item() "
           "at the first step and at the last? Answer [first, last] (2 decimals).",
    explain="Setting requires_grad on the loss makes the loss itself a new leaf: backward runs, but the only "
            "gradient it computes is for the loss. w.grad stays None, SGD skips w, and the loss never moves.",
    misconceptions=[(lambda truth: [truth[0], 0.0],
                     "the loss falls only if w learns, and w never receives a gradient: the patched loss is a "
                     "leaf of its own, with no record of w.")],
)
def patched_loss():
    losses, _ = _patched_loop(flag=False, patch=True)
    return [losses[0], losses[-1]]


# --- 2. detach: one tensor, the same storage, a cut record -------------------------------------


@predict_then_run(
    "04.detach-write", Number(),
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

def _pq():
    return torch.tensor(1.5, requires_grad=True), torch.tensor(4.0, requires_grad=True)


@predict_then_run(
    "04.detach-one-operand", Names(pool=("p", "q")),
    prompt="p = torch.tensor(1.5, requires_grad=True); q = torch.tensor(4.0, requires_grad=True); "
           "out1 = p.detach() * q; out1.backward(). Which of p, q have a .grad that is not None? "
           "Answer a set of names.",
    explain="detach removed one operand from the record; q still required grad, so the multiplication "
            "was recorded with one live edge, to q.",
)
def detach_one_operand():
    p, q = _pq()
    out1 = p.detach() * q
    out1.backward()
    return {n for n, t in (("p", p), ("q", q)) if t.grad is not None}


@predict_then_run(
    "04.no-grad-region", Sequence(),
    prompt="The same p and q, both requiring grad. out1 = p.detach() * q, and with torch.no_grad(): "
           "out2 = p * q. What do out1.grad_fn and out2.grad_fn hold? Answer [class name of out1's node, "
           "class name of out2's node], writing 'None' where there is no node.",
    explain="detach took one operand out of the record, so the product was still recorded (q needs it). "
            "Inside no_grad no operation is recorded, whatever its operands require: out2 has no node, and "
            "p and q still require grad once the block ends.",
)
def no_grad_region():
    p, q = _pq()
    out1 = p.detach() * q
    with torch.no_grad():
        out2 = p * q
    return [probes.node_name(out1.grad_fn), probes.node_name(out2.grad_fn)]


# --- 4. inference_mode: a stricter region whose tensors carry the restriction ------------------

def evaluate(w, x):
    """An evaluation helper that someone sped up with inference_mode."""
    with torch.inference_mode():
        return (w * x).relu()


@predict_then_run(
    "04.inference-reuse", Error("in the helper", "at the multiplication", "at backward", needs_message=True,
                                terms=(("inference",), ("saved", "save", "saving", "kept", "keep"))),
    prompt="evaluate(w, x) returns (w * x).relu() computed inside torch.inference_mode(). "
           "w = torch.tensor([0.5, 2.0], requires_grad=True); x = torch.tensor([1.0, 3.0]); "
           "cached = evaluate(w, x)  (in the helper); head = torch.tensor([1.0, 1.0], requires_grad=True); "
           "pred = cached * head  (at the multiplication); pred.sum().backward()  (at backward). "
           "Does it raise, where, and what does the message say? Answer a pair (place, your words): the place "
           "is graded exactly, your words on the key idea (what kind of tensor, and what may not be done "
           "with it).",
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


# --- 4b. turning gradients off: the whole picture --------------------------------------------------

def _four_offs():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    with torch.no_grad():
        a = lin(x)
    with torch.inference_mode():
        b = lin(x)
    lin.eval()
    c = lin(x)
    for p in lin.parameters():
        p.requires_grad_(False)
    d = lin(x)
    return {"a": a, "b": b, "c": c, "d": d}


@predict_then_run(
    "04.four-offs", Names(pool=("a", "b", "c", "d")),
    prompt="lin = torch.nn.Linear(3, 2); x = torch.randn(4, 3, requires_grad=True). with torch.no_grad(): "
           "a = lin(x). with torch.inference_mode(): b = lin(x). Then lin.eval(); c = lin(x). Then "
           "for p in lin.parameters(): p.requires_grad_(False); d = lin(x). Which of a, b, c, d have a grad_fn? "
           "Answer a set of names.",
    explain="no_grad and inference_mode are regions: nothing inside is recorded. eval() only switches layers "
            "such as dropout and batch norm to their evaluation behaviour; autograd records as before. "
            "requires_grad_(False) freezes the parameters, but x still requires grad, so the layer is recorded "
            "for x's sake.",
    misconceptions=[(lambda truth: set(truth) - {"c"},
                     "model.eval() does not turn autograd off: it changes how layers such as dropout behave. "
                     "The output still has a grad_fn.")],
)
def four_offs():
    made = _four_offs()
    return {n for n, t in made.items() if t.grad_fn is not None}


@predict_then_run(
    "04.nested-modes", Sequence(),
    prompt="w = torch.tensor(2.0, requires_grad=True). with torch.no_grad(): a = w * 3; inside it, with "
           "torch.enable_grad(): b = w * 3, and inside that, with torch.set_grad_enabled(False): c = w * 3; "
           "back in the no_grad block (after the enable_grad block): d = b * 2. What are the class names of "
           "a.grad_fn, b.grad_fn, c.grad_fn, d.grad_fn? Answer a list, writing 'None' where there is none.",
    explain="Grad mode is one switch, and the innermost block sets it for as long as it lasts: enable_grad "
            "turns recording back on inside no_grad, set_grad_enabled(False) turns it off again, and when a "
            "block ends the previous setting returns. d is computed under no_grad, so it is not recorded even "
            "though b was.",
    misconceptions=[(lambda truth: [truth[0], truth[1], truth[2], truth[1]],
                     "d = b * 2 runs back inside the no_grad block: whether b has a history does not matter, the "
                     "multiplication itself is not recorded.")],
)
def nested_modes():
    w = torch.tensor(2.0, requires_grad=True)
    with torch.no_grad():
        a = w * 3
        with torch.enable_grad():
            b = w * 3
            with torch.set_grad_enabled(False):
                c = w * 3
        d = b * 2
    return [probes.node_name(t.grad_fn) for t in (a, b, c, d)]


# --- 5. a value that left through .item() --------------------------------------------------------

@predict_then_run(
    "04.item-new-start", Number(),
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


# --- 6. asking the graph which inputs it reaches -----------------------------------------------

def _detached_stage():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    target = 3 * x
    w1 = torch.tensor(0.5, requires_grad=True)
    w2 = torch.tensor(1.0, requires_grad=True)
    f = (w1 * x).detach()
    loss = ((w2 * f - target) ** 2).mean()
    return w1, w2, loss


@predict_then_run(
    "04.unused-input", Error("at autograd.grad", needs_message=True,
                             terms=(("not have been used", "not been used", "unused", "not used"),)),
    prompt="x = [1., 2., 3., 4.], target = 3 * x, w1 = 0.5 and w2 = 1.0 requiring grad; "
           "f = (w1 * x).detach(); loss = ((w2 * f - target) ** 2).mean(); then "
           "torch.autograd.grad(loss, [w1, w2]) without allow_unused. Does it raise ('at autograd.grad' or "
           "'no error'), and what does the message say? The place is graded exactly, your words on the key "
           "idea (what is wrong with w1 as far as this graph is concerned).",
    explain="autograd.grad is asked for d loss / d w1, and the graph under loss has no path to w1. By "
            "default that is an error; allow_unused=True turns it into a None in the answer.",
)
def unused_input():
    w1, w2, loss = _detached_stage()
    yield "at autograd.grad"
    torch.autograd.grad(loss, [w1, w2])


# --- 7. a loop that trains with half its model frozen ------------------------------------------

FROZEN_SOURCE = """\
x = torch.tensor([1.0, 2.0, 3.0, 4.0])
target = 3 * x
w1 = torch.tensor(0.5, requires_grad=True)
w2 = torch.tensor(1.0, requires_grad=True)
raw = w1 * x
f = raw.detach()
logged = f.clone()
pred = w2 * f
loss = ((pred - target) ** 2).mean()
loss.backward()"""


def stage_one(t, w1, feature_log):
    f = w1 * t
    kept = f.detach()            # keep a copy for the log, without its graph
    feature_log.append(kept)
    return kept                  # the fault: the copy, not the computed tensor, goes on


def train_frozen(x, target, w1, w2, lr, steps, feature_log):
    """The loop as found. Returns every step's loss."""
    losses = []
    for _ in range(steps):
        f = stage_one(x, w1, feature_log)
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                if p.grad is not None:
                    p -= lr * p.grad
                    p.grad.zero_()
        losses.append(loss.item())
    return losses


def train_repaired(x, target, w1, w2, lr, steps, feature_log):
    """The grader's repair: the log keeps its detached copy, the computation keeps the tensor."""
    losses = []
    for _ in range(steps):
        f = w1 * x
        feature_log.append(f.detach())
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                p -= lr * p.grad
                p.grad.zero_()
        losses.append(loss.item())
    return losses


def _syllabus_loop(train):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    target = 3 * x
    w1 = torch.tensor(0.5, requires_grad=True)
    w2 = torch.tensor(1.0, requires_grad=True)
    log: list = []
    losses = train(x, target, w1, w2, 0.02, 400, log)
    return losses, w1, w2, log


@predict_then_run(
    "04.frozen-loop", Number(),
    prompt="x = [1., 2., 3., 4.], target = 3 * x, w1 = 0.5 and w2 = 1.0 requiring grad, lr = 0.02, 400 "
           "steps of train_frozen, whose stage one returns a detached copy of w1 * x. What are the loss at "
           "the first step, the loss at the last step, and the final w1 and w2? Answer [first loss, last "
           "loss, w1, w2].",
    explain="w1 receives no gradient, so the update skips it every step; w2 alone absorbs the whole job and "
            "settles where w1 * w2 = 0.5 * w2 = 3. The loss falls to zero anyway.",
)
def frozen_loop():
    losses, w1, w2, _ = _syllabus_loop(train_frozen)
    return [losses[0], losses[-1], w1.item(), w2.item()]


REPAIRED_FACTS = ("w1 moved", "w2 moved", "w1 * w2 reached 3", "w2 reached 6")


@predict_then_run(
    "04.repaired-loop", Names(pool=REPAIRED_FACTS),
    prompt="The same loop and start (w1 = 0.5, w2 = 1.0, lr = 0.02, 400 steps), repaired: stage one logs "
           "f.detach() but returns f itself. Which of these hold at the end: 'w1 moved', 'w2 moved', "
           "'w1 * w2 reached 3', 'w2 reached 6' (each to 3 decimals)? Answer a set.",
    explain="Both weights now receive gradients, so both move. The target pins only the product, w1 * w2 = 3; "
            "with w1 moving too, w2 no longer has to carry the whole job alone, so it stops short of 6.",
    misconceptions=[(lambda truth: set(truth) | {"w2 reached 6"},
                     "w2 reached 6 only because w1 was stuck at 0.5 (0.5 * 6 = 3). Once w1 moves, the product "
                     "splits between them.")],
)
def repaired_loop():
    _, w1, w2, _ = _syllabus_loop(train_repaired)
    a, b = w1.item(), w2.item()
    facts = {"w1 moved": abs(a - 0.5) > 1e-3, "w2 moved": abs(b - 1.0) > 1e-3,
             "w1 * w2 reached 3": abs(a * b - 3.0) < 1e-3, "w2 reached 6": abs(b - 6.0) < 1e-3}
    return {f for f, held in facts.items() if held}


# --- 8. the fix that fixes nothing ---------------------------------------------------------------

FAKE_FIX_SOURCE = """\
x = torch.tensor([1.0, 2.0, 3.0])
target = 2 * x
encoder_scale = torch.tensor(2.0, requires_grad=True)
head_weight = torch.tensor(0.5, requires_grad=True)
with torch.no_grad():
    features = encoder_scale * x
features.requires_grad_(True)
prediction = head_weight * features
loss = ((prediction - target) ** 2).mean()
loss.backward()"""


FAKE_FIX_NAMES = ("encoder_scale", "head_weight", "features", "prediction")


@predict_then_run(
    "04.fake-fix-grads", Names(pool=FAKE_FIX_NAMES),
    prompt="encoder_scale = 2.0 and head_weight = 0.5 require grad; x = [1., 2., 3.], target = 2 * x. "
           "with torch.no_grad(): features = encoder_scale * x; then features.requires_grad_(True) (the "
           "'fix'); prediction = head_weight * features; loss = ((prediction - target) ** 2).mean(); "
           "loss.backward(). Which of encoder_scale, head_weight, features, prediction have a .grad that is "
           "not None? Answer a set of names.",
    explain="requires_grad_(True) made features a new leaf in the middle of the model: it gets a real "
            "gradient, and so does the head, but encoder_scale.grad stays None, because the multiplication "
            "that used it was never recorded. prediction is a non-leaf, so its gradient was passed on, not kept.",
    misconceptions=[(lambda truth: set(truth) | {"encoder_scale"},
                     "requires_grad_(True) makes features a new leaf from here on; it cannot reach back to the "
                     "multiplication that ran under no_grad, so nothing leads to encoder_scale.")],
)
def fake_fix_grads():
    tr = traces.trace(FAKE_FIX_SOURCE)
    named = {n: tr.names[n] for n in FAKE_FIX_NAMES}
    return {n for n, t in named.items() if (t.is_leaf or t.retains_grad) and t.grad is not None}


# --- self-test -------------------------------------------------------------------------------------

@self_test(
    "04.closed-book-shares", Names(pool=("d1", "d2", "d3", "d4")),
    prompt="h = torch.tensor([1.0, 2.0], requires_grad=True) * 2; d1 = h.detach(); d2 = h.detach().clone(); "
           "d3 = h.data; d4 = torch.tensor(h.tolist()). Which of d1..d4 share h's storage "
           "(same untyped_storage().data_ptr())? Answer a set of names.",
    explain="detach() and .data both give a new tensor over the same memory; clone() and a rebuild from "
            "Python values make new memory.",
    hints=("For each, ask: was any memory allocated, or is this a second view of h's numbers?",
           "detach() and .data cut the history and copy nothing; clone() copies; .tolist() leaves tensors "
           "altogether, so torch.tensor(...) must allocate anew."),
    misconceptions=[({"d1"}, ".data, like detach(), is a history-free tensor over the same memory: it copies "
                             "nothing.")],
)
def closed_book_shares():
    h = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    made = {"d1": h.detach(), "d2": h.detach().clone(), "d3": h.data, "d4": torch.tensor(h.tolist())}
    ptr = h.untyped_storage().data_ptr()
    return {n for n, t in made.items() if t.untyped_storage().data_ptr() == ptr}


GATE_SOURCE = """\
w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
b = torch.tensor(1.5, requires_grad=True)
h = (w * b).tanh()
gate = (h > 0).float()
out = gate * b + h.detach()
loss = (out ** 2).sum()"""


@self_test(
    "04.closed-book-edge", Number(tol=0),
    prompt="Number the statements from 1: (1) w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True); "
           "(2) b = torch.tensor(1.5, requires_grad=True); (3) h = (w * b).tanh(); (4) gate = (h > 0).float(); "
           "(5) out = gate * b + h.detach(); (6) loss = (out ** 2).sum(). Which statement is the first broken "
           "edge on w's path to the loss?",
    explain="h still leads back to w. A comparison has no derivative: gate is a bool turned float, with no "
            "grad_fn, so statement 4 is where every route from w stops (the detach in statement 5 cuts the "
            "other route, later). No error is raised: b gets a gradient, w gets None.",
    hints=("List the statements that carry w's numbers towards the loss, and for each ask: does its result's "
           "record still lead back to w?",
           "A comparison returns a bool tensor, which cannot require grad: autograd records nothing for it, "
           "and no error says so."),
    misconceptions=[(lambda truth: truth + 1, "the detach in statement 5 does cut a route from w, but an earlier "
                                              "statement has already cut the other: the comparison in 4.")],
)
def closed_book_edge():
    tr = traces.trace(GATE_SOURCE)
    return traces.first_broken_edge(tr, "w").number


def _grad_state(t):
    if t.grad is None:
        return "None"
    return "a tensor of zeros" if not t.grad.any() else "a nonzero tensor"


GRAD_STATES = ("None", "a tensor of zeros", "a nonzero tensor", "an error at backward")


@self_test(
    "04.closed-book-frozen-grad", Choice(*GRAD_STATES),
    prompt="enc = torch.tensor(1.0, requires_grad=True); head = torch.tensor(0.5, requires_grad=True); "
           "opt = torch.optim.SGD([enc, head], lr=0.1); x = torch.tensor([1.0, 2.0]). Three steps of: "
           "opt.zero_grad(set_to_none=False); feats = (enc * x).detach(); loss = ((head * feats - x) ** 2).mean(); "
           "loss.backward(); opt.step(). What is enc.grad afterwards: " + ", ".join(repr(g) for g in GRAD_STATES)
           + "?",
    explain="enc never reaches the loss (the detach cut it), so no backward ever created enc.grad. "
            "zero_grad(set_to_none=False) zeroes a .grad that exists and leaves a missing one missing: None.",
    hints=("Does any backward pass reach enc? Where does its path to the loss stop?",
           "zero_grad(set_to_none=False) calls .zero_() on each .grad that is not None; it creates nothing."),
    misconceptions=[("a tensor of zeros", "zero_grad(set_to_none=False) zeroes existing gradients; enc never "
                                          "had one, so its .grad is still None.")],
)
def closed_book_frozen_grad():
    enc = torch.tensor(1.0, requires_grad=True)
    head = torch.tensor(0.5, requires_grad=True)
    opt = torch.optim.SGD([enc, head], lr=0.1)
    x = torch.tensor([1.0, 2.0])
    for _ in range(3):
        opt.zero_grad(set_to_none=False)
        feats = (enc * x).detach()
        loss = ((head * feats - x) ** 2).mean()
        try:
            loss.backward()
        except RuntimeError:
            return "an error at backward"
        opt.step()
    return _grad_state(enc)


def _grad_word(g):
    if g is None:
        return "None"
    return "zero" if not g.any() else "nonzero"


@self_test(
    "04.closed-book-allow-unused", Sequence(),
    prompt="a = torch.tensor(2.0, requires_grad=True), b = torch.tensor(3.0, requires_grad=True), "
           "c = torch.tensor(4.0, requires_grad=True); out = a * 0 + b.floor() * 2 + (c > 0).float(); "
           "g = torch.autograd.grad(out, [a, b, c], allow_unused=True). For each of g[0], g[1], g[2], is it "
           "None, a tensor equal to zero, or a nonzero tensor? Answer a list of three words, each 'None', "
           "'zero' or 'nonzero'.",
    explain="None means 'no path from out to this input'; zero means a path whose derivative happens to be "
            "zero. a * 0 is recorded (derivative 0); floor is recorded too, with derivative 0 almost everywhere; "
            "the comparison records nothing, so c has no path at all.",
    hints=("For each input, ask first whether out's record reaches it at all, and only then what the "
           "derivative is.",
           "Multiplying by 0 and floor() are recorded operations whose derivative is 0; a comparison gives a "
           "bool tensor with no grad_fn."),
    misconceptions=[(lambda truth: ["None" if w == "zero" else w for w in truth],
                     "a zero gradient is still a path: a * 0 and floor() are recorded, and their derivative is 0. "
                     "None is kept for inputs the graph does not reach.")],
)
def closed_book_allow_unused():
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = torch.tensor(4.0, requires_grad=True)
    out = a * 0 + b.floor() * 2 + (c > 0).float()
    return [_grad_word(g) for g in torch.autograd.grad(out, [a, b, c], allow_unused=True)]


@self_test(
    "04.closed-book-modes", Names(pool=("a", "b", "c", "d")),
    prompt="w = torch.tensor(1.0, requires_grad=True). frozen(t) is decorated with @torch.no_grad() and returns "
           "t * 2; tracked(t) is decorated with @torch.enable_grad() and returns t * 3. Then: with "
           "torch.no_grad(): a = tracked(w). b = frozen(w) * w. with torch.set_grad_enabled(False): "
           "c = tracked(w) + frozen(w). with torch.inference_mode(): d = tracked(w). Which of a, b, c, d have a "
           "grad_fn? Answer a set of names.",
    explain="A decorator is a with-block around the function's body, and the innermost setting wins while it "
            "lasts: tracked records even inside no_grad (a), frozen's result has no history but the product "
            "outside it is recorded (b), the addition in c runs with grad mode off, and inference_mode is not "
            "undone by enable_grad (d).",
    hints=("Treat each decorator as a with-block around the function's body, and ask which setting is "
           "innermost when each multiplication or addition runs.",
           "Only the operation that produces a tensor decides whether it has a grad_fn; and enable_grad turns "
           "grad mode back on, but not inside inference_mode."),
    misconceptions=[(lambda truth: set(truth) | {"d"},
                     "enable_grad inside inference_mode switches grad mode on, yet nothing is recorded: "
                     "inference_mode is a stronger setting that enable_grad does not undo.")],
)
def closed_book_modes():
    w = torch.tensor(1.0, requires_grad=True)

    @torch.no_grad()
    def frozen(t):
        return t * 2

    @torch.enable_grad()
    def tracked(t):
        return t * 3

    with torch.no_grad():
        a = tracked(w)
    b = frozen(w) * w
    with torch.set_grad_enabled(False):
        c = tracked(w) + frozen(w)
    with torch.inference_mode():
        d = tracked(w)
    return {n for n, t in {"a": a, "b": b, "c": c, "d": d}.items() if t.grad_fn is not None}


# --- exercise 1: reachable leaves -----------------------------------------------------------------

ALL_CUTS = ("detach", "tolist", "rebuilt", "item", "no_grad", "inference")


@functools.cache
def _leaf_case_list():
    with_graph = programs.programs(30, seed=404, max_ops=8, cuts=ALL_CUTS, need_graph=True)
    without = programs.programs(6, seed=405, max_ops=5, cuts=ALL_CUTS)
    without = [p for p in without if p.fresh()[p.output].grad_fn is None][:4]
    return sorted(with_graph + without, key=lambda p: (p.size, p.seed))


def _leaf_cases():
    return _leaf_case_list()


def _as_leaf_names(raw, case, ns):
    """The learner's tensors, named by the variable that holds each in the program."""
    if isinstance(raw, torch.Tensor):
        raise BadAnswer("expected a list of tensors, got one tensor; put the leaves in a list")
    if isinstance(raw, (str, bytes, dict)) or not hasattr(raw, "__iter__"):
        raise BadAnswer(f"expected a list of tensors, got {type_words(raw)}")
    items = list(raw)
    by_id = {id(v): k for k, v in ns.items() if isinstance(v, torch.Tensor)}
    names = []
    for item in items:
        if not isinstance(item, torch.Tensor):
            hint = "; return the tensors themselves, not their names" if isinstance(item, str) else ""
            raise BadAnswer(f"every entry must be a tensor; {short(item)} is {type_words(item)}{hint}")
        names.append(by_id.get(id(item), "an unnamed tensor"))
    for name in names:
        if names.count(name) > 1 and name != "an unnamed tensor":
            raise BadAnswer(f"{name} is in the list {names.count(name)} times; list each leaf once "
                            "(a shared leaf is one AccumulateGrad node reached twice)")
    return names


@exercise(
    "04.reachable-leaves",
    Function(returns=Names(), cases=_leaf_cases, convert=_as_leaf_names),
    prompt="Write reachable_leaves(loss): the leaf tensors that loss.backward() would accumulate into, each "
           "once, as a list of tensors; [] when loss has no grad_fn. It is checked on generated programs "
           "with detach, no_grad, inference_mode, .item() and .tolist() cuts, branches and shared leaves.",
    explain="Walk grad_fn and next_functions as in unit 01; every AccumulateGrad node holds its leaf in "
            ".variable. A leaf behind a cut has no node in this graph, however much it requires grad.",
    hints=("Start from loss.grad_fn and follow next_functions; a None entry there is an input that needs no "
           "gradient.",
           "Keep a set of nodes already visited: a shared leaf is one AccumulateGrad node reached by several "
           "routes, and must be listed once. hasattr(node, 'variable') marks an AccumulateGrad node."),
)
def reachable_leaves_ex(case):
    ns = case.fresh()
    return traces.leaf_names(probes.reachable_leaves(ns[case.output]), ns)


# --- exercise 2: the first broken edge of a traced forward pass ----------------------------------

INTACT = "None (the path is intact)"


def _line_key(text: str) -> str:
    return " ".join(str(text).split())


@dataclass
class EdgeCase:
    """A generated program, traced, and the parameter whose path to the loss is asked about."""

    seed: int
    lines: list
    name: str
    output: str = "loss"

    @property
    def size(self):
        return len(self.lines)

    @property
    def source(self):
        return "\n".join(self.lines) + f"\n# asked: first_broken_edge(trace, {self.name!r})"

    @property
    def label(self):
        return f"program #{self.seed} ({self.size} lines), parameter {self.name}"

    def fresh(self):
        return {"trace": traces.trace("\n".join(self.lines)), "name": self.name}

    def drawing(self, ns=None):
        ns = ns if ns is not None else self.fresh()
        tr = ns["trace"]
        tensors = {k: v for k, v in tr.names.items() if isinstance(v, torch.Tensor)}
        return tr.table() + "\n\nthe loss's graph:\n" + probes.text_tree(tr.loss, names=tensors)


def _as_loss_program(prog):
    lines = list(prog.lines)
    assert lines[-1].startswith("out = ")
    lines[-1] = "loss = " + lines[-1][len("out = "):]
    return lines


def _cut_label(line: str) -> str:
    if "tolist" in line:
        return "rebuilt" if "requires_grad=True" in line else "tolist"
    for word in ("item", "no_grad", "inference", "detach"):
        if word in line:
            return word
    return "other"


@functools.cache
def _edge_case_list():
    """Generated programs with a parameter whose value reaches the loss: some intact, most cut, by every cut."""
    quota = {"detach": 5, "no_grad": 5, "inference": 4, "item": 4, "tolist": 4, "rebuilt": 4, "intact": 14}
    chosen, sources = [], set()
    for round_, wanted in enumerate(quota):
        # programs that may use every cut, plus the one whose break is wanted, so each kind shows up
        rng = random.Random(round_)
        for i in range(400):
            cuts = ALL_CUTS if wanted == "intact" else (wanted, rng.choice(ALL_CUTS))
            if quota[wanted] == 0:
                break
            prog = programs.generate(414 * 100_003 + round_ * 1000 + i, 2 + i % 7, cuts=cuts)
            if prog.source in sources:
                continue
            sources.add(prog.source)
            lines = _as_loss_program(prog)
            try:
                tr = traces.trace("\n".join(lines))
            except Exception:       # an inference tensor saved for backward: not a program that runs
                continue
            names = [n for n, flag in prog.leaves.items() if flag]
            names = [n for n in names if traces._used_binding(tr, n) in traces.route(tr, n)]
            if not names:
                continue
            name = random.Random(prog.seed).choice(names)
            edge = traces.first_broken_edge(tr, name)
            label = "intact" if edge is None else _cut_label(edge.line)
            if quota.get(label, 0) > 0:
                quota[label] -= 1
                chosen.append(EdgeCase(prog.seed, lines, name))
    return sorted(chosen, key=lambda c: (c.size, c.seed))


def _edge_cases():
    return _edge_case_list()


def _as_edge_line(raw, case, ns):
    if raw is None:
        return INTACT
    if isinstance(raw, traces.Step):
        return raw.line
    if isinstance(raw, str):
        if not raw.strip():
            raise BadAnswer("it returned an empty string; return the step's line, or None")
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        raise BadAnswer("return the step itself or its line (step.line), not a number")
    raise BadAnswer(f"expected a step, its line, or None; got {type_words(raw)}")


@exercise(
    "04.first-broken-edge",
    Function(returns=Name(key=_line_key, pool=(INTACT,)), cases=_edge_cases,
             call=lambda fn, case, ns: fn(ns["trace"], ns["name"]), convert=_as_edge_line),
    prompt="Write first_broken_edge(trace, name): trace is a list of steps (step.line, step.name, "
           "step.tensor, step.inputs) and trace.loss the loss tensor. Return the first step, in program "
           "order, that lies on a route from the parameter `name` to the loss (it reads the parameter or a "
           "value computed from it, and the loss is computed from it) and whose tensor's record no longer "
           "leads back to the parameter. Return None when the loss's record reaches the parameter.",
    explain="The path stops where the record stops, not where .grad is found to be None: the first value "
            "that carries the parameter's numbers but not its history. Everything after it may be intact, "
            "which is why edits downstream cannot help.",
    hints=("Two walks over the steps: forward, the names computed from the parameter (their inputs include "
           "it or one of them); backward from 'loss', the names the loss was computed from. The route is where "
           "they meet.",
           "On the route, in program order, test each step's tensor with your reachable_leaves: does its record "
           "lead back to the parameter? A Python number (after .item()) leads back to nothing.",
           "Check the loss first: if its record reaches the parameter, return None, whatever cuts lie on "
           "branches the loss never uses."),
)
def first_broken_edge_ex(case):
    ns = case.fresh()
    step = traces.first_broken_edge(ns["trace"], ns["name"])
    return INTACT if step is None else step.line


# --- 10. the quiet breaks: operations with no derivative ---------------------------------------------

QUIET = ("top", "mask", "count", "rounded")


@predict_then_run(
    "04.quiet-break", Names(pool=QUIET),
    prompt="w = torch.tensor([0.4, -1.3, 2.6], requires_grad=True); h = w * 2; top = h.argmax(); mask = h > 0; "
           "count = h.long(); rounded = h.round(). Which of top, mask, count, rounded have a grad_fn? Answer a "
           "set of names.",
    explain="argmax, a comparison and an integer cast return integer or bool tensors, which cannot require "
            "grad: nothing is recorded and nothing complains. round() returns floats and is recorded "
            "(RoundBackward0); its derivative is zero almost everywhere, so it sends zeros, not None.",
    misconceptions=[(lambda truth: set(truth) | {"top", "mask", "count"},
                     "an integer or bool result cannot require grad: argmax, comparisons and integer casts are "
                     "not recorded at all, and torch raises no error.")],
)
def quiet_break():
    w = torch.tensor([0.4, -1.3, 2.6], requires_grad=True)
    h = w * 2
    made = {"top": h.argmax(), "mask": h > 0, "count": h.long(), "rounded": h.round()}
    return {n for n, t in made.items() if t.grad_fn is not None}


# --- exercise 4: why is .grad None? ----------------------------------------------------------------

@dataclass
class WhyCase:
    seed: int
    lines: list
    name: str
    cause: str = field(repr=False)   # what the generator planted; the truth is diagnosed live
    output: str = "loss"

    @property
    def size(self):
        return len(self.lines)

    @property
    def source(self):
        return "\n".join(self.lines) + f"\n# asked: why is {self.name}.grad None?"

    @property
    def label(self):
        return f"program #{self.seed} ({self.size} statements), asking about {self.name}.grad"

    def fresh(self):
        return {"trace": traces.trace("\n".join(self.lines)), "name": self.name}

    def drawing(self, ns=None):
        ns = ns if ns is not None else self.fresh()
        return ns["trace"].table(grads=True)


_FILL = ("{x} * 3", "{x}.sin()", "{x} ** 2", "{x}.tanh()", "{x} * 0.5", "{x} + 1")


def why_case(seed: int, cause: str) -> WhyCase:
    """One small program in which ``name``.grad is None for the planted ``cause``."""
    rng = random.Random(seed)
    turn = seed // len(traces.CAUSES)        # the variants of a cause come in turn, not by luck
    n = rng.choice([2, 3])

    def values():
        return "[" + ", ".join(f"{rng.choice([-1, 1]) * rng.randint(1, 15) / 10:.1f}" for _ in range(n)) + "]"

    fill = lambda x: rng.choice(_FILL).format(x=x)  # noqa: E731
    lines = ["w = torch.tensor(" + values() + (")" if cause == traces.NEVER_ENTERED else ", requires_grad=True)"),
             "b = torch.tensor(" + values() + ", requires_grad=True)"]
    # an optimizer whose zero_grad() runs before backward (harmless) or after it (the cause)
    zero_first = cause == traces.NO_BACKWARD and turn % 2 == 0
    if zero_first or cause == traces.CLEARED:
        lines.append("opt = torch.optim.SGD([w, b], lr=0.1)")
    if rng.random() < 0.5:
        lines.append("c = torch.tensor(" + values() + ")")
        other = "c"
    else:
        other = "b"
    h = rng.choice(["w * 3", "w.sin()", "w ** 2", "w * b", "w.tanh()", "w + b", f"w * {other}"])
    if cause == traces.NOT_RETAINED and rng.random() < 0.4:
        h = "w.to(torch.float64)"
    lines.append(f"h = {h}")
    if rng.random() < 0.4:
        lines.append("log = " + rng.choice(["h.detach()", "h.sum().item()", "h.tolist()", "h.detach().clone()"]))
    combine = ["k * b", "b + k", "(k * b).sin()", "b * k + b"]
    if cause == traces.DETACHED:
        lines.append("k = " + rng.choice(["h.detach()", "h.detach() * 2", "w.detach() * 3", "h.detach().sin()"]))
    elif cause == traces.NO_GRAD:
        lines.append("with torch.no_grad():\n    k = " + rng.choice(["h * 2", "h.exp()", f"h * {other}", "h + w"]))
    elif cause == traces.INFERENCE:
        lines.append("with torch.inference_mode():\n    k = " + rng.choice(["h * 2", "h.exp()", "h + 1", "h.relu()"]))
        combine = ["b + k", "k + b", "(k + b).sin()", "(b + k) ** 2"]   # nothing may save an inference tensor
    elif cause == traces.ITEM:
        lines.append("k = " + rng.choice(["torch.tensor(h.sum().item())", "torch.tensor(h.tolist())",
                                          "torch.tensor(h.tolist(), requires_grad=True)",
                                          "torch.tensor(h.mean().item()) * 2"]))
    elif cause == traces.NON_DIFFERENTIABLE:
        forms = ["(h > 0).float()", "h.to(torch.int64) + 1", "h.argmax().float()", "two steps", "h.long() * 2",
                 "(h < 0.5).float() * 2"]
        form = forms[turn % len(forms)]
        if form == "two steps":
            lines.append("m = " + rng.choice(["h > 0", "h.argmax()", "h.round().long()"]))
            lines.append("k = m.float()")
        else:
            lines.append("k = " + form)
    else:
        lines.append("k = " + fill("h"))
    lines.append("z = " + rng.choice(combine))
    if rng.random() < 0.4:
        lines.append("z = " + fill("z"))
    lines.append("loss = " + rng.choice(["(z ** 2).sum()", "z.sum()", "z.mean()"]))
    if zero_first:
        lines.append("opt.zero_grad()")
    if cause == traces.NO_BACKWARD:
        choice = ("none", "attribute", "guard")[turn % 3]
        if choice == "attribute":
            lines.append("loss.backward")
        elif choice == "guard":
            lines.append("if loss.item() > 1000.0:\n    loss.backward()")
    else:
        lines.append("loss.backward()")
    if cause == traces.CLEARED:
        lines.append(("opt.zero_grad()", "opt.step()\nopt.zero_grad()", "w.grad = None",
                      "for p in (w, b):\n    p.grad = None")[turn % 4])
    if cause == traces.REBOUND:
        lines.append(("with torch.no_grad():\n    w = w - 0.1 * w.grad",
                      "w = torch.tensor(w.tolist(), requires_grad=True)",
                      "w = w.detach().requires_grad_()",
                      "w = w.detach().clone()")[turn % 4])
    name = "h" if cause == traces.NOT_RETAINED else "w"
    return WhyCase(seed, lines, name, cause)


@functools.cache
def _why_case_list():
    cases = []
    for i, cause in enumerate(traces.CAUSES * 4):
        cases.append(why_case(4400 + i, cause))
    return sorted(cases, key=lambda c: (c.size, c.seed))


def _why_cases():
    return _why_case_list()


@exercise(
    "04.why-grad-none",
    Function(returns=Choice(*traces.CAUSES), cases=_why_cases,
             call=lambda fn, case, ns: fn(ns["trace"], ns["name"])),
    prompt="Write why_grad_none(trace, name): trace is a traced program (steps, each with step.grad_names, the "
           "names whose leaf held a .grad right after that step; trace.names with every name's value when it "
           "ended; trace.loss), and trace.names[name].grad is None. Return the cause, one of: "
           + ", ".join(repr(c) for c in traces.CAUSES) + ".",
    explain="The procedure asks in order: is it the tensor the loss was computed from (rebound name)? does it "
            "require grad (never entered)? is it a leaf (non-leaf not retained)? does the loss reach it? If it "
            "does, backward either never ran or ran and its result was cleared afterwards (zero_grad(), "
            ".grad = None): the steps' grad_names tell which. If not, what cut the path: detach, no_grad, "
            "inference_mode, a value taken out with .item() or .tolist(), or an operation with no derivative "
            "(argmax, a comparison, an integer cast).",
    hints=("Ask the questions in the order of section 10, each with live evidence: `is` for the rebinding, "
           "requires_grad, is_leaf, then your reachable_leaves(trace.loss).",
           "When the loss reaches the tensor, the record is whole: look at step.grad_names to see whether the "
           "gradient ever arrived (then something cleared it) or never did.",
           "When it does not, your first_broken_edge gives the statement; read what it does: a no_grad or "
           "inference_mode block, a detach, .item()/.tolist(), or a result with an integer or bool dtype."),
)
def why_grad_none_ex(case):
    ns = case.fresh()
    return traces.diagnose(ns["trace"], ns["name"])
