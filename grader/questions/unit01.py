"""Unit 01, what the forward pass records: the three flags, grad_fn nodes and their edges."""
import torch

from .. import probes, programs
from ..kinds import Boolean, Function, Name, Names, Number, Sequence, saved_key
from ..question import exercise, predict_then_run, self_test


def _chain():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    y = x ** 2
    return w, x, y


@predict_then_run(
    "01.x-is-leaf", Boolean(),
    prompt="w = torch.tensor(2.0, requires_grad=True); x = w * 3. Is x a leaf (x.is_leaf)?",
    explain="x was produced by an operation autograd recorded (it has a grad_fn), so it is not a leaf; "
            "only w, which you created, is.",
)
def x_is_leaf():
    w, x, y = _chain()
    return x.is_leaf


@predict_then_run(
    "01.constant-is-leaf", Boolean(),
    prompt="c = torch.tensor([1.0, 2.0]) * 5, where nothing requires grad. Is c a leaf?",
    explain="A tensor that does not require grad is a leaf by convention, however it was computed: "
            "nothing was recorded, so there is nothing upstream of it.",
)
def constant_is_leaf():
    c = torch.tensor([1.0, 2.0]) * 5
    return c.is_leaf


@predict_then_run(
    "01.pow-node", Name(),
    prompt="y = (w * 3) ** 2 with w = 2.0 a leaf that requires grad. What is the class name of y.grad_fn?",
    explain="Each recorded operation leaves one node named after its backward: ** gives a power node.",
)
def pow_node():
    w, x, y = _chain()
    return probes.node_name(y.grad_fn)


@predict_then_run(
    "01.mul-edges", Sequence(),
    prompt="x = w * 3. List what x.grad_fn.next_functions point to, in order, writing 'None' for an "
           "empty slot.",
    explain="A multiplication has two inputs, so its node has two edges. The first leads to w's "
            "AccumulateGrad; the second is None because the constant 3 needs no gradient.",
)
def mul_edges():
    w, x, y = _chain()
    return [name for name, _ in probes.edges(x.grad_fn)]


@predict_then_run(
    "01.variable-is-w", Boolean(),
    prompt="acc = y.grad_fn.next_functions[0][0].next_functions[0][0]. Is acc.variable the very same "
           "object as w (acc.variable is w)?",
    explain="AccumulateGrad holds the leaf itself, not a copy: it is the node that adds arriving "
            "gradients into w.grad.",
)
def variable_is_w():
    w, x, y = _chain()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    return acc.variable is w


@predict_then_run(
    "01.walk-y", Sequence(),
    prompt="Walk y.grad_fn for y = (w * 3) ** 2: every node once, depth first, following "
           "next_functions in order and skipping None. Which nodes, in order?",
    explain="The record is the computation reversed: the power, then the multiplication, then the leaf's "
            "AccumulateGrad.",
)
def walk_y():
    w, x, y = _chain()
    return probes.node_names(y)


def branchy(x):
    """A function whose formula depends on its input's sign: the graph records the branch that ran."""
    if x.item() > 0:
        return (x + 1) ** 2
    return (x + 3).abs()


@predict_then_run(
    "01.branch-plus", Name(),
    prompt="branchy(x) computes (x + 1) ** 2 when x > 0 and (x + 3).abs() otherwise. For "
           "x = torch.tensor(1.0, requires_grad=True), what is the class name of branchy(x).grad_fn?",
    explain="Only the operations that run are recorded; for x = +1 the power ran.",
)
def branch_plus():
    x = torch.tensor(1.0, requires_grad=True)
    return probes.node_name(branchy(x).grad_fn)


@predict_then_run(
    "01.branch-minus", Name(),
    prompt="The same branchy(x), now with x = torch.tensor(-1.0, requires_grad=True). What is the class "
           "name of branchy(x).grad_fn?",
    explain="A different input took the other branch, so a different graph was built: the graph is "
            "rebuilt by every forward pass from what actually ran.",
)
def branch_minus():
    x = torch.tensor(-1.0, requires_grad=True)
    return probes.node_name(branchy(x).grad_fn)


@predict_then_run(
    "01.branch-grads", Number(),
    prompt="branchy(x).backward() for x = +1 and, separately, for x = -1. What are the two x.grad "
           "values? Answer [grad at +1, grad at -1].",
    explain="Each backward differentiates the branch that ran: 2(x + 1) = 4 at +1, and the slope of "
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
    "01.times-two-grad", Boolean(),
    prompt="p = torch.ones(3, requires_grad=True) * 2; then p.sum().backward(). Is p.grad None?",
    explain="requires_grad=True made the ones tensor a leaf, but p is the product: a non-leaf, whose "
            "gradient is computed and passed on but not stored. The same happens with .cuda() or .to().",
)
def times_two_grad():
    p = torch.ones(3, requires_grad=True) * 2
    p.sum().backward()
    return p.grad is None


