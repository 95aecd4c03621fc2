"""``python -m grader doctor train.py [args...]``: a script run as ``__main__``, unchanged, with the doctor
around it (the command's options are read in grader/instructor/cli.py; intent may also be declared in the
script's text, ``# doctor: frozen=... should_move=...``, read by :mod:`.directive`).

The script runs inside ``with doctor(...)`` exactly as a ``with doctor():`` block around the same code
would: its exception (or ``SystemExit``) passes through the doctor, which sees it as the block would, and
is then shown as Python shows it (the traceback from the script's first frame) with Python's exit status.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback

from grader.learner.doctor import directive
from grader.probes.doctor import Doctor, doctor


@contextlib.contextmanager
def as_main(path: str, args=()):
    """``sys.argv`` and ``sys.path[0]`` as ``python path args...`` sets them, restored afterwards."""
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [path, *args]
    if sys.path:
        sys.path[0] = os.path.dirname(path)
    try:
        yield
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0


def run(path: str, args=(), frozen=(), should_move=(), stream=None) -> tuple[int, Doctor | None]:
    """(the script's exit status, the doctor that watched it); the doctor is None when a directive in the
    script does not read (status 2, the script is not run). ``run_script`` is this, for the command line."""
    path = os.path.abspath(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        written, error = directive.read(f.read(), os.path.basename(path))
    if error:
        print(f"doctor: {error}", file=stream or sys.stderr)
        return 2, None
    declared = directive.merge({"frozen": list(frozen), "should_move": list(should_move)}, written)
    watching = doctor(**declared, script=path, stream=stream)
    entered = False
    try:
        with as_main(path, args), watching:
            entered = True
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0, watching
        print(exc.code, file=sys.stderr)
        return 1, watching
    except BaseException as exc:  # noqa: BLE001 - the script's own error, shown as Python shows it
        if not entered:
            raise  # the doctor could not start (another one is watching): not the script's error
        _show(exc, path)
        return (130 if isinstance(exc, KeyboardInterrupt) else 1), watching
    return 0, watching


def _show(exc: BaseException, path: str) -> None:
    """The traceback as ``python path`` prints it: from the script's first frame (the runner's and runpy's
    frames above it are not the program's)."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb or exc.__traceback__)


def run_script(path: str, args=(), frozen=(), should_move=(), stream=None) -> int:
    """Run the script at ``path`` as ``__main__`` (``sys.argv`` = [path, *args]) with the doctor around it;
    the script's own exit status (1 after an uncaught exception, whose traceback is printed as Python would).
    ``frozen`` and ``should_move`` add to what the script's own ``# doctor:`` lines declare; a directive that
    does not read is refused with exit status 2, and the script is not run."""
    return run(path, args, frozen, should_move, stream)[0]
