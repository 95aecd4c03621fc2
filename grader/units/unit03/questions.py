"""Unit 03, observing gradients: retain_grad, tensor and node hooks, torch.autograd.grad.

Two exercises need their own cases (``cases.py``) and kinds (``kinds.py``):

* ``03.nonfinite-watch``: the learner's ``make_watch()`` returns ``(hook, report)``.
  The grader runs a small seeded training loop, registers ``hook`` on an
  intermediate every step, plants NaN or inf targets at random steps (sometimes
  none, sometimes large but finite decoys), and checks that the hook stayed
  silent before the first fault, raised nothing, left every gradient as it was,
  and that ``report()`` names the first bad step (``None`` when none was).
* ``03.three-ways``: the learner reads the gradient at an intermediate of a
  generated program by a hook, by ``retain_grad`` and by ``torch.autograd.grad``,
  and says which ``.grad`` fields each way left set.
"""

from __future__ import annotations

import torch

from grader.engine.kinds import Boolean, Choice, Error, Function, Names, Number, Sequence
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.unit03.cases import loop_cases, run_loop, run_watch, three_ways_cases
from grader.units.unit03.generators import leaf_second_program, retain_program, shared_program, untouched_program
from grader.units.unit03.kinds import WAYS_TO_READ, StepReport, ThreeWays, Watched
from grader.units.unit03.support import (
    backward_order,
    chain,
    detached_copy_program,
    hooks_registered_in_a_loop,
    names_with_grad,
    read_grad,
    ready_order_by_inputs,
    ready_order_walked,
    scaled,
    sin_cos_product,
    unhooked_grad,
)

# --- 1. computed, then dropped ----------------------------------------------------------


@predict_then_run(
    "03.where-grad-lands",
    Names(pool=("w", "c", "x", "h", "y")),
    prompt="w = torch.tensor(2.0, requires_grad=True); c = torch.tensor(3.0); x = w * c; "
    "h = x.detach().requires_grad_(); y = x ** 2 + h ** 2; y.backward(). Which of w, c, x, h, y have a .grad "
    "that is not None afterwards? Answer a set of names.",
    explain="backward writes .grad only through AccumulateGrad nodes, and only a leaf that requires grad has "
    "one. w is such a leaf; so is h: detach() made a new tensor with x's value and no history, and "
    "requires_grad_() made it a leaf of its own, reached by its own route. x and y are products of "
    "recorded operations, whose gradients pass through and are not kept; c needs no gradient.",
    misconceptions=[
        (
            lambda truth: {"w"},
            "h was cut from x's history by detach(), but requires_grad_() made it a leaf of its own: "
            "h ** 2 is recorded, and h's AccumulateGrad stores its gradient.",
        ),
        (
            lambda truth: {*truth, "x"},
            "x is the product w * c, not a leaf: its gradient was computed and passed on to w, and "
            "nothing stored it (retain_grad() would).",
        ),
    ],
)
def where_grad_lands():
    return names_with_grad(detached_copy_program())


@predict_then_run(
    "03.retain-grad-kept",
    Number(),
    prompt="The chain started at w = 0.5: w = torch.tensor(0.5, requires_grad=True); x = w * 3; x.retain_grad(); "
    "y = x ** 2; y.backward(). What are x.grad and w.grad? Answer [x.grad, w.grad].",
    explain="retain_grad() asks backward to keep the gradient that passes through x: dy/dx = 2x = 3 at x = 1.5. "
    "It changes nothing that is computed: w.grad is 3 * 3 = 9, the chain rule's product, as without it.",
)
def retain_grad_kept():
    w = torch.tensor(0.5, requires_grad=True)
    x = w * 3
    x.retain_grad()
    y = x**2
    y.backward()
    return [x.grad.item(), w.grad.item()]


# --- 2. tensor hooks ---------------------------------------------------------------------


@predict_then_run(
    "03.hook-sees",
    Number(),
    prompt="The chain again, started at w = 1 and without retain_grad: w = torch.tensor(1.0, requires_grad=True); "
    "x = w * 3; seen = []; x.register_hook(lambda g: seen.append(g.item())); y = x ** 2; y.backward(). "
    "What number is in seen?",
    explain="A tensor hook is called with the gradient with respect to that tensor as it passes, "
    "before it is sent on: the same dy/dx that retain_grad would have kept.",
)
def hook_sees():
    w, x, y = chain(1.0)
    seen = []
    x.register_hook(lambda g: seen.append(g.item()))
    y.backward()
    return seen[0] if len(seen) == 1 else seen


