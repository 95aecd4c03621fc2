"""Unit 01, what the forward pass records: the three flags, grad_fn nodes and their edges."""

import torch

from grader import probes
from grader.engine.kinds import Boolean, Function, Name, Names, Number, Sequence, saved_key
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.switches import COURSE_WALKER, guarded
from grader.units.unit01.cases import walk_cases, walk_result
from grader.units.unit01.generators import keeps_program, leaves_program, saves_program, walk_program
from grader.units.unit01.support import (
    branchy,
    chain,
    mm_as_addmm,
    neuron,
    recorded_results,
    shared_chain,
    walk_every_edge,
)


@predict_then_run(
    "01.x-is-leaf",
    Boolean(),
    prompt="w = torch.tensor(2.0, requires_grad=True); x = w * 3. Is x a leaf (x.is_leaf)?",
    explain="x was produced by an operation autograd recorded (it has a grad_fn), so it is not a leaf; "
    "only w, which you created, is.",
)
def x_is_leaf():
    w, x, y = chain()
    return x.is_leaf


@predict_then_run(
    "01.constant-is-leaf",
    Boolean(),
    prompt="c = torch.tensor([1.0, 2.0]) * 5, where nothing requires grad. Is c a leaf?",
    explain="A tensor that does not require grad is a leaf by convention, however it was computed: "
    "nothing was recorded, so there is nothing upstream of it.",
)
def constant_is_leaf():
    c = torch.tensor([1.0, 2.0]) * 5
    return c.is_leaf


@predict_then_run(
    "01.pow-node",
    Name(),
    prompt="y = (w * 3) ** 2 with w = 2.0 a leaf that requires grad. What is the class name of y.grad_fn?",
    explain="Each recorded operation leaves one node named after its backward: ** gives a power node.",
)
def pow_node():
    w, x, y = chain()
    return probes.node_name(y.grad_fn)


@predict_then_run(
    "01.mul-edges",
    Sequence(),
    prompt="x = w * 3. List the node each entry of x.grad_fn.next_functions points to, in order, writing "
    "'None' for an input that has no node.",
    explain="A multiplication has two inputs, so its node has two edges. The first leads to w's "
    "AccumulateGrad; the second is None because the constant 3 needs no gradient.",
)
def mul_edges():
    w, x, y = chain()
    return [name for name, _ in probes.edges(x.grad_fn)]


@predict_then_run(
    "01.split-slots",
    Number(tol=0),
    prompt="x = torch.tensor([1.0, 2.0], requires_grad=True); a, b = x.split(1); p = b * a. "
    "p.grad_fn.next_functions holds two (node, number) pairs, both pointing at the same SplitBackward0 "
    "node. What are the two numbers, in order? Answer [first, second].",
    explain="The number is the slot: which output of the producing node the input came from. p's first "
    "input is b, the split's output 1; its second is a, output 0. The position in next_functions "
    "is this operation's input order; the slot is the producer's output index.",
    misconceptions=[
        (
            [0, 1],
            "that is the order of p's own inputs (first, second); the number says which "
            "output of SplitBackward0 each input is, and b is the split's second output.",
        )
    ],
)
def split_slots():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a, b = x.split(1)
    p = b * a
    return [slot for _, slot in p.grad_fn.next_functions]


@predict_then_run(
    "01.variable-is-w",
    Boolean(),
    prompt="acc = y.grad_fn.next_functions[0][0].next_functions[0][0]. Is acc.variable the very same "
    "object as w (acc.variable is w)?",
    explain="AccumulateGrad holds the leaf itself, not a copy: it is the node that adds arriving "
    "gradients into w.grad.",
)
def variable_is_w():
    w, x, y = chain()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    return acc.variable is w


