"""Unit 07, version counters and in-place writes: which writes autograd catches, where, and when it cannot.

The programs the experiments run (the GAN round, the small blocks) live in :mod:`grader.units.unit07.support`;
the exercises' generated programs, and how a learner's function is run on them, in
:mod:`grader.units.unit07.cases`; the answer kind of ``07.predict-inplace`` in :mod:`grader.units.unit07.kinds`.
"""

from __future__ import annotations

import re

import torch
from torch import nn

from grader import probes
from grader.engine.kinds import Choice, Error, Function, FunctionPair, Name, Names, Number
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.causes import FREED, LEAF_WRITE, NO_GRAD_FN, STALE, WRITE_SEEN
from grader.units.unit07.cases import (
    call_predict,
    call_version_guard,
    guard_outcome,
    version_guard_cases,
    write_cases,
    write_outcome,
)
from grader.units.unit07.kinds import WriteVerdict
from grader.units.unit07.support import consumer, gan_models, inplace_block, keep_saved, keeper_program

# --- 1. the counter -----------------------------------------------------------------------


@predict_then_run(
    "07.version-count",
    Number(tol=0),
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
    "07.mul-add-node",
    Name(),
    prompt="x = torch.ones(3, requires_grad=True); y = x * 2; y.add_(1). What is the class name of "
    "y.grad_fn after the write?",
    explain="An in-place operation on a tensor that requires grad is recorded like any other: y's history "
    "now ends in the addition, whose input is the old MulBackward0.",
    misconceptions=[
        (
            "MulBackward0",
            "the write is recorded like any operation: y's grad_fn becomes the "
            "in-place addition's node, and MulBackward0 is now its input",
        )
    ],
)
def mul_add_node():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    y.add_(1)
    return probes.node_name(y.grad_fn)


# --- 3. the same write after exp -------------------------------------------------------------