@predict_then_run(
    "03.hook-returns",
    Number(),
    prompt="The chain started at w = 3 (x = w * 3, y = x ** 2), with a hook written to 'see whether the gradient "
    "goes past 5': x.register_hook(lambda g: g.clamp(max=5)). After y.backward(), what is w.grad?",
    explain="A hook that returns a tensor replaces the gradient with it: the 18 arriving at x became 5, "
    "and the multiplication sent 5 * 3 on to w. A hook that only looks must return None.",
    misconceptions=[
        (
            lambda truth: unhooked_grad(3.0),
            "that is w.grad without the hook. The hook returned g.clamp(max=5), and a tensor returned by "
            "a hook replaces the gradient for everything further down.",
        )
    ],
)
def hook_returns():
    w, x, y = chain(3.0)
    x.register_hook(lambda g: g.clamp(max=5))
    y.backward()
    return w.grad.item()


@predict_then_run(
    "03.hooks-pile-up",
    Number(),
    prompt="w = torch.tensor(1.0, requires_grad=True); calls = []. For step in range(3): "
    "w.register_hook(lambda g: calls.append(step)), then (w * 2).backward(). How many entries does calls "
    "hold at the end?",
    explain="A hook stays on its tensor until its handle's remove() takes it off, and w is the same leaf at "
    "every step: step 0 runs one hook, step 1 two, step 2 three, 6 calls in all. Keep the handle "
    "register_hook returns and call handle.remove() when the hook's job is done.",
    misconceptions=[
        (lambda truth: 3.0, "that would be one hook per step; the hooks of the earlier steps are still on w."),
    ],
)
def hooks_pile_up():
    return float(len(hooks_registered_in_a_loop(3)))


# --- 3. torch.autograd.grad --------------------------------------------------------------


@predict_then_run(
    "03.autograd-grad",
    Number(),
    prompt="The chain started at w = -1 (w = torch.tensor(-1.0, requires_grad=True); x = w * 3; y = x ** 2), "
    "no hooks, no retain_grad: dx, dw = torch.autograd.grad(y, [x, w]). What are dx and dw? "
    "Answer [dx, dw].",
    explain="autograd.grad runs the same backward pass as y.backward() and hands back the gradients with "
    "respect to the inputs you name: 2x = -6 at x, 3 * (-6) = -18 at w.",
)
def autograd_grad():
    w, x, y = chain(-1.0)
    dx, dw = torch.autograd.grad(y, [x, w])
    return [dx.item(), dw.item()]


@predict_then_run(
    "03.autograd-grad-stores",
    Names(pool=("w", "x", "y")),
    prompt="After dx, dw = torch.autograd.grad(y, [x, w]) on that chain (w = -1), which of w, x, y have a "
    ".grad that is not None? Answer a set of names (set() for none).",
    explain="autograd.grad returns gradients instead of storing them: no AccumulateGrad node writes into "
    "w.grad, so an experiment made with it leaves the training state as it found it.",
)
def autograd_grad_stores():
    w, x, y = chain(-1.0)
    torch.autograd.grad(y, [x, w])
    return {name for name, t in {"w": w, "x": x, "y": y}.items() if read_grad(t) is not None}


@predict_then_run(
    "03.retained-under-grad",
    Boolean(),
    prompt="The same chain, but x.retain_grad() was called before y = x ** 2. Then torch.autograd.grad(y, w) "
    "(only w is asked for). Is x.grad None afterwards?",
    explain="retain_grad() is a standing order on x, not an option of backward(): it stores whatever "
    "gradient passes through x in any backward pass, torch.autograd.grad's included. Only "
    "leaves are protected by autograd.grad.",
)
def retained_under_grad():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    x.retain_grad()
    y = x**2
    torch.autograd.grad(y, w)
    return x.grad is None


# --- 4. node hooks: the order backward runs --------------------------------------------------


@predict_then_run(
    "03.ready-order",
    Sequence(),
    prompt="w = torch.tensor(2.0, requires_grad=True); q = w.cos(); p = w.sin(); y = q * p. A pre-hook on every "
    "node logs, when backward runs the node, its class name, or 'w' for w's AccumulateGrad. In what order "
    "are they logged?",
    explain="The product runs first; then the sine's and the cosine's nodes are both ready, and the engine "
    "takes the one with the higher sequence number: p = w.sin() was created after q = w.cos(), so the "
    "sine's node runs first, although q is the product's first input. w's AccumulateGrad waits for "
    "both and runs last.",
    misconceptions=[
        (
            lambda truth: ready_order_by_inputs(),
            "that is the order of the product's inputs (q first); among ready nodes backward takes the "
            "highest sequence number, the node created last, and p = w.sin() came after q = w.cos().",
        ),
        (
            lambda truth: ready_order_walked(),
            "that is the depth-first walk of unit 01; backward does not walk, it runs a node when all of its "
            "gradients have arrived, so w's AccumulateGrad waits for both the sine and the cosine.",
        ),
    ],
)
def ready_order():
    w, y = sin_cos_product()
    return backward_order(y, {"w": w})


