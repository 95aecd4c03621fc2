"""``python -m grader ...`` run in the test's own process.

A fresh interpreter imports torch and the grader and loads every question before it reads its arguments: about
2 s of CPU a call, and the suite makes dozens of calls. Tests that check what the command line prints, writes and
returns call it here; tests whose point is the process itself (its exit on a closed pipe, a learner's script run
unchanged, an environment it must not inherit) still start one.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from types import SimpleNamespace
from unittest import mock

from grader.instructor.cli import main


def run(*argv, env: dict | None = None, stdin: str = "") -> SimpleNamespace:
    """The command's exit code (argparse's refusals included), stdout and stderr, as subprocess.run would give
    them; ``env``: variables set for this call only; ``stdin``: what it reads, from no terminal (as a script's
    ``stdin=subprocess.DEVNULL``)."""
    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, env or {}),
        mock.patch.object(sys, "stdin", io.StringIO(stdin)),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def in_a_thread_of_its_own(coroutine):
    """asyncio.run(coroutine) in a thread of its own: a browser test of the same worker may hold Playwright's event
    loop running in this thread (the session's Chromium), where asyncio.run refuses to start another."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
