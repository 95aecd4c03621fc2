"""Where in the program: the innermost frame outside torch, the grader, the standard library and installed
packages. The same rule holds for ``with doctor()``, the cell magic and the command, so a finding names
the same line by every path, in whichever file of the program it is (an imported model.py included)."""

from __future__ import annotations

import functools
import os
import re
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
_FRAME = re.compile(r'File "(.*)", line (\d+)')  # a frame of a traceback anomaly mode recorded


@functools.lru_cache(maxsize=4096)
def theirs(filename: str) -> bool:
    """Whether a frame's file is the program's: any file outside torch, the grader, the standard library
    and site-packages (a notebook cell's file included). Cached: realpath is slow."""
    if filename.startswith("<frozen"):
        return False
    return not os.path.realpath(filename).startswith(_NOT_THEIRS)


def where(filename: str, lineno: int) -> str:
    return f"{os.path.basename(filename)}:{lineno}"


def learner_line() -> str:
    """``file:lineno`` of the innermost frame of the program's on the stack, or ''."""
    frame = sys._getframe(1)
    while frame is not None:
        if theirs(frame.f_code.co_filename):
            return where(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return ""


def traceback_line(exc: BaseException) -> str:
    """``file:lineno`` of the innermost frame of the program's in an exception's traceback, or ''."""
    line, tb = "", exc.__traceback__
    while tb is not None:
        if theirs(tb.tb_frame.f_code.co_filename):
            line = where(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return line


def anomaly_line(fn) -> str:
    """The program's line where a node was made, from the traceback anomaly mode stored in its metadata
    (recorded only while anomaly mode was on), or ''."""
    line = ""
    for frame in fn.metadata.get("traceback_", []):
        found = _FRAME.search(frame)
        if found and theirs(found.group(1)):
            line = where(found.group(1), int(found.group(2)))
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
