"""Unit 08, carried state and truncated BPTT: what a loop that carries its state records, keeps and computes.

The unit's loop is ``hidden = hidden * w + 0.1``, ``loss = hidden ** 2``, one backward per step,
with ``w = 0.9`` and ``hidden`` starting at 1.0. Every figure (depths, gradients, bytes, node runs)
is measured here at check time; none is typed in.

The exercise hands the learner a :class:`~grader.units.unit08.support.Recurrence` (parameters, a first state,
inputs, a step and a per-step loss) and a window length ``k``; torch's answer is computed by
:func:`~grader.units.unit08.support.window_grads` (``autograd.grad`` of each loss through its window, the state
entering the window held constant). The loop, the Recurrence, the chunks and the windows live in
:mod:`grader.units.unit08.support`; the exercise's generated sequences in :mod:`grader.units.unit08.cases`.
"""

from __future__ import annotations

import textwrap

import torch

from grader import probes
from grader.engine.kinds import Choice, Error, Function, Number
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.causes import PASS_TWICE, WRITE_SEEN
from grader.units.unit08.cases import call_window, flatten_window_grads, window_cases
from grader.units.unit08.generators import (
    RETAIN_K1,
    WHICH_K,
    chunk_depth_program,
    detach_early_program,
    retain_k1_program,
    which_k_program,
)
from grader.units.unit08.support import (
    STEPS,
    Recurrence,
    carried_loop,
    first_w_grad,
    kept_bytes,
    mul_runs,
    the_loop,
    window_grads,
)

PLACES = tuple(f"at step {n}'s backward" for n in range(1, STEPS + 1))
LOOP = (
    "w = torch.tensor(0.9, requires_grad=True), hidden = torch.tensor(1.0), and each step "
    "hidden = hidden * w + 0.1; loss = hidden ** 2"
)
RETAINED = LOOP + "; loss.backward(retain_graph=True), nothing detached"
DETACHED = LOOP + "; loss.backward(); hidden = hidden.detach()"


# --- the error, and the retain_graph "fix" ------------------------------------------------


@predict_then_run(
    "08.second-backward",
    Error(*PLACES, causes=PASS_TWICE),
    prompt=(
        "w = torch.tensor(0.9, requires_grad=True); hidden = torch.tensor(1.0). Five times: hidden = hidden *"
        " w + 0.1; loss = hidden ** 2; loss.backward(). Nothing is detached and retain_graph is not passed. "
        "Where does it fail, if anywhere? For an error, answer a pair (place, cause), the cause chosen from "
        "the candidates listed with the answer's form; your own words may follow as a third item, a note "
        "shown beside torch's message and never graded."
    ),
    explain="Step 2's hidden was computed from step 1's, so step 2's graph runs back through step 1's "
    "nodes, whose saved values step 1's backward already freed.",
    misconceptions=[
        (
            "no error",
            "Each step builds a new loss, but not a new history: step 2's hidden was "
            "computed from step 1's, so its graph contains step 1's nodes.",
        )
    ],
)
def second_backward():
    w = torch.tensor(0.9, requires_grad=True)
    hidden = torch.tensor(1.0)
    for place in PLACES:
        hidden = hidden * w + 0.1
        loss = hidden**2
        yield place
        loss.backward()


@predict_then_run(
    "08.tanh-depths",
    Number(tol=0),
    prompt="The retained loop with another update: w = torch.tensor(0.9, requires_grad=True), hidden = "
    "torch.tensor(1.0), and at each of five steps hidden = torch.tanh(hidden * w) + 0.1; loss = hidden ** 2; "
    "loss.backward(retain_graph=True), nothing detached. probes.depth(loss) counts the nodes on the longest path "
    "from loss.grad_fn down to a leaf's AccumulateGrad. What is it at steps 1 to 5? Answer a list of five numbers.",
    explain="Nothing cuts hidden, so each step's loss sits on top of every earlier step: a power node, then per step "
    "the three operations of the update (an add, a tanh, a multiply), then w's AccumulateGrad. Three nodes more "
    "per step.",
    misconceptions=[
        (
            lambda truth: [truth[0]] * len(truth),
            "That is a graph that starts afresh each step. "
            "Nothing detaches hidden here, so every step's graph contains all the earlier ones.",
        ),
        (
            lambda truth: [truth[0] + 2 * i for i in range(len(truth))],
            "Two nodes a step was section 1's update, hidden * w + 0.1; this one records three operations a step: "
            "the multiply, the tanh and the add.",
        ),
    ],
)
def tanh_depths():
    depths = []
    w = torch.tensor(0.9, requires_grad=True)
    hidden = torch.tensor(1.0)
    for _ in range(STEPS):
        hidden = torch.tanh(hidden * w) + 0.1
        loss = hidden**2
        depths.append(probes.depth(loss))
        loss.backward(retain_graph=True)
    return depths


