"""Traced forward passes: run straight-line torch code one statement at a time and keep every result.

A :class:`Trace` is the list of :class:`Step` s a program took, in order. Each
step keeps its source text, the name it assigned, the tensor that name held
right after the statement, the names of earlier values it read, and the three
flags of unit 01 as they were at that moment. Printing a trace gives one line
per step, which is the "watch the flags change" view of a forward pass::

    tr = trace('''
    w = torch.tensor(2.0, requires_grad=True)
    h = (w * 3).detach()
    loss = (h * 2).sum()
    ''')
    print(tr)

The same objects carry the grader's reference answers for unit 04 (and the
capstone): :func:`reaches` (does a tensor's record lead back to another),
:func:`first_broken_edge` (the first statement on a route from a parameter to
the loss whose record no longer leads back to it) and :func:`diagnose` (why a
tensor's ``.grad`` is None). All of them read torch's live record.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import probes
from grader.engine import syntax, torch_state

# --- the trace ------------------------------------------------------------------------------


@dataclass
class Step:
    """One statement of a traced program and what it left behind."""

    number: int  # 1-based position in the program
    line: str  # the statement's source (a with-block keeps its body)
    name: str | None  # the name it assigned; None for a bare call such as loss.backward()
    tensor: Any  # what that name held right after the statement
    inputs: tuple[str, ...] = ()  # names of earlier values it read
    requires_grad: bool | None = None
    is_leaf: bool | None = None
    grad_fn: str = "None"  # class name of the result's grad_fn, read when the step ran
    grad_names: frozenset = frozenset()  # names whose leaf tensor held a .grad (not None) right after it

    def __repr__(self):
        shown = self.line if "\n" not in self.line else self.line.split("\n")[0] + " …"
        return f"Step({self.number}, {shown!r}, name={self.name!r}, inputs={self.inputs!r})"


@dataclass
class Trace:
    """The steps of one program, and its namespace after the last statement."""

    steps: list[Step]
    names: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def loss(self):
        """The tensor named ``loss`` when the program ended (None if there is none)."""
        return self.names.get("loss")

    def __iter__(self):
        return iter(self.steps)

    def __len__(self):
        return len(self.steps)

    def __getitem__(self, index):
        return self.steps[index]

    def table(self, grads: bool = False) -> str:
        """One row per step: the flags when it ran, and (with ``grads``) each result's .grad now."""
        width = min(44, max((len(_one_line(s.line)) for s in self.steps), default=4))
        head = f"{'#':>2}  {'line':<{width}}  requires_grad  is_leaf  grad_fn"
        if grads:
            head += "           .grad now"
        rows = [head]
        for s in self.steps:
            text = _one_line(s.line)
            text = text if len(text) <= width else text[: width - 1] + "…"
            if s.name is None or not isinstance(s.tensor, torch.Tensor):
                rows.append(f"{s.number:>2}  {text}")
                continue
            row = f"{s.number:>2}  {text:<{width}}  {s.requires_grad!s:<13}  {s.is_leaf!s:<7}  {s.grad_fn:<16}"
            if grads:
                row += "  " + _grad_text(s.tensor)
            rows.append(row.rstrip())
        return "\n".join(rows)

    def __repr__(self):
        return self.table()


def _one_line(text: str) -> str:
    return " ⏎ ".join(part.strip() for part in text.split("\n"))


def _grad_text(t: torch.Tensor) -> str:
    if not t.is_leaf and not t.retains_grad:
        return "None (not a leaf)"
    g = t.grad
    if g is None:
        return "None"
    values = g.detach().flatten().tolist()
    return "[" + ", ".join(f"{v:.4f}" for v in values) + "]" if g.dim() else f"{g.item():.4f}"


def _assigned(stmt: ast.stmt) -> list[str]:
    """Names a statement binds, in source order (targets of =, +=, and those inside a with-block)."""
    found: list[str] = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in found:
            found.append(node.id)
    return found


