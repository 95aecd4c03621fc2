"""Unit 07, version counters and in-place writes: which writes autograd catches, where, and when it cannot."""
from __future__ import annotations

import functools
import gc
import random
import re
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from grader import probes
from grader.engine import torch_state
from grader.engine.kinds import (
    BadAnswer,
    Choice,
    Error,
    Function,
    FunctionPair,
    Kind,
    Name,
    Names,
    Number,
    _reject_common,
    node_key,
    short,
    type_words,
)
from grader.engine.question import exercise, predict_then_run, self_test

INPLACE_TERMS = (("version", "inplace", "in-place", "modified"),)


# --- 1. the counter -----------------------------------------------------------------------


@predict_then_run(
    "07.version-count", Number(tol=0),
    prompt="t = torch.zeros(3); t.add_(1); t.mul_(2); t[0] = 5; t += 1; u = t + 1. What is t._version?",
    explain="Each in-place write adds one, whatever it writes: add_, mul_, the index assignment (a copy "
            "into a view of t) and +=. t + 1 makes a new tensor and leaves t's counter alone.",
    misconceptions=[
        (lambda truth: truth + 1, "u = t + 1 reads t and makes a new tensor; only writes into t's memory count"),
    ],
)
def version_count():
    t = torch.zeros(3)
    t.add_(1)
    t.mul_(2)
    t[0] = 5
    t += 1
    u = t + 1  # noqa: F841  (not a write)
    return t._version


# --- 2. a write autograd allows ----------------------------------------------------------------

@predict_then_run(
    "07.mul-add-node", Name(),
    prompt="x = torch.ones(3, requires_grad=True); y = x * 2; y.add_(1). What is the class name of "
           "y.grad_fn after the write?",
    explain="An in-place operation on a tensor that requires grad is recorded like any other: y's history "
            "now ends in the addition, whose input is the old MulBackward0.",
    misconceptions=[("MulBackward0", "the write is recorded like any operation: y's grad_fn becomes the "
                                      "in-place addition's node, and MulBackward0 is now its input")],
)
def mul_add_node():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    y.add_(1)
    return probes.node_name(y.grad_fn)


# --- 3. the same write after exp -------------------------------------------------------------

@predict_then_run(
    "07.exp-add", Error("at the write", "at backward", terms=INPLACE_TERMS),
    prompt="a = torch.ones(3, requires_grad=True); b = a.exp(); b.add_(1); b.sum().backward(). Does it "
           "raise, and where? The place is graded exactly; you may add your words for the message, graded "
           "on its key idea (a write, versions).",
    explain="exp's backward is grad * exp(a), and it kept its own output b for that. The write moved b's "
            "counter from 0 to 1, and backward refuses a saved tensor whose version moved since it was saved.",
    misconceptions=[
        ("no error", "exp's backward rule multiplies by exp(a), and exp kept its own output b for it: the write "
                     "changed the very tensor it kept"),
    ],
)
def exp_add():
    a = torch.ones(3, requires_grad=True)
    b = a.exp()
    yield "at the write"
    b.add_(1)
    yield "at backward"
    b.sum().backward()


# --- 4. the consumer decides -------------------------------------------------------------------

def _consumer(op: str):
    w = torch.tensor([2.0], requires_grad=True)
    u = w * 3
    v = u + 1 if op == "add" else u ** 2
    return w, u, v


@predict_then_run(
    "07.consumer-add", Error("at the write", "at backward"),
    prompt="w = torch.tensor([2.0], requires_grad=True); u = w * 3; v = u + 1; u.add_(10); "
           "v.sum().backward(). Does it raise, and where?",
    explain="The derivative of u + 1 is 1 whatever u was, so AddBackward0 saved nothing of u; a write to u "
            "cannot spoil a value nobody kept. w.grad comes out 3.",
    misconceptions=[("at backward", "the addition's slope is 1 whatever u was, so AddBackward0 kept no tensor "
                                    "of u; a write cannot spoil what nobody kept")],
)
def consumer_add():
    w, u, v = _consumer("add")
    yield "at the write"
    u.add_(10)
    yield "at backward"
    v.sum().backward()


# the operation an in-place message may name, and the line of this program that made it
MESSAGE_OPS = {"Mul": "w * 3", "Add": "u.add_(10)", "Pow": "u ** 2", "Sum": "v.sum()"}


@predict_then_run(
    "07.consumer-pow-message", Choice(*MESSAGE_OPS.values()),
    prompt="The same, with v = u ** 2: w = torch.tensor([2.0], requires_grad=True); u = w * 3; v = u ** 2; "
           "u.add_(10); v.sum().backward() raises at backward, and its message says the modified tensor "
           "'is output 0 of' an operation. Which line made that operation: 'w * 3', 'u.add_(10)', 'u ** 2' or "
           "'v.sum()'?",
    explain="The power node saved u (the derivative is 2u), so the write breaks it. The message describes the "
            "tensor it found modified by what produced it now: after u.add_(10) that is the in-place addition "
            "('output 0 of Add').",
    misconceptions=[
        ("u ** 2", "the power is the node that kept u and trips over it, but the message does not name that node: "
                   "it names what produced the modified tensor"),
    ],
)
def consumer_pow_message():
    w, u, v = _consumer("pow")
    u.add_(10)
    try:
        v.sum().backward()
    except RuntimeError as exc:
        found = re.search(r"output \d+ of (\w+)", str(exc))
        if found and found.group(1) in MESSAGE_OPS:
            return MESSAGE_OPS[found.group(1)]
        raise
    raise RuntimeError("backward did not raise")


@predict_then_run(
    "07.pow-broken-node", Name(pool=("AddBackward0", "MulBackward0", "PowBackward0", "AccumulateGrad")),
    prompt="In that program (u = w * 3; v = u ** 2; u.add_(10)), which node holds the saved tensor that the "
           "write made stale? Give its class name.",
    explain="The node that kept u is the consumer, the power. The message named Add because it describes "
            "the tensor by its current history, not the node that tripped over it.",
    misconceptions=[("AddBackward0", "Add is what the message names: the modified tensor's latest history. The "
                                     "node that kept u, and so broke, is its consumer")],
)
def pow_broken_node():
    w, u, v = _consumer("pow")
    u.add_(10)
    stale = [s.node for s in probes.saved_tensors(v) if s.stale]
    if len(stale) != 1:
        raise RuntimeError(f"expected exactly one stale saved tensor, torch shows {stale}")
    return stale[0]


