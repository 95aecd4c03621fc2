"""Unit 06, graph lifetime: what backward frees, retain_graph, create_graph and higher derivatives.

Every answer here is measured: the states of saved tensors after backward, where a second
backward raises and with which words, node counts of graphs kept alive by a loop, derivatives
through a recorded backward pass, and whether a parameter outlives its last name.

The programs the experiments run live in :mod:`grader.units.unit06.support`; the exercises' generated
cases, and how a learner's function is called on them, in :mod:`grader.units.unit06.cases`; the answer
kind of the two-losses exercise in :mod:`grader.units.unit06.kinds`.
"""

from __future__ import annotations

import torch

from grader import probes
from grader.engine.kinds import Boolean, Choice, Error, Function, Names, Number, Sequence
from grader.engine.question import exercise, predict_then_run, self_test
from grader.engine.variants import Listing
from grader.units.causes import PASS_TWICE, WRITE_SEEN
from grader.units.unit06.cases import (
    call_hvp,
    call_two,
    convert_hvp,
    convert_two,
    hvp_truth,
    smooth_cases,
    two_loss_cases,
    two_loss_truth,
)
from grader.units.unit06.generators import (
    MODULE_CLEARINGS,
    keeps_program,
    module_cycle_program,
    running_program,
    second_pass_program,
    twice_program,
)
from grader.units.unit06.kinds import WAYS, GradPairs
from grader.units.unit06.support import (
    FIRST_GRADIENTS,
    chain,
    differentiable_again,
    first_gradient_recorded,
    mlp_stale,
    run_stale_loop,
    state_label,
    survives,
    training,
    two_losses_graph,
)

SAVED_STATES = ("ok", "freed", "stale", "mixed", "nothing saved")


# --- 1. what backward frees, and what it leaves ------------------------------------------


@predict_then_run(
    "06.walk-after-backward",
    Sequence(),
    prompt="w = torch.tensor(2.0, requires_grad=True); loss = (w * 3) ** 2; loss.backward(). Now walk "
    "loss.grad_fn (every node once, depth first, next_functions in order, skipping None). Which "
    "node names do you meet, in order? Answer [] if nothing is left to walk.",
    explain="backward releases the values the nodes kept, not the nodes: grad_fn and next_functions "
    "still lead from the loss to the leaf, so walking and drawing the graph keep working.",
    misconceptions=[
        ([], "backward frees the values the nodes saved, not the nodes: loss.grad_fn still leads to the leaf")
    ],
)
def walk_after_backward():
    w, u, loss = chain()
    loss.backward()
    return probes.node_names(loss)


@predict_then_run(
    "06.saved-after-backward",
    Choice(*SAVED_STATES),
    prompt="Same program: before backward, probes.saved_tensors(loss) reports every saved tensor as "
    "'ok'. After loss.backward(), what does it report for them: 'ok', 'freed', 'stale', 'mixed' "
    "(some of each) or 'nothing saved'?",
    explain="Each node drops its saved values as soon as it has used them, because one forward and one "
    "backward is the common case and keeping them would only cost memory.",
    misconceptions=[
        ("ok", "without retain_graph=True, each node releases what it saved once its backward rule has used it")
    ],
)
def saved_after_backward():
    w, u, loss = chain()
    loss.backward()
    return state_label(loss)


@predict_then_run(
    "06.second-backward",
    Error("at the first backward", "at the second backward", causes=PASS_TWICE),
    prompt=(
        "w = torch.tensor(2.0, requires_grad=True); loss = (w * 3) ** 2; loss.backward(); loss.backward(). "
        "Where does it fail ('no error', 'at the first backward', 'at the second backward'), and why? For an "
        "error, answer a pair (place, cause), the cause chosen from the candidates listed with the answer's "
        "form; your own words may follow as a third item, a note shown beside torch's message and never "
        "graded."
    ),
    explain="The second pass reaches the power node, whose saved input the first pass released; torch "
    "refuses rather than differentiate without it.",
)
def second_backward():
    w, u, loss = chain()
    yield "at the first backward"
    loss.backward()
    yield "at the second backward"
    loss.backward()


