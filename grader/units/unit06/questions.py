"""Unit 06, graph lifetime: what backward frees, retain_graph, create_graph and higher derivatives.

Every answer here is measured: the states of saved tensors after backward, where a second
backward raises and with which words, node counts of graphs kept alive by a loop, derivatives
through a recorded backward pass, and whether a parameter outlives its last name.
"""
from __future__ import annotations

import gc
import math
import os
import random
import traceback
import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

import grader
from grader import probes
from grader.engine import torch_state
from grader.engine.kinds import (
    BadAnswer,
    Boolean,
    Choice,
    Error,
    Function,
    Kind,
    Names,
    Number,
    Sequence,
    short,
    stable_part,
)

INPLACE_TERMS = (("version", "inplace", "in-place", "modified"),)
SECOND_PASS_TERMS = (("second time", "twice", "again", "freed", "already"),)
from grader.engine.question import exercise, predict_then_run, self_test

SAVED_STATES = ("ok", "freed", "stale", "mixed", "nothing saved")


def _state_label(t) -> str:
    """One word for the states of every tensor the graph under ``t`` saved."""
    states = {s.state for s in probes.saved_tensors(t)}
    if not states:
        return "nothing saved"
    return states.pop() if len(states) == 1 else "mixed"


# --- 1. what backward frees, and what it leaves ------------------------------------------

def _chain():
    w = torch.tensor(2.0, requires_grad=True)
    u = w * 3
    loss = u ** 2
    return w, u, loss


@predict_then_run(
    "06.walk-after-backward", Sequence(),
    prompt="w = torch.tensor(2.0, requires_grad=True); loss = (w * 3) ** 2; loss.backward(). Now walk "
           "loss.grad_fn (every node once, depth first, next_functions in order, skipping None). Which "
           "node names do you meet, in order? Answer [] if nothing is left to walk.",
    explain="backward releases the values the nodes kept, not the nodes: grad_fn and next_functions "
            "still lead from the loss to the leaf, so walking and drawing the graph keep working.",
    misconceptions=[([], "backward frees the values the nodes saved, not the nodes: loss.grad_fn still leads to "
                         "the leaf")],
)
def walk_after_backward():
    w, u, loss = _chain()
    loss.backward()
    return probes.node_names(loss)


@predict_then_run(
    "06.saved-after-backward", Choice(*SAVED_STATES),
    prompt="Same program: before backward, probes.saved_tensors(loss) reports every saved tensor as "
           "'ok'. After loss.backward(), what does it report for them: 'ok', 'freed', 'stale', 'mixed' "
           "(some of each) or 'nothing saved'?",
    explain="Each node drops its saved values as soon as it has used them, because one forward and one "
            "backward is the common case and keeping them would only cost memory.",
    misconceptions=[("ok", "without retain_graph=True, each node releases what it saved once its backward rule "
                           "has used it")],
)
def saved_after_backward():
    w, u, loss = _chain()
    loss.backward()
    return _state_label(loss)


@predict_then_run(
    "06.second-backward", Error("at the first backward", "at the second backward", needs_message=True,
                                terms=SECOND_PASS_TERMS),
    prompt="w = torch.tensor(2.0, requires_grad=True); loss = (w * 3) ** 2; loss.backward(); "
           "loss.backward(). Where does it fail ('no error', 'at the first backward', 'at the second "
           "backward'), and what does the message say? Answer a pair (place, your words for it): the place "
           "is graded exactly, the words on the message's key idea.",
    explain="The second pass reaches the power node, whose saved input the first pass released; torch "
            "refuses rather than differentiate without it.",
)
def second_backward():
    w, u, loss = _chain()
    yield "at the first backward"
    loss.backward()
    yield "at the second backward"
    loss.backward()


@predict_then_run(
    "06.nothing-saved", Error("at the first backward", "at the second backward"),
    prompt="w = torch.ones(2, requires_grad=True); loss = (w + 1).sum(); loss.backward(); loss.backward(). "
           "Where does it fail: 'no error', 'at the first backward' or 'at the second backward'?",
    explain="Neither an addition nor a sum needs a forward value for its backward rule, so nothing was "
            "saved and nothing was freed: the graph can be traversed again, and w.grad adds up to 2.",
    misconceptions=[("at the second backward", "the error is about saved values that were freed, not about "
                                               "walking a graph twice; an addition and a sum save none")],
)
def nothing_saved():
    w = torch.ones(2, requires_grad=True)
    loss = (w + 1).sum()
    yield "at the first backward"
    loss.backward()
    yield "at the second backward"
    loss.backward()


# --- 2. when retain_graph is right ---------------------------------------------------------

def _two_losses():
    w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    c = torch.tensor([3.0, -1.0, 0.5])
    h = (w * c).tanh()
    return w, c, h, (h ** 2).sum(), (h * c).sum()


@predict_then_run(
    "06.shared-intermediate", Error("at loss_a.backward()", "at loss_b.backward()"),
    prompt="w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True); c = torch.tensor([3.0, -1.0, 0.5]); "
           "h = (w * c).tanh(); loss_a = (h ** 2).sum(); loss_b = (h * c).sum(); loss_a.backward(); "
           "loss_b.backward(). Where does it fail: 'no error', 'at loss_a.backward()' or 'at "
           "loss_b.backward()'?",
    explain="Both losses lead back through the tanh node. The first backward ran it and released the "
            "output it had kept, so the second backward finds that value gone.",
    misconceptions=[("no error", "loss_b is a different loss, but its graph shares the tanh node with loss_a's, "
                                 "and loss_a's pass released the output that node kept")],
)
def shared_intermediate():
    w, c, h, loss_a, loss_b = _two_losses()
    yield "at loss_a.backward()"
    loss_a.backward()
    yield "at loss_b.backward()"
    loss_b.backward()