# --- 5. leaves -----------------------------------------------------------------------------------

@predict_then_run(
    "07.leaf-write", Error("at the write", "at backward", terms=(("leaf",),)),
    prompt="w = torch.ones(3, requires_grad=True); w.add_(1); (w * 2).sum().backward(). Does it raise, "
           "and where? The place is graded exactly; you may add your words for the message, graded on its "
           "key idea.",
    explain="Recording a write gives the written tensor a new grad_fn. For a leaf that requires grad that "
            "would replace its AccumulateGrad node, the one place its gradient is collected, so torch refuses "
            "the write itself. Optimizers write under torch.no_grad(), where nothing is recorded (the counter "
            "still moves).",
    misconceptions=[("at backward", "the refusal comes at the write itself: recording it would take the place of "
                                    "the leaf's AccumulateGrad node, so it is never allowed to happen")],
)
def leaf_write():
    w = torch.ones(3, requires_grad=True)
    yield "at the write"
    w.add_(1)
    yield "at backward"
    (w * 2).sum().backward()


# --- 6. trap: "I have no in-place ops" (an optimizer step between forward and backward) ----------

def _gan():
    torch.manual_seed(0)
    G = nn.Linear(2, 2)
    D = nn.Linear(2, 1)
    opt_D = torch.optim.SGD(D.parameters(), lr=0.1)
    fake = G(torch.randn(4, 2))
    d_loss = D(fake.detach()).mean()
    g_loss = -D(fake).mean()
    return G, D, opt_D, d_loss, g_loss


@predict_then_run(
    "07.gan-step", Error("at the step", "at backward", terms=INPLACE_TERMS),
    prompt="torch.manual_seed(0); G = nn.Linear(2, 2); D = nn.Linear(2, 1); "
           "opt_D = torch.optim.SGD(D.parameters(), lr=0.1); fake = G(torch.randn(4, 2)); "
           "d_loss = D(fake.detach()).mean(); g_loss = -D(fake).mean(); then opt_D.zero_grad(); "
           "d_loss.backward(); opt_D.step(); g_loss.backward(). Does it raise, and where? The place is graded "
           "exactly; you may add your words for the message, graded on its key idea.",
    explain="g_loss's graph saved D.weight (to send a gradient back to fake), and opt_D.step() wrote D.weight "
            "in place. There is no in-place call in the program text, but the optimizer's update is one.",
    misconceptions=[("no error", "opt_D.step() writes D.weight in place (under no_grad, but the counter still "
                                 "moves), and g_loss's graph kept D.weight to send a gradient back to fake")],
)
def gan_step():
    G, D, opt_D, d_loss, g_loss = _gan()
    opt_D.zero_grad()
    d_loss.backward()
    yield "at the step"
    opt_D.step()
    yield "at backward"
    g_loss.backward()


def _gan_with_g_opt():
    G, D, opt_D, d_loss, g_loss = _gan()
    opt_G = torch.optim.SGD(G.parameters(), lr=0.1)
    return G, D, opt_D, opt_G, d_loss, g_loss


def gan_reference() -> dict[str, torch.Tensor]:
    """The gradients each loss alone gives its own player, from a fresh build: d_loss for D, g_loss for G,
    both at the parameters the round starts from (what the program means to compute)."""
    G, D, _, _, d_loss, g_loss = _gan_with_g_opt()
    grads = dict(zip(("D.weight", "D.bias"), torch.autograd.grad(d_loss, list(D.parameters()))))
    grads.update(zip(("G.weight", "G.bias"), torch.autograd.grad(g_loss, list(G.parameters()))))
    return grads


def gan_round(order: str) -> dict[str, Any]:
    """One round from the same start: what each parameter's .grad holds when its optimizer steps, and how
    far each parameter moved. ``order``: 'both backward first' (the tempting repair that is wrong),
    'inputs=' (g_loss.backward(inputs=G's parameters) first), or 'autograd.grad' (G's gradients returned)."""
    G, D, opt_D, opt_G, d_loss, g_loss = _gan_with_g_opt()
    before = {name: p.detach().clone() for name, p in (("D.weight", D.weight), ("D.bias", D.bias),
                                                       ("G.weight", G.weight), ("G.bias", G.bias))}
    opt_G.zero_grad()
    opt_D.zero_grad()
    if order == "both backward first":
        d_loss.backward()
        g_loss.backward()
    elif order == "inputs=":
        g_loss.backward(inputs=list(G.parameters()))
        d_loss.backward()
    elif order == "autograd.grad":
        for p, g in zip(G.parameters(), torch.autograd.grad(g_loss, list(G.parameters()))):
            p.grad = g
        d_loss.backward()
    else:
        raise ValueError(order)
    grads = {"D.weight": D.weight.grad, "D.bias": D.bias.grad, "G.weight": G.weight.grad, "G.bias": G.bias.grad}
    grads = {k: (None if g is None else g.detach().clone()) for k, g in grads.items()}
    opt_D.step()
    opt_G.step()
    after = {"D.weight": D.weight, "D.bias": D.bias, "G.weight": G.weight, "G.bias": G.bias}
    moved = {k: bool((after[k].detach() != before[k]).any()) for k in before}
    return {"grads": grads, "moved": moved}


# --- 7. trap: ReLU(inplace=True) blamed for a += ------------------------------------------------

def _block(inplace: bool):
    torch.manual_seed(0)
    fc1, fc2 = nn.Linear(3, 3), nn.Linear(3, 1)
    relu = nn.ReLU(inplace=inplace)
    x = torch.randn(2, 3)
    h = relu(fc1(x))
    return fc1, fc2, h