RETAIN_GRAD = (
    "exactly 5 times step 1's w.grad",
    "more than 5 times step 1's w.grad",
    "less than 5 times step 1's w.grad",
    "it raises at step 2",
)


@predict_then_run(
    "08.retain-grad",
    Choice(*RETAIN_GRAD),
    prompt=RETAINED + ". After step 1's backward, w.grad is 2.0 (section 1 printed it). After five steps, "
    "how does w.grad compare with 5 times that? One of " + ", ".join(repr(c) for c in RETAIN_GRAD) + ".",
    explain="Each backward differentiates that step's loss through the whole history back to step 1, and "
    "every earlier step adds one more route from w to the loss, so later steps contribute more than "
    "step 1 did; the five results add up in w.grad.",
    misconceptions=[
        (
            RETAIN_GRAD[0],
            "That would be true if every step's loss saw only its own step. With "
            "the history connected, step n's loss reaches w through n multiplications.",
        )
    ],
)
def retain_grad():
    first = carried_loop(1, retain=True).grad.item()
    total = carried_loop(retain=True).grad.item()
    if abs(total - 5 * first) < 1e-4:
        return RETAIN_GRAD[0]
    return RETAIN_GRAD[1] if total > 5 * first else RETAIN_GRAD[2]


SUM_OF_LOSSES = (
    "the same as the retained loop's w.grad",
    "larger than the retained loop's w.grad",
    "smaller than the retained loop's w.grad",
    "it raises at total.backward()",
)


@predict_then_run(
    "08.sum-of-losses",
    Choice(*SUM_OF_LOSSES),
    prompt="w = torch.tensor(0.9, requires_grad=True), hidden = torch.tensor(1.0), total = 0; five steps of "
    "hidden = hidden * w + 0.1; total = total + hidden ** 2, with no backward inside; then "
    "total.backward() once. How does w.grad compare with the retained loop's (one "
    "backward(retain_graph=True) per step)? One of " + ", ".join(repr(c) for c in SUM_OF_LOSSES) + ".",
    explain="Gradients are linear: differentiating each loss through its full history and adding is "
    "the gradient of the sum of the losses. One backward over one graph gives the same number.",
    misconceptions=[
        (
            SUM_OF_LOSSES[2],
            "One backward over the summed losses still follows every loss "
            "through its full history; nothing here is detached.",
        )
    ],
)
def sum_of_losses():
    w = torch.tensor(0.9, requires_grad=True)
    hidden, total = torch.tensor(1.0), 0
    for _ in range(STEPS):
        hidden = hidden * w + 0.1
        total = total + hidden**2
    total.backward()
    once, retained = w.grad.item(), carried_loop(retain=True).grad.item()
    if abs(once - retained) < 1e-4:
        return SUM_OF_LOSSES[0]
    return SUM_OF_LOSSES[1] if once > retained else SUM_OF_LOSSES[2]


@predict_then_run(
    "08.retain-mul-runs",
    Number(tol=0),
    prompt=RETAINED + ", for five steps. A prehook on each step's multiplication node counts its runs. "
    "Over the five backward calls together, how many times does a MulBackward0 node run?",
    explain="Step n's backward walks back through all n multiplications made so far: 1 + 2 + 3 + 4 + 5. "
    "The work per step grows with the step, so the whole sequence costs the square of its length.",
    misconceptions=[
        (
            lambda truth: STEPS,
            "One run per backward is the detached loop. Here step n's backward "
            "walks back through every multiplication made so far, not just the newest.",
        )
    ],
)
def retain_mul_runs():
    return mul_runs(STEPS, retain=True, detach=False)