# --- 3. when retain_graph hides a bug ------------------------------------------------------

def _stale_loop(steps=5, lr=0.02):
    x = torch.tensor([1.0, 2.0, 3.0])
    target = 3 * x
    w = torch.tensor(0.0, requires_grad=True)
    loss = ((w * x - target) ** 2).mean()
    grads, values = [], []
    for _ in range(steps):
        loss.backward(retain_graph=True)
        grads.append(w.grad.item())
        values.append(w.item())
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return grads, values


@predict_then_run(
    "06.stale-loop", Number(tol=1e-4),
    prompt="x = torch.tensor([1.0, 2.0, 3.0]); target = 3 * x; w = torch.tensor(0.0, requires_grad=True); "
           "loss = ((w * x - target) ** 2).mean() is computed ONCE, before the loop. Then 5 steps of: "
           "loss.backward(retain_graph=True); read w.grad; w -= 0.02 * w.grad (under no_grad); "
           "w.grad = None. What is w.grad at step 0 and at step 4? Answer [step 0, step 4].",
    explain="Every backward walks the one graph built when w was 0, with the values saved then; w moves, "
            "but nothing re-records the loss at the new w, so the gradient never changes.",
    misconceptions=[(lambda truth: [truth[0], truth[0] / 2],
                     "a shrinking gradient needs a loss recorded at the new w; this loss was recorded once, at "
                     "w = 0, and every pass reads the values saved then")],
)

def stale_loop():
    grads, _ = _stale_loop()
    return [grads[0], grads[4]]


def _mlp_stale(iterations=3):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    loss = ((model(x) - y) ** 2).mean()          # recorded once, before the loop
    for i in range(1, iterations + 1):
        opt.zero_grad()
        yield f"at iteration {i}"
        loss.backward(retain_graph=True)
        opt.step()


@predict_then_run(
    "06.stale-mlp", Error("at iteration 1", "at iteration 2", "at iteration 3", terms=INPLACE_TERMS),
    prompt="torch.manual_seed(0); model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)); "
           "opt = torch.optim.SGD(model.parameters(), lr=0.1); x, y = torch.randn(8, 3), torch.randn(8, 1); "
           "loss = ((model(x) - y) ** 2).mean() is computed ONCE. Then 3 iterations of: opt.zero_grad(); "
           "loss.backward(retain_graph=True); opt.step(). At which iteration's backward does it raise, if at "
           "all ('no error', 'at iteration 1', 'at iteration 2', 'at iteration 3')? The place is graded "
           "exactly; you may add your words for the message, graded on its key idea.",
    explain="The second Linear kept its weight to send a gradient back to the tanh output. opt.step() writes "
            "that weight in place, so the second pass over the retained graph finds a saved tensor whose "
            "version moved: the stale graph is caught here only because it kept a parameter.",
    misconceptions=[("no error", "in the scalar example the graph kept only an input and constants; this one "
                                 "kept a Linear's weight, which opt.step() writes in place")],
)
def stale_mlp():
    yield from _mlp_stale()


# --- 4. running_loss += loss ------------------------------------------------------------------

def _training(steps, keep):
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    running_loss = 0.0
    for _ in range(steps):
        X, Y = torch.randn(16, 4), torch.randn(16)
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.01 * w.grad
        w.grad = None
        running_loss += keep(loss)
    return running_loss


@predict_then_run(
    "06.running-loss-nodes", Number(tol=0),
    prompt="A training loop: w = torch.randn(4, requires_grad=True); running_loss = 0.0; each step makes "
           "X, Y = torch.randn(16, 4), torch.randn(16), computes loss = ((X @ w - Y) ** 2).mean(), "
           "calls loss.backward(), updates w under no_grad, and does running_loss += loss. After 100 "
           "steps, how many nodes does the graph under running_loss hold (probes.size(running_loss))?",
    explain="running_loss is a tensor built by additions of losses, so it holds every step's graph: five "
            "nodes per step (the addition, mean, power, subtraction and matrix-vector product), and one "
            "AccumulateGrad shared by all of them.",
    misconceptions=[(lambda truth: 0, "running_loss += loss adds tensors, so running_loss is a tensor with a "
                                      "graph; only loss.item() or loss.detach() would add none")],
)
def running_loss_nodes():
    return probes.size(_training(100, keep=lambda loss: loss))


@predict_then_run(
    "06.running-loss-saved", Choice(*SAVED_STATES),
    prompt="Same loop, 100 steps. What does probes.saved_tensors(running_loss) report for the saved "
           "tensors in all those graphs: 'ok', 'freed', 'stale', 'mixed' or 'nothing saved'?",
    explain="Each step's backward already released that step's saved values. What running_loss keeps "
            "alive is the chain of node objects, which grows by one graph per step and is never freed "
            "while running_loss lives.",
    misconceptions=[("ok", "each step's backward ran over that step's graph and released what it saved; "
                           "running_loss keeps the nodes, not their values")],
)
def running_loss_saved():
    return _state_label(_training(100, keep=lambda loss: loss))