@predict_then_run(
    "01.walk-shared",
    Sequence(),
    prompt="w = torch.tensor(2.0, requires_grad=True); u = w * 3; y = u * u - w. Walk y.grad_fn: every node "
    "once, depth first, following next_functions in order and skipping None. Which nodes, in order?",
    explain="One node per recorded operation, however many edges lead to it: u was made by one "
    "multiplication, so its node is met once although u * u has two edges to it, and w has one "
    "AccumulateGrad node, reached twice (from w * 3 and from the subtraction).",
    misconceptions=[
        (
            lambda truth: walk_every_edge(shared_chain()[2]),
            "that walk follows every edge and lists a node each time it is reached; u * u has two edges "
            "to u's one node and w's AccumulateGrad is reached twice, but each node is one object, met once.",
        ),
        (
            lambda truth: [*truth, "AccumulateGrad"],
            "w is one leaf, so it has one AccumulateGrad node however many operations use it.",
        ),
    ],
)
def walk_shared():
    w, u, y = shared_chain()
    return probes.node_names(y)


@predict_then_run(
    "01.branch-plus",
    Name(),
    prompt="branchy(x) computes x ** 2 + 2 * x when x > 0 and (x + 3).abs() otherwise. For "
    "x = torch.tensor(1.0, requires_grad=True), what is the class name of branchy(x).grad_fn?",
    explain="Only the operations that run are recorded; for x = +1 the first formula ran, and its last "
    "operation, the addition, made the result, so the result's grad_fn is the addition's node.",
)
def branch_plus():
    x = torch.tensor(1.0, requires_grad=True)
    return probes.node_name(branchy(x).grad_fn)


@predict_then_run(
    "01.branch-minus",
    Name(),
    prompt="The same branchy(x), now with x = torch.tensor(-1.0, requires_grad=True). What is the class "
    "name of branchy(x).grad_fn?",
    explain="A different input took the other branch, so a different graph was built: the graph is "
    "rebuilt by every forward pass from what actually ran.",
)
def branch_minus():
    x = torch.tensor(-1.0, requires_grad=True)
    return probes.node_name(branchy(x).grad_fn)


@predict_then_run(
    "01.branch-grads",
    Number(),
    prompt="branchy(x).backward() for x = +1 and, separately, for x = -1. What are the two x.grad "
    "values? Answer [grad at +1, grad at -1].",
    explain="Each backward differentiates the branch that ran: 2x + 2 = 4 at +1, and the slope of "
    "|x + 3| at -1, which is +1.",
)
def branch_grads():
    grads = []
    for value in (1.0, -1.0):
        x = torch.tensor(value, requires_grad=True)
        branchy(x).backward()
        grads.append(x.grad.item())
    return grads


@predict_then_run(
    "01.times-two-grad",
    Boolean(),
    prompt="p = torch.ones(3, requires_grad=True) * 2; then p.sum().backward(). Is p.grad None?",
    explain="requires_grad=True made the ones tensor a leaf, but p is the product: a non-leaf, whose "
    "gradient is computed and passed on but not stored. .to() and .cuda() do the same when they change "
    "the dtype or device; when nothing changes they return the very same tensor, still the leaf.",
)
def times_two_grad():
    p = torch.ones(3, requires_grad=True) * 2
    p.sum().backward()
    return p.grad is None


_RECORDED_POOL = ("argmax", "max", "gt", "long", "double", "round")


@predict_then_run(
    "01.which-recorded",
    Names(pool=_RECORDED_POOL),
    prompt="v = torch.tensor([1.0, -2.0, 3.0], requires_grad=True). Six results: argmax = v.argmax(), "
    "max = v.max(), gt = v > 0, long = v.long(), double = v.double(), round = v.round(). Which of "
    "them have a grad_fn (are recorded)? Answer a set of the six labels.",
    explain="A result can carry a gradient only if its dtype is floating point (or complex). argmax gives "
    "an integer index, v > 0 a bool, .long() an integer tensor: nothing is recorded for them, and "
    "no error says so. max, a cast to float64 and round are recorded (round's slope is zero, as "
    "unit 02 shows).",
    misconceptions=[
        (
            {"max", "double"},
            "round is recorded too: its result is floating point, so it gets a "
            "node, even though its slope is zero almost everywhere.",
        )
    ],
)
def which_recorded():
    v = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    return {label for label, r in recorded_results(v).items() if r.grad_fn is not None}


