"""``%%doctor``: the doctor around one notebook cell, as ``with doctor(): ...`` around its code.

    %%doctor --frozen encoder --should-move head
    for x, y in batches:
        ...

The cell runs unchanged (IPython shows its output and any error as usual); its error reaches the doctor
as it would reach a ``with doctor():`` block around the cell's code (IPython catches it; the magic passes it
on), the report is printed to stderr when it ends, and the doctor is kept in the notebook as ``_doctor``
(``_doctor.findings``). Intent
may also be declared inside the cell, ``# doctor: frozen=encoder should_move=head`` (:mod:`.directive`).
Registered when ``grader`` is imported in IPython, or with ``%load_ext grader.learner.doctor``.
"""

from __future__ import annotations

import shlex
import sys

USAGE = "usage: %%doctor [--frozen NAME]... [--should-move NAME]...   (then the cell's code)"


def parse(line: str) -> tuple[dict, str]:
    """The magic's options as doctor() keywords, or an error message ('' when they read)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        return {}, f"%%doctor: {exc}"
    options: dict[str, list[str]] = {"frozen": [], "should_move": []}
    while words:
        option = words.pop(0)
        key = {"--frozen": "frozen", "--should-move": "should_move"}.get(option)
        if key is None:
            return {}, f"%%doctor: unknown option {option}"
        if not words:
            return {}, f"%%doctor: {option} needs a parameter name"
        options[key].append(words.pop(0))
    return options, ""


def doctor_cell(shell, line: str, cell: str):
    options, error = parse(line)
    if error:
        print(f"{error}\n{USAGE}", file=sys.stderr)
        return None
    from grader.learner.doctor import directive
    from grader.probes.doctor import doctor

    written, error = directive.read(cell, "this cell")
    if error:
        print(f"%%doctor: {error}", file=sys.stderr)
        return None
    d = doctor(**directive.merge(options, written))
    d.__enter__()
    error = None
    try:
        error = shell.run_cell(cell, store_history=False).error_in_exec
    finally:
        d.__exit__(type(error) if error is not None else None, error, getattr(error, "__traceback__", None))
    shell.user_ns["_doctor"] = d
    return None


def register(shell):
    """Register ``%%doctor`` in an IPython shell."""
    shell.register_magic_function(
        lambda line, cell: doctor_cell(shell, line, cell), magic_kind="cell", magic_name="doctor"
    )


def register_in_running_shell():
    """``import grader`` inside IPython: register the magic there (nothing happens outside IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        register(shell)