@predict_then_run(
    "06.nothing-saved",
    Error("at the first backward", "at the second backward"),
    prompt="w = torch.ones(2, requires_grad=True); loss = (w + 1).sum(); loss.backward(); loss.backward(). "
    "Where does it fail: 'no error', 'at the first backward' or 'at the second backward'?",
    explain="Neither an addition nor a sum needs a forward value for its backward rule, so nothing was "
    "saved and nothing was freed: the graph can be traversed again, and w.grad adds up to 2.",
    misconceptions=[
        (
            "at the second backward",
            "the error is about saved values that were freed, not about "
            "walking a graph twice; an addition and a sum save none",
        )
    ],
)
def nothing_saved():
    w = torch.ones(2, requires_grad=True)
    loss = (w + 1).sum()
    yield "at the first backward"
    loss.backward()
    yield "at the second backward"
    loss.backward()


# --- 2. when retain_graph is right ---------------------------------------------------------


@predict_then_run(
    "06.shared-intermediate",
    Error("at loss_a.backward()", "at loss_b.backward()"),
    prompt="w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True); c = torch.tensor([3.0, -1.0, 0.5]); "
    "h = (w * c).tanh(); loss_a = (h ** 2).sum(); loss_b = (h * c).sum(); loss_a.backward(); "
    "loss_b.backward(). Where does it fail: 'no error', 'at loss_a.backward()' or 'at "
    "loss_b.backward()'?",
    explain="Both losses lead back through the tanh node. The first backward ran it and released the "
    "output it had kept, so the second backward finds that value gone.",
    misconceptions=[
        (
            "no error",
            "loss_b is a different loss, but its graph shares the tanh node with loss_a's, "
            "and loss_a's pass released the output that node kept",
        )
    ],
)
def shared_intermediate():
    w, c, h, loss_a, loss_b = two_losses_graph()
    yield "at loss_a.backward()"
    loss_a.backward()
    yield "at loss_b.backward()"
    loss_b.backward()


# --- 3. when retain_graph hides a bug ------------------------------------------------------


@predict_then_run(
    "06.stale-loop",
    Number(tol=1e-4),
    prompt="x = torch.tensor([1.0, 2.0, 3.0]); target = 3 * x; w = torch.tensor(0.0, requires_grad=True); "
    "loss = ((w * x - target) ** 2).mean() is computed ONCE, before the loop. Then 5 steps of: "
    "loss.backward(retain_graph=True); read w.grad; w -= 0.02 * w.grad (under no_grad); "
    "w.grad = None. What is w.grad at step 0 and at step 4? Answer [step 0, step 4].",
    explain="Every backward walks the one graph built when w was 0, with the values saved then; w moves, "
    "but nothing re-records the loss at the new w, so the gradient never changes.",
    misconceptions=[
        (
            lambda truth: [truth[0], truth[0] / 2],
            "a shrinking gradient needs a loss recorded at the new w; this loss was recorded once, at "
            "w = 0, and every pass reads the values saved then",
        )
    ],
)
def stale_loop():
    grads, _ = run_stale_loop()
    return [grads[0], grads[4]]


@predict_then_run(
    "06.stale-mlp",
    Error("at iteration 1", "at iteration 2", "at iteration 3", causes=WRITE_SEEN),
    prompt=(
        "torch.manual_seed(0); model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)); opt = "
        "torch.optim.SGD(model.parameters(), lr=0.1); x, y = torch.randn(8, 3), torch.randn(8, 1); loss = "
        "((model(x) - y) ** 2).mean() is computed ONCE. Then 3 iterations of: opt.zero_grad(); "
        "loss.backward(retain_graph=True); opt.step(). At which iteration's backward does it raise, if at all"
        " ('no error', 'at iteration 1', 'at iteration 2', 'at iteration 3')? For an error, answer a pair "
        "(place, cause), the cause chosen from the candidates listed with the answer's form; your own words "
        "may follow as a third item, a note shown beside torch's message and never graded."
    ),
    explain="The second Linear kept its weight to send a gradient back to the tanh output. opt.step() writes "
    "that weight in place, so the second pass over the retained graph finds a saved tensor whose "
    "version moved: the stale graph is caught here only because it kept a parameter.",
    misconceptions=[
        (
            "no error",
            "in the scalar example the graph kept only an input and constants; this one "
            "kept a Linear's weight, which opt.step() writes in place",
        )
    ],
)
def stale_mlp():
    yield from mlp_stale()


# --- 4. running_loss += loss ------------------------------------------------------------------


RUNNING_FACTS = (
    "running_loss is a Python float",
    "its graph reaches w",
    "it holds one AccumulateGrad per step",
    "200 steps hold more nodes than 100",
)