def _read(stmt: ast.stmt) -> list[str]:
    found: list[str] = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in found:
            found.append(node.id)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        found.insert(0, stmt.target.id)  # w -= ... reads w as well as writing it
    return found


def trace(source: str, namespace: Mapping[str, Any] | None = None, clean: bool = True) -> Trace:
    """Run ``source`` statement by statement and record a :class:`Step` for each one.

    ``namespace`` supplies names the program may read (``torch`` is always there).
    With ``clean`` (the default) it runs in torch's default state: grad mode on,
    no inference mode, your own global settings put back afterwards.
    """
    text = "\n".join(line.rstrip() for line in str(source).strip("\n").split("\n"))
    indents = [len(l) - len(l.lstrip()) for l in text.split("\n") if l.strip()]
    margin = min(indents, default=0)
    if margin:
        text = "\n".join(l[margin:] for l in text.split("\n"))
    tree = syntax.parse(text)
    ns: dict[str, Any] = {"torch": torch}
    ns.update(namespace or {})
    known = {k for k, v in ns.items() if isinstance(v, torch.Tensor)}
    steps: list[Step] = []

    def run_all():
        for number, stmt in enumerate(tree.body, start=1):
            code = syntax.compile_tree(ast.Module(body=[stmt], type_ignores=[]), "<traced program>", "exec")
            exec(code, ns)
            names = _assigned(stmt)
            name = names[-1] if names else None
            value = ns.get(name) if name else None
            inputs = tuple(n for n in _read(stmt) if n in known)
            step = Step(number, ast.get_source_segment(text, stmt) or "", name, value, inputs)
            if isinstance(value, torch.Tensor):
                step.requires_grad, step.is_leaf = value.requires_grad, value.is_leaf
                step.grad_fn = probes.node_name(value.grad_fn)
            step.grad_names = frozenset(
                n for n, v in ns.items() if isinstance(v, torch.Tensor) and v.is_leaf and v.grad is not None
            )
            steps.append(step)
            known.update(names)

    if clean:
        with torch_state.clean_room():
            run_all()
    else:
        run_all()
    ns.pop("__builtins__", None)
    return Trace(steps=steps, names=ns, source=text)


# --- reference answers, read from torch's record -------------------------------------------


def reaches(t: Any, target: torch.Tensor) -> bool:
    """Does backward from ``t`` lead to ``target``: is it ``t`` itself, or in the graph under ``t``?"""
    if not isinstance(t, torch.Tensor) or not isinstance(target, torch.Tensor):
        return False
    if t is target:
        return True
    if target.grad_fn is not None:
        return any(fn is target.grad_fn for fn in probes.nodes(t))
    return any(leaf is target for leaf in probes.reachable_leaves(t))


def _sources(tr: Trace) -> list[list[int]]:
    """For each step, the indices of the earlier steps whose values it read (latest binding of each name)."""
    latest: dict[str, int] = {}
    out = []
    for i, step in enumerate(tr.steps):
        out.append([latest[n] for n in step.inputs if n in latest])
        if step.name is not None:
            latest[step.name] = i
    return out


def _loss_index(tr: Trace) -> int:
    for i in range(len(tr.steps) - 1, -1, -1):
        if tr.steps[i].name == "loss":
            return i
    raise ValueError("the traced program never assigns a tensor named loss")


def _used_binding(tr: Trace, name: str) -> int | None:
    """Index of the step whose binding of ``name`` the loss was computed with."""
    end = _loss_index(tr)
    found = None
    for i, step in enumerate(tr.steps[: end + 1]):
        if step.name == name:
            found = i
    return found


def route(tr: Trace, name: str) -> list[int]:
    """Indices of the steps on a value route from ``name`` (as the loss used it) to the loss."""
    start, end = _used_binding(tr, name), _loss_index(tr)
    if start is None:
        return []
    sources = _sources(tr)
    after = {start}
    for i in range(start + 1, end + 1):
        if any(j in after for j in sources[i]):
            after.add(i)
    before, todo = {end}, [end]
    while todo:
        for j in sources[todo.pop()]:
            if j not in before:
                before.add(j)
                todo.append(j)
    return sorted(after & before)


