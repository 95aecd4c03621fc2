"""Python's ast from threads: the gradebook reads several notebooks' code at once (grader.engine.syntax)."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

import nbformat

from grader.engine import syntax

ROOT = Path(__file__).resolve().parent.parent
# a parse of a unit's code, or a compile of a tree, anywhere but grader/engine/syntax.py
ROUND_ABOUT = re.compile(r"\bast\.parse\(|\bcompile\(\s*ast\.")


def _course_code() -> str:
    nb = nbformat.read(ROOT / "solutions" / "13_autograd_beyond_eager.ipynb", as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and not c.source.lstrip().startswith(("%", "!"))]
    return "\n".join(cells)


class _Finalised:
    def __init__(self):
        self.me = self  # a cycle: freed by the collector, which may run in the middle of a parse

    def __del__(self):
        pass


def test_three_threads_parse_and_compile_a_units_code_without_a_system_error():
    """On CPython 3.11, three threads calling ast.parse on this source, beside garbage with finalisers, raise "AST
    constructor recursion depth mismatch" (measured: in each of four runs of this test with the lock taken out);
    through syntax they never do."""
    source = _course_code()
    statements = syntax.parse(source).body
    failures: list[str] = []

    def work():
        for _ in range(40):
            try:
                tree = syntax.parse(source)
                syntax.compile_tree(ast.Module(body=tree.body[:20], type_ignores=[]), "<cells>", "exec")
                for _ in range(100):
                    _Finalised()  # garbage whose finaliser runs Python code: another thread may run then
            except SystemError as exc:
                failures.append(str(exc))
                return

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statements
    assert not failures, failures[:1]


def test_no_grader_module_parses_round_the_lock():
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "grader").rglob("*.py"))
        if path.name != "syntax.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ROUND_ABOUT.search(line) and not line.lstrip().startswith("#")
    ]
    assert not offenders, offenders