def _neuron(x_value=1.0, w_value=2.0):
    x = torch.tensor(x_value, requires_grad=True)
    w = torch.tensor(w_value, requires_grad=True)
    z = w * x - 0.5
    s = torch.sigmoid(z)
    return x, w, z, s


@predict_then_run(
    "01.neuron-slope", Number(),
    prompt="One neuron: z = w * x - 0.5, s = sigmoid(z), at x = 1, w = 2. After s.backward(), what is "
           "x.grad? (4 decimals)",
    explain="The chain rule node by node: ds/dz = s(1 - s) from the sigmoid node, times dz/dx = w from "
            "the multiplication.",
)
def neuron_slope():
    x, w, z, s = _neuron()
    s.backward()
    return x.grad.item()


@predict_then_run(
    "01.neuron-sigmoid-saves", Names(key=saved_key, pool=("_saved_self", "_saved_other")),
    prompt="For s = torch.sigmoid(z), which _saved_ attributes does s.grad_fn have? Answer a set of "
           "names.",
    explain="The sigmoid's local rule is s(1 - s): it needs its own output, so it keeps the result, "
            "not its input.",
)
def neuron_sigmoid_saves():
    x, w, z, s = _neuron()
    return {a for a, v in probes.saved_attributes(s.grad_fn).items() if isinstance(v, torch.Tensor)}


@predict_then_run(
    "01.neuron-mul-saves", Names(key=saved_key, pool=("_saved_result", "_saved_alpha")),
    prompt="For the product w * x, with both requiring grad, which tensor-valued _saved_ attributes "
           "does its grad_fn have?",
    explain="d(wx)/dw = x and d(wx)/dx = w: each input's gradient needs the other input, so both are kept.",
)
def neuron_mul_saves():
    x, w, z, s = _neuron()
    product = w * x
    return {a for a, v in probes.saved_attributes(product.grad_fn).items() if isinstance(v, torch.Tensor)}


# --- self-test ------------------------------------------------------------------------

def _closed_book():
    x = torch.randn(2, 3, requires_grad=True)
    W = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    return x, W, b, (x @ W + b).relu().sum()


@self_test(
    "01.closed-book-walk", Sequence(),
    prompt="y = (x @ W + b).relu().sum(), with x 2x3, W 3x4 and b of 4, all requiring grad. Walk "
           "y.grad_fn: every node once, depth first, next_functions in order. Which nodes, in order?",
    explain="Sum, then ReLU, then the addition of b, then the matrix product; its two edges lead to the "
            "AccumulateGrad of x and of W, and the addition's second edge to b's.",
)
def closed_book_walk():
    *_, y = _closed_book()
    return probes.node_names(y)


@self_test(
    "01.closed-book-leaves", Names(pool=("x", "W", "b", "y")),
    prompt="In the same graph, which of x, W, b have an AccumulateGrad node? Answer a set of names.",
    explain="Every leaf that requires grad and was used gets one AccumulateGrad node.",
)
def closed_book_leaves():
    x, W, b, y = _closed_book()
    names = {"x": x, "W": W, "b": b}
    return probes.leaf_names(y, names)


@self_test(
    "01.saved-self-is-x", Boolean(),
    prompt="x = torch.randn(3, requires_grad=True). Is (x ** 2).grad_fn._saved_self the same object as "
           "x (compare with `is`)?",
    explain="The power node saved its input, and reading it back gives x itself here. Identity is an "
            "implementation detail, though: unit 05 shows a case where it is False while the storage "
            "is shared.",
)
def saved_self_is_x():
    x = torch.randn(3, requires_grad=True)
    return (x ** 2).grad_fn._saved_self is x


@self_test(
    "01.who-keeps-grad", Names(pool=("w", "x", "y")),
    prompt="w = torch.tensor(2.0, requires_grad=True); x = w * 3; y = x ** 2; y.backward(). Which of "
           "w, x, y have a .grad that is not None afterwards?",
    explain="Only leaves that require grad store a gradient by default; x's and y's were computed and "
            "used on the way, then dropped.",
)
def who_keeps_grad():
    w, x, y = _chain()
    y.backward()
    return {name for name, t in {"w": w, "x": x, "y": y}.items() if t.grad is not None}


# --- exercise -------------------------------------------------------------------------

def _walk_cases():
    return programs.programs(40, seed=101, max_ops=7)


@exercise(
    "01.graph-walk",
    Function(returns=Sequence(), cases=_walk_cases),
    prompt="Write graph_nodes(t): the class names of every node reachable from t.grad_fn, each node "
           "once, depth first, visiting next_functions in order and skipping None; [] when t has no "
           "grad_fn. It is checked on generated programs.",
    explain="The graph is a real object: grad_fn and next_functions are all you need to walk it. "
            "Shared nodes (a leaf used twice) are one object, so a seen-set keeps them once.",
)
def graph_walk(case):
    ns = case.fresh()
    return probes.node_names(ns[case.output])
