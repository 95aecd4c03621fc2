"""Where in the learner's file: the innermost frame outside torch, the grader and the standard library
(under the command, the innermost frame in the script)."""

from __future__ import annotations

import functools
import os
import sys
import sysconfig

import torch

HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # the doctor's own modules

_NOT_THEIRS = tuple(
    os.path.realpath(p) + os.sep
    for p in {
        os.path.dirname(torch.__file__),
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),  # the grader package
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
    }
)


@functools.lru_cache(maxsize=4096)
def theirs(filename: str, script: str | None) -> bool:
    """Whether a frame's file is the learner's: the script under the command, else any file outside
    torch, the grader and the standard library (a notebook cell's file included). Cached: realpath is slow."""
    if script is not None:
        return os.path.realpath(filename) == script
    if filename.startswith("<frozen"):
        return False
    return not os.path.realpath(filename).startswith(_NOT_THEIRS)


def learner_line(script: str | None) -> str:
    """``file:lineno`` of the innermost frame of the learner's on the stack, or ''."""
    frame = sys._getframe(1)
    while frame is not None:
        if theirs(frame.f_code.co_filename, script):
            return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return ""


def traceback_line(exc: BaseException, script: str | None) -> str:
    """``file:lineno`` of the innermost frame of the learner's in an exception's traceback, or ''."""
    line, tb = "", exc.__traceback__
    while tb is not None:
        if theirs(tb.tb_frame.f_code.co_filename, script):
            line = f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return line


def outside_doctor() -> tuple[str, int, dict | None]:
    """(filename, lineno, its module's warning registry) of the innermost frame outside the doctor, for
    a warning given again as from there (shown once per line under the default filter, as before)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(HERE):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "<unknown>", 0, None
    return frame.f_code.co_filename, frame.f_lineno, frame.f_globals.setdefault("__warningregistry__", {})