# --- 5. create_graph: differentiating a backward pass ------------------------------------------

def _sin_square(value=2.0):
    x = torch.tensor(value, requires_grad=True)
    return x, torch.sin(x ** 2)


@predict_then_run(
    "06.sin-derivatives", Number(),
    prompt="x = torch.tensor(2.0, requires_grad=True); z = torch.sin(x ** 2); "
           "(g,) = torch.autograd.grad(z, x, create_graph=True); (h,) = torch.autograd.grad(g, x). "
           "What are g and h (dz/dx and d2z/dx2 at x = 2)? Answer [g, h] to 4 decimals.",
    explain="dz/dx = 2x cos(x^2) and d2z/dx2 = 2 cos(x^2) - 4x^2 sin(x^2). create_graph=True made the "
            "backward pass record its own operations, so g has a graph and can be differentiated again.",
)
def sin_derivatives():
    x, z = _sin_square()
    (g,) = torch.autograd.grad(z, x, create_graph=True)
    (h,) = torch.autograd.grad(g, x)
    return [g.item(), h.item()]


def _differentiable_again(flag: str) -> bool:
    x, z = _sin_square()
    options = {"plain": {}, "retain_graph": {"retain_graph": True}, "create_graph": {"create_graph": True}}
    (g,) = torch.autograd.grad(z, x, **options[flag])
    if g.grad_fn is None:
        return False
    torch.autograd.grad(g, x)
    return True


FLAGS = ("plain", "retain_graph", "create_graph")


@predict_then_run(
    "06.which-flag", Names(pool=FLAGS),
    prompt="For z = torch.sin(x ** 2) at x = 2, the first gradient is taken three ways: "
           "torch.autograd.grad(z, x) ('plain'), with retain_graph=True ('retain_graph') and with "
           "create_graph=True ('create_graph'). For which of them does the returned g have a grad_fn, "
           "so that torch.autograd.grad(g, x) works? Answer a set of the labels.",
    explain="retain_graph only keeps the forward graph's saved values for another pass; it records "
            "nothing. create_graph records the backward computation itself, which is what a second "
            "derivative differentiates.",
    misconceptions=[({"retain_graph", "create_graph"}, "retain_graph keeps the forward graph's saved values "
                     "for another pass over it; it records nothing, so the gradient it returns has no grad_fn")],
)
def which_flag():
    return {flag for flag in FLAGS if _differentiable_again(flag)}


# --- 6. backward(create_graph=True) and a reference cycle ------------------------------------

def _survives(how: str) -> bool:
    """Does a parameter outlive its last name and a gc.collect() after a create_graph pass?"""
    w = torch.randn(1000, requires_grad=True)
    ref = weakref.ref(w)
    loss = (w.sin() ** 2).sum()
    if how == "backward":
        loss.backward(create_graph=True)
    elif how == "autograd.grad":
        (g,) = torch.autograd.grad(loss, w, create_graph=True)
        del g
    elif how == "backward, then grad = None":
        loss.backward(create_graph=True)
        w.grad = None
    del w, loss
    gc.collect()
    return ref() is not None


@predict_then_run(
    "06.cycle-survives", Boolean(),
    prompt="w = torch.randn(1000, requires_grad=True); ref = weakref.ref(w); loss = (w.sin() ** 2).sum(); "
           "loss.backward(create_graph=True); del w, loss; gc.collect(). Is ref() still alive "
           "(ref() is not None)?",
    explain="w.grad now has a graph, and that graph ends at w's AccumulateGrad node, which holds w: w -> "
            "w.grad -> its grad_fn -> ... -> AccumulateGrad -> w. Every link is a C++ reference count, with no "
            "Python object on the cycle, so no collector ever visits it and it is never freed.",
    misconceptions=[(lambda truth: not truth, "gc.collect() finds cycles among Python objects only; this cycle "
                                              "is made entirely of C++ references inside torch")],
)
def cycle_survives():
    return _survives("backward")


# --- self-test ------------------------------------------------------------------------------------

@self_test(
    "06.closed-book-relu-twice", Error("at the first backward", "at the second backward", needs_message=True,
                                       terms=SECOND_PASS_TERMS),
    prompt="x = torch.randn(5, requires_grad=True); loss = x.relu().sum(); loss.backward(); loss.backward(). "
           "Where does it fail: 'no error', 'at the first backward' or 'at the second backward'? For an error, "
           "answer a pair (place, your words for what the message says): the place is graded exactly, the "
           "words on the message's key idea.",
    explain="ReLU keeps its output to know where the gradient passes; the first backward released it.",
    hints=("Does ReLU's backward rule need any value from the forward pass?",
           "ReLU passes the gradient where its output was positive, so it kept its output; the first backward "
           "released what it kept."),
    misconceptions=[("no error", "ReLU needs to know where its output was positive, so it kept its output, and "
                                 "the first pass released it")],
)
def closed_book_relu_twice():
    x = torch.randn(5, requires_grad=True)
    loss = x.relu().sum()
    yield "at the first backward"
    loss.backward()
    yield "at the second backward"
    loss.backward()


def _exp_times_self():
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    return x, (x.exp() * x).sum()