@predict_then_run(
    "06.running-loss-holds",
    Names(pool=RUNNING_FACTS),
    prompt="A training loop: w = torch.randn(4, requires_grad=True); running_loss = 0.0; each step makes "
    "X, Y = torch.randn(16, 4), torch.randn(16), computes loss = ((X @ w - Y) ** 2).mean(), "
    "calls loss.backward(), updates w under no_grad, and does running_loss += loss. After the loop, which "
    "of these hold: 'running_loss is a Python float', 'its graph reaches w', 'it holds one AccumulateGrad "
    "per step', '200 steps hold more nodes than 100'? Answer a set.",
    explain="0.0 + loss is a tensor addition, so running_loss is a tensor whose node joins the new loss's graph "
    "to the old sum's: it keeps every step's graph, and grows with the steps. Every step's graph ends at "
    "the same leaf w, so they share one AccumulateGrad, which holds w.",
    misconceptions=[
        (
            lambda truth: (
                (set(truth) - {"its graph reaches w", "200 steps hold more nodes than 100"})
                | {"running_loss is a Python float"}
            ),
            "running_loss += loss adds tensors (0.0 + a tensor is a tensor), so running_loss has a graph; only "
            "loss.item() or loss.detach() would add none",
        ),
        (
            lambda truth: set(truth) | {"it holds one AccumulateGrad per step"},
            "an AccumulateGrad belongs to a leaf, not to a step: every step's graph ends at the one node of w",
        ),
    ],
)
def running_loss_holds():
    short, long = training(100, keep=lambda loss: loss), training(200, keep=lambda loss: loss)
    facts = {
        "running_loss is a Python float": isinstance(short, float),
        "its graph reaches w": bool(probes.reachable_leaves(short)),
        "it holds one AccumulateGrad per step": probes.node_names(short).count("AccumulateGrad") == 100,
        "200 steps hold more nodes than 100": probes.size(long) > probes.size(short),
    }
    return {fact for fact, holds in facts.items() if holds}


@predict_then_run(
    "06.running-loss-saved",
    Choice(*SAVED_STATES),
    prompt="Same loop, 100 steps. What does probes.saved_tensors(running_loss) report for the saved "
    "tensors in all those graphs: 'ok', 'freed', 'stale', 'mixed' or 'nothing saved'?",
    explain="Each step's backward already released that step's saved values. What running_loss keeps "
    "alive is the chain of node objects, which grows by one graph per step and is never freed "
    "while running_loss lives.",
    misconceptions=[
        (
            "ok",
            "each step's backward ran over that step's graph and released what it saved; "
            "running_loss keeps the nodes, not their values",
        )
    ],
)
def running_loss_saved():
    return state_label(training(100, keep=lambda loss: loss))


# --- 5. create_graph: differentiating a backward pass ------------------------------------------


@predict_then_run(
    "06.which-grads-recorded",
    Names(pool=tuple(FIRST_GRADIENTS)),
    prompt="x = torch.tensor(2.0, requires_grad=True). Four first gradients, each (g,) = torch.autograd.grad(z, "
    "x, ...): 'sin(x ** 2), create_graph' (z = torch.sin(x ** 2), create_graph=True); 'sin(x ** 2), plain' "
    "(the same z, no flag); '3 * x + 1, create_graph'; 'x * x, create_graph'. For which of them does g have "
    "a grad_fn? Answer a set of the labels.",
    explain="create_graph=True records the backward pass's own operations. A gradient gets a graph only when "
    "those operations read something that requires grad: 2x cos(x^2) and 2x read x, but the gradient of "
    "3 * x + 1 is the constant 3 times the seed, which requires nothing. Without the flag nothing is "
    "recorded at all.",
    misconceptions=[
        (
            lambda truth: set(truth) | {"3 * x + 1, create_graph"},
            "the gradient of 3 * x + 1 is 3 whatever x is: the recorded backward reads nothing that requires "
            "grad, so there is nothing to record",
        ),
        (
            lambda truth: set(truth) | {"sin(x ** 2), plain"},
            "without create_graph the backward pass records nothing: the gradient is a plain tensor",
        ),
    ],
)
def which_grads_recorded():
    return {label for label in FIRST_GRADIENTS if first_gradient_recorded(label)}


FLAGS = ("plain", "retain_graph", "create_graph")


