"""Unit 01's shortcuts: the course's own walker, or a walk that only looks right on small graphs."""

from grader import probes
from grader.probes import node_names, nodes


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
