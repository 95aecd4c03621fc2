"""Unit 07, version counters and in-place writes: which writes autograd catches, where, and when it cannot.

The programs the experiments run (the GAN round, the small blocks) live in :mod:`grader.units.unit07.support`;
the exercises' generated programs, and how a learner's function is run on them, in
:mod:`grader.units.unit07.cases`; the answer kind of ``07.predict-inplace`` in :mod:`grader.units.unit07.kinds`.
"""

from __future__ import annotations

import re

import torch

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
from grader.units.unit07.generators import (
    STALE_KEEPERS,
    alias_program,
    detach_program,
    keepers_program,
    param_program,
    stale_program,
    which_node_program,
)
from grader.units.unit07.kinds import WriteVerdict
from grader.units.unit07.support import consumer, gan_models, inplace_block, keep_saved

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
    "is the in-place addition ('output 0 of Add'), whichever node it was that tripped over it.",
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


def _reshape_copy(truth, p):
    """The counters of a learner who takes reshape of a contiguous tensor for a copy."""
    writes = p.facts["reshape writes"]
    return [truth[0] - writes, truth[1] - (writes if p.facts["c view"] else 0)] if writes else None


@self_test(
    "07.self-alias-or-copy",
    Number(tol=0),
    program=alias_program,
    explain="A view shares its base's version counter; a copy has its own. Slicing, view, unsqueeze, detach() and "
    "reshape of a contiguous tensor (it only reinterprets the same memory) are views: every write through one "
    "moves b's counter, and the view reads that same counter. clone(), a cast and an arithmetic result copy into "
    "a new storage with a counter of their own.",
    hints=(
        "For each of c, v and r: does it share b's memory, or own a copy? Then count the writes into b's memory.",
        "reshape returns a view whenever the memory allows it, as it does for a contiguous b; clone never does. A "
        "view's _version is its base's.",
    ),
    misconceptions=[
        (
            _reshape_copy,
            "reshape of a contiguous tensor is a view, not a copy: a write through it is a write into b's memory, "
            "and it moves b's counter",
        ),
        (
            lambda truth, p: [truth[0] + p.facts["c writes"], truth[1]] if not p.facts["c view"] else None,
            "c is a copy in a new storage with its own counter: a write into c is not a write into b",
        ),
        (
            lambda truth, p: [truth[0] - p.facts["c writes"], p.facts["c writes"]] if p.facts["c view"] else None,
            "c is a view of b: it shares b's memory and b's version counter, so its writes move b's counter and "
            "c._version is b's",
        ),
    ],
)
def self_alias_or_copy(p):
    ns = p.run()
    return [ns["b"]._version, ns["c"]._version]


KEEPER_NAMES = ("a", "t", "c", "y")


@self_test(
    "07.self-mul-constant",
    Names(pool=KEEPER_NAMES),
    program=keepers_program,
    explain="Each node keeps what its backward rule reads, and a write into a kept tensor makes backward raise. "
    "sin and a power read their input a; exp, tanh and sigmoid read their own output t. A product keeps, for each "
    "factor that needs a gradient, the other factor; a quotient keeps its divisor (and its dividend too when the "
    "divisor needs a gradient); a sum keeps nothing, and nothing keeps y.",
    hints=(
        "For each node, ask what its backward rule reads: that is what it kept.",
        "The slope of sin(a) is cos(a), of exp(a) exp(a) itself. In t * c each factor's gradient is the other "
        "factor, needed only if that factor requires grad: which operands does the product need?",
    ),
    misconceptions=[
        (
            lambda truth, p: set(truth) | {"t"} if p.facts["product"] and "t" not in truth else None,
            "the product kept c, the slope for t, and not t itself: c needs no gradient, so t's value is never read",
        ),
        (
            lambda truth: set(truth) - {"a"} if "a" in truth else None,
            "the first node's slope reads its input, so it kept a; under no_grad the write to the leaf is allowed "
            "and still moves a's counter",
        ),
        (
            lambda truth, p: set(truth) - {"t"} if p.facts["keeps"] == "output" else None,
            "exp, tanh and sigmoid compute their slope from their own output: that node kept t",
        ),
        (
            lambda truth: set(truth) - {"c"} if "c" in truth else None,
            "t's gradient is the incoming one times c (or divided by c): the node kept c",
        ),
        (lambda truth: set(truth) | {"y"}, "nothing kept y: the sum's backward needs only its input's shape"),
    ],
)
def self_mul_constant(p):
    broken = set()
    for name in KEEPER_NAMES:
        ns = p.run()["build"]()
        with torch.no_grad():
            ns[name].add_(1)
        try:
            ns["y"].sum().backward()
        except RuntimeError:
            broken.add(name)
    return broken