@predict_then_run(
    "08.bytes-per-step",
    Number(tol=0),
    prompt="w = torch.tensor(0.9, requires_grad=True), hidden = torch.ones(256), and each step "
    "hidden = hidden * w + 0.1; loss = (hidden ** 2).sum(); loss.backward(retain_graph=True), nothing "
    "detached. Count the bytes of the tensors the graph under each step's loss "
    "keeps for backward, each storage once. How many bytes more at step 11 than at step 10?",
    explain="Step 11's graph is step 10's with step 11's nodes on top, less step 10's own power and sum nodes "
    "(they belong to step 10's loss; the sum keeps no tensor). Step 11's power keeps its new state, 256 float32 values (1,024 bytes); step 11's "
    "multiplication keeps the state it received, which step 10's power had already kept, and w, one storage "
    "already counted; the addition keeps nothing. The bill grows by one state per step, for as long as the loop "
    "runs.",
    misconceptions=[
        (
            lambda truth: 2 * truth,
            "Twice too much: the state step 11 received was already on step 10's bill (its power node kept it), "
            "the addition saves nothing, and w is one storage that the graph already counted.",
        )
    ],
)
def bytes_per_step():
    found = {}
    carried_loop(
        11,
        retain=True,
        width=256,
        each=lambda step, loss: found.__setitem__(step, kept_bytes(loss)) if step >= 10 else None,
    )
    return found[11] - found[10]


@predict_then_run(
    "08.retain-then-step",
    Error(*PLACES, causes=WRITE_SEEN),
    prompt=(
        "w = torch.tensor(0.9, requires_grad=True), opt = torch.optim.SGD([w], lr=0.01), hidden = "
        "torch.tensor(1.0); each step: hidden = hidden * w + 0.1; loss = hidden ** 2; opt.zero_grad(); "
        "loss.backward(retain_graph=True); opt.step(). Where does it fail, if anywhere? For an error, answer "
        "a pair (place, cause), the cause chosen from the candidates listed with the answer's form; your own "
        "words may follow as a third item, a note shown beside torch's message and never graded."
    ),
    explain="opt.step() writes w in place, bumping its version. Step 2's multiplication saved w (its other "
    "operand, hidden, required grad); step 3's backward runs back into that node and finds w "
    "changed. Step 1's multiplication never saved w, since its hidden did not require grad, so "
    "step 2's backward still ran.",
    misconceptions=[
        (
            "at step 2's backward",
            "Step 2's backward walks into step 1's multiplication, and that "
            "one never saved w: its other operand, the first hidden, did not require grad. The first "
            "node that saved w is step 2's own, and only step 3's backward reaches it after a write.",
        )
    ],
)
def retain_then_step():
    w = torch.tensor(0.9, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.01)
    hidden = torch.tensor(1.0)
    for place in PLACES:
        hidden = hidden * w + 0.1
        loss = hidden**2
        opt.zero_grad()
        yield place
        loss.backward(retain_graph=True)
        opt.step()


# --- the way out: detach ----------------------------------------------------------------------------


SUMS = ("the full-history sum", "the own-step-only sum", "between the two", "the last step's own term alone")


def _section_two_sums(steps: int = STEPS) -> tuple[float, float, float]:
    """Section 2's two columns, summed (through the full history, own step only), and the last own term."""
    w = torch.tensor(0.9, requires_grad=True)
    hidden = torch.tensor(1.0)
    full = own = last = 0.0
    for _ in range(steps):
        received = hidden
        hidden = hidden * w + 0.1
        (through_all,) = torch.autograd.grad(hidden**2, w, retain_graph=True)
        (own_step,) = torch.autograd.grad((received.detach() * w + 0.1) ** 2, w)
        full, own, last = full + through_all.item(), own + own_step.item(), own_step.item()
    return full, own, last


