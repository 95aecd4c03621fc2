"""Unit 04, where the path stops: never entered, detach, no_grad, inference_mode, .item(), and the
procedure for "why is .grad None?"."""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any

import torch

from .. import isolation, probes, programs, traces
from ..kinds import (BadAnswer, Boolean, Choice, Error, Function, Name, Names, Number, Sequence, short,
                     type_words)
from ..question import exercise, predict_then_run, self_test

# --- 1. a loss that never entered -------------------------------------------------------------


@predict_then_run(
    "04.never-entered", Error("at the multiplication", "at backward", needs_message=True),
    prompt="x = torch.tensor([2.0]) (no requires_grad); y = x * 3; loss = y.sum(); loss.backward(). Does it "
           "raise, where ('at the multiplication' or 'at backward'), and with which words? Answer a pair "
           "(place, words from the message).",
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
    "04.patched-loss", Number(),
    prompt="x = [1., 2., 3.], y = 2 * x, w = torch.tensor(0.0) created without requires_grad, "
           "opt = torch.optim.SGD([w], lr=0.05). Twenty steps of: loss = ((w * x - y) ** 2).mean(); "
           "loss.requires_grad = True; opt.zero_grad(); loss.backward(); opt.step(). What is loss.item() "
           "at the first step and at the last? Answer [first, last].",
    explain="Setting requires_grad on the loss makes the loss itself a new leaf: backward runs, but the only "
            "gradient it computes is for the loss. w.grad stays None, SGD skips w, and the loss never moves.",
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


@predict_then_run(
    "04.data-write", Number(),
    prompt="w = torch.tensor(1.0, requires_grad=True); y = w.exp(); y.data.add_(1); y.backward(). "
           "What is w.grad? (4 decimals)",
    explain="The exp node kept its output y to compute its slope. The write through .data changed that "
            "saved value without bumping y's version counter, so backward used e + 1 where the slope of "
            "exp at 1 is e. The same write through detach() is caught at backward.",
)
def data_write():
    w = torch.tensor(1.0, requires_grad=True)
    y = w.exp()
    y.data.add_(1)
    y.backward()
    return w.grad.item()


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
    "04.inference-reuse", Error("in the helper", "at the multiplication", "at backward", needs_message=True),
    prompt="evaluate(w, x) returns (w * x).relu() computed inside torch.inference_mode(). "
           "w = torch.tensor([0.5, 2.0], requires_grad=True); x = torch.tensor([1.0, 3.0]); "
           "cached = evaluate(w, x)  (in the helper); head = torch.tensor([1.0, 1.0], requires_grad=True); "
           "pred = cached * head  (at the multiplication); pred.sum().backward()  (at backward). "
           "Does it raise, where, and with which words?",
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
    "04.unused-input", Error("at autograd.grad", needs_message=True),
    prompt="x = [1., 2., 3., 4.], target = 3 * x, w1 = 0.5 and w2 = 1.0 requiring grad; "
           "f = (w1 * x).detach(); loss = ((w2 * f - target) ** 2).mean(); then "
           "torch.autograd.grad(loss, [w1, w2]) without allow_unused. Does it raise, and with which words?",
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


@predict_then_run(
    "04.repaired-loop", Number(tol=5e-4),
    prompt="The same loop and start (w1 = 0.5, w2 = 1.0, lr = 0.02, 400 steps), repaired: stage one logs "
           "f.detach() but returns f itself. What are the final w1, w2 and w1 * w2? Answer [w1, w2, "
           "w1 * w2] (3 decimals).",
    explain="Only the product is pinned by the target (w1 * w2 = 3); how it splits depends on the start and "
            "the steps. The evidence of the repair is that w1 moved at all.",
)
def repaired_loop():
    _, w1, w2, _ = _syllabus_loop(train_repaired)
    return [w1.item(), w2.item(), (w1 * w2).item()]


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


@predict_then_run(
    "04.fake-fix-grads", Number(),
    prompt="encoder_scale = 2.0 and head_weight = 0.5 require grad; x = [1., 2., 3.], target = 2 * x. "
           "with torch.no_grad(): features = encoder_scale * x; then features.requires_grad_(True) (the "
           "'fix'); prediction = head_weight * features; loss = ((prediction - target) ** 2).mean(); "
           "loss.backward(). What are head_weight.grad and the three entries of features.grad? Answer "
           "[head_weight.grad, f0, f1, f2] (4 decimals).",
    explain="requires_grad_(True) made features a new leaf in the middle of the model: it gets a real "
            "gradient, and so does the head, but encoder_scale.grad stays None, because the multiplication "
            "that used it was never recorded.",
)
def fake_fix_grads():
    tr = traces.trace(FAKE_FIX_SOURCE)
    head, features = tr.names["head_weight"], tr.names["features"]
    return [head.grad.item()] + features.grad.tolist()


# --- self-test -------------------------------------------------------------------------------------

@self_test(
    "04.closed-book-shares", Names(pool=("d1", "d2", "d3", "d4")),
    prompt="h = torch.tensor([1.0, 2.0], requires_grad=True) * 2; d1 = h.detach(); d2 = h.detach().clone(); "
           "d3 = h.data; d4 = torch.tensor(h.tolist()). Which of d1..d4 share h's storage "
           "(same untyped_storage().data_ptr())? Answer a set of names.",
    explain="detach() and .data both give a new tensor over the same memory; clone() and a rebuild from "
            "Python values make new memory.",
)
def closed_book_shares():
    h = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    made = {"d1": h.detach(), "d2": h.detach().clone(), "d3": h.data, "d4": torch.tensor(h.tolist())}
    ptr = h.untyped_storage().data_ptr()
    return {n for n, t in made.items() if t.untyped_storage().data_ptr() == ptr}


@self_test(
    "04.closed-book-fake-fix-who", Names(pool=("encoder_scale", "head_weight", "features", "prediction")),
    prompt="The fix that fixes nothing: x = [1., 2., 3.], target = 2 * x, encoder_scale = 2.0 and head_weight "
           "= 0.5 requiring grad; with torch.no_grad(): features = encoder_scale * x; "
           "features.requires_grad_(True); prediction = head_weight * features; loss = ((prediction - "
           "target) ** 2).mean(); loss.backward(). Which of encoder_scale, head_weight, features, prediction "
           "have a .grad that is not None?",
    explain="The leaves the loss reaches are head_weight and the new leaf features; prediction is a non-leaf, "
            "and encoder_scale is not in the graph at all, because the product that used it was not recorded.",
)
def closed_book_fake_fix_who():
    tr = traces.trace(FAKE_FIX_SOURCE)
    named = {n: tr.names[n] for n in ("encoder_scale", "head_weight", "features", "prediction")}
    return {n for n, t in named.items() if (t.is_leaf or t.retains_grad) and t.grad is not None}


@self_test(
    "04.closed-book-rebuilt", Names(pool=("w", "prediction", "rebuilt")),
    prompt="w = torch.tensor([1.0, 2.0], requires_grad=True); prediction = w * 3; "
           "rebuilt = torch.tensor(prediction.tolist(), requires_grad=True); rebuilt.sum().backward(). "
           "Which of w, prediction, rebuilt have a .grad that is not None?",
    explain="The values left through .tolist(); requires_grad=True started a new graph at rebuilt. w is not "
            "in it, and prediction is a non-leaf of a graph backward never ran.",
)
def closed_book_rebuilt():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    prediction = w * 3
    rebuilt = torch.tensor(prediction.tolist(), requires_grad=True)
    rebuilt.sum().backward()
    named = {"w": w, "prediction": prediction, "rebuilt": rebuilt}
    return {n for n, t in named.items() if (t.is_leaf or t.retains_grad) and t.grad is not None}


@self_test(
    "04.closed-book-allow-unused", Boolean(),
    prompt="For the detached stage (f = (w1 * x).detach(); loss = ((w2 * f - target) ** 2).mean()), "
           "g = torch.autograd.grad(loss, [w1, w2], allow_unused=True). Is g[0] None (rather than a "
           "tensor of zeros)?",
    explain="None means 'no path from this loss to this input'; a zero would mean a path whose derivative "
            "happens to be zero. allow_unused keeps the two apart.",
)
def closed_book_allow_unused():
    w1, w2, loss = _detached_stage()
    g = torch.autograd.grad(loss, [w1, w2], allow_unused=True)
    return g[0] is None


def _grad_state(t):
    if t.grad is None:
        return "None"
    return "a tensor of zeros" if not t.grad.any() else "a nonzero tensor"


@self_test(
    "04.closed-book-frozen-grad", Choice("None", "a tensor of zeros", "a nonzero tensor"),
    prompt="After the 400 steps of train_frozen (stage one returns a detached copy; the update subtracts "
           "lr * p.grad and then calls p.grad.zero_() for every p whose grad is not None), what is "
           "w1.grad: 'None', 'a tensor of zeros' or 'a nonzero tensor'?",
    explain="w1 was never reached by any backward, so its .grad was never created: None, not zero. w2's is "
            "a tensor of zeros, because the update zeroed it.",
)
def closed_book_frozen_grad():
    _, w1, _, _ = _syllabus_loop(train_frozen)
    return _grad_state(w1)


@self_test(
    "04.closed-book-edge", Number(tol=0),
    prompt="Number the statements of the 'fix that fixes nothing' from 1 (1 x = ..., 2 target = 2 * x, 3 "
           "encoder_scale = ..., 4 head_weight = ..., 5 the with torch.no_grad() block computing features, 6 "
           "features.requires_grad_(True), 7 prediction = ..., 8 loss = ..., 9 loss.backward()). Which "
           "statement is the first broken edge on encoder_scale's path to the loss?",
    explain="Before statement 5 encoder_scale requires grad; the features it produces there have no record "
            "of it. Everything after that is intact, so no line after it can repair the path.",
)
def closed_book_edge():
    tr = traces.trace(FAKE_FIX_SOURCE)
    return traces.first_broken_edge(tr, "encoder_scale").number


# --- exercise 1: reachable leaves -----------------------------------------------------------------

ALL_CUTS = ("detach", "tolist", "rebuilt", "item", "no_grad", "inference")


@functools.lru_cache(maxsize=None)
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


@functools.lru_cache(maxsize=None)
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
)
def first_broken_edge_ex(case):
    ns = case.fresh()
    step = traces.first_broken_edge(ns["trace"], ns["name"])
    return INTACT if step is None else step.line


