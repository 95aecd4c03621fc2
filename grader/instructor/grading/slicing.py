"""Which cells of a restored notebook a grading run executes: what its verdicts need, not every experiment.

A verdict needs the learner's answers in notebook order and nothing else: every torch answer is
computed outside the run, by the grading process. So the run executes

* every cell the learner wrote: a learner-owned cell (a placeholder in ``notebooks/``) and any cell
  the learner added;
* every grader cell that records something: ``predict``, ``reveal``, ``check``, ``hint``, ``reset``,
  ``mark_passed``, ``unit_panel`` (their calls, found in the code);
* every earlier cell those depend on, by name, transitively: a cell that binds a name a needed cell
  reads, or that mentions a needed variable (a name some cell assigns: ``loss.backward()`` or
  ``w.grad = None`` changes the object in place). Modules and functions are needed where they are
  bound, not wherever they are used. A cell that does not parse (an IPython magic, say) always runs.

The other cells (drawings, demonstrations, the course's own experiments) are left empty. The
notebook keeps every cell, so cell numbers in problems stay those of the notebook. A learner whose
answer is computed from an experiment gets that experiment run; one whose answer is a literal gets
only the cells that record it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from grader.engine import syntax

RECORDING = ("predict", "reveal", "check", "hint", "reset", "mark_passed", "unit_panel")


@dataclass
class CellNames:
    parsed: bool
    binds: set  # names the cell binds at module level (assignment, loop, with, import, def, class)
    variables: set  # of those, the ones bound by assignment (objects a later cell may change in place)
    mentions: set  # every name the cell reads or writes, in any scope
    records: bool  # calls one of the API functions that record progress


def _top_level(tree: ast.Module) -> Iterator[ast.AST]:
    """The nodes at module level: function and class bodies are not entered (their names are local)."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo += [d for d in getattr(node, "decorator_list", [])]
            continue
        todo += list(ast.iter_child_nodes(node))


def _free_names(scope: ast.AST) -> set[str]:
    """Names a function (or class, or lambda) reads from outside: loaded, never bound inside it."""
    local: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.arg):
            local.add(node.arg)
        elif isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else local).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            local |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not scope:
            local.add(node.name)
    return loaded - local


def names_of(text: str) -> CellNames:
    try:
        tree = syntax.parse_submitted(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return CellNames(False, set(), set(), set(), True)
    binds: set[str] = set()
    variables: set[str] = set()
    for node in _top_level(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            binds |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            binds.add(node.id)
            variables.add(node.id)
    mentions: set[str] = set()
    for node in _top_level(tree):
        if isinstance(node, ast.Name):
            mentions.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            mentions |= _free_names(node)
    records = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            records = records or name in RECORDING
        elif isinstance(node, ast.Global):
            binds |= set(node.names)
            variables |= set(node.names)
    return CellNames(True, binds, variables, mentions, records)


def needed(cells: list, learner_cell: list[bool]) -> list[bool]:
    """For each cell (code or not), whether the grading run executes it (see the module's text)."""
    code = [isinstance(c, dict) and c.get("cell_type") == "code" for c in cells]
    info = [names_of(_source(c)) if is_code else None for c, is_code in zip(cells, code)]
    keep = [
        bool(is_code and (mine or i is None or not i.parsed or i.records))
        for is_code, mine, i in zip(code, learner_cell, info)
    ]
    variables = set().union(*(i.variables for i in info if i is not None))
    wanted: set[str] = set()
    # walk backwards: a kept cell's names are wanted from the cells before it
    for index in range(len(cells) - 1, -1, -1):
        i = info[index]
        if i is None:
            continue
        if not keep[index] and (i.binds & wanted or i.mentions & wanted & variables):
            keep[index] = True
        if keep[index]:
            wanted |= i.mentions
    return keep


def _source(cell) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(src) if isinstance(src, list) else str(src)