# --- 4b. hooks practitioners use: after accumulation, and on modules ------------------------------


@predict_then_run(
    "03.post-accumulate",
    Number(),
    prompt="w = torch.tensor(1.0, requires_grad=True); seen = []; w.register_hook(lambda g: seen.append(g.item())); "
    "w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.item())); then (w * 5).backward() "
    "twice (two fresh graphs). What is seen? Answer the list of four numbers.",
    explain="The tensor hook runs on the gradient arriving from this pass, before AccumulateGrad adds it; the "
    "post-accumulate hook runs after, is handed the tensor itself, and reads the running total in "
    ".grad: 5, then 5, then 5, then 10.",
    misconceptions=[
        (
            lambda truth: [truth[0]] * 4,
            "the post-accumulate hook reads p.grad after this pass was added to it: the running total, "
            "which is 10 after the second pass.",
        )
    ],
)
def post_accumulate():
    w = torch.tensor(1.0, requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g.item()))
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.item()))
    for _ in range(2):
        (w * 5).backward()
    return seen


MODULE_SEES = (
    "the gradients of weight and bias",
    "the gradient with respect to x",
    "None",
    "the gradient with respect to the output",
)


@predict_then_run(
    "03.module-hook-sees",
    Choice(*MODULE_SEES),
    prompt="lin = torch.nn.Linear(3, 1); x = torch.randn(4, 3) (x does not require grad); "
    "lin.register_full_backward_hook(hook), where hook(module, grad_input, grad_output) records "
    "grad_input[0]; lin(x).sum().backward(). What is grad_input[0]: " + ", ".join(repr(c) for c in MODULE_SEES) + "?",
    explain="A module's full backward hook sees gradients with respect to the module's inputs (the tensors "
    "passed to forward) and outputs, never its parameters. x does not require grad, so there is no "
    "gradient for it: grad_input is (None,). The weights' gradients are read on the parameters.",
    misconceptions=[
        (
            "the gradients of weight and bias",
            "grad_input means the gradients with respect to the arguments of forward (here x), not the "
            "module's parameters; read those with a hook on each parameter.",
        )
    ],
)
def module_hook_sees():
    lin = torch.nn.Linear(3, 1)
    x = torch.randn(4, 3)
    seen = []
    lin.register_full_backward_hook(lambda module, grad_input, grad_output: seen.append(grad_input[0]))
    lin(x).sum().backward()
    g = seen[0]
    if g is None:
        return "None"
    if tuple(g.shape) == tuple(x.shape):
        return "the gradient with respect to x"
    if tuple(g.shape) == (4, 1):
        return "the gradient with respect to the output"
    return "the gradients of weight and bias"


# --- 5. the parameter that is not a leaf ---------------------------------------------------


@predict_then_run(
    "03.hook-through-non-leaf",
    Number(),
    prompt="scale = torch.tensor([1.0, 2.0], requires_grad=True) * 2; loss = (scale ** 2).sum(). A hook on "
    "scale records the gradient it sees during loss.backward(). What does it see?",
    explain="scale.grad stays None, yet a gradient did flow through scale: d(sum of squares)/d(scale) = "
    "2 * scale = [4, 8]. Nothing was missing except a place to store it.",
)
def hook_through_non_leaf():
    scale, loss = scaled()
    seen = []
    scale.register_hook(lambda g: seen.extend(g.tolist()))
    loss.backward()
    return seen


@predict_then_run(
    "03.hidden-leaf-grad",
    Number(),
    prompt="Same program. leaf = scale.grad_fn.next_functions[0][0].variable is the tensor that was made "
    "with requires_grad=True. After loss.backward(), what is leaf.grad?",
    explain="The gradient went on through the multiplication by 2 into the real leaf: 2 * [4, 8]. It was "
    "stored, on a tensor your code has no name for.",
)
def hidden_leaf_grad():
    scale, loss = scaled()
    loss.backward()
    leaf = scale.grad_fn.next_functions[0][0].variable
    return leaf.grad.tolist()