@predict_then_run(
    "07.relu-inplace-off", Error("at the write", "at backward"),
    prompt="torch.manual_seed(0); fc1, fc2 = nn.Linear(3, 3), nn.Linear(3, 1); h = nn.ReLU(inplace=False)"
           "(fc1(torch.randn(2, 3))); h += 0.5; fc2(h).sum().backward(). With inplace=True this raised at "
           "backward, the message pointing at the ReLU's output. With inplace=False, does it still raise, "
           "and where?",
    explain="ReLU keeps its output to know where the gradient passes, inplace or not. The += wrote that output "
            "after it was saved: the culprit is the +=, and h = h + 0.5 fixes it with inplace=True kept.",
    misconceptions=[("no error", "ReLU keeps its output whether inplace or not, and h is that output: the += "
                                 "writes it either way")],
)
def relu_inplace_off():
    fc1, fc2, h = _block(False)
    yield "at the write"
    h += 0.5
    yield "at backward"
    fc2(h).sum().backward()


# --- 8. trap: sigmoid versus a hand-written one ------------------------------------------------

@predict_then_run(
    "07.handmade-sigmoid", Error("at the write", "at backward"),
    prompt="a = torch.tensor([0.5, -1.0], requires_grad=True); s = 1 / (1 + torch.exp(-a)); s.mul_(2); "
           "s.sum().backward(). (With s = torch.sigmoid(a) the same lines raise at backward.) Does the "
           "hand-written version raise, and where?",
    explain="SigmoidBackward0 keeps its output s, so writing s breaks it. The hand-written formula ends in a "
            "multiplication by the constant 1 whose node keeps only that constant; the reciprocal keeps its own "
            "result, a different tensor. Nothing kept s, so the write is harmless.",
    misconceptions=[("at backward", "same values, different keepers: no node of the hand-written graph kept s "
                                    "itself, so nothing it kept went stale")],
)
def handmade_sigmoid():
    a = torch.tensor([0.5, -1.0], requires_grad=True)
    s = 1 / (1 + torch.exp(-a))
    yield "at the write"
    s.mul_(2)
    yield "at backward"
    s.sum().backward()


# --- 9. when nothing checks: .data and saved-tensor hooks ---------------------------------------

@predict_then_run(
    "07.data-write", Number(),
    prompt="a = torch.tensor([1.0, 2.0], requires_grad=True); e = a.exp(); e.data.mul_(2); "
           "e.sum().backward(). What are e._version and a.grad[0]? Answer [version, grad] (4 decimals).",
    explain="e.data is a second tensor over the same memory with a counter of its own, so the write changes "
            "what exp saved without moving e's counter. Backward finds version 0 as saved, trusts the doubled "
            "value and returns 2e instead of e: no error, a wrong number.",
    misconceptions=[
        (lambda truth: [truth[0] + 1, truth[1]], "e.data has a counter of its own: the write through it leaves "
                                                 "e._version where it was"),
    ],
)
def data_write():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    e = a.exp()
    e.data.mul_(2)
    version = e._version
    e.sum().backward()
    return [version, a.grad[0].item()]


def _keep(t):
    """A saved-tensor hook that stores the tensor itself and gives it back unchanged."""
    return t


