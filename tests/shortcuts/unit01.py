"""Unit 01's shortcuts: the course's own walker, or a walk that only looks right on small graphs."""

import re

from grader import probes
from grader.probes import node_names, nodes
from tests.shortcuts._around import graders_answer, restored


def course_node_names(t):
    """[wrapper] The grader's own walker: grader.probes.node_names."""
    return probes.node_names(t)


def course_nodes_aliased(t):
    """[wrapper] The grader's walk through a name imported before the check."""
    return [type(fn).__name__ for fn in nodes(t)] if t.grad_fn is not None else node_names(t)


def each_class_once(t):
    """[heuristic] 'Each node once' read as each kind of node once: two MulBackward0 nodes become one."""
    out, stack = [], [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or type(fn).__name__ in out:
            continue
        out.append(type(fn).__name__)
        stack.extend(reversed([n for n, _ in fn.next_functions]))
    return out


def the_first_chain(t):
    """[heuristic] Follows the first edge of every node: right for chains, which small programs often are."""
    out, fn = [], t.grad_fn
    while fn is not None:
        out.append(type(fn).__name__)
        fn = fn.next_functions[0][0] if fn.next_functions else None
    return out


SHORTCUTS = {"01.graph-walk": [course_node_names, course_nodes_aliased, each_class_once, the_first_chain]}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


def walk_marking_on_push(t):
    """[heuristic] An explicit stack that marks a node seen when it is pushed, which the prompt warns against: a
    node reached by two routes is listed where its first push left it (right on 39 of the 40 cases)."""
    if t.grad_fn is None:
        return []
    out, seen, stack = [], {t.grad_fn}, [t.grad_fn]
    while stack:
        fn = stack.pop()
        out.append(type(fn).__name__)
        for child, _ in reversed(fn.next_functions):
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return out


def walk_breadth_first(t):
    """[heuristic] Breadth first: each node once, in the wrong order."""
    if t.grad_fn is None:
        return []
    out, seen, queue = [], {t.grad_fn}, [t.grad_fn]
    while queue:
        fn = queue.pop(0)
        out.append(type(fn).__name__)
        for child, _ in fn.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                queue.append(child)
    return out


def names_in_the_text_tree(t):
    """[wrapper] The course's own drawing of the graph (probes.text_tree), its node names read off as text."""
    if t.grad_fn is None:
        return []
    return re.findall(r"\w+Backward\d*|AccumulateGrad", str(probes.text_tree(t)))


def nodes_bound_before_the_check(t):
    """[switch] The course's walk, nodes(), through a name imported before the check, without calling node_names
    for the case with no grad_fn: the switch replaces the module's attribute, not the function a name holds."""
    return [type(fn).__name__ for fn in nodes(t)] if t.grad_fn is not None else []


@restored("grader.probes")
def node_names_switched_back_on(t):
    """[switch] The course's node_names, called with grader.probes' attributes put back for the call."""
    return probes.node_names(t) if t.grad_fn is not None else []


@restored("grader.probes")
def graders_own_answer(t):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack (the probes put back so
    that the grader's own experiment can run inside the learner's function)."""
    return graders_answer()


SHORTCUTS["01.graph-walk"] += [walk_marking_on_push, walk_breadth_first, names_in_the_text_tree]
OPEN = {"01.graph-walk": [nodes_bound_before_the_check, node_names_switched_back_on, graders_own_answer]}