@predict_then_run(
    "01.argmax-silent",
    Number(),
    prompt="w = torch.tensor([2.0, 1.0, 3.0], requires_grad=True); loss = (w * w.argmax()).sum(); "
    "loss.backward(). What is w.grad? Answer a list of three numbers.",
    explain="w.argmax() is the integer 2, the index of the largest element, and nothing recorded it: to autograd "
    "it is a constant. The product's node multiplies by it, so every element's gradient is 2, and no error or "
    "warning says that a path through argmax was cut.",
    misconceptions=[
        (
            [1.0, 1.0, 1.0],
            "the sum sends 1 to every element of the product, but the product's node multiplies it by the other "
            "factor, the index 2.",
        ),
        (
            [0.0, 0.0, 1.0],
            "argmax does not pick an element here: it returns the index 2, which multiplies every element of w.",
        ),
        (
            [3.0, 3.0, 3.0],
            "argmax returns where the largest element is (index 2), not its value (3.0).",
        ),
    ],
)
def argmax_silent():
    w = torch.tensor([2.0, 1.0, 3.0], requires_grad=True)
    (w * w.argmax()).sum().backward()
    return w.grad.tolist()


@predict_then_run(
    "01.neuron-grad-ratio",
    Number(),
    prompt="One neuron: z = w * x - 0.5, s = sigmoid(z), at x = 1, w = 2, both requiring grad. After "
    "s.backward(), what is x.grad / w.grad?",
    explain="Both gradients come through the same three nodes. The sigmoid's node sends one number, s(1 - s), to "
    "the subtraction's node, which passes it on unchanged (the slope of z - 0.5 in z is 1) to the product's node, "
    "which sends it on times the other operand: w to x, x to w. The shared factor cancels, so x.grad / w.grad = "
    "w / x = 2, whatever the sigmoid sent.",
    misconceptions=[
        (
            lambda truth: 1 / truth,
            "that is w.grad / x.grad: the product sends each input the other operand, so x gets w = 2.",
        ),
        (lambda truth: 1.0, "the two inputs share the sigmoid's factor but not the product's: x gets w and w gets x."),
    ],
)
def neuron_grad_ratio():
    x, w, z, s = neuron()
    s.backward()
    return x.grad.item() / w.grad.item()


@predict_then_run(
    "01.exp-saves",
    Names(key=saved_key, pool=("_saved_self", "_saved_other", "_saved_result")),
    prompt="t = torch.tensor([0.5, 2.0], requires_grad=True); e = t.exp(). Which _saved_ attributes does "
    "e.grad_fn have? Answer a set of names.",
    explain="The slope of exp is exp itself: the local rule multiplies the incoming gradient by e, the output, so "
    "the node keeps its result, as the sigmoid's did, and not its input.",
    misconceptions=[
        (
            {"_saved_self"},
            "exp's rule reads exp(t), which is the output e: keeping t would mean computing exp again at backward.",
        )
    ],
)
def exp_saves():
    t = torch.tensor([0.5, 2.0], requires_grad=True)
    e = t.exp()
    return {a for a, v in probes.saved_attributes(e.grad_fn).items() if isinstance(v, torch.Tensor)}


@predict_then_run(
    "01.sin-saves",
    Names(key=saved_key, pool=("_saved_self", "_saved_other", "_saved_result")),
    prompt="t = torch.tensor([0.5, 2.0], requires_grad=True); n = t.sin(). Which _saved_ attributes does "
    "n.grad_fn have? Answer a set of names.",
    explain="The slope of sin is cos(t): it is computed from the input, and the output sin(t) cannot give it back "
    "(its sign is lost), so the node keeps its input, t, as _saved_self.",
    misconceptions=[
        (
            {"_saved_result"},
            "sin's slope is cos(t), which needs t: from sin(t) alone cos(t) is known only up to its sign.",
        )
    ],
)
def sin_saves():
    t = torch.tensor([0.5, 2.0], requires_grad=True)
    n = t.sin()
    return {a for a, v in probes.saved_attributes(n.grad_fn).items() if isinstance(v, torch.Tensor)}