@predict_then_run(
    "07.exp-add",
    Error("at the write", "at backward", causes=WRITE_SEEN),
    prompt=(
        "a = torch.ones(3, requires_grad=True); b = a.exp(); b.add_(1); b.sum().backward(). Does it raise, "
        "and where? For an error, answer a pair (place, cause), the cause chosen from the candidates listed "
        "with the answer's form; your own words may follow as a third item, a note shown beside torch's "
        "message and never graded."
    ),
    explain="exp's backward is grad * exp(a), and it kept its own output b for that. The write moved b's "
    "counter from 0 to 1, and backward refuses a saved tensor whose version moved since it was saved.",
    misconceptions=[
        (
            "no error",
            "exp's backward rule multiplies by exp(a), and exp kept its own output b for it: the write "
            "changed the very tensor it kept",
        ),
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


@predict_then_run(
    "07.consumer-add",
    Error("at the write", "at backward"),
    prompt="w = torch.tensor([2.0], requires_grad=True); u = w * 3; v = u + 1; u.add_(10); "
    "v.sum().backward(). Does it raise, and where?",
    explain="The derivative of u + 1 is 1 whatever u was, so AddBackward0 saved nothing of u; a write to u "
    "cannot spoil a value nobody kept. w.grad comes out 3.",
    misconceptions=[
        (
            "at backward",
            "the addition's slope is 1 whatever u was, so AddBackward0 kept no tensor "
            "of u; a write cannot spoil what nobody kept",
        )
    ],
)
def consumer_add():
    w, u, v = consumer("add")
    yield "at the write"
    u.add_(10)
    yield "at backward"
    v.sum().backward()


# the operation an in-place message may name, and the line of this program that made it
MESSAGE_OPS = {"Mul": "w * 3", "Add": "u.add_(10)", "Pow": "u ** 2", "Sum": "v.sum()"}


@predict_then_run(
    "07.consumer-pow-message",
    Choice(*MESSAGE_OPS.values()),
    prompt="The same, with v = u ** 2: w = torch.tensor([2.0], requires_grad=True); u = w * 3; v = u ** 2; "
    "u.add_(10); v.sum().backward() raises at backward, and its message says the modified tensor "
    "'is output 0 of' an operation. Which line made that operation: 'w * 3', 'u.add_(10)', 'u ** 2' or "
    "'v.sum()'?",
    explain="The message describes the tensor it found modified by what produced it now: after u.add_(10) that "
    "is the in-place addition ('output 0 of Add'), whichever node kept u and tripped over it.",
    misconceptions=[
        (
            "u ** 2",
            "the power is the node that kept u and trips over it, but the message does not name that node: "
            "it names what produced the modified tensor",
        ),
    ],
)
def consumer_pow_message():
    w, u, v = consumer("pow")
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
    "07.pow-broken-node",
    Name(pool=("AddBackward0", "MulBackward0", "PowBackward0", "AccumulateGrad")),
    prompt="In that program (u = w * 3; v = u ** 2; u.add_(10)), which node holds the saved tensor that the "
    "write made stale? Give its class name.",
    explain="The node that kept u is the consumer, the power. The message named Add because it describes "
    "the tensor by its current history, not the node that tripped over it.",
    misconceptions=[
        (
            "AddBackward0",
            "Add is what the message names: the modified tensor's latest history. The "
            "node that kept u, and so broke, is its consumer",
        )
    ],
)
def pow_broken_node():
    w, u, v = consumer("pow")
    u.add_(10)
    stale = [s.node for s in probes.saved_tensors(v) if s.stale]
    if len(stale) != 1:
        raise RuntimeError(f"expected exactly one stale saved tensor, torch shows {stale}")
    return stale[0]


# --- 5. leaves -----------------------------------------------------------------------------------


@predict_then_run(
    "07.leaf-write",
    Error("at the write", "at backward", causes=(STALE, LEAF_WRITE, NO_GRAD_FN)),
    prompt=(
        "w = torch.ones(3, requires_grad=True); w.add_(1); (w * 2).sum().backward(). Does it raise, and "
        "where? For an error, answer a pair (place, cause), the cause chosen from the candidates listed with "
        "the answer's form; your own words may follow as a third item, a note shown beside torch's message "
        "and never graded."
    ),
    explain="Recording a write gives the written tensor a new grad_fn. For a leaf that requires grad that "
    "would replace its AccumulateGrad node, the one place its gradient is collected, so torch refuses "
    "the write itself. Optimizers write under torch.no_grad(), where nothing is recorded (the counter "
    "still moves).",
    misconceptions=[
        (
            "at backward",
            "the refusal comes at the write itself: recording it would take the place of "
            "the leaf's AccumulateGrad node, so it is never allowed to happen",
        )
    ],
)
def leaf_write():
    w = torch.ones(3, requires_grad=True)
    yield "at the write"
    w.add_(1)
    yield "at backward"
    (w * 2).sum().backward()


# --- 6. trap: "I have no in-place ops" (an optimizer step between forward and backward) ----------


@predict_then_run(
    "07.gan-step",
    Error("at the step", "at backward", causes=WRITE_SEEN),
    prompt=(
        "torch.manual_seed(0); G = nn.Linear(2, 2); D = nn.Linear(2, 1); opt_D = "
        "torch.optim.SGD(D.parameters(), lr=0.1); fake = G(torch.randn(4, 2)); d_loss = "
        "D(fake.detach()).mean(); g_loss = -D(fake).mean(); then opt_D.zero_grad(); d_loss.backward(); "
        "opt_D.step(); g_loss.backward(). Does it raise, and where? For an error, answer a pair (place, "
        "cause), the cause chosen from the candidates listed with the answer's form; your own words may "
        "follow as a third item, a note shown beside torch's message and never graded."
    ),
    explain="g_loss's graph saved D.weight (to send a gradient back to fake), and opt_D.step() wrote D.weight "
    "in place. There is no in-place call in the program text, but the optimizer's update is one.",
    misconceptions=[
        (
            "no error",
            "opt_D.step() writes D.weight in place (under no_grad, but the counter still "
            "moves), and g_loss's graph kept D.weight to send a gradient back to fake",
        )
    ],
)
def gan_step():
    G, D, opt_D, d_loss, g_loss = gan_models()
    opt_D.zero_grad()
    d_loss.backward()
    yield "at the step"
    opt_D.step()
    yield "at backward"
    g_loss.backward()


# --- 7. trap: ReLU(inplace=True) blamed for a += ------------------------------------------------


@predict_then_run(
    "07.relu-inplace-off",
    Error("at the write", "at backward"),
    prompt="torch.manual_seed(0); fc1, fc2 = nn.Linear(3, 3), nn.Linear(3, 1); h = nn.ReLU(inplace=False)"
    "(fc1(torch.randn(2, 3))); h += 0.5; fc2(h).sum().backward(). With inplace=True this raised at "
    "backward, the message pointing at the ReLU's output. With inplace=False, does it still raise, "
    "and where?",
    explain="ReLU keeps its output to know where the gradient passes, inplace or not. The += wrote that output "
    "after it was saved: the culprit is the +=, and h = h + 0.5 fixes it with inplace=True kept.",
    misconceptions=[
        ("no error", "ReLU keeps its output whether inplace or not, and h is that output: the += writes it either way")
    ],
)
def relu_inplace_off():
    fc1, fc2, h = inplace_block(False)
    yield "at the write"
    h += 0.5
    yield "at backward"
    fc2(h).sum().backward()


# --- 8. trap: sigmoid versus a hand-written one ------------------------------------------------


@predict_then_run(
    "07.reciprocal-write",
    Error("at the write", "at backward", causes=WRITE_SEEN),
    prompt=(
        "a = torch.tensor([0.5, -1.0], requires_grad=True); s = (1 + torch.exp(-a)).reciprocal(); s.mul_(2); "
        "s.sum().backward(). (Written s = 1 / (1 + torch.exp(-a)), the same lines run without an error.) Does it "
        "raise, and where? For an error, answer a pair (place, cause), the cause chosen from the candidates listed "
        "with the answer's form; your own words may follow as a third item, a note shown beside torch's message "
        "and never graded."
    ),
    explain="reciprocal's backward reads its own result (the slope of 1/t is -1/t^2), so ReciprocalBackward0 keeps "
    "it, and with .reciprocal() that result is s itself: the write moves s to version 1 and backward refuses "
    "it. Written 1 / t, the division is recorded as a reciprocal and then a multiplication by the constant 1: "
    "s is the product's output, and the reciprocal's kept result is another tensor.",
    misconceptions=[
        (
            "no error",
            "1 / t records a reciprocal and then a product, and the product's output is s; .reciprocal() makes s "
            "the reciprocal's own result, which its node keeps",
        )
    ],
)
def reciprocal_write():
    a = torch.tensor([0.5, -1.0], requires_grad=True)
    s = (1 + torch.exp(-a)).reciprocal()
    yield "at the write"
    s.mul_(2)
    yield "at backward"
    s.sum().backward()


# --- 9. when nothing checks: .data and saved-tensor hooks ---------------------------------------


@predict_then_run(
    "07.data-write",
    Number(),
    prompt="a = torch.tensor([1.0, 2.0], requires_grad=True); e = a.exp(); e.data.mul_(2); "
    "e.sum().backward(). What are e._version and a.grad[0]? Answer [version, grad] (4 decimals).",
    explain="e.data is a second tensor over the same memory with a counter of its own, so the write changes "
    "what exp saved without moving e's counter. Backward finds version 0 as saved, trusts the doubled "
    "value and returns 2e instead of e: no error, a wrong number.",
    misconceptions=[
        (
            lambda truth: [truth[0] + 1, truth[1]],
            "e.data has a counter of its own: the write through it leaves e._version where it was",
        ),
    ],
)
def data_write():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    e = a.exp()
    e.data.mul_(2)
    version = e._version
    e.sum().backward()
    return [version, a.grad[0].item()]


@predict_then_run(
    "07.hooks-grad",
    Number(),
    prompt="p = torch.ones(3, requires_grad=True); def keep(t): return t. Under "
    "torch.autograd.graph.saved_tensors_hooks(keep, keep): q = p.exp(); q.add_(1); q.sum().backward(). "
    "What is p.grad[0]? And what is it for the same program without the q.add_(1)? Answer "
    "[with the write, without] (4 decimals).",
    explain="With hooks installed, torch cannot know what pack returned, so it skips the version check. "
    "Backward multiplies by the written value exp(1) + 1 instead of exp(1): no error, a wrong gradient.",
    misconceptions=[
        (
            lambda truth: [truth[1], truth[1]],
            "the hooks hand back the tensor itself, written by q.add_(1), and nothing compares versions under hooks",
        )
    ],
)
def hooks_grad():
    grads = []
    for write in (True, False):
        p = torch.ones(3, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(keep_saved, keep_saved):
            q = p.exp()
            if write:
                q.add_(1)
            q.sum().backward()
        grads.append(p.grad[0].item())
    return grads


# --- self-test -----------------------------------------------------------------------------------


@self_test(
    "07.self-alias-or-copy",
    Number(tol=0),
    prompt="b = torch.zeros(4); c = b.clone(); v = b[::2]; r = b.reshape(2, 2); c.add_(1); v.add_(1); "
    "r.mul_(2). What are b._version and c._version? Answer [b's, c's].",
    explain="A view shares its base's counter; a copy has its own. b[::2] is a view, and so is reshape of a "
    "contiguous tensor (it only reinterprets the same memory), so both writes move b's counter to 2. "
    "clone() copies the memory into a new storage with a counter of its own: c.add_(1) moves only c's.",
    hints=(
        "For each of c, v and r: does it share b's memory, or own a copy?",
        "reshape returns a view whenever the memory allows it, as it does for a contiguous b; clone never does.",
    ),
    misconceptions=[
        (
            lambda truth: [truth[0] - 1, truth[1]],
            "reshape of a contiguous tensor is a view, not a copy: r.mul_(2) is a write into b's "
            "memory, and it moves b's counter",
        ),
        (
            lambda truth: [truth[0] + 1, truth[1]],
            "clone() copies into a new storage with its own counter: a write into c is not a write into b",
        ),
    ],
)
def self_alias_or_copy():
    b = torch.zeros(4)
    c = b.clone()
    v = b[::2]
    r = b.reshape(2, 2)
    c.add_(1)
    v.add_(1)
    r.mul_(2)
    return [b._version, c._version]


KEEPER_NAMES = ("a", "t", "c", "y")


@self_test(
    "07.self-mul-constant",
    Names(pool=KEEPER_NAMES),
    prompt="a = torch.tensor([0.5, 1.0], requires_grad=True); c = torch.tensor([2.0, 3.0]); t = a.sin(); "
    "y = t * c. On a fresh build for each name, one write x.add_(1) under torch.no_grad() (so even the "
    "leaf a may be written), then y.sum().backward(). For which of a, t, c, y does backward raise? "
    "Answer a set of names.",
    explain="Each node keeps what its backward rule reads. sin keeps its input a (its slope is cos a). The "
    "product needs the other operand for each gradient it must produce; only t needs one, and its "
    "gradient is c, so MulBackward0 kept c and not t. Nothing kept y. Writing a or c breaks a kept "
    "tensor; writing t or y breaks nothing.",
    hints=(
        "For each node, ask what its backward rule reads: that is what it kept.",
        "The slope of sin(a) is cos(a). In t * c only t needs a gradient, and that gradient is c times the "
        "incoming one: which operand does MulBackward0 need, and which does it not?",
    ),
    misconceptions=[
        (
            lambda truth: set(truth) | {"t"},
            "MulBackward0 kept c, the slope for t, and not t itself: c needs no gradient, so t's value is never read",
        ),
        (
            lambda truth: set(truth) - {"a"},
            "SinBackward0 kept a, its input, to compute cos(a); under no_grad the "
            "write to the leaf is allowed and still moves a's counter",
        ),
    ],
)
def self_mul_constant():
    broken = set()
    for name in KEEPER_NAMES:
        ns = keeper_program()
        with torch.no_grad():
            ns[name].add_(1)
        try:
            ns["y"].sum().backward()
        except RuntimeError:
            broken.add(name)
    return broken


STALE_KEEPERS = ("ExpBackward0", "the in-place ReLU's node", "both", "neither: backward runs")


@self_test(
    "07.self-inplace-after-exp",
    Choice(*STALE_KEEPERS),
    prompt="x = torch.tensor([-3.0, 1.5], requires_grad=True); h = x.exp(); h.relu_(); h.sum().backward(). "
    "Both exp's node and the in-place ReLU's node keep h, their output. Whose kept h no longer matches "
    "its version when backward reads it? One of " + ", ".join(repr(k) for k in STALE_KEEPERS) + ".",
    explain="exp kept its output h at version 0. relu_ then wrote h (version 1) and kept its own result "
    "after that write, at version 1, so its own write never trips its own check. But it does trip "
    "exp's: the h that ExpBackward0 kept is now at version 1, and backward refuses.",
    hints=(
        "Which node kept h first, and at which version? Which write came after that?",
        "An in-place op keeps its result after writing it; what about a node that kept the same tensor earlier?",
    ),
    misconceptions=[
        (
            STALE_KEEPERS[3],
            "relu_'s own write is safe for relu_, which keeps its result after writing; but exp "
            "kept h before that write, and its kept h is now stale",
        ),
        (
            STALE_KEEPERS[1],
            "relu_ keeps its result after writing it, at the version its own write made; it is exp's "
            "kept h, saved before the write, that no longer matches",
        ),
    ],
)
def self_inplace_after_exp():
    x = torch.tensor([-3.0, 1.5], requires_grad=True)
    h = x.exp()
    h.relu_()
    stale = {s.node for s in probes.saved_tensors(h) if s.state == "stale"}
    exp_stale, relu_stale = "ExpBackward0" in stale, any(n.startswith(("Relu", "Threshold")) for n in stale)
    try:
        h.sum().backward()
        ran = True
    except RuntimeError:
        ran = False
    if ran == (exp_stale or relu_stale):
        raise RuntimeError(f"backward {'ran' if ran else 'raised'} but the stale kept tensors are {sorted(stale)}")
    return {(True, False): STALE_KEEPERS[0], (False, True): STALE_KEEPERS[1], (True, True): STALE_KEEPERS[2]}.get(
        (exp_stale, relu_stale), STALE_KEEPERS[3]
    )


@self_test(
    "07.self-detach-write",
    Error("at the write", "at backward", causes=(FREED, STALE, NO_GRAD_FN)),
    prompt=(
        "a = torch.tensor([1.0, 2.0], requires_grad=True); e = a.exp(); e.detach().add_(1); "
        "e.sum().backward(). Does it raise, and where? For an error, answer a pair (place, cause), the cause "
        "chosen from the candidates listed with the answer's form; your own words may follow as a third item,"
        " a note shown beside torch's message and never graded."
    ),
    explain="detach() cuts the history but shares both the memory and the version counter, so the write is "
    "seen. (.data shares the memory only, which is why it goes unseen.)",
    hints=(
        "What does detach() share with e, and what does it cut?",
        "A detached alias shares e's memory and e's version counter; exp kept e, its own output.",
    ),
    misconceptions=[
        (
            "no error",
            "detach() cuts the history, not the counter: the write through it moves e's version, and exp kept e",
        )
    ],
)
def self_detach_write():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    e = a.exp()
    yield "at the write"
    e.detach().add_(1)
    yield "at backward"
    e.sum().backward()


@self_test(
    "07.self-which-node",
    Name(pool=("MulBackward0", "SinBackward0", "AccumulateGrad", "AddBackward0")),
    prompt="w = torch.tensor([2.0], requires_grad=True); u = w * 3; s = u.sin(); u.mul_(2); s.sum().backward() "
    "raises at backward, its message naming u by its latest operation, the in-place multiplication. "
    "Which node's saved tensor broke? Give its class name.",
    explain="sin's derivative is cos(u), so SinBackward0 kept u; the write made that copy stale. Mul is only "
    "u's history after the write.",
    hints=(
        "The message names the written tensor's history, not the node that failed.",
        "Which node's backward rule reads u's value? That node kept u.",
    ),
    misconceptions=[
        ("MulBackward0", "Mul is u's latest history, which the message names; the node that kept u is its consumer")
    ],
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
    "07.self-param-version",
    Number(tol=0),
    prompt="torch.manual_seed(0); D = nn.Linear(2, 1); opt = torch.optim.SGD(D.parameters(), lr=0.1); "
    "D(torch.ones(1, 2)).sum().backward(); opt.step(). What is D.weight._version right after "
    "nn.Linear(2, 1), and after the step? Answer [after construction, after the step].",
    explain="Initialisation fills the weight in place (under no_grad), so a fresh layer is already at version "
    "1; each optimizer step is one more write.",
    hints=(
        "Which of these lines write into D.weight's memory? Backward writes only .grad.",
        "A layer's weights are filled in place by its initialiser, and an optimizer step updates them in "
        "place: each is one write.",
    ),
    misconceptions=[
        (
            lambda truth: [0, truth[1] - 1],
            "a fresh layer is not at version 0: its initialiser fills the weight in place",
        )
    ],
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


@exercise(
    "07.predict-inplace",
    Function(returns=WriteVerdict(), cases=write_cases, call=call_predict, convert=lambda raw, case, ns: raw),
    prompt="Write predict_inplace(program): program.ns holds the tensors of a forward pass just before one "
    "in-place write (program.write, into program.target); after it the program calls out.backward(). "
    "Without running the write, return 'no error', 'at the write', or ('at backward', {names of the "
    "nodes whose saved tensors the write makes stale}). It is checked on generated programs.",
    explain="A write on a leaf that requires grad (or on a view of one) is refused on the spot. Any other write "
    "moves one counter, shared by every view and detach() of the same memory; backward fails exactly "
    "when a node on out's graph kept a tensor over that memory, and that node, not the one the "
    "message names, is where the saved value broke.",
    hints=(
        "Two rules decide it: one about the tensor written (is it, or its base, a leaf that requires "
        "grad?), one about what the nodes on out's graph kept.",
        "A view and detach() share memory with the tensor they came from: compare "
        "untyped_storage().data_ptr() of the written tensor with that of every tensor a node kept "
        "(its _saved_* attributes), walking from out.grad_fn through next_functions.",
        "Name the node that kept the tensor, not the one the message would name: the message describes the "
        "written tensor by its latest history.",
    ),
)
def predict_inplace(case):
    return write_outcome(case)


# =====================================================================================================
# Exercise 2: a pack/unpack pair that does the version check torch skips under hooks.
# =====================================================================================================

GUARD_LABELS = (
    "raised at backward",
    "no error",
    "no error, wrong gradients",
    "raised before backward",
    "freed without backward",
    "kept alive after del",
)


@exercise(
    "07.version-guard",
    FunctionPair(returns=Choice(*GUARD_LABELS), cases=version_guard_cases, call=call_version_guard),
    prompt="Write pack(t) and unpack(packed) for torch.autograd.graph.saved_tensors_hooks that do the check "
    "torch skips under hooks: unpack raises when the saved tensor was written in place after it was "
    "packed, and otherwise gives back the tensor. Pass the pair: check('07.version-guard', (pack, unpack)). "
    "It is run on generated programs: silent with the right gradients where torch's own check passes, "
    "raising at backward where it fails.",
    explain="Torch's check is one integer taken at save time and compared at use: pack keeps t.detach() with t's "
    "_version, unpack compares. detach() shares the counter, so the check still fires; keeping t itself "
    "would tie an op's output to its own node in a cycle that only backward breaks. The version at save "
    "need not be 0, and a copy taken at pack would never see the write at all.",
    hints=(
        "torch's own check compares two integers: the version when the tensor was kept, and its version "
        "when it is read. Where can each be taken?",
        "pack runs when the forward pass keeps the tensor, unpack when backward reads it: pack stores the tensor "
        "with t._version, unpack compares it with the tensor's _version now.",
        "Store t.detach(), not t: the saved-tensor hooks documentation warns that keeping the input tensor "
        "itself makes a reference cycle. detach() shares t's memory and its version counter.",
    ),
)
def version_guard(case):
    return guard_outcome(case)
