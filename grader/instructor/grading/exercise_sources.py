"""An exercise's function rebuilt from a submitted notebook: the learner's own definitions on top of the course's.

Grading re-runs each learner function in a contained process
(:mod:`grader.instructor.grading.learner_function`), never trusting what the kernel
recorded. That process needs the function's source and what it stands on:

* the **prelude**, from the unit's notebook in ``notebooks/`` (never from the copy): the imports,
  function and class definitions and literal constants of every *grader-owned* cell (a code cell
  with no solution placeholder) that comes before the exercise's check cell. These are the course's
  own names (``from grader.probes.traces import trace``, a ``watch`` helper), and the prelude runs
  with the real ``import``;
* the **learner's part**, from the copy: the same kinds of statement from every *learner-owned* cell
  (one whose id is, in ``notebooks/``, a cell with a placeholder) and every cell the learner added
  (an id the unit's notebook does not have), in the copy's order, up to the check cell. It runs with
  an ``import`` that refuses the grader's internals except the modules the course's own cells import
  (``allowed``), so copying one of the course's import lines into an answer cell works.

Statements other than imports, definitions and assignments of a literal to plain names (an
attribute or item assignment such as ``w.grad = None``, a call, a loop) are left out: they are the
notebook's experiments, not the function. The check cell's function names come from the unit's
notebook too, so a copy whose check cell was edited or deleted still has its function graded.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from grader.engine import syntax

# The marks `grader build` leaves where it stripped a solution (a stripped body is `# YOUR CODE HERE` then
# `raise NotImplementedError()`). The exception's name alone is no mark: a course cell may catch it.
PLACEHOLDERS = ("YOUR ANSWER HERE", "YOUR CODE HERE")


def source_of(cell) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(src) if isinstance(src, list) else str(src)


def grader_owned(cell: dict) -> bool:
    """A code cell of notebooks/ with no solution placeholder: the grader's, restored before execution."""
    return cell.get("cell_type") == "code" and not any(p in source_of(cell) for p in PLACEHOLDERS)


@dataclass
class ExerciseSource:
    qid: str
    names: list[str]  # the function (or class) names the check cell passes
    prelude: str = ""  # the course's definitions, from notebooks/
    source: str = ""  # the learner's definitions, from the copy
    allowed: list[str] = field(default_factory=list)  # grader modules the course's cells import, and the names
    whole: list[str] = field(default_factory=list)  # those of them imported whole (`from grader import probes`)

    def request(self) -> dict:
        return {
            "qid": self.qid,
            "names": self.names,
            "prelude": self.prelude,
            "source": self.source,
            "allowed": self.allowed,
            "whole": self.whole,
        }


