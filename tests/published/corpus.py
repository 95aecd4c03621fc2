"""Running a corpus program (README.md beside this file) under the doctor, in this process.

A :class:`Program` is a folder under ``programs/`` and the script in it that runs as ``__main__``, with the
arguments that make it small and the data stand-ins it reads. A :class:`Bug` is one planted change to one
of them: a text replaced in one file, the mechanism the doctor must name, and the line(s) a fix edits.

:func:`run` copies the program into a fresh folder (the bug applied there), writes its data, and runs it
either as ``python -m grader doctor script.py args`` runs it (``how="command"``: the command's own
function, :func:`grader.learner.doctor.runner.run`) or inside ``with doctor():`` (``how="context"``), in
this process: torch is imported once for the whole corpus. Everything a program may change is put back
after it: the working folder, ``sys.argv``, ``sys.path``, the environment, the modules it imported (its
own and the stand-ins), torch's thread count and grad mode; the random generators are seeded before it.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import runpy
import shutil
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS_DIR = HERE / "programs"
STANDINS = HERE / "standins"
SHADOWED = ("torchvision", "gymnasium", "matplotlib")  # top-level names the stand-ins replace during a run


@dataclass(frozen=True)
class Program:
    name: str
    script: str  # the file run as __main__, relative to programs/: its first folder is the program's folder
    args: tuple[str, ...] = ()
    data: tuple[Callable[[Path], None], ...] = ()  # data stand-ins written into the run's folder
    env: dict[str, str] = field(default_factory=dict)  # for the stand-ins (their sizes) and torch
    paths: tuple[str, ...] = ()  # folders of the program put on sys.path, as an installed package would be
    source: str = ""  # the published program it reproduces: repository, path, commit


@dataclass(frozen=True)
class Bug:
    name: str
    program: str  # a Program's name
    file: str  # relative to the program's folder (the script's first folder under programs/)
    old: str  # a text found exactly once in the file...
    new: str  # ...and what replaces it
    mechanism: str  # the Mechanism value the doctor must name
    report: str  # the public thread the bug is phrased from
    edit: tuple[str, ...] = ()  # the line(s) a fix edits, as they read after the change (stripped); by default
    # the first line of ``new`` (where ``new`` deletes a line, name the line the fix goes next to)
    args: tuple[str, ...] | None = None  # in place of the program's arguments, where the bug needs others
    env: dict[str, str] | None = None  # added to the program's environment


@dataclass
class Outcome:
    findings: list
    text: str  # the doctor's report
    error: BaseException | None = None  # what the program raised (the context path)
    code: int | None = None  # the command's exit status (the command path)
    stderr: str = ""
    stdout: str = ""
    doctor: object = None
    cpu_s: float = 0.0  # this process's CPU time running the program (setting up the folder not counted)


def folder_of(program: Program, programs_dir: Path = PROGRAMS_DIR) -> Path:
    return programs_dir / Path(program.script).parts[0]


def prepare(program: Program, where: Path, bug: Bug | None = None, programs_dir: Path = PROGRAMS_DIR) -> Path:
    """The program's folder copied into ``where`` (the bug applied), its data written there; the script's path."""
    folder, *inside = Path(program.script).parts
    shutil.copytree(programs_dir / folder, where, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    for write in program.data:
        write(where)
    if bug is not None:
        target = where / bug.file
        text = target.read_text(encoding="utf-8")
        if text.count(bug.old) != 1:
            raise ValueError(f"{bug.name}: the text to replace occurs {text.count(bug.old)} times in {bug.file}")
        target.write_text(text.replace(bug.old, bug.new), encoding="utf-8")
    return where.joinpath(*inside)


def lines_to_edit(bug: Bug, where: Path, original: Path) -> set[str]:
    """``file:lineno`` of each line a fix of ``bug`` edits, in the prepared copy at ``where`` (``original``:
    the program's folder, to place the default: the first line of the replacement)."""
    lines = (where / bug.file).read_text(encoding="utf-8").splitlines()
    name = Path(bug.file).name
    if not bug.edit:
        before = (original / bug.file).read_text(encoding="utf-8")
        start = before.index(bug.old)
        line = before[:start].count("\n") + 1 + len(bug.new) - len(bug.new.lstrip("\n"))
        return {f"{name}:{line}"}
    out = set()
    for wanted in bug.edit:
        found = [i for i, text in enumerate(lines, start=1) if text.strip() == wanted]
        if len(found) != 1:
            raise ValueError(f"{bug.name}: the line to edit {wanted!r} is found {len(found)} times in {bug.file}")
        out.add(f"{name}:{found[0]}")
    return out


@contextlib.contextmanager
def isolated(program: Program, folder: Path):
    """The process as a fresh ``python`` would give it to the program, and put back afterwards."""
    import multiprocessing

    import numpy as np
    import torch

    saved_method = multiprocessing.get_start_method(allow_none=True)
    saved_cwd, saved_path, saved_env = os.getcwd(), sys.path[:], dict(os.environ)
    saved_threads, saved_grad = torch.get_num_threads(), torch.is_grad_enabled()
    shadowed = {name: mod for name, mod in sys.modules.items() if name.split(".")[0] in SHADOWED}
    for name in shadowed:
        del sys.modules[name]
    try:
        os.chdir(folder)
        os.environ.update(program.env)
        sys.path[1:1] = [str(folder / p) for p in program.paths] + [str(STANDINS)]
        torch.set_num_threads(1)
        random.seed(0)
        np.random.seed(0)
        torch.manual_seed(0)
        with warnings.catch_warnings():
            yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path
        for name in [n for n, m in sys.modules.items() if _ours(n, m, folder)]:
            del sys.modules[name]
        sys.modules.update(shadowed)
        torch.set_num_threads(saved_threads)
        torch.set_grad_enabled(saved_grad)
        multiprocessing.set_start_method(saved_method, force=True)


def _ours(name: str, module, folder: Path) -> bool:
    """A module the run imported from the program's folder or from the stand-ins (torch's own lazily
    imported modules stay: importing them twice is refused)."""
    if name.split(".")[0] in SHADOWED:
        return True
    where = getattr(module, "__file__", None) or ""
    return where.startswith((str(folder), str(STANDINS)))


def run(program: Program, folder: Path, how: str, bug: Bug | None = None, programs_dir: Path = PROGRAMS_DIR) -> Outcome:
    """Run ``program`` (with ``bug`` planted) in ``folder`` under the doctor, by the command's path
    (``how="command"``) or by ``with doctor()`` (``"context"``), or without it (``"plain"``); what the
    program prints is kept in the outcome."""
    from grader.learner.doctor import runner
    from grader.probes.doctor import doctor

    script = prepare(program, folder, bug, programs_dir)
    args = program.args if bug is None or bug.args is None else bug.args
    if bug is not None and bug.env:
        program = Program(
            program.name, program.script, program.args, program.data, {**program.env, **bug.env}, program.paths
        )
    out, err = io.StringIO(), io.StringIO()
    with isolated(program, folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        began = time.process_time()
        if how == "command":
            code, watching = runner.run(str(script), args, stream=err)
            if watching is None:
                raise RuntimeError(err.getvalue())
            spent = time.process_time() - began
            return Outcome(
                watching.findings, watching.text(), None, code, err.getvalue(), out.getvalue(), watching, spent
            )
        error, watching = None, None
        try:
            with runner.as_main(str(script), args):
                if how == "plain":
                    runpy.run_path(str(script), run_name="__main__")
                else:
                    with doctor(report=False, stream=err) as watching:
                        runpy.run_path(str(script), run_name="__main__")
        except BaseException as exc:  # noqa: BLE001 - the program's own error (SystemExit included)
            error = exc
        spent = time.process_time() - began
        findings, text = (watching.findings, watching.text()) if watching is not None else ([], "")
        return Outcome(findings, text, error, None, err.getvalue(), out.getvalue(), watching, spent)
