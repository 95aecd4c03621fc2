"""The doctor on the course's own correct programs: every solution cell that uses advanced autograd
(create_graph, autograd.grad, Jacobians, gradient penalties, checkpointing with context_fn, custom
Functions, torch.func) runs under ``with doctor()`` and gets no finding.

The cells are taken from the solution notebooks as they stand: those whose code uses one of these, that
demonstrate no error on purpose (no ``except``) and that are no graded answer (a ``check(...)`` runs the
exercise's programs, broken on purpose). Each runs after the earlier cells it needs (the
latest cell that binds each name it reads, and theirs in turn, found with ``ast``), in one namespace per
notebook, so a cell that changes keeps being checked without a list here to keep in step.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import warnings
from pathlib import Path

import pytest

from grader.probes.doctor import doctor

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"
MARKERS = ("create_graph", "autograd.grad", "jacobian", "context_fn", "autograd.Function", "torch.func", "vmap")
NOTEBOOKS = [
    "02_backward_and_why_gradients_add.ipynb",
    "06_graph_lifetime.ipynb",
    "09b_checkpointing.ipynb",
    "11_writing_a_backward.ipynb",
    "13_autograd_beyond_eager.ipynb",
]


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell binds at its top level, names it reads anywhere)."""
    tree = ast.parse(source)
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound, read - set(dir(builtins))


def _cells(notebook: str) -> list[tuple[str, str]]:
    cells = json.loads((SOLUTIONS / notebook).read_text(encoding="utf-8"))["cells"]
    return [
        (c.get("id", str(i)), "".join(c["source"]))
        for i, c in enumerate(cells)
        if c["cell_type"] == "code" and not "".join(c["source"]).lstrip().startswith(("%", "!"))
    ]


def _plan(cells) -> list[tuple[str, str, bool]]:
    """(cell id, source, checked) for the advanced cells and the earlier cells they need, in order."""
    names = [_names(source) for _, source in cells]
    checked = {
        i
        for i, (_, source) in enumerate(cells)
        if any(m in source for m in MARKERS) and "except" not in source and "check(" not in source
    }
    needed, todo = set(checked), list(checked)
    while todo:
        i = todo.pop()
        for name in names[i][1]:
            maker = next((j for j in range(i - 1, -1, -1) if name in names[j][0]), None)
            if maker is not None and maker not in needed:
                needed.add(maker)
                todo.append(maker)
    return [(cells[i][0], cells[i][1], i in checked) for i in sorted(needed)]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_courses_advanced_cells_get_no_finding(notebook):
    plan = _plan(_cells(notebook))
    assert any(checked for _, _, checked in plan), f"{notebook}: no cell uses advanced autograd any more"
    namespace: dict = {"__name__": "__main__"}
    said = {}
    for cell_id, source, checked in plan:
        code = compile(source, f"<{notebook} {cell_id}>", "exec")
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not checked:
                exec(code, namespace)
                continue
            with doctor(report=False) as d:
                exec(code, namespace)
        if d.findings:
            said[cell_id] = d.text()
    assert said == {}, said
