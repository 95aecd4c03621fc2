"""Unit 01's exercise: a known-good walker, written the way a learner would, and plausible bugs."""


def graph_nodes(t):
    found, seen = [], set()

    def visit(fn):
        if fn is None or fn in seen:
            return
        seen.add(fn)
        found.append(type(fn).__name__)
        for child, _ in fn.next_functions:
            visit(child)

    visit(t.grad_fn)
    return found


REFERENCE = {
    "01.graph-walk": graph_nodes,
}


# --- plausible buggy implementations: each must be refused --------------------------------


def walk_breadth_first(t):
    found, seen, queue = [], set(), [t.grad_fn]
    while queue:
        fn = queue.pop(0)
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        found.append(type(fn).__name__)
        queue.extend(child for child, _ in fn.next_functions)
    return found


def walk_without_seen_set(t):
    found = []

    def visit(fn):
        if fn is None:
            return
        found.append(type(fn).__name__)
        for child, _ in fn.next_functions:
            visit(child)

    visit(t.grad_fn)
    return found


def walk_skipping_the_root(t):
    return graph_nodes(t)[1:]


def walk_children_reversed(t):
    found, seen = [], set()

    def visit(fn):
        if fn is None or fn in seen:
            return
        seen.add(fn)
        found.append(type(fn).__name__)
        for child, _ in reversed(fn.next_functions):
            visit(child)

    visit(t.grad_fn)
    return found


def walk_keeping_none(t):
    found, seen = [], set()

    def visit(fn):
        if fn in seen:
            return
        seen.add(fn)
        found.append(type(fn).__name__ if fn is not None else "None")
        for child, _ in fn.next_functions if fn is not None else ():
            visit(child)

    visit(t.grad_fn)
    return found


def walk_marking_when_pushed(t):
    """Issue 29's iterative walk: depth first, but a node is marked seen when pushed, not when visited."""
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


def walk_with_a_stack(t):
    """The graded order by an explicit stack: marked when popped, children pushed in reverse."""
    found, seen, stack = [], set(), [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        found.append(type(fn).__name__)
        stack.extend(child for child, _ in reversed(fn.next_functions))
    return found


BUGGY = {
    "01.graph-walk": [
        walk_breadth_first,
        walk_without_seen_set,
        walk_skipping_the_root,
        walk_children_reversed,
        walk_keeping_none,
        walk_marking_when_pushed,
    ],
}