@predict_then_run(
    "08.detach-which-sum",
    Choice(*SUMS),
    prompt=DETACHED + " at the end of every step, five steps. Section 2 summed two columns: each step's "
    "derivative through the full history, and through its own step only. Which does w.grad after the five "
    "steps equal? One of " + ", ".join(repr(o) for o in SUMS) + ".",
    explain="Each loss is differentiated through its own step only: the detach turned the state it received "
    "into a constant, so no loss reaches the earlier steps' dependence on w, and the five own-step terms "
    "accumulate in w.grad.",
    misconceptions=[
        (
            SUMS[0],
            "that is the retained loop's figure; the detach cuts each step's graph at the state "
            "it received, so no loss reaches the earlier steps",
        ),
        (
            SUMS[3],
            "w.grad accumulates over the five backward calls (nobody zeroes it): every step's "
            "own term is in it, not only the last",
        ),
    ],
)
def detach_which_sum():
    got = carried_loop(detach=True).grad.item()
    full, own, last = _section_two_sums()
    for label, value in ((SUMS[1], own), (SUMS[0], full), (SUMS[3], last)):
        if abs(got - value) < 1e-4:
            return label
    return SUMS[2] if min(full, own) < got < max(full, own) else "none of them"


# --- k-step truncation ---------------------------------------------------------------------------------

BETWEEN = ("below the k=1 value", "between the k=1 and k=5 values", "above the k=5 value", "equal to one of them")


@predict_then_run(
    "08.k2-between",
    Choice(*BETWEEN),
    prompt=LOOP + ", five steps, truncated in chunks of k = 2: run steps 1-2, backward the sum of their two "
    "losses, detach hidden; steps 3-4 likewise; then step 5 alone. Compare its w.grad with k = 1 "
    "(detach every step) and k = 5 (one chunk, the full history). Where does it fall?",
    explain="Truncation drops the terms that reach back across a chunk boundary. Here every such term is "
    "positive (w, hidden and the losses are all positive), so keeping some of them lands strictly "
    "between keeping none (k = 1) and keeping all (k = 5).",
    misconceptions=[
        (
            BETWEEN[3],
            "k = 2 keeps the routes that stay inside a chunk (step 2's loss back to "
            "step 1, step 4's back to step 3) and drops the rest: some of the history, not none or all.",
        )
    ],
)
def k2_between():
    one, two, full = (first_w_grad((the_loop(), k)) for k in (1, 2, STEPS))
    if min(abs(two - one), abs(two - full)) < 1e-4:
        return BETWEEN[3]
    if two < one:
        return BETWEEN[0]
    return BETWEEN[1] if two < full else BETWEEN[2]


# --- the exercise: TBPTT(1, k), every loss through the same k steps ---------------------------------------


@exercise(
    "08.sliding-window",
    Function(returns=Number(tol=1e-4, rel=1e-4), cases=window_cases, call=call_window, convert=flatten_window_grads),
    prompt="Write window_grads(seq, k): run the sequence from seq.h0 (state = seq.step(state, seq.inputs[t]), "
    "loss seq.loss(state, t)) and, for every step t, backpropagate that step's loss through the last k steps "
    "only, t-k+1 to t (all of them while fewer than k have run), the state entering step t-k+1 held constant. "
    "Return the accumulated gradients: {name: p.grad} for seq.params. The state is a tensor or a tuple of "
    "tensors (an LSTM-like (h, c)); it is constant only when every tensor in it is. It is checked on generated "
    "sequences against torch.autograd.grad of each loss through its window; the chunks of section 6 give "
    "every loss between 1 and k steps, not k.",
    explain="A loss reaches back exactly to the last detach on its path, and a recorded graph cannot lose its "
    "oldest step: to give every loss the same k steps, each window is run again from the state that entered "
    "it, kept detached. Chunks make each detach serve k losses at once, so the first loss of a chunk sees one "
    "step and the last sees k; the window costs k steps of recomputation per step for an even truncation. A "
    "pair state carries history through each of its tensors: detaching h and not c keeps every earlier step.",
    hints=(
        "How far back does a loss reach? Back to the last detach on its path. Where must that detach be for "
        "step t's loss, and can one run of the sequence put it there for every t at once?",
        "Run the sequence once without recording (torch.no_grad()) and keep the state entering every step, "
        "detached. For step t, start from the one kept at step max(0, t - k + 1), run the steps up to t again, "
        "and call backward on step t's loss.",
        "A tuple state (h, c) is constant only when both are detached: tuple(s.detach() for s in state). "
        "Compare with the failing case's answers: matching the chunks means your detach sits at chunk "
        "boundaries, not k steps back from every loss.",
    ),
)
def sliding_window(case):
    ns = case.fresh()
    return [x for g in window_grads(ns["seq"], ns["k"]) for x in g.reshape(-1).tolist()]