# --- exercise 3: the frozen loop, repaired ---------------------------------------------------------

W1_MOVED = "w1 moved"
LOG_KEPT = "feature log kept, detached"


def _product_fact(k):
    return f"w1 * w2 reached {k:g}"


class Properties(Names):
    """A set of facts observed after a training run; a missing fact is named."""

    def describe(self):
        return "a set of facts"

    def show(self, value):
        return "; ".join(sorted(value)) if value else "none of the facts held"

    def verdict_note(self, truth, value):
        missing = sorted(set(truth) - set(value))
        return ("did not hold after your loop: " + "; ".join(missing)) if missing else ""


@dataclass
class LoopCase:
    seed: int
    x: list
    k: float
    w1: float
    w2: float
    lr: float
    steps: int
    output: str = "w1"

    @property
    def size(self):
        return self.steps

    @property
    def setup(self):
        return (f"x = torch.tensor({self.x})\ntarget = {self.k} * x\n"
                f"w1 = torch.tensor({self.w1}, requires_grad=True)\n"
                f"w2 = torch.tensor({self.w2}, requires_grad=True)\nfeature_log = []")

    @property
    def source(self):
        return self.setup + f"\ntrain(x, target, w1, w2, lr={self.lr}, steps={self.steps}, feature_log=feature_log)"

    @property
    def label(self):
        return f"loop #{self.seed} ({self.steps} steps, target {self.k:g} * x)"

    def fresh(self):
        ns: dict[str, Any] = {"torch": torch}
        with isolation.clean_room():
            exec(self.setup, ns)
        ns.pop("__builtins__", None)
        ns.update(lr=self.lr, steps=self.steps)
        return ns

    def drawing(self, ns=None):
        return (f"start: w1 = {self.w1}, w2 = {self.w2}; wanted: w1 * w2 = {self.k:g}; "
                f"lr = {self.lr}, {self.steps} steps")


