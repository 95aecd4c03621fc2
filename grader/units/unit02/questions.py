"""Unit 02, backward and why gradients add: the seed, the chain rule node by node, shared
AccumulateGrad nodes, broadcasting, accumulation across calls, zero_grad() and None."""

from __future__ import annotations

import torch

from grader import probes
from grader.engine.kinds import Choice, Error, Function, Names, Number
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.causes import FREED, NO_GRAD_FN, NOT_SCALAR
from grader.units.unit02.cases import (
    call_seed,
    call_timeline,
    seed_cases,
    seed_result,
    timeline_cases,
    timeline_result,
)
from grader.units.unit02.generators import broadcast_program, none_program, seed_program, steps_program
from grader.units.unit02.kinds import LeafGrads
from grader.units.unit02.support import (
    accumulate_nodes,
    backward_step,
    chain,
    grad_word,
    leaf_grads,
    microbatch_data,
    microbatch_grad,
    record_arrivals,
    squares,
    straight_through_input,
    three_of_five,
    two_route_loss,
)

# --- 1. the chain rule, node by node -------------------------------------------------------


@predict_then_run(
    "02.chain-arrivals",
    Number(),
    prompt="y = (w * 3) ** 2 with w = torch.tensor(2.0, requires_grad=True); y.backward(). Backward hands a "
    "gradient to PowBackward0, then to MulBackward0, then to w's AccumulateGrad. Which number arrives at "
    "each? Answer [into Pow, into Mul, into AccumulateGrad].",
    explain="A scalar output starts from the seed dy/dy = 1. The power node multiplies by its local derivative "
    "2x = 12, the multiplication by its constant 3, giving 36: the chain rule applied one node at a time.",
)
def chain_arrivals():
    w, x, y = chain()
    received = record_arrivals(y)
    y.backward()
    return [received[node][0].item() for node in probes.nodes(y)]


# --- 2. non-scalar outputs need a seed ----------------------------------------------------------


@predict_then_run(
    "02.nonscalar-backward",
    Error("at the square", "at backward", causes=(NO_GRAD_FN, NOT_SCALAR, FREED)),
    prompt=(
        "v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True); z = v ** 2; z.backward(). Where does it fail,"
        " if anywhere ('at the square', 'at backward' or 'no error'), and why? For an error, answer a pair "
        "(place, cause), the cause chosen from the candidates listed with the answer's form; your own words "
        "may follow as a third item, a note shown beside torch's message and never graded."
    ),
    explain="backward() with no argument needs a starting gradient; it can make one up (1) only for a single "
    "number, a scalar. For three outputs it cannot guess how to weigh them, so it refuses.",
    misconceptions=[
        (
            "no error",
            "backward() with no argument seeds the output with 1, and a 1 fits only an "
            "output holding a single number; z holds three.",
        )
    ],
)
def nonscalar_backward():
    v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    yield "at the square"
    z = v**2
    yield "at backward"
    z.backward()


@predict_then_run(
    "02.ones-seed",
    Number(),
    prompt="v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True); z = v ** 2; "
    "z.backward(torch.ones_like(z)). What is v.grad? Answer a list of three numbers.",
    explain="The seed weighs each output's gradient: a seed of ones adds them all up, the same as "
    "z.sum().backward(). Each z_i depends only on v_i, so v.grad = 2v.",
)
def ones_seed():
    v, z = squares()
    z.backward(torch.ones_like(z))
    return v.grad.tolist()


@predict_then_run(
    "02.one-hot-seed",
    Number(),
    prompt="The same z = v ** 2 on a fresh v = [1.0, 2.0, 3.0]; z.backward(torch.tensor([0.0, 1.0, 0.0])). "
    "What is v.grad?",
    explain="backward(seed) computes seed · (Jacobian of z): a one-hot seed picks one row, the gradient of "
    "that one output element z[1] alone.",
)
def one_hot_seed():
    v, z = squares()
    z.backward(torch.tensor([0.0, 1.0, 0.0]))
    return v.grad.tolist()


# --- 2b. each node is a vector-Jacobian product; reverse mode counts rows -----------------------