@self_test(
    "06.closed-book-create-keeps", Choice(*SAVED_STATES),
    prompt="x = torch.tensor([0.5, 1.5], requires_grad=True); z = (x.exp() * x).sum(); "
           "torch.autograd.grad(z, x, create_graph=True). What does probes.saved_tensors(z) report for "
           "z's saved tensors now: 'ok', 'freed', 'stale', 'mixed' or 'nothing saved'?",
    explain="retain_graph defaults to the value of create_graph: a pass that records itself for a second "
            "derivative keeps the first graph's saved values, because the second pass will need them.",
    hints=("What is retain_graph when you pass only create_graph=True?",
           "A pass that records itself for a second derivative must keep the first graph's saved values: the "
           "second pass reads them."),
    misconceptions=[("freed", "retain_graph defaults to create_graph, so this pass kept the saved values")],
)
def closed_book_create_keeps():
    x, z = _exp_times_self()
    torch.autograd.grad(z, x, create_graph=True)
    return _state_label(z)


@self_test(
    "06.closed-book-cube", Number(),
    prompt="x = torch.tensor(1.5, requires_grad=True); z = x ** 3 - 2 * x. Using autograd twice, what is "
           "d2z/dx2 at x = 1.5?",
    explain="The first derivative 3x^2 - 2 must carry a graph (create_graph=True) to be differentiated "
            "again; its derivative is 6x.",
    hints=("The first autograd.grad must return a gradient that has a graph of its own.",
           "dz/dx = 3x^2 - 2; differentiate that once more and evaluate at 1.5."),
    misconceptions=[(lambda truth: truth * 1.5 / 2 - 2, "that is the first derivative; differentiate it once more")],
)
def closed_book_cube():
    x = torch.tensor(1.5, requires_grad=True)
    z = x ** 3 - 2 * x
    (g,) = torch.autograd.grad(z, x, create_graph=True)
    (h,) = torch.autograd.grad(g, x)
    return h.item()


CYCLE_WAYS = ("exp, backward", "linear, backward", "exp, autograd.grad", "exp, hook closure")


def _alive_after(way: str) -> bool:
    w = torch.randn(500, requires_grad=True)
    ref = weakref.ref(w)
    c = torch.linspace(-1, 1, 500)
    if way == "exp, backward":
        w.exp().sum().backward(create_graph=True)
    elif way == "linear, backward":
        (w * c).sum().backward(create_graph=True)
    elif way == "exp, autograd.grad":
        (g,) = torch.autograd.grad(w.exp().sum(), w, create_graph=True)
        del g
    elif way == "exp, hook closure":
        w.register_hook(lambda grad: grad * w.detach())
        w.exp().sum().backward()
    del w
    gc.collect()
    return ref() is not None


@self_test(
    "06.closed-book-grad-cycle", Names(pool=CYCLE_WAYS),
    prompt="w = torch.randn(500, requires_grad=True); ref = weakref.ref(w); c = torch.linspace(-1, 1, 500). "
           "Four separate runs: 'exp, backward': w.exp().sum().backward(create_graph=True); 'linear, backward': "
           "(w * c).sum().backward(create_graph=True); 'exp, autograd.grad': (g,) = torch.autograd.grad("
           "w.exp().sum(), w, create_graph=True), then del g; 'exp, hook closure': w.register_hook(lambda grad: "
           "grad * w.detach()), then w.exp().sum().backward(). Each run ends with del w and gc.collect(). In "
           "which runs is ref() still alive? Answer a set of the labels.",
    explain="Only a gradient that depends on w and is stored in w.grad closes the loop w -> w.grad -> its graph "
            "-> AccumulateGrad -> w, made of C++ references that no collector visits. A loss linear in w has a "
            "gradient with no graph; autograd.grad stores nothing on w; and a cycle through a Python closure "
            "is made of Python objects, which gc.collect() finds and frees.",
    hints=("For each run ask: is there a loop of references from w back to w, and is every link of it inside "
           "torch's C++ objects?",
           "The loop needs w.grad to hold a graph that reaches w: the gradient must depend on w and be stored on "
           "w. A loop through a Python function (a hook's closure) is one gc.collect() can see and free."),
    misconceptions=[
        (lambda truth: set(truth) | {"linear, backward"}, "the gradient of (w * c).sum() is c: it does not depend "
                                                          "on w, so it has no graph and nothing leads back to w"),
        (lambda truth: set(truth) | {"exp, hook closure"}, "that cycle runs through a Python closure, which "
                                                           "Python's collector can see and free"),
    ],
)
def closed_book_grad_cycle():
    return {way for way in CYCLE_WAYS if _alive_after(way)}


def _best_loss(steps: int):
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    best = None
    for _ in range(steps):
        X, Y = torch.randn(16, 4), torch.randn(16)
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.01 * w.grad
        w.grad = None
        if best is None or loss < best:
            best = loss
    return best


@self_test(
    "06.closed-book-detached-running", Number(tol=0),
    prompt="The training loop of 06.running-loss-nodes (100 steps), but instead of a running sum it keeps the "
           "lowest loss so far: if best is None or loss < best: best = loss. After 100 steps, how many nodes "
           "does the graph under best hold (probes.size(best))?",
    explain="best is one step's loss tensor: it holds that step's graph (mean, power, subtraction, "
            "matrix-vector product and w's AccumulateGrad), no more. A comparison records nothing.",
    hints=("Does loss < best record an operation? Does best = loss make a new tensor?",
           "best is one step's loss, with that step's graph; count the nodes of one step's graph."),
    misconceptions=[(lambda truth: 0, "best = loss keeps the loss tensor itself, with its grad_fn and the graph "
                                      "under it")],
)
def closed_book_detached_running():
    return probes.size(_best_loss(100))