def first_broken_edge(tr: Trace, name: str) -> Step | None:
    """The first step on a route from ``name`` to the loss whose record does not lead back to it.

    None when the loss's record reaches the parameter (nothing is broken) or when
    its value never reaches the loss at all.
    """
    start = _used_binding(tr, name)
    if start is None:
        raise ValueError(f"the traced program never assigns {name!r} before its loss")
    param = tr.steps[start].tensor
    if reaches(tr.steps[_loss_index(tr)].tensor, param):
        return None
    for i in route(tr, name):
        if not reaches(tr.steps[i].tensor, param):
            return tr.steps[i]
    return None


NEVER_ENTERED = "never entered"
DETACHED = "detached"
NO_GRAD = "no_grad region"
INFERENCE = "inference_mode region"
ITEM = "left via .item()"
NON_DIFFERENTIABLE = "non-differentiable op"
NOT_RETAINED = "non-leaf not retained"
REBOUND = "rebound name"
NO_BACKWARD = "backward not run"
CLEARED = "cleared after backward"
CAUSES = (
    NEVER_ENTERED,
    DETACHED,
    NO_GRAD,
    INFERENCE,
    ITEM,
    NON_DIFFERENTIABLE,
    NOT_RETAINED,
    REBOUND,
    NO_BACKWARD,
    CLEARED,
)

# Operations whose result has an integer or boolean dtype: it cannot require grad, so the record stops there
# without a word (argmax, a comparison, an integer cast).
_NON_DIFFERENTIABLE = re.compile(
    r"\.(argmax|argmin|long|int|bool|eq|ne|gt|ge|lt|le)\(|torch\.(int|long|bool|uint)"
    r"|[^=!<>]([<>]=?|==|!=)[^=]"
)


def cut_kind(line: str, tensor: Any = None) -> str | None:
    """Which cut a statement makes: a no_grad or inference_mode block, a detach, a value taken out, or an
    operation with no derivative (its result has an integer or boolean dtype; ``tensor``, when given, is
    the statement's result and is read first)."""
    if "no_grad" in line:
        return NO_GRAD
    if "inference_mode" in line:
        return INFERENCE
    if ".detach(" in line:
        return DETACHED
    if ".item(" in line or ".tolist(" in line or ".numpy(" in line:
        return ITEM
    if isinstance(tensor, torch.Tensor) and not (tensor.is_floating_point() or tensor.is_complex()):
        return NON_DIFFERENTIABLE
    if _NON_DIFFERENTIABLE.search(line):
        return NON_DIFFERENTIABLE
    return None


def diagnose(tr: Trace, name: str) -> str:
    """Why ``tr.names[name].grad`` is None, as one of :data:`CAUSES`, asked in the order a person would."""
    now = tr.names.get(name)
    used = _used_binding(tr, name)
    if used is None or not isinstance(now, torch.Tensor):
        raise ValueError(f"{name!r} is not a tensor the loss was computed from")
    if now is not tr.steps[used].tensor:
        return REBOUND
    if now.grad is not None:
        raise ValueError(f"{name}.grad is not None")
    if not now.requires_grad:
        return NEVER_ENTERED
    if not now.is_leaf:
        return NOT_RETAINED
    if reaches(tr.loss, now):
        # the record is whole: either backward never ran, or it ran and something emptied .grad afterwards
        return CLEARED if any(name in s.grad_names for s in tr.steps[used:]) else NO_BACKWARD
    edge = first_broken_edge(tr, name)
    kind = cut_kind(edge.line, edge.tensor) if edge is not None else None
    if kind is None:
        raise ValueError(f"no cut this procedure knows separates {name} from the loss")
    return kind


def names_of_leaves(leaves: Iterable[torch.Tensor], names: Mapping[str, Any]) -> list[str]:
    by_id = {id(v): k for k, v in names.items() if isinstance(v, torch.Tensor)}
    return [by_id.get(id(t), "an unnamed tensor") for t in leaves]