@self_test(
    "07.self-inplace-after-exp",
    Choice(*STALE_KEEPERS),
    program=stale_program,
    explain="A node keeps a tensor at the version it had when it was saved. exp kept its output before any write; "
    "an in-place ReLU keeps its result after its own write, so its own write never trips its own check. A later "
    "write into the same memory trips every earlier keeper's check; a write into a clone trips none, and a node "
    "that kept another tensor (exp's output, before a copy made by * 2) is not touched.",
    hints=(
        "For each node that kept a tensor: which tensor, at which version? Which writes into that memory came after?",
        "An in-place op keeps its result after writing it; a node that kept the same memory earlier sees every "
        "later write.",
    ),
    misconceptions=[
        (
            lambda truth: STALE_KEEPERS[3] if truth != STALE_KEEPERS[3] else None,
            "a write after a node kept a tensor makes that kept tensor stale: relu_'s own write is safe for relu_, "
            "which keeps its result after writing, but not for a node that kept the same memory before",
        ),
        (
            lambda truth: STALE_KEEPERS[1] if truth == STALE_KEEPERS[0] else None,
            "relu_ keeps its result after writing it, at the version its own write made; it is exp's kept output, "
            "saved before the write, that no longer matches",
        ),
        (
            lambda truth: STALE_KEEPERS[0] if truth in (STALE_KEEPERS[2], STALE_KEEPERS[3]) else None,
            "look at every write after each keeper: a write after relu_ spoils relu_'s kept result too, and a write "
            "into a clone, or into the copy * 2 made, spoils nothing exp kept",
        ),
    ],
)
def self_inplace_after_exp(p):
    ns = p.run(until="backward")
    out = eval(p.facts["out"], ns)
    stale = {s.node for s in probes.saved_tensors(out) if s.state == "stale"}
    exp_stale, relu_stale = "ExpBackward0" in stale, any(n.startswith(("Relu", "Threshold")) for n in stale)
    try:
        out.sum().backward()
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
    program=detach_program,
    explain="detach() cuts the history but shares both the memory and the version counter, so a write through it "
    "is seen by every node that kept that memory; .data shares the memory only, so its write goes unseen (and "
    "backward silently reads the new values); clone() writes a copy. A tensor made by detach() has no grad_fn, "
    "so backward cannot start from it.",
    hints=(
        "What does the alias share with the tensor it came from: the memory, the version counter, the history?",
        "A detached alias shares e's memory and e's version counter; .data shares the memory only. Then ask which "
        "node kept which tensor (exp keeps its output, sin its input).",
    ),
    misconceptions=[
        (
            lambda truth, p: "no error" if truth.where != "no error" and p.facts["alias"] != "cut" else None,
            "detach() cuts the history, not the counter: the write through it moves the version of the memory a "
            "node kept",
        ),
        (
            lambda truth, p: "no error" if p.facts["alias"] == "cut" else None,
            "detach() cut e from a's history: e has no grad_fn and does not require grad, so backward from it has "
            "nothing to differentiate and refuses",
        ),
        (
            lambda truth, p: ("at backward", "stale") if p.facts["alias"] == "e.data" else None,
            ".data shares the memory but not the version counter: the write goes unseen, and backward runs on the "
            "changed values without a word",
        ),
    ],
)
def self_detach_write(p):
    yield from p.stepped()


@self_test(
    "07.self-which-node",
    Name(pool=("SinBackward0", "CosBackward0", "PowBackward0", "MulBackward0", "AddBackward0", "AccumulateGrad")),
    program=which_node_program,
    explain="The node whose kept tensor broke is the one that read u's value before the write: its backward rule "
    "needs u (sin, cos and a power read their input; a product reads the other factor). The in-place write is "
    "only u's latest history, which the message names.",
    hints=(
        "The message names the written tensor's history, not the node that failed.",
        "Which node's backward rule reads u's value? That node kept u.",
    ),
    misconceptions=[
        (
            lambda truth, p: p.facts["history"],
            "that is u's latest history, the in-place write, which the message names; the node that kept u is its "
            "consumer",
        )
    ],
)
def self_which_node(p):
    ns = p.run(until="backward")
    stale = {e.node for e in probes.saved_tensors(ns["s"]) if e.stale}
    if len(stale) != 1:
        raise RuntimeError(f"expected exactly one node with a stale saved tensor, torch shows {sorted(stale)}")
    return stale.pop()


@self_test(
    "07.self-param-version",
    Number(tol=0),
    program=param_program,
    explain="Initialisation fills a layer's parameters in place (under no_grad), so a fresh layer is already past "
    "version 0; each step of SGD or Adam writes them in place again, once (momentum, Adam's moments and a "
    "coupled weight decay live in the optimizer's state or its arithmetic), and a step of AdamW twice, its default "
    "weight decay being a write of its own (unit 07 counts other optimizers too). backward and zero_grad() write only .grad.",
    hints=(
        "Which of these lines write into the parameter's memory? backward and zero_grad() touch only .grad.",
        "A layer's parameters are filled in place by its initialiser, and an optimizer step updates them in place: "
        "count the writes, then read how many the step made.",
    ),
    misconceptions=[
        (
            lambda truth: [0, truth[1] - truth[0]],
            "a fresh layer is not at version 0: its initialiser fills the parameters in place",
        ),
        (
            lambda truth, p: [truth[0], truth[1] + p.facts["steps"]],
            "backward and zero_grad() write only .grad, never the parameter's own memory",
        ),
        (
            lambda truth, p: [truth[0], truth[0] + p.facts["steps"]] if p.facts["adamw"] else None,
            "AdamW writes the parameter twice per step: its weight decay (0.01 by default) shrinks it in place, then "
            "the update is written",
        ),
    ],
)
def self_param_version(p):
    ns = p.run()
    return [ns["first"], getattr(ns["D"], p.facts["param"])._version]


# =====================================================================================================
# Exercise 1: predict where a program with one in-place write fails, and which node's save broke.
# =====================================================================================================


@exercise(
    "07.predict-inplace",
    Function(returns=WriteVerdict(), cases=write_cases, call=call_predict, convert=lambda raw, case, ns: raw),
    prompt="Write predict_inplace(program): program.ns holds the tensors of a forward pass just before one "
    "in-place write (program.write, into program.target); after it the program calls out.backward(). "
    "Without running the write, return 'no error', 'at the write', or ('at backward', {names of the "
    "nodes whose saved tensors the write makes stale}). It is checked on generated programs, handed over "
    "already run (the graph under program.ns['out'], not the source), and every version must be as it was "
    "when your function returns.",
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
