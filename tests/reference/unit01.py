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


BUGGY = {
    "01.graph-walk": [
        walk_breadth_first,
        walk_without_seen_set,
        walk_skipping_the_root,
        walk_children_reversed,
        walk_keeping_none,
    ],
}