@predict_then_run(
    "06.which-flag",
    Names(pool=FLAGS),
    prompt="For z = torch.sin(x ** 2) at x = 2, the first gradient is taken three ways: "
    "torch.autograd.grad(z, x) ('plain'), with retain_graph=True ('retain_graph') and with "
    "create_graph=True ('create_graph'). For which of them does the returned g have a grad_fn, "
    "so that torch.autograd.grad(g, x) works? Answer a set of the labels.",
    explain="retain_graph only keeps the forward graph's saved values for another pass; it records "
    "nothing. create_graph records the backward computation itself, which is what a second "
    "derivative differentiates.",
    misconceptions=[
        (
            {"retain_graph", "create_graph"},
            "retain_graph keeps the forward graph's saved values "
            "for another pass over it; it records nothing, so the gradient it returns has no grad_fn",
        )
    ],
)
def which_flag():
    return {flag for flag in FLAGS if differentiable_again(flag)}


# --- 6. backward(create_graph=True) and a reference cycle ------------------------------------


@predict_then_run(
    "06.cycle-survives",
    Boolean(),
    prompt="w = torch.randn(1000, requires_grad=True); ref = weakref.ref(w); loss = (w.sin() ** 2).sum(); "
    "loss.backward(create_graph=True); del w, loss; gc.collect(). Is ref() still alive "
    "(ref() is not None)?",
    explain="w.grad now has a graph, and that graph ends at w's AccumulateGrad node, which holds w: w -> "
    "w.grad -> its grad_fn -> ... -> AccumulateGrad -> w. Every link is a C++ reference count, with no "
    "Python object on the cycle, so no collector ever visits it and it is never freed.",
    misconceptions=[
        (
            lambda truth: not truth,
            "gc.collect() finds cycles among Python objects only; this cycle "
            "is made entirely of C++ references inside torch",
        )
    ],
)
def cycle_survives():
    return survives("backward")


# --- self-test ------------------------------------------------------------------------------------


@self_test(
    "06.closed-book-relu-twice",
    Error("at the first backward", "at the second backward", causes=PASS_TWICE),
    program=twice_program,
    explain="A node keeps the tensors its backward rule reads (relu and exp their output, a power its input, a "
    "product by a number that number, wrapped in a tensor), and a backward pass releases them unless "
    "retain_graph=True. A second pass then fails where a kept tensor is gone, or was written in place since; a "
    "graph that keeps no tensor (x + 1 keeps only its alpha) can be walked again.",
    hints=(
        "Does each node's backward rule need a tensor from the forward pass?",
        "ReLU passes the gradient where its output was positive, so it keeps its output; a product by a number "
        "keeps the number (as a tensor); an addition keeps no tensor. The first backward releases what was kept, "
        "unless told to retain it.",
    ),
    misconceptions=[
        (
            lambda truth, p: (
                "no error" if truth.where != "no error" and p.facts["tracked"] and not p.facts["written"] else None
            ),
            "a node of this graph kept a tensor for backward, and the first pass released it",
        ),
        (
            lambda truth, p: (
                "at the second backward"
                if truth.where == "no error" and p.facts["keeps"] == "nothing" and p.facts["tracked"]
                else None
            ),
            "this graph keeps no tensor for backward (an addition keeps only its alpha, a plain number): a second "
            "pass has everything it needs",
        ),
        (
            lambda truth, p: (
                "at the second backward"
                if truth.where == "no error"
                and p.facts["keeps"] == "kept"
                and p.facts["retain"]
                and not p.facts["written"]
                else None
            ),
            "retain_graph=True on the first backward kept the saved values for the second",
        ),
        (
            lambda truth, p: "at the second backward" if not p.facts["tracked"] else None,
            "x does not require grad: nothing was recorded, so the first backward already has no graph to walk",
        ),
        (
            lambda truth, p: "no error" if p.facts["written"] and truth.where != "no error" else None,
            "retain_graph kept the saved values, but h was written in place between the passes: the tensor its node "
            "kept is stale",
        ),
    ],
)
def closed_book_relu_twice(p):
    yield from p.stepped()