def _literal_to_names(node: ast.Assign) -> bool:
    def plain(target: ast.expr) -> bool:
        if isinstance(target, ast.Name):
            return True
        return isinstance(target, (ast.Tuple, ast.List)) and all(plain(t) for t in target.elts)

    if not all(plain(t) for t in node.targets):
        return False
    try:
        ast.literal_eval(node.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


# calls that make a type (a definition written as an assignment): kept, where other assignments are the notebook's
# experiments (`Edge = namedtuple("Edge", "src dst")` is what the function stands on, `x = torch.randn(3)` is not)
TYPE_FACTORIES = {"namedtuple", "NamedTuple", "make_dataclass", "TypedDict", "TypeVar", "Enum", "IntEnum", "Flag"}


def _makes_a_type(node: ast.Assign) -> bool:
    if not (all(isinstance(t, ast.Name) for t in node.targets) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name in TYPE_FACTORIES


# decorators that only shape what they decorate (a record, a method, a cache, a grad mode): kept. Others run the
# notebook's code when the definition runs, before any case's switch is on (one that puts a switched-off module back
# for each call, say): left out, as they always were
PLAIN_DECORATORS = {
    "dataclass",
    "staticmethod",
    "classmethod",
    "property",
    "cache",
    "lru_cache",
    "cached_property",
    "wraps",
    "total_ordering",
    "no_grad",
    "enable_grad",
    "inference_mode",
    "once_differentiable",
    "setter",
    "getter",
}


def _plain_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
    literal_args = not isinstance(node, ast.Call) or all(
        isinstance(a, ast.Constant) for a in [*node.args, *(k.value for k in node.keywords)]
    )
    return name in PLAIN_DECORATORS and literal_args


def _segment(text: str, node: ast.stmt) -> str:
    """A statement's source, a definition's plain decorators included (ast's own segment starts at `def`/`class`)."""
    decorators = [d for d in getattr(node, "decorator_list", None) or () if _plain_decorator(d)]
    if decorators and len(decorators) == len(node.decorator_list):  # type: ignore[attr-defined]
        lines = text.splitlines(keepends=True)
        start = min(d.lineno for d in decorators) - 1
        body = "".join(lines[start : node.end_lineno])
        return "\n".join(line[node.col_offset :] if line.strip() else line for line in body.splitlines()).rstrip()
    return ast.get_source_segment(text, node) or ast.unparse(node)


def definitions(text: str) -> list[str]:
    """The imports, function and class definitions (with their plain decorators), literal constants and assignments that
    make a type (``namedtuple``...) of one cell's code, in order."""
    try:
        tree = syntax.parse_submitted(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    parts = []
    for node in tree.body:
        keep = isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if isinstance(node, ast.Assign):
            keep = _literal_to_names(node) or _makes_a_type(node)
        if keep:
            parts.append(_segment(text, node))
    return parts


def _grader_imports(text: str) -> list[tuple[str, list[str]]]:
    """One cell's imports of grader modules: (``import grader.x``: the module and no names; ``from M import a, b``:
    M and its names)."""
    try:
        tree = syntax.parse_submitted(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name == "grader" or a.name.startswith("grader.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "grader" or node.module.startswith("grader."):
                found.append((node.module, [a.name for a in node.names]))
    return found


def grader_modules(text: str) -> set[str]:
    """The grader modules one cell imports (``grader``, ``grader.probes``...), and each name it imports from one."""
    return {part for module, names in _grader_imports(text) for part in [module, *(f"{module}.{n}" for n in names)]}


def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, AttributeError, ValueError):  # a name inside a module, not a module
        return False


def whole_modules(text: str) -> set[str]:
    """The grader modules one cell binds whole (``import grader.x``, ``from grader import probes``): every function
    in them is the learner's to call. From a module the cell imports names of (``from grader.units.unit07.cases
    import write_program``), only those names are."""
    found = set()
    for module, names in _grader_imports(text):
        if not names:
            found.add(module)
        found |= {f"{module}.{n}" for n in names if _is_module(f"{module}.{n}")}
    return found


def check_calls(text: str, qids: set[str]) -> dict[str, list[str]]:
    """``check("qid", name)`` / ``check("qid", (a, b))`` calls in one cell: qid -> names."""
    try:
        tree = syntax.parse_submitted(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "check" and len(node.args) == 2):
            continue
        first, second = node.args
        if not (isinstance(first, ast.Constant) and first.value in qids) or first.value in found:
            continue
        items = second.elts if isinstance(second, (ast.Tuple, ast.List)) else [second]
        if all(isinstance(i, ast.Name) for i in items):
            found[first.value] = [i.id for i in items]  # type: ignore[attr-defined]
    return found


def exercise_sources(exercise_qids: list[str], template: list[dict], cells: list) -> dict[str, ExerciseSource]:
    """For each exercise of the unit, its function rebuilt from ``cells`` (the copy, as submitted)."""
    wanted = set(exercise_qids)
    template = [c for c in template if isinstance(c, dict)]
    cells = [c for c in cells if isinstance(c, dict)]
    owned_ids = {c.get("id") for c in template if c.get("id") and grader_owned(c)}
    allowed: set[str] = set()
    whole: set[str] = set()
    for c in template:
        if grader_owned(c):
            allowed |= grader_modules(source_of(c))
            whole |= whole_modules(source_of(c))
    out: dict[str, ExerciseSource] = {}
    for index, cell in enumerate(template):
        if not grader_owned(cell):
            continue
        for qid, names in check_calls(source_of(cell), wanted - set(out)).items():
            prelude = [p for c in template[:index] if grader_owned(c) for p in definitions(source_of(c))]
            cell_id = cell.get("id")
            stop = next((i for i, c in enumerate(cells) if cell_id and c.get("id") == cell_id), len(cells))
            mine = []
            for c in cells[:stop]:
                if c.get("cell_type") != "code":
                    continue
                if c.get("id") in owned_ids:
                    continue  # the course's cell: its definitions come from notebooks/, in the prelude
                mine += definitions(source_of(c))  # a learner-owned cell, or one the learner added
            out[qid] = ExerciseSource(
                qid, names, "\n\n".join(prelude), "\n\n".join(mine), sorted(allowed), sorted(whole)
            )
    return out