# --- exercise helpers: clear messages when a learner's function raises --------------------------

_GRADER_DIR = os.path.dirname(os.path.abspath(grader.__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_MESSAGES: dict[str, str] = {}


def _live_messages() -> dict[str, str]:
    """The stable parts of three torch errors, measured once, to recognise a learner's error."""
    if _MESSAGES:
        return _MESSAGES

    def message_of(action) -> str:
        try:
            with torch_state.clean_room():
                action()
        except Exception as exc:
            return stable_part(str(exc))
        return ""

    def twice():
        w, u, loss = _chain()
        loss.backward()
        loss.backward()

    def no_graph():
        x = torch.ones(2, requires_grad=True)
        torch.autograd.grad(torch.ones(2).sum(), x)

    def unused():
        x = torch.ones(2, requires_grad=True)
        y = torch.ones(2, requires_grad=True)
        torch.autograd.grad((y * 2).sum(), x)

    _MESSAGES.update(second_time=message_of(twice), no_graph=message_of(no_graph), unused=message_of(unused))
    return _MESSAGES


def _where(exc: BaseException) -> str:
    """' (in name, line N)' for the innermost frame that is neither the grader's nor torch's."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith((_GRADER_DIR, _TORCH_DIR))]
    if not frames:
        return ""
    f = frames[-1]
    cell = " of its cell" if "ipykernel" in f.filename or f.filename.startswith("<ipython-input") else ""
    return f" (in {f.name}, line {f.lineno}{cell})"


def _relabel(exc: Exception, prefix: str, hints: dict[str, str]) -> Exception:
    """The same kind of exception, its message cut to the stable part, with where and a hint."""
    text = " ".join(str(exc).split())
    part = stable_part(text) if text else type(exc).__name__
    hint = next((h for key, h in hints.items() if part and part == _live_messages().get(key)), "")
    message = f"{prefix}{part}{_where(exc)}" + (f". {hint}" if hint else "")
    try:
        new = type(exc)(message)
    except Exception:
        new = RuntimeError(message)
    return new


def _close(a, b, tol=1e-4, rel=1e-4) -> bool:
    return len(a) == len(b) and all(
        math.isfinite(x) and math.isfinite(y) and abs(x - y) <= tol + rel * abs(x) for x, y in zip(a, b))


def _numbers(t) -> tuple:
    return tuple(float(v) for v in t.detach().reshape(-1).tolist())


# --- exercise 1: two losses sharing an intermediate, three ways ----------------------------------

WAYS = ("retain_graph", "two_forwards", "one_call")
# way -> (forward calls, backward passes through the shared intermediate h)
RULES = {"retain_graph": (1, 2), "two_forwards": (2, 2), "one_call": (1, 1)}
WAY_WORDS = {
    "retain_graph": "runs forward once and backward twice through that one graph (retain_graph=True on the "
                    "first)",
    "two_forwards": "runs forward twice and backpropagates each loss through its own graph",
    "one_call": "runs forward once and walks the graph once: a single torch.autograd.grad call on "
                "torch.stack([loss_a, loss_b]) with grad_outputs=torch.eye(2), is_grads_batched=True",
}


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")

SHARED = ["(w * c).tanh()", "w.sin() * w", "(w ** 2 + 1).log()", "(w * c).sigmoid()",
          "w.cumsum(0).sin()", "(w - c).exp() * 0.5"]
LOSSES = ["(h ** 2).sum()", "(h * d).sum()", "h.logsumexp(0)", "(h * c).sum() + w.sin().sum()",
          "(h - d).pow(2).mean()", "h.prod()", "(h * w).sum()"]


@dataclass
class TwoLossCase:
    """w, constants c and d, and forward(w) -> (loss_a, loss_b) sharing the intermediate h."""

    seed: int
    w: list
    c: list
    d: list
    shared: str
    loss_a: str
    loss_b: str

    def _lines(self, probe: bool) -> list[str]:
        lines = [f"c = torch.tensor({self.c})", f"d = torch.tensor({self.d})", "",
                 "def forward(w):", f"    h = {self.shared}          # shared by both losses"]
        if probe:
            lines.append("    _shared(h)")
        lines += [f"    loss_a = {self.loss_a}", f"    loss_b = {self.loss_b}", "    return loss_a, loss_b", "",
                  f"w = torch.tensor({self.w}, requires_grad=True)"]
        return lines

    @property
    def source(self) -> str:
        return "\n".join(self._lines(probe=False))

    @property
    def size(self) -> int:
        return len(self.w) + sum(text.count("(") for text in (self.shared, self.loss_a, self.loss_b))

    @property
    def label(self) -> str:
        return f"case #{self.seed} (w of {len(self.w)})"

    output = "forward"

    def fresh(self, counter: _Counter | None = None) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch, "_shared": counter.saw if counter else (lambda h: None)}
        exec(compile("\n".join(self._lines(probe=True)), f"<two-loss case #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        if counter is not None:
            counter.wrap(ns)
        return ns

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        ns = ns if ns is not None else self.fresh()
        loss_a, loss_b = ns["forward"](ns["w"])
        names = {"w": ns["w"]}
        return ("loss_a:\n" + probes.text_tree(loss_a, names=names) +
                "\nloss_b:\n" + probes.text_tree(loss_b, names=names))

    def __repr__(self):
        return f"<{self.label}>"


class _Counter:
    """Counts forward calls and backward passes through h (a hook on h, registered by forward)."""

    def __init__(self):
        self.forwards = 0
        self.passes = 0

    def saw(self, h):
        if isinstance(h, torch.Tensor) and h.requires_grad:
            try:
                h.register_hook(self._passed)
            except Exception:
                pass

    def _passed(self, grad):
        self.passes += 1

    def wrap(self, ns):
        inner = ns["forward"]

        def forward(w):
            self.forwards += 1
            return inner(w)
        forward.__name__ = "forward"
        forward.__doc__ = inner.__doc__
        ns["forward"] = forward


def _two_loss_cases(count: int = 24, seed: int = 606) -> list[TwoLossCase]:
    with torch_state.clean_room():
        return _generate_two_loss_cases(count, seed)


def _generate_two_loss_cases(count: int, seed: int) -> list[TwoLossCase]:
    found, sources = [], set()
    for i in range(count * 20):
        if len(found) >= count:
            break
        rng = random.Random(seed * 10_007 + i)
        n = rng.choice([2, 3, 4])
        a, b = rng.sample(LOSSES, 2)
        case = TwoLossCase(seed=seed * 10_007 + i, w=_literal(rng, n), c=_literal(rng, n), d=_literal(rng, n),
                           shared=rng.choice(SHARED), loss_a=a, loss_b=b)
        if case.source in sources:
            continue
        try:
            ga, gb = _two_loss_truth(case)
        except Exception:
            continue
        # keep cases whose two gradients are finite, differ, and differ from their sum
        if not all(math.isfinite(v) and abs(v) < 1e3 for v in ga + gb):
            continue
        if _close(ga, gb, 1e-3) or _close(ga, tuple(x + y for x, y in zip(ga, gb)), 1e-3) or \
                _close(gb, tuple(x + y for x, y in zip(ga, gb)), 1e-3):
            continue
        sources.add(case.source)
        found.append(case)
    found.sort(key=lambda c: (c.size, c.seed))
    return found


def _literal(rng: random.Random, n: int) -> list:
    return [rng.choice([-1, 1]) * rng.randint(1, 15) / 10 for _ in range(n)]


def _two_loss_truth(case: TwoLossCase) -> tuple[tuple, tuple]:
    """torch.func's Jacobian of (loss_a, loss_b) at w: a route none of the three ways takes."""
    ns = case.fresh()
    forward = ns["forward"]
    jac = torch.func.jacrev(lambda w: torch.stack(forward(w)))(ns["w"].detach())
    return _numbers(jac[0]), _numbers(jac[1])


class GradPairs(Kind):
    """For each way, the pair (gradient of loss_a, gradient of loss_b) as flat tuples of numbers."""

    label = "a pair of gradients for each way"

    def __init__(self, tol: float = 1e-4, rel: float = 1e-4):
        self.tol, self.rel = tol, rel

    def describe(self):
        return "for each way, a pair (gradient of loss_a, gradient of loss_b)"

    def read(self, answer):
        if not isinstance(answer, (list, tuple)) or len(answer) != len(WAYS):
            raise BadAnswer(f"expected {self.describe()}")
        out = []
        for entry, way in zip(answer, WAYS):
            if not isinstance(entry, (list, tuple)) or len(entry) != 3 or entry[0] != way:
                raise BadAnswer(f"expected {self.describe()}")
            out.append((way, tuple(float(v) for v in entry[1]), tuple(float(v) for v in entry[2])))
        return tuple(out)

    def agrees(self, truth, value):
        return all(_close(t[1], v[1], self.tol, self.rel) and _close(t[2], v[2], self.tol, self.rel)
                   for t, v in zip(truth, value))

    @staticmethod
    def _vec(values) -> str:
        return "[" + ", ".join(f"{v:.4f}" for v in values) + "]"

    def show(self, value):
        if all(v[1:] == value[0][1:] for v in value):
            return f"grad_a {self._vec(value[0][1])}, grad_b {self._vec(value[0][2])} (every way)"
        return "\n".join(f"{way}: grad_a {self._vec(a)}, grad_b {self._vec(b)}" for way, a, b in value)

    def encode(self, value):
        return [[way, list(a), list(b)] for way, a, b in value]

    def verdict_note(self, truth, value):
        for (way, ta, tb), (_, va, vb) in zip(truth, value):
            if _close(ta, va) and _close(tb, vb):
                continue
            both = tuple(x + y for x, y in zip(ta, tb))
            if _close(va, both) and _close(vb, both):
                why = ("both are grad_a + grad_b: one torch.autograd.grad call over [loss_a, loss_b] adds "
                       "their gradients; ask for each loss separately (is_grads_batched=True)")
            elif _close(va, ta) and _close(vb, both):
                why = ("your grad_b is grad_a + grad_b: w.grad still held the first gradient when the second "
                       "backward added to it; clone the first and set w.grad = None between the two")
            elif _close(va, tb) and _close(vb, ta):
                why = "grad_a and grad_b are swapped"
            elif _close(va, tb) and _close(vb, tb):
                why = ("your grad_a came out equal to grad_b: it was w.grad itself, which the second pass "
                       "changed in place; keep a .clone() of the first gradient")
            elif _close(va, vb):
                why = "your two gradients have the same values"
            else:
                why = "compare it with the gradients torch.func computes for this case"
            return f"way {way!r} disagrees with torch: {why}"
        return ""


class _Words(str):
    """Text that shows as itself in a message (short() would quote a plain string)."""

    def __repr__(self):
        return str(self)


class _Results:
    """What the learner's function returned for each way, with the counts the grader observed."""

    def __init__(self):
        self.rows: list[tuple[str, Any, int, int, tuple]] = []
        self.focus: tuple[str, Any] | None = None    # the way and value a message is about

    def __repr__(self):
        if self.focus is None:
            return "a result for each way"
        way, value = self.focus
        return f"{short(value)} for way={way!r}"


def _call_two(fn, case: TwoLossCase, ns):
    results = _Results()
    hints = {"second_time": "Pass retain_graph=True to the first backward, or run forward again"}
    for way in WAYS:
        counter = _Counter()
        fresh = case.fresh(counter)
        try:
            out = fn(fresh["forward"], fresh["w"], way)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _relabel(exc, f"with way={way!r}: ", hints) from None
        results.rows.append((way, out, counter.forwards, counter.passes, tuple(fresh["w"].shape)))
    return results


def _grad_tuple(value, shape, which) -> tuple:
    if value is None:
        raise BadAnswer(f"its {which} is None: read the gradient before it is cleared, or take it from what "
                        "torch.autograd.grad returns")
    if not isinstance(value, torch.Tensor):
        raise BadAnswer(f"its {which} is {short(value)}: return tensors shaped like w")
    if tuple(value.shape) != shape:
        raise BadAnswer(f"its {which} has shape {tuple(value.shape)}; w has shape {shape}")
    return _numbers(value)


def _convert_two(raw, case, ns):
    if not isinstance(raw, _Results):
        raise BadAnswer("the grader could not read what your function returned")
    out = []
    for way, value, forwards, passes, shape in raw.rows:
        raw.focus = (way, value)
        try:
            pair_ok = len(value) == 2 and not isinstance(value, (str, dict))
        except TypeError:
            pair_ok = False
        if not pair_ok:
            raise BadAnswer("return a pair (grad_a, grad_b)")
        grad_a = _grad_tuple(value[0], shape, "grad_a")
        grad_b = _grad_tuple(value[1], shape, "grad_b")
        want = RULES[way]
        if (forwards, passes) != want:
            raw.focus = (way, _Words("two gradients"))
            raise BadAnswer(
                f"but it ran forward {_times(forwards)} and backward through the shared h {_times(passes)}; "
                f"the {way!r} way {WAY_WORDS[way]}")
        out.append((way, grad_a, grad_b))
    raw.focus = None
    return tuple(out)


@exercise(
    "06.two-losses",
    Function(returns=GradPairs(), cases=_two_loss_cases, call=_call_two, convert=_convert_two),
    prompt="Write two_gradients(forward, w, way): forward(w) returns (loss_a, loss_b), two losses that share "
           "an intermediate; return (gradient of loss_a, gradient of loss_b) with respect to w, computed "
           "the named way: 'retain_graph' (one forward, two backward passes), 'two_forwards' (a forward "
           "pass per loss) or 'one_call' (one forward and a single torch.autograd.grad call that returns "
           "both gradients separately). Checked on generated cases against torch.func.",
    explain="The three ways agree because they differentiate the same function. They differ in cost: "
            "retain_graph keeps the saved values for a second pass; two forwards recompute the shared "
            "part; one batched call walks the graph once with two seeds.",
    hints=("Each way must leave w.grad alone between the two gradients, or read the gradients from "
           "torch.autograd.grad's return value.",
           "'retain_graph': the first backward needs retain_graph=True, and the first gradient must be cloned "
           "before the second pass adds to w.grad. 'two_forwards': call forward once per loss.",
           "'one_call': torch.autograd.grad(torch.stack([loss_a, loss_b]), w, grad_outputs=torch.eye(2), "
           "is_grads_batched=True) returns one row per loss."),
)
def two_losses(case):
    ga, gb = _two_loss_truth(case)
    return tuple((way, ga, gb) for way in WAYS)


# --- exercise 2: a Hessian-vector product with create_graph=True ---------------------------------

TERMS = [
    "x.sin().sum()", "(x ** 3).sum() / 3", "(x * a).exp().sum()", "(x ** 2 * a).sum()",
    "(x.cumsum(0) ** 2).sum()", "(x @ x).cos()", "x.tanh().pow(2).sum()", "torch.log1p(x ** 2).sum()",
    "(x[0] * x[-1]).sin()", "(x * x.roll(1)).sum()", "(x @ a) ** 2", "x.logsumexp(0)",
    "x.sigmoid().prod()",
]


@dataclass
class SmoothCase:
    """A smooth f(x) -> scalar, a point x (a leaf that requires grad) and a direction v."""

    seed: int
    terms: list
    x: list
    v: list
    a: list

    @property
    def source(self) -> str:
        return "\n".join([f"a = torch.tensor({self.a})", "", "def f(x):",
                          "    return " + " + ".join(self.terms), "",
                          f"x = torch.tensor({self.x}, requires_grad=True)", f"v = torch.tensor({self.v})"])

    @property
    def size(self) -> int:
        return len(self.x) + 2 * len(self.terms)

    @property
    def label(self) -> str:
        return f"case #{self.seed} (x of {len(self.x)}, {len(self.terms)} term(s))"

    output = "f"

    def fresh(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch}
        exec(compile(self.source, f"<smooth case #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        return ns

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        ns = ns if ns is not None else self.fresh()
        return probes.text_tree(ns["f"](ns["x"]), names={"x": ns["x"]})

    def __repr__(self):
        return f"<{self.label}>"


def _hvp_truth(case: SmoothCase, ones: bool = False) -> tuple:
    """torch.func: the derivative of grad(f) along v (forward over reverse), a route autograd.grad does not take."""
    ns = case.fresh()
    v = torch.ones_like(ns["v"]) if ones else ns["v"]
    _, hv = torch.func.jvp(torch.func.grad(ns["f"]), (ns["x"].detach(),), (v,))
    return _numbers(hv)


def _smooth_cases(count: int = 24, seed: int = 616) -> list[SmoothCase]:
    with torch_state.clean_room():
        return _generate_smooth_cases(count, seed)


def _generate_smooth_cases(count: int, seed: int) -> list[SmoothCase]:
    found, sources = [], set()
    for i in range(count * 20):
        if len(found) >= count:
            break
        rng = random.Random(seed * 10_007 + i)
        n = rng.choice([2, 3, 4])
        k = 1 if i < 8 else rng.choice([1, 2, 2, 3])
        case = SmoothCase(seed=seed * 10_007 + i, terms=rng.sample(TERMS, k), x=_literal(rng, n),
                          v=_literal(rng, n), a=_literal(rng, n))
        if case.source in sources:
            continue
        try:
            truth = _hvp_truth(case)
            ns = case.fresh()
            (g,) = torch.autograd.grad(ns["f"](ns["x"]), ns["x"], create_graph=True)
            if g.grad_fn is None:
                continue
            (hv,) = torch.autograd.grad(g @ ns["v"], ns["x"])
            plain = _numbers(g)
        except Exception:
            continue
        if not all(math.isfinite(t) and abs(t) < 1e3 for t in truth) or not _close(truth, _numbers(hv)):
            continue
        # keep cases where the HVP differs from the gradient, from zero and from H @ ones
        if _close(truth, plain, 1e-3) or all(abs(t) < 1e-3 for t in truth) or \
                _close(truth, _hvp_truth(case, ones=True), 1e-3):
            continue
        sources.add(case.source)
        found.append(case)
    found.sort(key=lambda c: (c.size, c.seed))
    return found


def _call_hvp(fn, case: SmoothCase, ns):
    hints = {
        "no_graph": "Take the first gradient with create_graph=True; retain_graph=True records nothing",
        "unused": "Keep the first gradient attached to x: create_graph=True, no .detach()",
        "second_time": "create_graph=True keeps what the second pass needs",
    }
    try:
        return fn(ns["f"], ns["x"], ns["v"])
    except NotImplementedError:
        raise
    except Exception as exc:
        raise _relabel(exc, "", hints) from None


def _convert_hvp(raw, case: SmoothCase, ns):
    x = ns["x"]
    if raw is None:
        raise BadAnswer("return the tensor H @ v (the function returned nothing)")
    if isinstance(raw, (tuple, list)) and len(raw) == 1 and isinstance(raw[0], torch.Tensor):
        raise BadAnswer("a tuple holding one tensor: torch.autograd.grad returns a tuple; return its first element")
    if not isinstance(raw, torch.Tensor):
        raise BadAnswer(f"expected a tensor shaped like x, got {short(raw)}")
    if tuple(raw.shape) != tuple(x.shape):
        raise BadAnswer(f"a tensor of shape {tuple(raw.shape)}; H @ v has the shape of x, {tuple(x.shape)}")
    value = _numbers(raw)
    with torch_state.clean_room():
        truth = _hvp_truth(case)
        if _close(truth, value):
            return list(value)
        fresh = case.fresh()
        (g,) = torch.autograd.grad(fresh["f"](fresh["x"]), fresh["x"])
        grad = _numbers(g)
        along_ones = _hvp_truth(case, ones=True)
    if _close(grad, value):
        raise BadAnswer("that is the gradient of f at x, not H @ v: differentiate (gradient * v).sum() once "
                        "more, with respect to x")
    if all(v == 0 for v in value):
        raise BadAnswer("all zeros: the second differentiation found no path back to x, so the first "
                        "gradient was taken without create_graph=True or was detached")
    if _close(along_ones, value):
        raise BadAnswer("that is H @ ones, the derivative of gradient.sum(): weight the gradient by v "
                        "before differentiating, (gradient * v).sum()")
    if _close(tuple(a + b for a, b in zip(grad, truth)), value):
        raise BadAnswer("that is the gradient plus H @ v: x.grad still held the first gradient when the second "
                        "backward added into it. torch.autograd.grad returns gradients and leaves x.grad alone")
    return list(value)


@exercise(
    "06.hvp",
    Function(returns=Number(tol=1e-4, rel=1e-4), cases=_smooth_cases, call=_call_hvp, convert=_convert_hvp),
    prompt="Write hvp(f, x, v): the Hessian of the scalar function f at x times the vector v, using "
           "torch.autograd.grad twice (the first with create_graph=True). x is a leaf that requires grad. "
           "Checked on generated smooth functions against torch.func.",
    explain="The first gradient, recorded with create_graph=True, is a function of x with its own graph; "
            "the derivative of its dot product with v is H v, obtained without ever forming H.",
    hints=("H @ v is the gradient, with respect to x, of the number (gradient of f at x) · v.",
           "Take the first gradient with create_graph=True so it has a graph; then differentiate (g * v).sum() "
           "with respect to x."),
)
def hvp(case):
    return list(_hvp_truth(case))