@predict_then_run(
    "02.jacobian-calls",
    Number(tol=0),
    prompt="f(x) = torch.stack([x.sum(), (x * x).sum(), x.prod()]) maps x, 5 numbers that require grad, to 3 "
    "numbers. A hook on f's output counts the backward passes that go through it. How many passes "
    "does torch.autograd.functional.jacobian(f, x) make (its default settings) to build the 3x5 Jacobian, and "
    "how many does f(x).sum().backward() make? Answer [for the Jacobian, for the sum].",
    explain="One backward pass from one seed computes one vector-Jacobian product, one row of the Jacobian; "
    "jacobian's default (vectorize=False) seeds one pass per output with a one-hot vector, so 3 passes for 3 "
    "outputs, and a scalar output needs a single pass whatever the number of inputs. (vectorize=True hands the "
    "3 seeds to one batched pass instead.) Forward mode gets one column per pass: 5 here.",
    misconceptions=[
        (
            lambda truth: [5.0, truth[1]],
            "one pass per input is forward mode, a column at a time; backward gives a row per pass, one per output.",
        )
    ],
)
def jacobian_calls():
    counts = []

    def f(x):
        y = three_of_five(x)
        y.register_hook(lambda g: counts.append(1))
        return y

    x = torch.arange(1.0, 6.0, requires_grad=True)
    torch.autograd.functional.jacobian(f, x)
    for_jacobian = len(counts)
    counts.clear()
    f(x).sum().backward()
    return [for_jacobian, len(counts)]


# --- 3. two routes to one leaf ---------------------------------------------------------------


@predict_then_run(
    "02.two-routes",
    Number(),
    prompt="w = torch.tensor(2.0, requires_grad=True); a = 3 * w; b = w ** 2; loss = a + b; loss.backward(). "
    "What is w.grad?",
    explain="w reaches the loss by two routes, and the chain rule adds their contributions: 3 through a, "
    "2w = 4 through b.",
)
def two_routes():
    w, a, b, loss = two_route_loss()
    loss.backward()
    return w.grad.item()


@predict_then_run(
    "02.accumulate-runs",
    Number(),
    prompt="During loss.backward() for loss = 3 * w + w ** 2 at w = 2, how many times does w's AccumulateGrad "
    "node run, and what gradient does it receive? Answer [times it runs, gradient it receives] "
    "(a pre-hook on the node records each run).",
    explain="Backward runs a node once, after every gradient headed for it has arrived; arrivals for the same "
    "input are added first (3 from the multiplication, 4 from the power). The adding is the engine's.",
)
def accumulate_runs():
    w, a, b, loss = two_route_loss()
    left, _ = accumulate_nodes(loss)
    runs = []
    left.register_prehook(lambda grads: runs.append(grads[0].item()))
    loss.backward()
    return [len(runs), runs[0] if runs else float("nan")]


# --- 4. broadcasting ---------------------------------------------------------------------------


@predict_then_run(
    "02.broadcast-grad",
    Number(),
    prompt="X = torch.arange(12.0).view(4, 3) (no grad); b = torch.ones(3, requires_grad=True); "
    "loss = (X * b).sum(); loss.backward(). What is b.grad? Answer a list.",
    explain="X * b records no expand node: MulBackward0's edge leads straight to b's AccumulateGrad. The "
    "node computes b's gradient in the broadcast shape (4, 3), X itself, and the engine sums it over "
    "the broadcast rows down to b's shape (3,): the column sums of X.",
)
def broadcast_grad():
    X = torch.arange(12.0).view(4, 3)
    b = torch.ones(3, requires_grad=True)
    (X * b).sum().backward()
    return b.grad.flatten().tolist()


# --- 5. accumulation across backward calls ---------------------------------------------------------


@predict_then_run(
    "02.second-step",
    Number(),
    prompt="w = torch.tensor(2.0, requires_grad=True). Twice: build loss = 3 * w + w ** 2 and call "
    "loss.backward(), with nothing in between. What is w.grad after the second time?",
    explain="A plain backward() adds into .grad whatever is there. Nothing cleared the first 7, so the second 7 "
    "was added to it.",
)
def second_step():
    w = torch.tensor(2.0, requires_grad=True)
    backward_step(w)
    backward_step(w)
    return w.grad.item()


