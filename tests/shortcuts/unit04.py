"""Unit 04's shortcuts: leaves found without walking the record, and a first broken edge read from the text or
from a flag instead of from what the record reaches."""

import gc
import re

import torch

from grader import probes
from grader.probes import traces
from grader.probes.traces import first_broken_edge as course_first_broken_edge
from tests.shortcuts._around import backward_by_engine, graders_answer, local_up_the_stack, restored

# --- 04.reachable-leaves -------------------------------------------------------------------------------


def course_reachable_leaves(loss):
    """[wrapper] The grader's own probe."""
    return probes.reachable_leaves(loss)


def leaves_that_get_a_gradient(loss):
    """[wrapper] Every leaf alive that requires grad, kept where torch.autograd.grad gives it a gradient: the engine
    answers, nobody reads the record."""
    if loss.grad_fn is None:
        return []
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.is_leaf and obj.requires_grad and all(obj is not f for f in found):
            try:
                (g,) = torch.autograd.grad(loss, obj, retain_graph=True, allow_unused=True)
            except RuntimeError:
                continue
            if g is not None:
                found.append(obj)
    return found


def leaves_by_requires_grad(loss):
    """[heuristic] Every AccumulateGrad one or two levels down: where small programs keep their leaves."""
    if loss.grad_fn is None:
        return []
    found = []
    for fn, _ in loss.grad_fn.next_functions:
        for g in [fn] + ([n for n, _ in fn.next_functions] if fn is not None else []):
            if g is not None and hasattr(g, "variable") and all(g.variable is not f for f in found):
                found.append(g.variable)
    return found


# --- 04.first-broken-edge ------------------------------------------------------------------------------

KEYWORDS = ("detach", "item", "tolist", "no_grad", "inference")


def _route(trace, name):
    carries = {name}
    for s in trace:
        if s.name is not None and carries & set(s.inputs):
            carries.add(s.name)
    feeds = {"loss"}
    for s in reversed(trace.steps):
        if s.name in feeds:
            feeds.update(s.inputs)
    return [s for s in trace if s.name in carries and s.name in feeds]


def _param(trace, name):
    return next(s.tensor for s in trace if s.name == name)


def _loss_reaches(trace, name):
    param = _param(trace, name)
    g = torch.autograd.grad(trace.loss, param, retain_graph=True, allow_unused=True)[0] if trace.loss.grad_fn else None
    return g is not None


def edge_by_keyword(trace, name):
    """[text] The reviewer's grep: the first on-route line with a cut keyword, None when the loss reaches the
    parameter."""
    if _loss_reaches(trace, name):
        return None
    return next((s for s in _route(trace, name) if any(k in s.line for k in KEYWORDS)), None)


def edge_by_keyword_only(trace, name):
    """[text] The grep alone, never asking torch whether the loss reaches the parameter."""
    return next((s for s in _route(trace, name) if any(k in s.line for k in KEYWORDS)), None)


NON_DIFFERENTIABLE = re.compile(r"[<>]=?|==|!=|\.(argmax|argmin|long|int|bool|round|nonzero)\(")


def edge_by_keyword_or_dtype(trace, name):
    """[text] The grep, widened to section 6's quiet breaks spelled out: a comparison, argmax, an integer cast."""
    if _loss_reaches(trace, name):
        return None
    return next(
        (s for s in _route(trace, name) if any(k in s.line for k in KEYWORDS) or NON_DIFFERENTIABLE.search(s.line)),
        None,
    )


def edge_first_without_grad_fn(trace, name):
    """[heuristic] Cell 59's plain-torch recipe: the first on-route step whose value has no grad_fn (or is not a
    tensor). Wrong where a cut operand meets a tensor that requires grad (w.detach() * b)."""
    if _loss_reaches(trace, name):
        return None
    for s in _route(trace, name):
        if s.name == name:
            continue
        if not isinstance(s.tensor, torch.Tensor) or s.tensor.grad_fn is None:
            return s
    return None


def edge_first_integer_result(trace, name):
    """[heuristic] The first on-route value that is not floating point or has no grad_fn."""
    if _loss_reaches(trace, name):
        return None
    for s in _route(trace, name):
        if s.name == name:
            continue
        t = s.tensor
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.grad_fn is None:
            return s
    return None


def course_edge(trace, name):
    """[wrapper] The grader's own answer, grader.probes.traces.first_broken_edge."""
    return course_first_broken_edge(trace, name)


def course_edge_by_module(trace, name):
    """[wrapper] The same, reached through the module."""
    return traces.first_broken_edge(trace, name)


SHORTCUTS = {
    "04.reachable-leaves": [course_reachable_leaves, leaves_that_get_a_gradient, leaves_by_requires_grad],
    "04.first-broken-edge": [
        edge_by_keyword,
        edge_by_keyword_only,
        edge_by_keyword_or_dtype,
        edge_first_without_grad_fn,
        edge_first_integer_result,
        course_edge,
        course_edge_by_module,
    ],
}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------

NODES = probes.nodes  # the course's walk, held before any check replaces the module's attribute


def leaves_by_the_walk_bound_early(loss):
    """[switch] The course's walk, probes.nodes, through a name bound before the check, and each AccumulateGrad's
    .variable: the switch replaces grader.probes.nodes, not the function this name holds."""
    if loss.grad_fn is None:
        return []
    found = []
    for fn in NODES(loss):
        if type(fn).__name__ == "AccumulateGrad" and not any(fn.variable is t for t in found):
            found.append(fn.variable)
    return found


@restored("grader.probes")
def course_leaves_switched_back_on(loss):
    """[switch] The course's own reachable_leaves, with grader.probes' attributes put back for the call."""
    return list(probes.reachable_leaves(loss)) if loss.grad_fn is not None else []


def leaves_by_the_engine(loss):
    """[stack] The case's leaves taken from the grader's namespace up the stack, and a backward pass run by
    autograd's engine directly (the switch wraps .backward() and torch.autograd.grad, not the engine)."""
    if loss.grad_fn is None:
        return []
    ns = local_up_the_stack("ns")
    leaves = [v for v in ns.values() if isinstance(v, torch.Tensor) and v.is_leaf and v.requires_grad]
    return [t for t, g in zip(leaves, backward_by_engine(loss, leaves)) if g is not None]


@restored("grader.probes", "grader.probes.traces")
def leaves_from_the_grader(loss):
    """[stack] torch's answer, q.run(case) (a set of names), from the grader's frame up the stack, mapped back to
    the case's tensors through the namespace there."""
    ns = local_up_the_stack("ns")
    return [ns[name] for name in graders_answer()]


@restored("grader.probes", "grader.probes.traces")
def course_edge_switched_back_on(trace, name):
    """[switch] The course's own first_broken_edge, with the probes' attributes put back for the call."""
    return traces.first_broken_edge(trace, name)


@restored("grader.probes", "grader.probes.traces")
def edge_from_the_grader(trace, name):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack."""
    return graders_answer()


OPEN = {
    "04.reachable-leaves": [
        leaves_by_the_walk_bound_early,
        course_leaves_switched_back_on,
        leaves_by_the_engine,
        leaves_from_the_grader,
    ],
    "04.first-broken-edge": [course_edge_switched_back_on, edge_from_the_grader],
}