# --- self-test --------------------------------------------------------------------------------------


def _recurrence(w: float, h0: float, bias: float, steps: int = 6) -> Recurrence:
    """The loop of a drawn program as a Recurrence: hidden = hidden * w + bias, loss = hidden ** 2."""
    wt = torch.tensor(w, requires_grad=True)
    return Recurrence(
        {"w": wt},
        torch.tensor(h0),
        [torch.tensor(bias) for _ in range(steps)],
        step=lambda h, x: h * wt + x,
        loss=lambda h, t: h**2,
    )


@self_test(
    "08.which-k-per-step",
    Choice(*WHICH_K),
    program=which_k_program,
    explain="How far back a loss is differentiated is decided by where the state was last detached, not by when "
    "backward is called: each loss reaches back to the start of its chunk. Gradients are linear, so one backward "
    "per loss adds up to one backward of the chunk's summed losses: detaches every k steps make the k-step "
    "truncation, and detaches at uneven steps make none of them.",
    hints=(
        "For each loss, ask how far back its backward can reach: where was the state it grew from last detached?",
        "A backward per loss through the same graph adds up to one backward of the summed losses (gradients are "
        "linear). Which chunks do the detaches make, and are they all k steps long?",
    ),
    misconceptions=[
        (
            lambda truth: "k=1" if truth != "k=1" else None,
            "a backward every step is not a detach every step: each loss still reaches back to the start of its "
            "chunk, through the graph retain_graph kept",
        ),
        (
            lambda truth: "k=6" if truth != "k=6" else None,
            "a detach cuts the history: no loss after it reaches the steps before it",
        ),
    ],
)
def which_k_per_step(p):
    got = p.run()[p.facts["weight"]].grad.item()
    for label in WHICH_K[:-1]:
        k = int(label.split("=")[1])
        seq = _recurrence(p.facts["w"], p.facts["h0"], p.facts["bias"])
        if abs(first_w_grad((seq, k)) - got) < 1e-4 * max(1.0, abs(got)):
            return label
    return WHICH_K[-1]


@self_test(
    "08.chunk-depth",
    Number(tol=0),
    program=chunk_depth_program,
    explain="A loss's graph reaches back to the state that entered its chunk detached: one add and one multiply for "
    "each step of the chunk so far, then the power node and w's AccumulateGrad.",
    hints=(
        "Find the chunk that the asked step belongs to, and where the state entering it was detached.",
        "Within a chunk, a loss's graph holds one add and one multiply for each step of the chunk so far, plus the "
        "power node and w's AccumulateGrad.",
    ),
    misconceptions=[
        (
            lambda truth, p: 2 * p.facts["asked"] + 2 if p.facts["asked"] > p.facts["k"] else None,
            "That is the depth with nothing detached: the detach at the end of each chunk cut everything before it.",
        ),
        (
            lambda truth, p: 2 * p.facts["k"] + 2 if truth != 2 * p.facts["k"] + 2 else None,
            "That is the depth of a chunk's last loss; the asked loss was made earlier in its chunk, with fewer steps "
            "since the detach.",
        ),
    ],
)
def chunk_depth(p):
    return probes.depth(p.run()["asked"])