@predict_then_run(
    "03.optimizer-non-leaf",
    Error("building the optimizer", "at backward", "at step"),
    prompt="Same scale. opt = torch.optim.SGD([scale], lr=0.1); (scale ** 2).sum().backward(); opt.step(). "
    "Where does it fail: 'building the optimizer', 'at backward', 'at step', or 'no error'?",
    explain="An optimizer updates tensors in place between steps, which only makes sense for leaves; "
    "torch refuses this non-leaf when the optimizer is built, before any gradient is computed. (A non-leaf that "
    "retains its grad is let through, and the step then moves it instead of the leaf: see below.)",
)
def optimizer_non_leaf():
    scale = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    yield "building the optimizer"
    opt = torch.optim.SGD([scale], lr=0.1)
    yield "at backward"
    (scale**2).sum().backward()
    yield "at step"
    opt.step()


# --- self-test -----------------------------------------------------------------------------


@self_test(
    "03.which-untouched",
    Names(pool=("u", "v", "m", "out")),
    program=untouched_program,
    explain="backward() stores gradients in the leaves' .grad (a hook may change the value stored, zeros included, "
    "not whether it is stored); torch.autograd.grad returns them and writes no leaf's .grad. retain_grad() on m is "
    "a standing order, obeyed by every pass that goes through m, autograd.grad's included. out, the output, keeps "
    "no gradient.",
    hints=(
        "Take the instructions one at a time: which of them can write a .grad field at all?",
        "torch.autograd.grad returns gradients instead of storing them in leaves; backward() stores them. "
        "retain_grad() belongs to the tensor and is obeyed by whichever pass goes through it.",
    ),
    misconceptions=[
        (
            lambda truth, p: set(truth) - {"m"} if p.facts["retained"] and p.facts["grad"] else None,
            "retain_grad() is attached to m, not to backward(): the pass that autograd.grad runs goes through m "
            "and stores its gradient there.",
        ),
        (
            lambda truth, p: set(truth) | p.facts["asked"] if p.facts["grad"] else None,
            "autograd.grad hands the gradients you asked for back to you and leaves the leaves' .grad alone.",
        ),
        (
            lambda truth, p: set(truth) - {"v"} if p.facts["hooked"] and not p.facts["grad"] else None,
            "the hook changed the value v's gradient carries (to zeros); backward still stores it: v.grad is a "
            "zero tensor, not None.",
        ),
        (
            lambda truth, p: set(truth) | {"m"} if not p.facts["retained"] else None,
            "m is computed, not a leaf, and nothing asked to keep its gradient: it passes through m and is not stored.",
        ),
        (
            lambda truth: set(truth) | {"out"},
            "out is where the pass starts; nothing stores a gradient in it.",
        ),
    ],
)
def which_untouched(p):
    ns = p.run()
    return {n for n in ("u", "v", "m", "out") if read_grad(ns[n]) is not None}


@self_test(
    "03.hook-on-shared",
    Number(),
    program=shared_program,
    explain="A tensor hook runs when the gradient with respect to that tensor is complete: within one backward "
    "pass, the contributions of every use of h are added first, and the hook sees the total once. Two backward "
    "calls are two passes, and it runs in each.",
    hints=(
        "How many gradients does h receive in each backward pass, and does backward deliver them to h separately "
        "or together?",
        "A tensor hook runs once per pass that reaches h, with the sum of what every use of h sent back in that "
        "pass. Count the backward calls, then differentiate what each one starts from with respect to h.",
    ),
    misconceptions=[
        (
            lambda truth, p: [2, *truth[1:]] if not p.facts["apart"] else None,
            "backward adds the contributions of both uses before h's hook runs; the hook sees the total once.",
        ),
        (
            lambda truth, p: [1, sum(truth[1:])] if p.facts["apart"] else None,
            "each backward call is a pass of its own, and h's hook runs in each, with that pass's gradient.",
        ),
    ],
)
def hook_on_shared(p):
    calls = p.run()["calls"]
    return [len(calls), *calls]


@self_test(
    "03.leaf-hook-second",
    Number(),
    program=leaf_second_program,
    explain="A hook on a leaf sees the gradient arriving from this pass, before AccumulateGrad adds it to p.grad; "
    "the field holds the running total of every pass.",
    hints=(
        "Does a tensor hook on a leaf run before or after the gradient is added into p.grad?",
        "The hook sees what this pass brings (dz/dp at p); AccumulateGrad then adds it to whatever .grad already "
        "holds, pass after pass.",
    ),
    misconceptions=[
        (
            lambda truth: [truth[1], truth[1]],
            "the hook sees the gradient arriving from this pass, before it is added to p.grad, not the running total.",
        ),
        (
            lambda truth: [truth[0], truth[0]],
            "AccumulateGrad adds each pass's gradient into p.grad: it holds the total of every pass, not the last.",
        ),
    ],
)
def leaf_hook_second(p):
    ns = p.run()
    return [ns["got"][-1], ns["p"].grad.item()]