@predict_then_run(
    "02.snapshot-alias",
    Number(),
    prompt="The same two steps, but after the first one g = w.grad is kept (no clone). After the second "
    "step, what number does g hold?",
    explain="The second backward added into the existing .grad tensor in place, and g is that tensor, not a "
    "copy. Keep w.grad.clone() when you want the value at that moment.",
)
def snapshot_alias():
    w = torch.tensor(2.0, requires_grad=True)
    backward_step(w)
    g = w.grad
    backward_step(w)
    return g.item()


# --- 6. zero_grad() and None ---------------------------------------------------------------------


@predict_then_run(
    "02.zero-grad-none",
    Error("at zero_grad", "at the manual clear", "at the next backward"),
    prompt=(
        "w = torch.tensor(2.0, requires_grad=True); opt = torch.optim.SGD([w], lr=0.1); one step (loss = 3 * "
        "w + w ** 2; loss.backward(); opt.step()); then opt.zero_grad(); then a loop "
        "clears again by hand: for p in [w]: p.grad.zero_(); then the next loss.backward(). Where does it "
        "fail, if anywhere: 'at zero_grad', 'at the manual clear', 'at the next backward' or 'no error'? You "
        "may add your own words as (place, note): a note shown beside torch's message, never graded."
    ),
    explain="Since torch 2.0, zero_grad() sets each .grad to None by default (set_to_none=True); "
    "None has no zero_() method. zero_grad(set_to_none=False) keeps zero tensors.",
)
def zero_grad_none():
    w = torch.tensor(2.0, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    backward_step(w)
    opt.step()
    yield "at zero_grad"
    opt.zero_grad()
    yield "at the manual clear"
    for p in [w]:
        p.grad.zero_()
    yield "at the next backward"
    backward_step(w)


_ZERO_CHOICES = ("w None, b 2", "w 0, b 2", "w None, b None", "w 0, b 0", "w 2, b 2")


@predict_then_run(
    "02.microbatch-undivided",
    Number(),
    prompt="A batch of 8 samples, X (8, 3) and Y (8,), and a leaf w of 3. The full batch's gradient is that "
    "of loss = ((X @ w - Y) ** 2).mean(). Instead the batch is cut with X.chunk(4) and Y.chunk(4) into 4 "
    "micro-batches, and each micro-batch's mean loss gets its own backward(), with no zero_grad() in "
    "between and the loss not divided by 4. How many times the full batch's w.grad is the w.grad this "
    "leaves?",
    explain="Each backward adds its micro-batch's gradient into w.grad. A micro-batch's mean divides the sum "
    "over its 2 samples by 2, where the full batch's mean divides the sum over 8 by 8: each sample counts "
    "4 times as much, so the four backward calls add up to 4 times the full batch's gradient. Dividing "
    "each loss by the number of micro-batches gives the full batch's gradient back.",
    misconceptions=[
        (lambda truth: 1.0, "the means are over 2 samples each, not 8: four of them add up to 4 times the mean."),
        (lambda truth: 1 / truth, "accumulating adds: four backward calls without clearing make .grad larger."),
    ],
)
def microbatch_undivided():
    # in float64, rounded: float32 sums in an order the CPU's vector width decides, and a last-bit 4.0000005
    # on one machine against 4 on another is not a different answer
    X, Y, w0 = (t.double() for t in microbatch_data())
    full = microbatch_grad(X, Y, w0, pieces=1, divide=False)
    undivided = microbatch_grad(X, Y, w0, pieces=4, divide=False)
    return round((undivided.norm() / full.norm()).item(), 6)


@predict_then_run(
    "02.zero-not-none",
    Choice(*_ZERO_CHOICES),
    prompt="w = torch.tensor(2.0, requires_grad=True); b = torch.tensor(2.0, requires_grad=True); "
    "x = torch.tensor(0.0); loss = (w * x + b - 1) ** 2; loss.backward(). What are w.grad and b.grad? "
    "Answer one of " + ", ".join(repr(c) for c in _ZERO_CHOICES) + ".",
    explain="w is connected to the loss, so backward reached it and stored its gradient, which is 2(wx + b - 1)x "
    "= 0 because x = 0. A zero is a computed answer; None means no gradient arrived at all.",
)
def zero_not_none():
    w = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    x = torch.tensor(0.0)
    ((w * x + b - 1) ** 2).backward()
    return f"w {grad_word(w)}, b {grad_word(b)}"


# --- 7b. zeros and NaNs that arrive quietly ---------------------------------------------------------


@predict_then_run(
    "02.flat-steps",
    LeafGrads(),
    prompt="x = torch.tensor([0.4, 1.6, -2.3], requires_grad=True); loss = (x.round() + x.floor() + "
    "x.sign()).sum(); loss.backward(). What is x.grad? Answer {'x': a list of three numbers, or None}.",
    explain="round, floor and sign are recorded (their results are floating point), so backward reaches x; "
    "their local derivative is zero wherever it exists, so x.grad is zeros. Connected, and nothing "
    "to learn through them.",
    misconceptions=[
        (
            {"x": None},
            "None would mean no gradient arrived; round, floor and sign each have a "
            "node, and backward sends zeros through them to x.",
        )
    ],
)
def flat_steps():
    x = torch.tensor([0.4, 1.6, -2.3], requires_grad=True)
    (x.round() + x.floor() + x.sign()).sum().backward()
    return leaf_grads({"x": x})


@predict_then_run(
    "02.straight-through",
    LeafGrads(),
    prompt="x = torch.tensor([0.4, 1.6, -2.3], requires_grad=True); q = x + (x.round() - x).detach(); "
    "(q * q).sum().backward(). What is x.grad? Answer {'x': a list of three numbers, or None}.",
    explain="detach() cuts the path through round and the subtraction, so the only recorded route from q to x is "
    "the addition, which sends its gradient on unchanged. q's value is round(x), and the square's node "
    "saved that value: it sends 2q = 2 round(x), and x receives exactly that.",
    misconceptions=[
        (
            lambda truth: {"x": [2 * v for v in straight_through_input().tolist()]},
            "that is 2x: the square's node did not see x, it saw q, whose value is round(x); its local "
            "rule sends 2q, and the addition passes it to x unchanged.",
        ),
        (
            lambda truth: {"x": [0.0, 0.0, 0.0]},
            "round's flat slope never reaches x here: detach() cut that path, and the addition's own edge "
            "to x passes the gradient on unchanged.",
        ),
    ],
)
def straight_through():
    x = straight_through_input().requires_grad_()
    q = x + (x.round() - x).detach()
    (q * q).sum().backward()
    return leaf_grads({"x": x})


@predict_then_run(
    "02.where-nan",
    LeafGrads(),
    prompt="x = torch.tensor([-1.0, 4.0], requires_grad=True); y = torch.where(x > 0, x.sqrt(), 0.0); "
    "y.sum().backward(). What is x.grad? Answer {'x': a list of two numbers}, or {'x': None}; write "
    "float('nan') for NaN (numbers to 4 decimals).",
    explain="where picks values, but backward runs through both branches: sqrt ran on every element, and its "
    "local derivative 0.5 / sqrt(x) is NaN at x = -1. where sends that element 0, and 0 * NaN is NaN.",
    misconceptions=[
        (
            lambda truth: {"x": [0.0, truth["x"][1]]},
            "where does send the masked element a zero, but that zero "
            "then meets sqrt's own local derivative at -1, which is "
            "NaN; 0 * NaN is NaN.",
        )
    ],
)
def where_nan():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    torch.where(x > 0, x.sqrt(), 0.0).sum().backward()
    return leaf_grads({"x": x})


# --- self-test ---------------------------------------------------------------------------------


def _one_route(truth, p):
    """v[k] counted once: its entry without the route through the left factor (the others' shared term)."""
    wrong = list(truth)
    wrong[p.facts["k"]] = truth[p.facts["k"]] - truth[p.facts["other"]]
    return wrong


@self_test(
    "02.closed-book-seed",
    Number(),
    program=seed_program,
    explain="The one-hot seed keeps only one output element, m[k] = v[k] * v.sum(), scaled by the seed's value. "
    "v[k] reaches it by two routes, the factor and the sum, and the two contributions add; every other element "
    "reaches it through the sum only.",
    hints=(
        "The seed keeps a single output element (times its value). Write that element out in terms of v's elements.",
        "m[k] = v[k] * (v[0] + v[1] + ...). v[k] reaches it by two routes (the factor and the sum), and the two "
        "contributions add; the others only through the sum.",
    ),
    misconceptions=[
        (
            _one_route,
            "that counts the seeded element once; it reaches the kept output by two routes, the factor and the "
            "sum, and backward adds both.",
        ),
        (
            lambda truth, p: [t if i == p.facts["k"] else 0.0 for i, t in enumerate(truth)],
            "the other elements reach the kept output through v.sum(), so the one-hot seed does not cut them off.",
        ),
    ],
)
def closed_book_seed(p):
    return p.run()["v"].grad.tolist()


@self_test(
    "02.closed-book-broadcast",
    Number(),
    program=broadcast_program,
    explain="Each element of b is added to a whole row or column of X: broadcasting lines b up with X without "
    "copying it, and the engine sums the gradients of every place b was used down to b's shape. A mean then "
    "divides every entry's gradient by the number of entries; a subtraction sends each one through -1. X's values "
    "do not matter.",
    hints=(
        "X's values do not matter: the gradient of X + b with respect to each entry b meets is 1 (or -1 for "
        "X - b). What does the reduction send to every entry?",
        "A mean of n entries sends 1/n to each, a sum 1. Each element of b was broadcast over several entries, "
        "and the gradients of all those places are summed into it.",
    ),
    misconceptions=[
        (
            lambda truth, p: [t / p.facts["copies"] for t in truth],
            "that is one entry's share; each element of b is broadcast over several entries, and their gradients "
            "are summed into it.",
        ),
        (
            lambda truth, p: [t * p.facts["entries"] for t in truth] if p.facts["mean"] else None,
            "that would be the gradient of the sum; the mean divides every entry's gradient by the number of entries.",
        ),
        (
            lambda truth, p: [t / p.facts["entries"] for t in truth] if not p.facts["mean"] else None,
            "a sum sends 1 to every entry: nothing divides it by the number of entries (a mean would).",
        ),
        (
            lambda truth, p: [-t for t in truth] if p.facts["minus"] else None,
            "b is subtracted: each place it meets sends its gradient through -1, so b's gradient is negative.",
        ),
    ],
)
def closed_book_broadcast(p):
    return p.run()["b"].grad.flatten().tolist()


@self_test(
    "02.closed-book-steps",
    Number(),
    program=steps_program,
    explain="Each backward call adds its gradient into .grad; zero_grad() sets .grad to None, so only the calls "
    "after it are left, each adding the same amount (lr=0.0 keeps w where it was).",
    hints=(
        "What is one backward call's gradient of the power at w's value? Then follow .grad through the steps.",
        "Each backward adds the same gradient into .grad. zero_grad() (set_to_none=True by default) runs after "
        "one step only, so only what the steps after it added is left.",
    ),
    misconceptions=[
        (
            lambda truth, p: truth / p.facts["after"] * p.facts["steps"],
            "that adds every step; zero_grad() dropped what the steps before it had added, so only the steps "
            "after it are left.",
        ),
        (
            lambda truth: truth * 0,
            "zero_grad() ran after that step, not at the end: the backward calls after it stored their gradients "
            "again.",
        ),
        (
            lambda truth, p: truth / p.facts["after"] if p.facts["after"] > 1 else None,
            "each backward call after zero_grad() adds into .grad again: their gradients sum.",
        ),
    ],
)
def closed_book_steps(p):
    return p.run()["w"].grad.item()


@self_test(
    "02.closed-book-none",
    Names(pool=("a", "b", "c", "d")),
    program=none_program,
    explain="A leaf that backward reached has a gradient, even a zero one (times 0, relu below zero, x - x). "
    "A leaf that no recorded operation used was never reached, and one made without requires_grad takes no part: "
    "both keep .grad None.",
    hints=(
        "None means no gradient arrived at all; zero means one arrived and was zero. Which leaves did backward reach?",
        "a * 0, b.relu() and (a - a) are recorded operations with edges to their inputs, so each input receives a "
        "gradient (here zero). A name that appears nowhere in loss, or one created without requires_grad, "
        "receives none.",
    ),
    misconceptions=[
        (
            lambda truth, p: set(truth) | p.facts["zero"] if p.facts["zero"] else None,
            "a leaf that backward reached has a gradient even when it is zero (times 0, relu below zero, x - x): "
            "zeros, which is not None.",
        ),
        (
            lambda truth, p: set(truth) - p.facts["constant"] if p.facts["constant"] else None,
            "a tensor that does not require grad never gets a gradient stored: its .grad stays None.",
        ),
        (
            lambda truth, p: set(truth) - p.facts["unused"] if p.facts["unused"] else None,
            "a leaf that appears nowhere in loss is never reached by backward: its .grad stays None.",
        ),
    ],
)
def closed_book_none(p):
    ns = p.run()
    return {n for n in ("a", "b", "c", "d") if ns[n].grad is None}


# --- exercise 1: every leaf's .grad after one step, two steps, and zero_grad() ----------------------------

TIMELINE_STEPS = ("after one backward", "after two", "after zero_grad()")


@exercise(
    "02.grad-timeline",
    Function(
        returns=LeafGrads(steps=TIMELINE_STEPS), cases=timeline_cases, call=call_timeline, convert=timeline_result
    ),
    prompt="Write grad_timeline(leaves, forward): leaves is {name: leaf tensor}; forward() runs the program "
    "once more on those leaves, on the next batch, and returns its scalar output (each batch weighs the output "
    "differently, so two steps are not one step twice). Do a training-style step (forward, then "
    "backward) twice, then an optimizer's zero_grad(). Return {name: [.grad after the first step, after "
    "the second, after zero_grad()]} for every leaf, each entry a copy of the tensor or None. A leaf may "
    "arrive holding a .grad that an earlier step left there.",
    explain="Each backward adds into .grad in place, so only a clone keeps a moment's value; after two steps "
    ".grad holds the sum of both steps' gradients; an optimizer's zero_grad() leaves None. A leaf that needs no gradient, or that "
    "backward never reaches, stays None throughout; a reached leaf can hold zeros.",
    hints=(
        "Call forward() for each step, backward on what it returns, and take your snapshot right after "
        "each backward. What happens to a snapshot that is w.grad itself when the next backward runs?",
        "Store t.grad.clone() (or None where t.grad is None): without the clone, the first entry is the "
        "same tensor the second backward adds into. For the third entry, make any optimizer over the "
        "leaves' values and call its zero_grad().",
    ),
)
def grad_timeline(case):
    ns = case.fresh()
    leaves, forward = ns["leaves"], ns["forward"]
    moments = []
    for _ in range(2):
        forward().backward()
        moments.append(leaf_grads(leaves))
    torch.optim.SGD(list(leaves.values()), lr=0.1).zero_grad()
    moments.append(leaf_grads(leaves))
    return {n: [m[n] for m in moments] for n in leaves}


# --- exercise 2: the seed that isolates one output element -----------------------------------------------


@exercise(
    "02.isolating-seed",
    Function(returns=LeafGrads(), cases=seed_cases, call=call_seed, convert=seed_result),
    prompt="Write isolating_seed(out, index): the seed tensor s for which out.backward(s) leaves in every leaf "
    "exactly the gradient of the single element out.flatten()[index]. It is checked on generated "
    "outputs of several shapes, some of them transposed views.",
    explain="backward(s) computes s · J, so s must be 1 at the chosen element and 0 elsewhere, shaped like out. "
    "flatten() numbers the elements row by row (the last index fastest); writing the 1 through a "
    "view of a fresh zeros tensor puts it in that place.",
    hints=(
        "backward(s) weighs each output element's gradient by s at the same place and adds them up. "
        "Which weights keep one element alone?",
        "Make torch.zeros(out.shape) (a fresh, contiguous tensor) and put a 1 at flat position index "
        "through .view(-1). Writing through out's own layout, or through flatten() of a non-contiguous "
        "tensor, can put the 1 somewhere else or nowhere.",
    ),
)
def isolating_seed(case):
    ns = case.fresh()
    ns["out"].flatten()[case.index].backward()
    return leaf_grads({"a": ns["a"], "b": ns["b"]})