def _loop_facts(case, ns):
    w1, w2, log = ns["w1"], ns["w2"], ns["feature_log"]
    facts = set()
    if isinstance(w1, torch.Tensor) and isinstance(w2, torch.Tensor):
        w1v, w2v = float(w1.detach()), float(w2.detach())
        if abs(w1v - case.w1) > 1e-3:
            facts.add(W1_MOVED)
        if abs(w1v * w2v - case.k) < 1e-3:
            facts.add(_product_fact(case.k))
    first = [v * case.w1 for v in case.x]       # stage one's features at the first step, as numbers
    if (isinstance(log, list) and len(log) == case.steps and
            all(isinstance(t, torch.Tensor) and not t.requires_grad and t.grad_fn is None for t in log)):
        values = log[0].detach().flatten().tolist()
        if len(values) == len(first) and all(abs(a - b) < 1e-5 for a, b in zip(values, first)):
            facts.add(LOG_KEPT)
    return facts


@functools.lru_cache(maxsize=None)
def _loop_case_list():
    cases = [LoopCase(0, [1.0, 2.0, 3.0, 4.0], 3.0, 0.5, 1.0, 0.02, 400)]
    rng = random.Random(424)
    seed = 1
    while len(cases) < 4 and seed < 200:
        n = rng.choice([3, 4, 5])
        x = [round(rng.uniform(0.5, 2.0), 1) for _ in range(n)]
        k = rng.choice([1.5, 2.0, 2.5, 4.0])
        case = LoopCase(seed, x, k, round(rng.uniform(0.3, 1.5), 1), round(rng.uniform(0.5, 1.5), 1),
                        rng.choice([0.01, 0.02]), rng.choice([200, 300]))
        seed += 1
        ns = case.fresh()
        with isolation.clean_room():
            train_repaired(ns["x"], ns["target"], ns["w1"], ns["w2"], case.lr, case.steps, ns["feature_log"])
        if len(_loop_facts(case, ns)) == 3:
            cases.append(case)
    return cases


