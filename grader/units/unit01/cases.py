"""Unit 01's exercise cases: generated programs (:class:`grader.units.programs.Program`) for ``01.graph-walk``,
and how a walk's answer is read (an order that is depth first but not the graded one is named as such)."""

from grader.engine.kinds import BadAnswer
from grader.units import programs


def walk_cases():
    return programs.programs(40, seed=101, max_ops=7)


def marked_when_pushed(t) -> list[str]:
    """The order of an explicit stack that marks a node seen when it is pushed, not when it is visited.

    It is a depth-first search too, but a node reached by two routes is listed where its first push put it
    on the stack, which can be later than where the recursive walk (the graded order) first meets it."""
    root = t.grad_fn
    if root is None:
        return []
    found, stack, seen = [], [root], {root}
    while stack:
        fn = stack.pop()
        found.append(type(fn).__name__)
        for child, _ in reversed(fn.next_functions):
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return found


def walk_result(raw, case, ns):
    """The learner's list as it is; refused with the reason when it is the marked-when-pushed order."""
    from grader import probes

    out = ns[case.output]
    if isinstance(raw, (list, tuple)) and list(raw) != probes.node_names(out) and list(raw) == marked_when_pushed(out):
        raise BadAnswer(
            "that is a depth-first order, but not the graded one: your stack marks a node seen when it is pushed, so "
            "a node reached by two routes is listed where its first push left it. The graded order is the one a "
            "recursive walk gives: a node is listed when it is first visited (popped), then its children's "
            "subgraphs in next_functions order. Mark nodes when you pop them, and skip one already seen"
        )
    return raw