@self_test(
    "06.closed-book-create-keeps",
    Choice(*SAVED_STATES),
    program=keeps_program,
    explain="A pass releases the saved values of the nodes it walks unless retain_graph is true, and retain_graph "
    "defaults to create_graph: a pass that records itself for a second derivative keeps them. A pass walks only "
    "where the inputs asked for lead, so a part it never reached keeps its values; a graph that saves only numbers "
    "has nothing saved.",
    hints=(
        "What is retain_graph when you pass only create_graph=True, and when you pass neither?",
        "A pass releases what it went through, unless retain_graph (which defaults to create_graph) is true. Does "
        "the pass go through every part of z's graph?",
    ),
    misconceptions=[
        (
            lambda truth: "freed" if truth == "ok" else None,
            "retain_graph defaults to create_graph (or was passed): this pass kept the saved values",
        ),
        (
            lambda truth: "ok" if truth == "freed" else None,
            "without create_graph or retain_graph=True, a pass releases the saved values of every node it went through",
        ),
        (
            lambda truth: "freed" if truth == "mixed" else None,
            "a pass goes only where the inputs it was asked for lead: y's part of z was never walked, so its saved "
            "values are still there",
        ),
        (
            lambda truth: "freed" if truth == "nothing saved" else None,
            "this graph saves no tensor for backward, only numbers: there is nothing to free",
        ),
    ],
)
def closed_book_create_keeps(p):
    return state_label(p.run()["z"])


@self_test(
    "06.closed-book-second-pass",
    Error("at the second autograd.grad", "at z.backward()", causes=PASS_TWICE),
    program=second_pass_program,
    explain="create_graph=True retained z's graph through the first pass, and recorded g's graph. Where z's node "
    "kept a forward intermediate (cos(x), exp(x)), g's graph reads that intermediate and so leads into z's own "
    "nodes; a second pass without retain_graph frees what it walks, those nodes included, and z.backward() then "
    "finds them freed. Where the node kept only x, g's graph stays off z's nodes.",
    hints=(
        "Draw g's graph: which nodes does it reach? Are any of them nodes of z's own graph?",
        "A pass without retain_graph frees the saved values of every node it goes through. g's graph reads what "
        "z's nodes saved: an intermediate like cos(x) belongs to z's graph; the leaf x does not.",
    ),
    misconceptions=[
        (
            lambda truth: "no error" if truth.where == "at z.backward()" else None,
            "create_graph=True kept z's graph for the first pass only; the second pass, without retain_graph, went "
            "through z's forward nodes (g's graph reaches them) and freed their saved values",
        ),
        (
            lambda truth, p: "no error" if not p.facts["create"] else None,
            "without create_graph=True the first gradient was not recorded: g has no grad_fn, and the second "
            "autograd.grad has nothing to differentiate",
        ),
        (
            lambda truth, p: (
                "at z.backward()"
                if truth.where == "no error" and not p.facts["reaches"] and not p.facts["retain"]
                else None
            ),
            "g's graph reaches only x here (z's node saved the leaf itself): the second pass freed none of z's nodes",
        ),
        (
            lambda truth, p: "at z.backward()" if truth.where == "no error" and p.facts["retain"] else None,
            "retain_graph=True on the second pass kept what it walked: z's nodes are whole for z.backward()",
        ),
    ],
)
def closed_book_second_pass(p):
    yield from p.stepped()


@self_test(
    "06.closed-book-module-cycle",
    Names(pool=MODULE_CLEARINGS),
    program=module_cycle_program,
    explain="backward(create_graph=True) stores each .grad as a tensor with a graph, and a leaf's .grad whose graph "
    "reaches that leaf's AccumulateGrad is a reference cycle that holds the leaf. A cycle holds every leaf its "
    "gradient's graph reaches, not only its own: clearing one .grad frees the weight only if no other gradient's "
    "graph reaches it; zero_grad() clears them all. A gradient built from values that do not depend on the weight "
    "(a linear loss, a detached factor) holds nothing.",
    hints=(
        "Which leaves does each gradient's graph reach? A cycle holds every leaf its gradient's graph reaches, not "
        "only its own.",
        "Write each gradient: d/dW and d/db of the loss. Does it read the weight? Then its graph (create_graph=True) "
        "reaches the weight's AccumulateGrad, and that .grad holds the weight.",
    ),
    misconceptions=[
        (
            lambda truth: (
                set(truth) - {"only lin.weight.grad = None"} if "only lin.weight.grad = None" in truth else None
            ),
            "clearing the weight's .grad breaks its own cycle, but another gradient's graph still reaches the weight "
            "and holds it",
        ),
        (
            lambda truth: set(truth) - {"only lin.bias.grad = None"} if "only lin.bias.grad = None" in truth else None,
            "clearing the bias's .grad leaves the weight's own gradient graph standing, and that holds the weight",
        ),
        (
            lambda truth: set(truth) | {"opt.zero_grad()"},
            "opt.zero_grad() sets every .grad to None: no gradient graph is left to hold the weight",
        ),
        (
            lambda truth: {"nothing cleared"} if not truth else None,
            "these gradients are built from values that do not depend on the weight (a linear loss, a detached "
            "factor): their graphs never reach it, so nothing holds it",
        ),
    ],
)
def closed_book_module_cycle(p):
    run = p.run()["run"]
    return {clearing for clearing in MODULE_CLEARINGS if run(clearing)}