def _loop_cases():
    return _loop_case_list()


def _call_train(fn, case, ns):
    return fn(ns["x"], ns["target"], ns["w1"], ns["w2"], ns["lr"], ns["steps"], ns["feature_log"])


@exercise(
    "04.repair-frozen-loop",
    Function(returns=Properties(), cases=_loop_cases, call=_call_train,
             convert=lambda raw, case, ns: _loop_facts(case, ns)),
    prompt="Write train(x, target, w1, w2, lr, steps, feature_log): the loop of train_frozen, repaired. "
           "Each step appends that step's stage-one features, detached, to feature_log, and updates w1 and "
           "w2 in place. Checked after the call: w1 moved from its start, w1 * w2 reached the target's "
           "multiplier, and the log holds one detached tensor per step.",
    explain="The detach was doing a job, keeping the log free of graphs; it was in the wrong place. The "
            "repair keeps it for the log and sends the computed tensor on, and the proof is that w1 moves, "
            "not that the loss falls (it fell before the repair too).",
)
def repair_frozen_loop(case):
    ns = case.fresh()
    train_repaired(ns["x"], ns["target"], ns["w1"], ns["w2"], case.lr, case.steps, ns["feature_log"])
    return _loop_facts(case, ns)


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
    n = rng.choice([2, 3])

    def values():
        return "[" + ", ".join(f"{rng.choice([-1, 1]) * rng.randint(1, 15) / 10:.1f}" for _ in range(n)) + "]"

    fill = lambda x: rng.choice(_FILL).format(x=x)  # noqa: E731
    lines = ["w = torch.tensor(" + values() + (")" if cause == traces.NEVER_ENTERED else ", requires_grad=True)"),
             "b = torch.tensor(" + values() + ", requires_grad=True)"]
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
    if cause == traces.DETACHED:
        lines.append("k = " + rng.choice(["h.detach()", "h.detach() * 2", "w.detach() * 3", "h.detach().sin()"]))
    elif cause == traces.NO_GRAD:
        lines.append("with torch.no_grad():\n    k = " + rng.choice(["h * 2", "h.exp()", f"h * {other}", "h + w"]))
    elif cause == traces.ITEM:
        lines.append("k = " + rng.choice(["torch.tensor(h.sum().item())", "torch.tensor(h.tolist())",
                                          "torch.tensor(h.tolist(), requires_grad=True)",
                                          "torch.tensor(h.mean().item()) * 2"]))
    else:
        lines.append("k = " + fill("h"))
    lines.append("z = " + rng.choice(["k * b", "b + k", "(k * b).sin()", "b * k + b"]))
    if rng.random() < 0.4:
        lines.append("z = " + fill("z"))
    lines.append("loss = " + rng.choice(["(z ** 2).sum()", "z.sum()", "z.mean()"]))
    if cause == traces.NO_BACKWARD:
        choice = rng.choice(["none", "attribute", "guard"])
        if choice == "attribute":
            lines.append("loss.backward")
        elif choice == "guard":
            lines.append("if loss.item() > 1000.0:\n    loss.backward()")
    else:
        lines.append("loss.backward()")
    if cause == traces.REBOUND:
        lines.append(rng.choice(["with torch.no_grad():\n    w = w - 0.1 * w.grad",
                                 "w = torch.tensor(w.tolist(), requires_grad=True)",
                                 "w = w.detach().requires_grad_()",
                                 "w = w.detach().clone()"]))
    name = "h" if cause == traces.NOT_RETAINED else "w"
    return WhyCase(seed, lines, name, cause)


@functools.lru_cache(maxsize=None)
def _why_case_list():
    cases = []
    for i, cause in enumerate(traces.CAUSES * 5):
        cases.append(why_case(4400 + i, cause))
    return sorted(cases, key=lambda c: (c.size, c.seed))


def _why_cases():
    return _why_case_list()


@exercise(
    "04.why-grad-none",
    Function(returns=Choice(*traces.CAUSES), cases=_why_cases,
             call=lambda fn, case, ns: fn(ns["trace"], ns["name"])),
    prompt="Write why_grad_none(trace, name): trace is a traced program (steps, trace.names with every name's "
           "value when it ended, trace.loss), and trace.names[name].grad is None. Return the cause, one of: "
           + ", ".join(repr(c) for c in traces.CAUSES) + ".",
    explain="The procedure asks in order: is it the tensor the loss was computed from (rebound name)? does it "
            "require grad (never entered)? is it a leaf (non-leaf not retained)? does the loss reach it "
            "(then backward did not run)? and if not, what cut the path: detach, no_grad, or a value taken "
            "out with .item() or .tolist().",
)
def why_grad_none_ex(case):
    ns = case.fresh()
    return traces.diagnose(ns["trace"], ns["name"])