@self_test(
    "03.retain-accumulates",
    Number(),
    program=retain_program,
    explain="A retained gradient behaves like a leaf's: each backward pass adds to it, so it needs zeroing just "
    "the same.",
    hints=(
        "Several backward passes go through h. Does each one replace h.grad or add to it?",
        "retain_grad() makes h's gradient behave like a leaf's .grad: each pass adds d out / dh at h to it.",
    ),
    misconceptions=[
        (
            lambda truth, p: truth / p.facts["passes"],
            "that is one pass's gradient. A retained gradient accumulates across passes like a leaf's .grad.",
        )
    ],
)
def retain_accumulates(p):
    return p.run()["h"].grad.item()


# --- exercise A: the three ways on generated programs ---------------------------------------


@exercise(
    "03.three-ways",
    Function(returns=ThreeWays(), cases=three_ways_cases, call=lambda fn, case, ns: fn(case.build)),
    prompt="Write three_ways(build): build() returns a fresh (out, t, named) each call, t an intermediate "
    "and named a dict of the leaves and t by name. Read d out / d t three ways, each on its own "
    "build: a hook on t and out.backward(); t.retain_grad() and out.backward(); "
    "torch.autograd.grad(out, t). Return {'hook': (g, names), 'retain_grad': (g, names), "
    "'autograd.grad': (g, names)}, names being the names in `named` whose .grad is not None after "
    "that way. Checked on generated programs.",
    explain="All three read the same gradient; they differ in what they leave behind. A hook stores "
    "nothing, but the backward() that fires it fills the leaves' .grad; retain_grad adds t's own; "
    "autograd.grad writes no .grad at all.",
    hints=(
        "Call build() three times, once per way: each way must start from a graph nothing has touched.",
        "A hook must keep g somewhere you can read after backward (a list); t.retain_grad() must come before "
        "out.backward(); torch.autograd.grad(out, t) returns a tuple.",
        "names: the keys of `named` whose tensor's .grad is not None afterwards. Which leaves does "
        "out.backward() write? (every leaf that requires grad and is reached)",
    ),
)
def three_ways(case):
    out_ = {}
    for way in WAYS_TO_READ:
        out, t, named = case.build()
        if way == "hook":
            seen = []
            t.register_hook(lambda g: seen.append(g.detach().clone()))  # noqa: B023 (it fires in this iteration's backward)
            out.backward()
            g = seen[0]
        elif way == "retain_grad":
            t.retain_grad()
            out.backward()
            g = t.grad
        else:
            (g,) = torch.autograd.grad(out, t)
        out_[way] = (g, names_with_grad(named))
    return out_


# --- exercise B: a watch for non-finite gradients -------------------------------------------


@exercise(
    "03.nonfinite-watch",
    Function(returns=StepReport(), cases=loop_cases, call=lambda fn, case, ns: run_watch(fn, case, ns), per_case_s=3.0),
    prompt="Write make_watch(): it returns (hook, report). hook is registered on an intermediate once per "
    "training step; it must print nothing, raise nothing and return None (leave the gradient as it "
    "is) until it sees a gradient with a NaN or an infinity, and remember the step (the first call "
    "is step 0). report() returns the first such step, or None if there was none. Checked on "
    "generated loops with faults planted at random steps.",
    explain="A hook runs on every backward pass, so it can test a condition cheaply and stay silent "
    "otherwise; torch.isfinite catches NaN and both infinities at once. Returning None is what "
    "keeps a watch from becoming an edit.",
    hints=(
        "The hook needs memory that outlives each call: a step counter and the first bad step, kept in a "
        "closure (a dict or nonlocal variables) that report() reads too.",
        "torch.isnan misses infinities; torch.isfinite(g).all() is False for NaN, inf and -inf alike. Count "
        "every call, good or bad, and record only the first bad one.",
        "Return nothing from the hook and never write into g: a returned tensor, or g.zero_(), changes the "
        "gradient that reaches w.",
    ),
)
def nonfinite_watch(case):
    ns = case.fresh()
    bad, calls = [], 0

    def watch(g):
        nonlocal calls
        if not bool(torch.isfinite(g).all()):
            bad.append(calls)
        calls += 1

    run_loop(ns, watch)
    return Watched(bad[0] if bad else None, (), tuple(bad))
