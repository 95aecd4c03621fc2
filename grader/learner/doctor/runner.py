"""``python -m grader doctor train.py [args...]``: a script run as ``__main__``, unchanged, with the doctor
around it (the command's options are read in grader/instructor/cli.py; intent may also be declared in the
script's text, ``# doctor: frozen=... should_move=...``, read by :mod:`.directive`)."""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from grader.learner.doctor import directive
from grader.probes.doctor import doctor


def run_script(path: str, args=(), frozen=(), should_move=(), stream=None) -> int:
    """Run the script at ``path`` as ``__main__`` (``sys.argv`` = [path, *args]) with the doctor around it;
    the script's own exit status (1 after an uncaught exception, whose traceback is printed as Python would).
    ``frozen`` and ``should_move`` add to what the script's own ``# doctor:`` lines declare; a directive that
    does not read is refused with exit status 2, and the script is not run."""
    path = os.path.abspath(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        written, error = directive.read(f.read(), os.path.basename(path))
    if error:
        print(f"doctor: {error}", file=stream or sys.stderr)
        return 2
    declared = directive.merge({"frozen": list(frozen), "should_move": list(should_move)}, written)
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [path, *args]
    if sys.path:
        sys.path[0] = os.path.dirname(path)
    code = 0
    try:
        with doctor(**declared, script=path, stream=stream):
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except BaseException as exc:  # noqa: BLE001 - the script's own error, shown as Python shows it
                traceback.print_exception(exc)
                code = 1
                if isinstance(exc, KeyboardInterrupt):
                    code = 130
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
    return code
