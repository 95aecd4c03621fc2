"""Python's ``ast`` from several threads: a parse, or a compile of a tree, one thread at a time.

CPython 3.11 keeps the recursion depth of its AST converter (C tree to Python objects in ``ast.parse``, and back
in ``compile`` of a tree) in state the whole interpreter shares. Two threads converting at once spoil each other's
count, and one of them raises ``SystemError: AST constructor recursion depth mismatch (before=30, after=181)``
(python/cpython gh-106905). The gradebook grades several notebooks at a time in threads of one process, each
reading its notebook's code with ``ast``: in two of the suite's full runs, one notebook got the row "grader
error" that way. Every parse and tree compile in the grader goes through here (``tests/test_syntax.py`` checks
that none goes round it).

A submitted cell is parsed by the grading process (the process that grades everyone) only up to
:data:`SUBMITTED_CAP` characters (:func:`parse_submitted`): ``ast`` takes about 500 bytes per element of a
literal, so one 4 MB cell of a list took that process to 2.2 GB, holding the lock the whole time.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

LOCK = threading.RLock()
SUBMITTED_CAP = 100_000  # characters of one submitted cell the grading process parses (the course's longest: 2,614)


class TooLarge(ValueError):
    """A submitted cell longer than SUBMITTED_CAP: not parsed."""


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` of a module's source, never beside another thread's parse or tree compile."""
    with LOCK:
        return ast.parse(source, filename)


def compile_tree(tree: ast.Module | ast.Expression, filename: str, mode: str) -> CodeType:
    """``compile`` of an AST node (a Module, an Expression), never beside another thread's parse or compile."""
    with LOCK:
        return compile(tree, filename, mode)


def parse_submitted(source: str, filename: str = "<cell>") -> ast.Module:
    """:func:`parse` of a cell someone submitted, refused (:class:`TooLarge`) past SUBMITTED_CAP characters."""
    if len(source) > SUBMITTED_CAP:
        raise TooLarge(f"{len(source):,} characters, more than the {SUBMITTED_CAP:,} the grader reads in one cell")
    return parse(source, filename)