# --- self-test ------------------------------------------------------------------------


@self_test(
    "01.closed-book-walk",
    Sequence(),
    program=walk_program,
    explain="Each operation that ran leaves one node, met last first: the reduction, the activation (if any), the "
    "addition of b, then the matrix product. Each leaf that requires grad ends its branch in one AccumulateGrad, "
    "met in next_functions order (an addition's first edge leads to its left operand).",
    hints=(
        "Write the expression as the operations that ran, last first: the reduction, the activation, +, @. Each "
        "ran as its own operation and left its own node.",
        "x @ W on two 2-D tensors runs a matrix-matrix product (Mm); + b then runs separately (Add). Each leaf "
        "that requires grad ends the walk with one AccumulateGrad, met in next_functions order: an addition's "
        "left operand first, the product's x before its W.",
    ),
    misconceptions=[
        (
            mm_as_addmm,
            "AddmmBackward0 is what nn.Linear (torch.addmm) records: one fused operation. x @ W + b is two "
            "operations, a matrix product and then an addition, so it leaves two nodes.",
        ),
        (
            lambda truth: [n for n in truth if n != "AccumulateGrad"],
            "the walk goes on past the operations: every leaf that requires grad ends in an AccumulateGrad "
            "node, and the walker lists those too.",
        ),
    ],
)
def closed_book_walk(p):
    return probes.node_names(p.run()["y"])


@self_test(
    "01.closed-book-leaves",
    Names(pool=("x", "W", "b", "y")),
    program=leaves_program,
    explain="A leaf gets one AccumulateGrad node when it requires grad and an operation on the way to y used it; "
    "y is the output, whose grad_fn is the reduction's node.",
    hints=(
        "An AccumulateGrad node belongs to a leaf. Which of the four are leaves that require grad?",
        "A leaf's AccumulateGrad is made when an operation recorded in y's graph uses it: a tensor made without "
        "requires_grad=True, or one never used on the way to y, gets none. y was produced by the reduction.",
    ),
    misconceptions=[
        (
            lambda truth: set(truth) | {"y"},
            "y is the output: its grad_fn is the reduction's node, not an AccumulateGrad; only leaves get one.",
        ),
        (
            lambda truth, p: set(truth) | {p.facts["no grad"]} if p.facts["no grad"] else None,
            "a tensor made without requires_grad=True takes no part in the graph: autograd makes no "
            "AccumulateGrad node for it.",
        ),
        *(
            (
                lambda truth, p, name=name: set(truth) | {name} if p.facts["unused"] == name else None,
                f"{name} requires grad, but no operation on the way to y used it ({name} does not appear in y's "
                f"line), so y's graph never reaches {name} and it has no AccumulateGrad node there.",
            )
            for name in ("b", "x", "W")
        ),
        (
            lambda truth, p: set(truth) - {"x"} if p.facts["x needs"] else None,
            "x requires grad too here, so it is a leaf that gets its own AccumulateGrad, data or not.",
        ),
    ],
)
def closed_book_leaves(p):
    ns = p.run()
    return probes.leaf_names(ns["y"], {name: ns[name] for name in ("x", "W", "b")})