@predict_then_run(
    "07.hooks-grad", Number(),
    prompt="p = torch.ones(3, requires_grad=True); def keep(t): return t. Under "
           "torch.autograd.graph.saved_tensors_hooks(keep, keep): q = p.exp(); q.add_(1); q.sum().backward(). "
           "What is p.grad[0]? And what is it for the same program without the q.add_(1)? Answer "
           "[with the write, without] (4 decimals).",
    explain="With hooks installed, torch cannot know what pack returned, so it skips the version check. "
            "Backward multiplies by the written value exp(1) + 1 instead of exp(1): no error, a wrong gradient.",
    misconceptions=[(lambda truth: [truth[1], truth[1]], "the hooks hand back the tensor itself, written by "
                                                         "q.add_(1), and nothing compares versions under hooks")],
)
def hooks_grad():
    grads = []
    for write in (True, False):
        p = torch.ones(3, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(_keep, _keep):
            q = p.exp()
            if write:
                q.add_(1)
            q.sum().backward()
        grads.append(p.grad[0].item())
    return grads


# --- self-test -----------------------------------------------------------------------------------

@self_test(
    "07.self-view-versions", Number(tol=0),
    prompt="b = torch.zeros(4); v = b[1:3]; v.add_(1); b.mul_(2). What are b._version and v._version? "
           "Answer [b's, v's].",
    explain="A view and its base share one counter: each write, through either name, moves the number both "
            "report.",
    hints=("Count the writes, then ask whose counter each one moves.",
           "A slice is a view: it and its base read one shared counter, so a write through either name moves "
           "the number both report."),
    misconceptions=[(lambda truth: [truth[0] - 1, truth[1] - 1],
                     "each name seeing only its own write would give one each; a view shares its base's counter")],
)
def self_view_versions():
    b = torch.zeros(4)
    v = b[1:3]
    v.add_(1)
    b.mul_(2)
    return [b._version, v._version]


KEEPER_NAMES = ("a", "t", "c", "y")


def _keeper_program():
    a = torch.tensor([0.5, 1.0], requires_grad=True)
    c = torch.tensor([2.0, 3.0])
    t = a.sin()
    y = t * c
    return {"a": a, "t": t, "c": c, "y": y}


@self_test(
    "07.self-mul-constant", Names(pool=KEEPER_NAMES),
    prompt="a = torch.tensor([0.5, 1.0], requires_grad=True); c = torch.tensor([2.0, 3.0]); t = a.sin(); "
           "y = t * c. On a fresh build for each name, one write x.add_(1) under torch.no_grad() (so even the "
           "leaf a may be written), then y.sum().backward(). For which of a, t, c, y does backward raise? "
           "Answer a set of names.",
    explain="Each node keeps what its backward rule reads. sin keeps its input a (its slope is cos a). The "
            "product needs the other operand for each gradient it must produce; only t needs one, and its "
            "gradient is c, so MulBackward0 kept c and not t. Nothing kept y. Writing a or c breaks a kept "
            "tensor; writing t or y breaks nothing.",
    hints=("For each node, ask what its backward rule reads: that is what it kept.",
           "The slope of sin(a) is cos(a). In t * c only t needs a gradient, and that gradient is c times the "
           "incoming one: which operand does MulBackward0 need, and which does it not?"),
    misconceptions=[
        (lambda truth: set(truth) | {"t"}, "MulBackward0 kept c, the slope for t, and not t itself: c needs no "
                                           "gradient, so t's value is never read"),
        (lambda truth: set(truth) - {"a"}, "SinBackward0 kept a, its input, to compute cos(a); under no_grad the "
                                           "write to the leaf is allowed and still moves a's counter"),
    ],
)
def self_mul_constant():
    broken = set()
    for name in KEEPER_NAMES:
        ns = _keeper_program()
        with torch.no_grad():
            ns[name].add_(1)
        try:
            ns["y"].sum().backward()
        except RuntimeError:
            broken.add(name)
    return broken


@self_test(
    "07.self-relu-own-output", Number(tol=0),
    prompt="x = torch.tensor([-3.0, 1.5], requires_grad=True); h = x * 4; h.relu_(); h.add_(1). The in-place "
           "ReLU kept h for its backward rule. At which version of h did it keep it, and at which version is h "
           "when h.sum().backward() reads it? Answer [kept at, now].",
    explain="The in-place ReLU wrote h first (version 1) and then kept its result, at the version its own write "
            "produced, so its own write never trips the check. h.add_(1) moves h to 2, and backward refuses.",
    hints=("Count the writes into h: which ones happen before the ReLU keeps its result, which after?",
           "relu_ writes h and then keeps its own result as it now is; only a write after that makes the kept "
           "version and the current one differ."),
    misconceptions=[(lambda truth: [truth[0] - 1, truth[1]],
                     "relu_ keeps its result after writing it, so the version it keeps already counts its own "
                     "write")],
)
def self_relu_own_output():
    x = torch.tensor([-3.0, 1.5], requires_grad=True)
    h = x * 4
    h.relu_()
    h.add_(1)
    kept = [s for s in probes.saved_tensors(h) if s.node.startswith("Threshold") or s.node.startswith("Relu")]
    if len(kept) != 1:
        raise RuntimeError(f"expected one tensor kept by the in-place ReLU, torch shows "
                           f"{[(s.node, s.attribute) for s in probes.saved_tensors(h)]}")
    return [kept[0].version_saved, h._version]


@self_test(
    "07.self-detach-write", Error("at the write", "at backward", needs_message=True, terms=INPLACE_TERMS),
    prompt="a = torch.tensor([1.0, 2.0], requires_grad=True); e = a.exp(); e.detach().add_(1); "
           "e.sum().backward(). Does it raise, and where? Answer a place ('no error', 'at the write', 'at "
           "backward'), or for an error a pair (place, your words for what the message says): the place is "
           "graded exactly, the words on the message's key idea.",
    explain="detach() cuts the history but shares both the memory and the version counter, so the write is "
            "seen. (.data shares the memory only, which is why it goes unseen.)",
    hints=("What does detach() share with e, and what does it cut?",
           "A detached alias shares e's memory and e's version counter; exp kept e, its own output."),
    misconceptions=[("no error", "detach() cuts the history, not the counter: the write through it moves e's "
                                 "version, and exp kept e")],
)
def self_detach_write():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    e = a.exp()
    yield "at the write"
    e.detach().add_(1)
    yield "at backward"
    e.sum().backward()


@self_test(
    "07.self-which-node", Name(pool=("MulBackward0", "SinBackward0", "AccumulateGrad", "AddBackward0")),
    prompt="w = torch.tensor([2.0], requires_grad=True); u = w * 3; s = u.sin(); u.mul_(2); s.sum().backward() "
           "raises at backward, its message naming u by its latest operation, the in-place multiplication. "
           "Which node's saved tensor broke? Give its class name.",
    explain="sin's derivative is cos(u), so SinBackward0 kept u; the write made that copy stale. Mul is only "
            "u's history after the write.",
    hints=("The message names the written tensor's history, not the node that failed.",
           "Which node's backward rule reads u's value? That node kept u."),
    misconceptions=[("MulBackward0", "Mul is u's latest history, which the message names; the node that kept u "
                                     "is its consumer")],
)
def self_which_node():
    w = torch.tensor([2.0], requires_grad=True)
    u = w * 3
    s = u.sin()
    u.mul_(2)
    stale = [e.node for e in probes.saved_tensors(s) if e.stale]
    if len(stale) != 1:
        raise RuntimeError(f"expected exactly one stale saved tensor, torch shows {stale}")
    return stale[0]


@self_test(
    "07.self-param-version", Number(tol=0),
    prompt="torch.manual_seed(0); D = nn.Linear(2, 1); opt = torch.optim.SGD(D.parameters(), lr=0.1); "
           "D(torch.ones(1, 2)).sum().backward(); opt.step(). What is D.weight._version right after "
           "nn.Linear(2, 1), and after the step? Answer [after construction, after the step].",
    explain="Initialisation fills the weight in place (under no_grad), so a fresh layer is already at version "
            "1; each optimizer step is one more write.",
    hints=("Which of these lines write into D.weight's memory? Backward writes only .grad.",
           "A layer's weights are filled in place by its initialiser, and an optimizer step updates them in "
           "place: each is one write."),
    misconceptions=[(lambda truth: [0, truth[1] - 1], "a fresh layer is not at version 0: its initialiser fills "
                                                       "the weight in place")],
)
def self_param_version():
    torch.manual_seed(0)
    D = nn.Linear(2, 1)
    first = D.weight._version
    opt = torch.optim.SGD(D.parameters(), lr=0.1)
    D(torch.ones(1, 2)).sum().backward()
    opt.step()
    return [first, D.weight._version]


# =====================================================================================================
# Exercise 1: predict where a program with one in-place write fails, and which node's save broke.
# =====================================================================================================

PLACES = ("no error", "at the write", "at backward")


def _node_label(item: Any) -> Any:
    """A node given as an object is read as its class name; anything else is left for read() to judge."""
    if not isinstance(item, str) and hasattr(item, "next_functions"):
        return type(item).__name__
    return item


class WriteVerdict(Kind):
    """Where a program with one in-place write fails and, for 'at backward', which nodes' saves broke.

    Answers: 'no error', 'at the write', or ('at backward', names) where names is a node
    class name or a set of them; names are compared on their stable part (node_key).
    """

    label = "a place, with the broken nodes for 'at backward'"

    def describe(self):
        return ("'no error', 'at the write', or ('at backward', {'PowBackward0', ...}): the place and, for "
                "an error at backward, the class names of the nodes whose saved tensors the write made stale")

    def read(self, answer):
        _reject_common(answer, self.describe())
        if isinstance(answer, str):
            place, names = self._place(answer), None
        elif isinstance(answer, (tuple, list)) and len(answer) == 2:
            place, names = self._place(answer[0]), answer[1]
        else:
            raise BadAnswer(f"expected {self.describe()}; got {type_words(answer)} {short(answer)}")
        if place == "at backward":
            if names is None:
                raise BadAnswer("for 'at backward', also name the node(s) whose saved tensor broke, as in "
                                "('at backward', {'PowBackward0'})")
            return place, self._names(names)
        if names is not None and names != "" and not (isinstance(names, (set, frozenset, list, tuple))
                                                       and not names):
            raise BadAnswer(f"'{place}' names no node: return just '{place}'")
        return place, frozenset()

    def _place(self, text):
        if not isinstance(text, str):
            raise BadAnswer(f"the place must be one of {', '.join(map(repr, PLACES))}, got {type_words(text)}")
        for p in PLACES:
            if text.strip().lower() == p:
                return p
        raise BadAnswer(f"{short(text)} is not a place; use one of {', '.join(map(repr, PLACES))}")

    def _names(self, names):
        if isinstance(names, str) or hasattr(names, "next_functions"):
            names = [names]
        if isinstance(names, dict) or not isinstance(names, (set, frozenset, list, tuple)):
            raise BadAnswer(f"the nodes must be a name or a set of names, got {type_words(names)}")
        out = []
        for item in names:
            item = _node_label(item)
            if not isinstance(item, str) or not item.strip():
                raise BadAnswer(f"every node must be a class name such as 'PowBackward0'; got {short(item)}")
            out.append(item.strip())
        return frozenset(out)

    def agrees(self, truth, value):
        return truth[0] == value[0] and {node_key(n) for n in truth[1]} == {node_key(n) for n in value[1]}

    def verdict_note(self, truth, value):
        if truth[0] != value[0]:
            return ""
        t, v = {node_key(n) for n in truth[1]}, {node_key(n) for n in value[1]}
        parts = []
        if v - t:
            parts.append("these nodes kept nothing the write touched: " +
                         ", ".join(sorted(n for n in value[1] if node_key(n) in v - t)))
        if t - v:
            parts.append(f"{len(t - v)} node(s) whose saved tensor went stale are missing")
        return "; ".join(parts)

    def show(self, value):
        place, names = value
        return place if place != "at backward" else f"at backward, stale saves in {', '.join(sorted(names))}"

    def encode(self, value):
        place, names = value
        return place if place != "at backward" else [place, sorted(names)]

    def wrong_answers(self, truth):
        out = [p for p in PLACES if p not in ("at backward", truth[0])]
        if truth[0] != "at backward":
            out.append(("at backward", {"PowBackward0"}))
        else:
            out.append((truth[0], set(truth[1]) | {"NotARealBackward0"}))
        return out


# --- the generated programs ----------------------------------------------------------------------

_BINARY = {"{x} * {y}": 3, "{x} + {y}": 2, "{x} - {y}": 1}
_UNARY = {"{x} ** 2": 2, "{x}.sin()": 1, "{x}.cos()": 1,                       # keep their input
          "{x}.exp()": 2, "{x}.sigmoid()": 1, "{x}.tanh()": 1, "{x}.relu()": 1,  # keep their output
          "{x} + 1": 2, "{x} * 2": 1, "-{x}": 1}                                 # keep neither
_VIEWS = {"{x}[1:]": 2, "{x}.view(-1)": 1, "{x}[:]": 1, "{x}.detach()": 1}
_ENDINGS = ("{x}.sum()", "({x} ** 2).sum()", "({x} * {y}).sum()", "{x}.sum() + {y}.sum()")
WRITES = ("{x}.add_(1)", "{x}.mul_(2)", "{x} += 1", "{x} *= 3", "{x}[0] = 0.5", "{x}[-1:].mul_(3)",
          "{x}.zero_()")


def _values(rng: random.Random, n: int) -> str:
    return "[" + ", ".join(f"{rng.choice([-1, 1]) * rng.randint(2, 15) / 10:.1f}" for _ in range(n)) + "]"


def _pick(rng: random.Random, table: dict) -> str:
    keys = list(table)
    return rng.choices(keys, weights=[table[k] for k in keys])[0]


def forward_lines(seed: int, ops: int, early_write: bool = False) -> list[str]:
    """A straight-line forward pass over leaves a (requires grad), b (sometimes) and c (never),
    ending in a scalar ``out``; views and detach() share memory with what they came from."""
    rng = random.Random(seed)
    b_grad = rng.random() < 0.5
    lines = [f"a = torch.tensor({_values(rng, 3)}, requires_grad=True)",
             f"b = torch.tensor({_values(rng, 3)}" + (", requires_grad=True)" if b_grad else ")"),
             f"c = torch.tensor({_values(rng, 3)})"]
    if early_write:
        lines.append("c += 0.5")
    length = {"a": 3, "b": 3, "c": 3}
    live = ["a", "b", "c"]

    def operand():
        return rng.choice(live[-3:] if rng.random() < 0.7 else live)

    for i in range(1, ops + 1):
        name = f"t{i}"
        x = operand()
        roll = rng.random()
        if roll < 0.2:
            template = _pick(rng, _VIEWS)
            if template == "{x}[1:]" and length[x] == 1:
                template = "{x}[:]"
            length[name] = length[x] - 1 if template == "{x}[1:]" else length[x]
            lines.append(f"{name} = " + template.format(x=x))
        elif roll < 0.55:
            same = [n for n in live if length[n] == length[x] and n != x]
            y = rng.choice(same) if same and rng.random() < 0.85 else x
            lines.append(f"{name} = " + _pick(rng, _BINARY).format(x=x, y=y))
            length[name] = length[x]
        else:
            lines.append(f"{name} = " + _pick(rng, _UNARY).format(x=x))
            length[name] = length[x]
        live.append(name)
    last = live[-1]
    ending = rng.choice(_ENDINGS)
    others = [n for n in live[:-1] if length[n] == length[last]]
    if "{y}" in ending and not others:
        ending = "{x}.sum()"
    y = rng.choice(others) if others else last
    lines.append("out = " + ending.format(x=last, y=y))
    return lines


def _run(lines: list[str]) -> dict[str, Any]:
    ns: dict[str, Any] = {"torch": torch}
    exec(compile("\n".join(lines), "<unit 07 program>", "exec"), ns)
    ns.pop("__builtins__", None)
    return ns


def _tensors(ns: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {k: v for k, v in ns.items() if isinstance(v, torch.Tensor)}


def saves_drawing(ns: dict[str, Any], when: str = "before the write") -> str:
    """The graph under out, then each tensor a node kept and the program's names that share its memory."""
    tensors = _tensors(ns)
    lines = [probes.text_tree(ns["out"], names=tensors, saved=True), f"what each node kept ({when}):"]
    by_storage: dict[int, list[str]] = {}
    for name, t in tensors.items():
        by_storage.setdefault(t.untyped_storage().data_ptr(), []).append(name)
    kept = False
    for fn in probes.nodes(ns["out"]):
        for attr, value in probes.saved_attributes(fn).items():
            if isinstance(value, torch.Tensor):
                kept = True
                sharing = by_storage.get(value.untyped_storage().data_ptr(), [])
                lines.append(f"  {probes.node_name(fn)}.{attr}: shape {tuple(value.shape)}, version "
                             f"{value._version}, memory shared with "
                             f"{', '.join(sharing) if sharing else 'no named tensor'}")
    if not kept:
        lines.append("  nothing")
    return "\n".join(lines)


class WriteProgram:
    """What predict_inplace reads: the program's text and its tensors just before the write.

    * ``source``: the whole program, the write and ``out.backward()`` included;
    * ``write``: the one in-place line, e.g. ``"t2.add_(1)"``;
    * ``target``: the name of the tensor it writes into (through a view, for ``t2[0] = 0.5``);
    * ``ns``: a dict, name -> tensor, built up to just before the write (``ns["out"]`` has its graph).
    """

    def __init__(self, source: str, write: str, target: str, ns: dict[str, torch.Tensor]):
        self.source, self.write, self.target, self.ns = source, write, target, ns

    def __repr__(self):
        return f"<program writing {self.target}: {self.write!r}>\n{self.source}"


def write_program(forward: str, write: str, target: str) -> WriteProgram:
    """A program as predict_inplace receives it, from a forward pass written out by hand (ending in out)."""
    lines = [line for line in forward.strip().splitlines() if line.strip()]
    with torch_state.clean_room():
        ns = _run(lines)
    source = "\n".join(lines + [write + "    # the write", "out.backward()"])
    return WriteProgram(source, write, target, _tensors(ns))


@dataclass(eq=False)
class WriteCase:
    """A forward pass ending in ``out``, then exactly one in-place write, then ``out.backward()``."""

    seed: int
    forward: list[str]
    write: str
    target: str
    output: str = "out"
    kinds: set = field(default_factory=set)

    @property
    def lines(self) -> list[str]:
        return self.forward + [self.write + "    # the write", "out.backward()"]

    @property
    def size(self) -> int:
        return len(self.lines)

    @property
    def source(self) -> str:
        return "\n".join(self.lines)

    @property
    def label(self) -> str:
        return f"program #{self.seed} ({self.size} lines)"

    def fresh(self) -> dict[str, Any]:
        """The namespace just before the write (running the forward pass never raises)."""
        with torch_state.clean_room():
            return _run(self.forward)

    def program(self, ns: dict[str, Any]) -> WriteProgram:
        return WriteProgram(self.source, self.write, self.target, _tensors(ns))

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        return saves_drawing(self.fresh())

    def __repr__(self):
        return f"<{self.label}>"


def write_outcome(case: WriteCase) -> tuple[str, frozenset]:
    """Torch's answer: run the write and backward; for an error at backward, the nodes whose saves are
    stale, read before backward from the check torch performs (probes.saved_tensors)."""
    ns = _run(case.forward)
    try:
        exec(case.write, ns)
    except RuntimeError:
        return "at the write", frozenset()
    stale = frozenset(s.node for s in probes.saved_tensors(ns["out"]) if s.stale)
    try:
        ns["out"].backward()
    except RuntimeError:
        if not stale:
            raise RuntimeError(f"{case.label}: backward raised but no saved tensor reads stale")
        return "at backward", stale
    if stale:
        raise RuntimeError(f"{case.label}: a saved tensor reads stale but backward ran")
    return "no error", frozenset()


def _kinds_by_name(ns: dict[str, Any]) -> dict[str, set[str]]:
    """For each tensor of a forward pass, what a write into it should show, read from the graph once.

    Used only to choose which writes to try; every chosen case is then run under torch for its answer.
    """
    under_out = probes.nodes(ns["out"])
    seen = set(under_out)
    kept_on_path = [v for fn in under_out for v in probes.saved_attributes(fn).values()
                    if isinstance(v, torch.Tensor)]
    kept_off_path = []
    for t in _tensors(ns).values():
        for fn in probes.nodes(t):
            if fn not in seen:
                seen.add(fn)
                kept_off_path += [v for v in probes.saved_attributes(fn).values() if isinstance(v, torch.Tensor)]
    out: dict[str, set[str]] = {}
    for name, t in _tensors(ns).items():
        if name == "out":
            continue
        storage = t.untyped_storage().data_ptr()
        base = t if t._base is None else t._base
        if t.requires_grad and base.is_leaf:
            out[name] = {"at the write"} | ({"view of a leaf"} if t is not base else set())
            continue
        hit = [v for v in kept_on_path if v.untyped_storage().data_ptr() == storage]
        if hit:
            out[name] = {"at backward"} | ({"offset alias"} if any(v.data_ptr() != t.data_ptr() for v in hit)
                                           else set())
            continue
        off = any(v.untyped_storage().data_ptr() == storage for v in kept_off_path)
        out[name] = {"no error"} | ({"saved off the path"} if off else set())
    return out


# how many cases of each kind: the plain places, and the three ways a quick reading goes wrong
_QUOTA = {"view of a leaf": 4, "offset alias": 4, "saved off the path": 4,
          "at the write": 6, "at backward": 10, "no error": 8}


@functools.cache
def _write_cases(seed: int = 7) -> tuple[WriteCase, ...]:
    """Cases filling _QUOTA, one per generated program, each filed under the rarest kind it shows."""
    rng = random.Random(seed)
    taken = {k: 0 for k in _QUOTA}
    found: list[WriteCase] = []
    with torch_state.clean_room():
        for attempt in range(1, 2000):
            if all(taken[k] >= n for k, n in _QUOTA.items()):
                break
            program_seed = seed * 10_007 + attempt
            forward = forward_lines(program_seed, ops=1 + attempt % 6)
            try:
                ns = _run(forward)
                if ns["out"].grad_fn is None:
                    continue
                kinds_of = _kinds_by_name(ns)
            except Exception:
                continue
            needed = [k for k in _QUOTA if taken[k] < _QUOTA[k]]
            names = sorted(kinds_of, key=lambda n: min((needed.index(k) for k in kinds_of[n] if k in needed),
                                                       default=len(needed)))
            if not names or not kinds_of[names[0]] & set(needed):
                continue
            best = [n for n in names if kinds_of[n] & set(needed) == kinds_of[names[0]] & set(needed)]
            name = rng.choice(best)
            case = WriteCase(program_seed, forward, rng.choice(WRITES).format(x=name), name)
            try:
                place, _ = write_outcome(case)
            except Exception:
                continue
            kinds = kinds_of[name] if place in kinds_of[name] else {place}
            need = [k for k in needed if k in kinds]
            if need:
                taken[need[0]] += 1
                case.kinds = kinds
                found.append(case)
    found.sort(key=lambda c: (c.size, c.seed))
    return tuple(found)


def _call_predict(fn, case: WriteCase, ns: dict[str, Any]):
    program = case.program(ns)
    before = {name: t._version for name, t in program.ns.items()}
    value = fn(program)
    moved = [f"{name} went from version {v} to {program.ns[name]._version}"
             for name, v in before.items() if name in program.ns and program.ns[name]._version != v]
    if moved:
        raise ValueError("your function wrote into the program's tensors (" + "; ".join(moved) + "): predict by "
                         "reading the graph and the saved tensors, without running the write")
    return value


@exercise(
    "07.predict-inplace",
    Function(returns=WriteVerdict(), cases=_write_cases, call=_call_predict,
             convert=lambda raw, case, ns: raw),
    prompt="Write predict_inplace(program): program.ns holds the tensors of a forward pass just before one "
           "in-place write (program.write, into program.target); after it the program calls out.backward(). "
           "Without running the write, return 'no error', 'at the write', or ('at backward', {names of the "
           "nodes whose saved tensors the write makes stale}). It is checked on generated programs.",
    explain="A write on a leaf that requires grad (or on a view of one) is refused on the spot. Any other write "
            "moves one counter, shared by every view and detach() of the same memory; backward fails exactly "
            "when a node on out's graph kept a tensor over that memory, and that node, not the one the "
            "message names, is where the saved value broke.",
    hints=("Two rules decide it: one about the tensor written (is it, or its base, a leaf that requires "
           "grad?), one about what the nodes on out's graph kept.",
           "A view and detach() share memory with the tensor they came from: compare "
           "untyped_storage().data_ptr() of the written tensor with that of every tensor a node kept "
           "(its _saved_* attributes), walking from out.grad_fn through next_functions.",
           "Name the node that kept the tensor, not the one the message would name: the message describes the "
           "written tensor by its latest history."),
)
def predict_inplace(case):
    return write_outcome(case)


# =====================================================================================================
# Exercise 2: a pack/unpack pair that does the version check torch skips under hooks.
# =====================================================================================================

GUARD_LABELS = ("raised at backward", "no error", "no error, wrong gradients", "raised before backward",
                "freed without backward", "kept alive after del")


@dataclass(eq=False)
class GuardCase:
    """A forward pass, at most one later in-place write, then out.backward(); run under the learner's hooks."""

    seed: int
    forward: list[str]
    write: str | None
    output: str = "out"
    dropped: bool = False       # no backward: every name is deleted; are the tensors freed?

    @property
    def lines(self) -> list[str]:
        if self.dropped:
            names = ", ".join(n for n in _assigned(self.forward) if n not in self.leaf_names)
            return self.forward + [f"del {names}    # no backward: is their memory freed (gc.collect())?"]
        return self.forward + ([self.write + "    # the write"] if self.write else []) + ["out.backward()"]

    @property
    def leaf_names(self) -> list[str]:
        return [line.split("=")[0].strip() for line in self.forward if "requires_grad=True" in line]

    @property
    def size(self) -> int:
        return len(self.lines)

    @property
    def source(self) -> str:
        return "\n".join(self.lines)

    @property
    def label(self) -> str:
        return f"program #{self.seed} ({self.size} lines)"

    def fresh(self) -> dict[str, Any]:
        with torch_state.clean_room():
            return _run(self.forward)

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        return saves_drawing(self.fresh(), "before the write" if self.write else "after the forward pass")

    def leaves(self, ns: dict[str, Any]) -> list[str]:
        """Names of the leaves that receive a gradient."""
        return [n for n, t in _tensors(ns).items() if t.is_leaf and t.requires_grad]

    def __repr__(self):
        return f"<{self.label}>"


def _assigned(lines: list[str]) -> list[str]:
    return [line.split("=")[0].strip() for line in lines if "=" in line and not line.startswith(" ")]


def _dropped_alive(ns: dict[str, Any], case: GuardCase) -> bool:
    """Delete every name but the leaves; is any tensor the forward pass made still alive after gc.collect()?"""
    refs = [weakref.ref(ns[n]) for n in _assigned(case.forward)
            if n not in case.leaf_names and isinstance(ns.get(n), torch.Tensor)]
    for n in list(ns):
        if n not in case.leaf_names:
            del ns[n]
    gc.collect()
    return any(r() is not None for r in refs)


def guard_outcome(case: GuardCase) -> str:
    """Torch's own check, without hooks: does backward refuse this program? (For a dropped case: is every
    tensor freed?)"""
    ns = _run(case.forward)
    if case.dropped:
        return "kept alive after del" if _dropped_alive(ns, case) else "freed without backward"
    if case.write:
        exec(case.write, ns)
    try:
        ns["out"].backward()
    except RuntimeError:
        return "raised at backward"
    return "no error"


def _call_guard(pair, case: GuardCase, ns: dict[str, Any]) -> str:
    pack, unpack = pair
    if case.dropped:
        run_ns: dict[str, Any] = {"torch": torch}
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            try:
                exec(compile("\n".join(case.forward), "<unit 07 program>", "exec"), run_ns)
            except NotImplementedError:
                raise
            except Exception:
                return "raised before backward"
        return "kept alive after del" if _dropped_alive(run_ns, case) else "freed without backward"
    reference = None
    if guard_outcome_cached(case) == "no error":
        reference_ns = _run(case.forward)
        if case.write:
            exec(case.write, reference_ns)
        reference_ns["out"].backward()
        reference = {n: reference_ns[n].grad for n in case.leaves(reference_ns)}
    run_ns: dict[str, Any] = {"torch": torch}
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        try:
            exec(compile("\n".join(case.forward + ([case.write] if case.write else [])),
                         "<unit 07 program>", "exec"), run_ns)
        except NotImplementedError:
            raise
        except Exception:
            return "raised before backward"
        try:
            run_ns["out"].backward()
        except NotImplementedError:
            raise
        except Exception:
            return "raised at backward"
    if reference is None:
        return "no error"
    for name, grad in reference.items():
        mine = run_ns[name].grad
        if grad is None and mine is None:
            continue
        if grad is None or mine is None or mine.shape != grad.shape or not torch.allclose(mine, grad, atol=1e-6):
            return "no error, wrong gradients"
    return "no error"


@functools.cache
def guard_outcome_cached(case: GuardCase) -> str:
    with torch_state.clean_room():
        return guard_outcome(case)


_HANDMADE_GUARD = (
    GuardCase(1, ["p = torch.ones(3, requires_grad=True)", "out = p.exp().sum()"], None),
    GuardCase(2, ["p = torch.ones(3, requires_grad=True)", "q = p.exp()", "out = q.sum()"], "q.add_(1)"),
    GuardCase(3, ["x = torch.ones(3, requires_grad=True)", "y = x * 2", "out = y.sum()"], "y.add_(1)"),
    GuardCase(4, ["p = torch.ones(3, requires_grad=True)", "q = p.exp()", "out = q.sum()"], None, dropped=True),
)


def _saved_at_nonzero_version(case: GuardCase) -> bool:
    with torch_state.clean_room():
        ns = _run(case.forward)
        return any(s.version_saved for s in probes.saved_tensors(ns["out"]))


@functools.cache
def _guard_cases(count: int = 24, seed: int = 77) -> tuple[GuardCase, ...]:
    rng = random.Random(seed)
    found: list[GuardCase] = list(_HANDMADE_GUARD)
    wanted = ("raised at backward", "no error", "saved after a write", "raised at backward")
    attempt = 0
    with torch_state.clean_room():
        while len(found) < count and attempt < count * 40:
            want = wanted[len(found) % len(wanted)]
            attempt += 1
            program_seed = seed * 10_007 + attempt
            forward = forward_lines(program_seed, ops=1 + attempt % 6, early_write=want == "saved after a write")
            try:
                ns = _run(forward)
            except Exception:
                continue
            if ns["out"].grad_fn is None:
                continue
            if want == "saved after a write":
                case = GuardCase(program_seed, forward, None)
                try:
                    if guard_outcome(case) == "no error" and _saved_at_nonzero_version(case):
                        found.append(case)
                except Exception:
                    pass
                continue
            names = [n for n in _tensors(ns) if n != "out"]
            options = [(n, w) for n in names for w in WRITES]
            rng.shuffle(options)
            for name, template in options[:12]:
                case = GuardCase(program_seed, forward, template.format(x=name))
                try:
                    if write_outcome(WriteCase(program_seed, forward, case.write, name))[0] == "at the write":
                        continue
                    if guard_outcome(case) == want:
                        found.append(case)
                        break
                except Exception:
                    continue
    found.sort(key=lambda c: (c.size, c.seed))
    return tuple(found)


@exercise(
    "07.version-guard",
    FunctionPair(returns=Choice(*GUARD_LABELS), cases=_guard_cases, call=_call_guard),
    prompt="Write pack(t) and unpack(packed) for torch.autograd.graph.saved_tensors_hooks that do the check "
           "torch skips under hooks: unpack raises when the saved tensor was written in place after it was "
           "packed, and otherwise gives back the tensor. Pass the pair: check('07.version-guard', (pack, unpack)). "
           "It is run on generated programs: silent with the right gradients where torch's own check passes, "
           "raising at backward where it fails.",
    explain="Torch's check is one integer taken at save time and compared at use: pack keeps t.detach() with t's "
            "_version, unpack compares. detach() shares the counter, so the check still fires; keeping t itself "
            "would tie an op's output to its own node in a cycle that only backward breaks. The version at save "
            "need not be 0, and a copy taken at pack would never see the write at all.",
    hints=("torch's own check compares two integers: the version when the tensor was kept, and its version "
           "when it is read. Where can each be taken?",
           "pack runs when the forward pass keeps the tensor, unpack when backward reads it: pack stores the tensor "
           "with t._version, unpack compares it with the tensor's _version now.",
           "Store t.detach(), not t: the saved-tensor hooks documentation warns that keeping the input tensor "
           "itself makes a reference cycle. detach() shares t's memory and its version counter."),
)
def version_guard(case):
    return guard_outcome(case)