@self_test(
    "08.retain-k1",
    Choice(*RETAIN_K1),
    program=retain_k1_program,
    explain="retain_graph only decides whether the saved values survive a backward; which history each loss can "
    "reach is decided by detach. With a detach every step the cut graphs are never walked again, retained or not; "
    "fewer detaches let losses reach further back (all the way without any), which a backward can do only if the "
    "graph it reaches was retained.",
    hints=(
        "Which line decides how far back each loss's backward can reach: the detach, or the flag?",
        "retain_graph=True keeps saved values alive after a backward. Does any later backward in this loop walk an "
        "earlier step's graph, and if so, was that graph kept?",
    ),
    misconceptions=[
        (
            lambda truth: RETAIN_K1[1] if truth == RETAIN_K1[0] else None,
            "The flag keeps saved values; it does not reconnect anything. The detach still cuts every step's graph "
            "at the state it received.",
        ),
        (
            lambda truth: RETAIN_K1[0] if truth in (RETAIN_K1[1], RETAIN_K1[2]) else None,
            "with fewer detaches each loss reaches back further, through the graphs retain_graph kept: the gradient "
            "adds those longer paths.",
        ),
        (
            lambda truth: RETAIN_K1[1] if truth == RETAIN_K1[3] else None,
            "without a detach, step 2's loss reaches step 1's graph, which step 1's plain backward already freed.",
        ),
    ],
)
def retain_k1(p):
    base = _listed_loop(p.facts["w"], p.facts["steps"], p.facts["bias"], retain=False, detach=True)
    full = _listed_loop(p.facts["w"], p.facts["steps"], p.facts["bias"], retain=True, detach=False)
    try:
        kept = p.run()[p.facts["weight"]].grad.item()
    except RuntimeError as exc:
        if "backward through the graph a second time" in str(exc):
            return RETAIN_K1[3]
        raise
    if abs(kept - base) < 1e-6:
        return RETAIN_K1[0]
    if abs(kept - full) < 1e-4 * max(1.0, abs(full)):
        return RETAIN_K1[1]
    if min(base, full) < kept < max(base, full):
        return RETAIN_K1[2]
    raise RuntimeError(f"w.grad {kept} is none of the labels: k = 1 gives {base}, the full history {full}")


def _listed_loop(w: float, steps: int, bias: float, retain: bool, detach: bool) -> float:
    """w.grad after the drawn loop with plain (or retained) backward, detached every step or never."""
    wt = torch.tensor(w, requires_grad=True)
    state = torch.tensor(1.0)
    for _ in range(steps):
        state = state * wt + bias
        (state**2).backward(retain_graph=retain)
        if detach:
            state = state.detach()
    return wt.grad.item()


@self_test(
    "08.detach-early",
    Error(*PLACES),
    program=detach_early_program,
    explain="A detach taken before the loss uses c leaves the loss with no history at all: there is no path to a, "
    "and the first backward refuses. Taken after each backward it cuts the state from the graph that backward "
    "freed, so every step builds a fresh one. Without it, the next step's graph reaches back into the freed one.",
    hints=(
        "Draw the graph of the first failing step's err: what is c, right before err = (c - 1) ** 2 runs, and what "
        "does its graph reach?",
        "detach() returns a tensor with no grad_fn that does not require grad. A backward fails when its loss has "
        "no history at all, or when its graph reaches a part an earlier backward freed.",
    ),
    misconceptions=[
        (
            lambda truth: "no error" if truth.where != "no error" else None,
            "look at what each err is computed from: a detach before err leaves it no history, and without a detach "
            "after each backward the next step reaches the graph that backward freed.",
        ),
        (
            lambda truth, p: "at step 2's backward" if p.facts["where"] == "before err" else None,
            "Step 1's err is already computed from the detached copy.",
        ),
        (
            lambda truth, p: "at step 2's backward" if truth.where == "no error" else None,
            "the detach after each backward cut the state from the graph that backward freed: the next step builds "
            "a fresh graph of its own.",
        ),
    ],
)
def detach_early(p):
    ns = {"torch": torch}
    exec(p.facts["setup"], ns)
    for step, place in enumerate(PLACES, start=1):
        ns["step"] = step
        exec(textwrap.dedent(p.facts["body"]), ns)
        yield place
        ns["err"].backward()
        if p.facts["after"]:
            exec(textwrap.dedent(p.facts["after"]), ns)