def _one_step_size(p) -> int:
    """Nodes under one step's loss of the drawn loop (what keeping a single loss keeps)."""
    one = Listing(p.source.replace(f"range({p.facts['steps']})", "range(1)"), p.ask, p.facts)
    return probes.size(one.run()["loss"])


@self_test(
    "06.closed-book-detached-running",
    Number(tol=0),
    program=running_program,
    explain="Keeping a loss tensor keeps its graph: the lowest loss so far, or the last one, is one step's loss and "
    "holds that step's graph (a comparison records nothing). A running sum of tensors joins every step's graph "
    "into one; a sum of detached copies keeps none.",
    hints=(
        "Does loss < best record an operation? Does best = loss make a new tensor? Does total + loss?",
        "One step's loss holds that step's graph: count its nodes (the reduction, each operation, v's "
        "AccumulateGrad). A sum joins graphs; a detached copy has none.",
    ),
    misconceptions=[
        (
            lambda truth: 0 if truth > 0 else None,
            "keeping the loss tensor keeps its grad_fn and the graph under it",
        ),
        (
            lambda truth, p: _one_step_size(p) if p.facts["name"] == "total" and truth > _one_step_size(p) else None,
            "total + loss is recorded: the sum joins every step's graph, not just one",
        ),
        (
            lambda truth, p: _one_step_size(p) if p.facts["name"] == "total" and truth == 0 else None,
            "loss.detach() is a tensor without a graph: a sum of them keeps none",
        ),
    ],
)
def closed_book_detached_running(p):
    return probes.size(p.run()[p.facts["name"]])


# --- exercise 1: two losses sharing an intermediate, three ways ----------------------------------


@exercise(
    "06.two-losses",
    Function(returns=GradPairs(), cases=two_loss_cases, call=call_two, convert=convert_two),
    prompt="Write two_gradients(forward, w, way): forward(w) returns (loss_a, loss_b), two losses that share "
    "an intermediate; return (gradient of loss_a, gradient of loss_b) with respect to w, computed "
    "the named way: 'retain_graph' (one forward, two backward passes), 'two_forwards' (a forward "
    "pass per loss) or 'one_call' (one forward and a single torch.autograd.grad call that returns "
    "both gradients separately). Checked on generated cases against torch.func.",
    explain="The three ways agree because they differentiate the same function. They differ in cost: "
    "retain_graph keeps the saved values for a second pass; two forwards recompute the shared "
    "part; one batched call walks the graph once with two seeds.",
    hints=(
        "Each way must leave w.grad alone between the two gradients, or read the gradients from "
        "torch.autograd.grad's return value.",
        "'retain_graph': the first backward needs retain_graph=True, and the first gradient must be cloned "
        "before the second pass adds to w.grad. 'two_forwards': call forward once per loss.",
        "'one_call': torch.autograd.grad(torch.stack([loss_a, loss_b]), w, grad_outputs=torch.eye(2), "
        "is_grads_batched=True) returns one row per loss.",
    ),
)
def two_losses(case):
    ga, gb = two_loss_truth(case)
    return tuple((way, ga, gb) for way in WAYS)


# --- exercise 2: a Hessian-vector product with create_graph=True ---------------------------------


@exercise(
    "06.hvp",
    Function(returns=Number(tol=1e-4, rel=1e-4), cases=smooth_cases, call=call_hvp, convert=convert_hvp),
    prompt="Write hvp(f, x, v): the Hessian of the scalar function f at x times the vector v, using "
    "torch.autograd.grad twice (the first with create_graph=True). x is a leaf that requires grad. "
    "Checked on generated smooth functions against torch.func.",
    explain="The first gradient, recorded with create_graph=True, is a function of x with its own graph; "
    "the derivative of its dot product with v is H v, obtained without ever forming H.",
    hints=(
        "H @ v is the gradient, with respect to x, of the number (gradient of f at x) · v.",
        "Take the first gradient with create_graph=True so it has a graph; then differentiate (g * v).sum() "
        "with respect to x.",
    ),
)
def hvp(case):
    return list(hvp_truth(case))