@self_test(
    "01.closed-book-saves",
    Names(key=saved_key, pool=("_saved_self", "_saved_other", "_saved_result")),
    program=saves_program,
    explain="Each factor's gradient is the other factor: a product's node keeps the factor that the gradients "
    "asked for read. With one input requiring grad, only the other one is kept; with both, both are. The product's "
    "own output is never needed.",
    hints=(
        "Which inputs need a gradient, and what does each one's local rule read?",
        "For a product, the gradient for one factor is the other factor. _saved_self is the left operand, "
        "_saved_other the right one.",
    ),
    misconceptions=[
        (
            lambda truth, p: {"_saved_self", "_saved_other"} if p.facts["one needs grad"] else None,
            "both are kept only when both inputs need a gradient (the neuron's w * x); here one needs none, so "
            "the factor that only its gradient would read is not kept.",
        ),
        (
            lambda truth: (
                {"_saved_self"}
                if set(truth) == {"_saved_other"}
                else ({"_saved_other"} if set(truth) == {"_saved_self"} else None)
            ),
            "each factor's gradient reads the other factor: the node keeps the operand that does not require grad, "
            "the one the other's gradient reads.",
        ),
        (
            lambda truth: set(truth) | {"_saved_result"},
            "a product's backward reads its inputs, never its output: nothing is kept as _saved_result.",
        ),
    ],
)
def closed_book_saves(p):
    y = p.run()["y"]
    return {n for n, v in probes.saved_attributes(y.grad_fn).items() if isinstance(v, torch.Tensor)}


@self_test(
    "01.who-keeps-grad",
    Names(pool=("p", "u", "q", "s")),
    program=keeps_program,
    explain="After a plain backward(), only leaves that require grad store a gradient (unit 03 shows the two ways a "
    "non-leaf can). A cast that changes the dtype records a copy, whose "
    "output is a non-leaf; a cast to the dtype it already has returns the leaf itself. A computed tensor's "
    "gradient passes through it; a constant needs none.",
    hints=(
        "Print the three flags in your head for each name: requires_grad, is_leaf, grad_fn.",
        "A cast that changes the dtype is a recorded operation: its output is not the tensor created with "
        "requires_grad=True. One to the same dtype records nothing and returns the same tensor.",
    ),
    misconceptions=[
        (
            lambda truth, p: set(truth) | {"u"} if p.facts["u copy"] else None,
            "u was made by a cast that changed the dtype and so recorded a copy: u is that copy's output, a "
            "non-leaf, and its gradient is not stored.",
        ),
        (
            lambda truth, p: set(truth) - {"u"} if not p.facts["u copy"] else None,
            "u is a leaf here: a cast to the dtype the tensor already has records nothing and returns the same "
            "tensor (and a tensor made as float64 needs no cast), so u stores its gradient.",
        ),
        (
            lambda truth: set(truth) | {"q"},
            "q is computed by the addition, so it is not a leaf: its gradient passes through on the way to p and "
            "is not stored.",
        ),
        (
            lambda truth: set(truth) ^ {"s"},
            "s is a leaf: it stores a gradient exactly when it was made with requires_grad=True.",
        ),
    ],
)
def who_keeps_grad(p):
    ns = p.run()
    return {name for name in ("p", "u", "q", "s") if ns[name].grad is not None}


# --- exercise -------------------------------------------------------------------------


@exercise(
    "01.graph-walk",
    Function(
        returns=Sequence(),
        cases=walk_cases,
        convert=walk_result,
        call=guarded("write the walk yourself, from grad_fn and next_functions", COURSE_WALKER),
    ),
    prompt="Write graph_nodes(t): the class names of every node reachable from t.grad_fn, each node "
    "once, depth first, visiting next_functions in order and skipping None; [] when t has no "
    "grad_fn. The order graded is a recursive walk's: a node is listed when it is first visited, then "
    "each child's whole subgraph in turn. It is checked on generated programs, with the course's own walker "
    "(grader.probes.nodes, node_names) switched off while your function runs.",
    explain="The graph is a real object: grad_fn and next_functions are all you need to walk it. "
    "Shared nodes (a leaf used twice) are one object, so a seen-set keeps them once.",
    hints=(
        "Start from t.grad_fn (it may be None) and follow next_functions; each entry is a pair "
        "(node or None, slot) and only the node matters here.",
        "Visit a node, record type(node).__name__, then visit its children in order (recursion or an "
        "explicit stack popped from the end, children pushed in reverse). Keep a set of nodes already "
        "visited: a leaf used twice is one AccumulateGrad object reached by two edges.",
    ),
)
def graph_walk(case):
    ns = case.fresh()
    return probes.node_names(ns[case.output])
