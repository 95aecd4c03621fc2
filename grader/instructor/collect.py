"""Collect a hub's class for grading: each learner's workspace notebooks, copied out, named by user.

    python -m grader collect --homes /home OUT/ [--users alice,bob] [--unit 01 --unit 02] [--workspace autograd-lab]

Every folder in ``--homes`` is a learner (every user of the hub, as the class view counts them), or only
``--users``. From each learner's workspace (``~/autograd-lab``, what the hub's start command makes; see
:mod:`grader.instructor.hub`) the course's notebooks (named as the course names them,
``01_what_the_forward_pass_records.ipynb``) are copied to ``OUT/<user>/<the same name>``, the layout
``python -m grader grade OUT/`` reads as a folder per learner (as ``nbgrader collect`` files each student's
submission under their id). Each copy keeps the learner's modification time, which ``grade`` reports as
the time it was handed in. A collect run again replaces the copies it made before; nothing is ever written
in a learner's home.

A learner's home is the learner's to shape, and the instructor collects as root, so every file is read as
untrusted: a link (the workspace, or a notebook in it, pointing anywhere, another learner's file or
``/etc/shadow``) is refused, never followed; only plain files are read (a FIFO would block), at most
``MAX_BYTES`` each; a workspace not owned by the home's owner is refused. Each refusal is listed in the
summary, with the learners who have no workspace yet ("not started").
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader.engine.course import UNITS

WORKSPACE = "autograd-lab"  # grader.instructor.hub.WORKSPACE_NAME: a user's workspace in their home
MAX_BYTES = 50 * 1024 * 1024  # a course notebook with outputs is well under 5 MB


@dataclass
class Collected:
    learner: str
    copied: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "<name>: why"
    problem: str = ""  # why nothing was collected ("not started", a refused workspace)


def _read_plain(path: Path) -> tuple[bytes, float]:
    """(the bytes, the modification time) of a plain file that is not a link; OSError/ValueError saying why not."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a plain file")
        if info.st_size > MAX_BYTES:
            raise ValueError(f"{info.st_size} bytes, over the {MAX_BYTES // 2**20} MB a notebook may have")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_BYTES:
                raise ValueError(f"over the {MAX_BYTES // 2**20} MB a notebook may have")
            chunks.append(chunk)
        return b"".join(chunks), info.st_mtime
    finally:
        os.close(fd)


def learners(homes: list[Path], users: list[str] | None) -> list[tuple[str, Path]]:
    """(user, home) for ``users`` (found in ``homes``), else for every folder in ``homes``."""
    if users:
        found = []
        for user in users:
            home = next((Path(h) / user for h in homes if (Path(h) / user).is_dir()), Path(homes[0]) / user)
            found.append((user, home))
        return found
    found = []
    for base in homes:
        try:
            entries = sorted(Path(base).iterdir())
        except OSError:
            continue
        found += [
            (p.name, p)
            for p in entries
            if not p.name.startswith(".") and p.name != "lost+found" and p.is_dir() and not p.is_symlink()
        ]
    return found


def collect_one(user: str, home: Path, out: Path, units: list[str], workspace: str = WORKSPACE) -> Collected:
    result = Collected(user)
    where = home / workspace
    try:
        info = os.lstat(where)
    except FileNotFoundError:
        result.problem = "not started (no workspace yet)"
        return result
    except OSError as exc:
        result.problem = f"workspace not readable: {exc.strerror or exc}"
        return result
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        result.problem = f"refused: {where} is a link or not a folder"
        return result
    try:
        owner = os.lstat(home).st_uid
    except OSError:
        owner = info.st_uid
    if info.st_uid != owner:
        result.problem = f"refused: {where} does not belong to the owner of {home}"
        return result
    for uid in units:
        name = UNITS[uid].notebook
        source = where / name
        try:
            data, mtime = _read_plain(source)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            link = getattr(exc, "errno", None) == errno.ELOOP
            why = "a link (not followed)" if link else (getattr(exc, "strerror", None) or str(exc))
            result.refused.append(f"{name}: {why}")
            continue
        target = out / user / name
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(data)
        os.utime(partial, (mtime, mtime))  # grade reports it as the time it was handed in
        partial.replace(target)
        result.copied.append(name)
    return result


def collect(
    homes: list[Path], out: Path, users: list[str] | None = None, units: list[str] | None = None, workspace=WORKSPACE
) -> list[Collected]:
    out.mkdir(parents=True, exist_ok=True)
    wanted = units or list(UNITS)
    return [collect_one(user, home, out, wanted, workspace) for user, home in learners(homes, users)]


def summary(results: list[Collected], out: Path) -> str:
    lines = []
    for r in results:
        if r.problem:
            lines.append(f"  {r.learner:<20} {r.problem}")
        else:
            lines.append(f"  {r.learner:<20} {len(r.copied)} notebook{'' if len(r.copied) == 1 else 's'}")
        lines += [f"  {'':<20} refused {why}" for why in r.refused]
    n = sum(len(r.copied) for r in results)
    lines.append(
        f"collected {n} notebook{'' if n == 1 else 's'} of {sum(bool(r.copied) for r in results)} of "
        f"{len(results)} learners into {out}; grade them with: python -m grader grade {out} --out grades.csv"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader collect", description=__doc__.split("\n")[0])
    parser.add_argument("out", help="the folder to copy into (one folder per learner)")
    parser.add_argument("--homes", action="append", help="a folder of users' homes (repeatable; default /home)")
    parser.add_argument("--users", help="only these users, comma-separated")
    parser.add_argument("--unit", action="append", help="only these units (repeatable), e.g. --unit 01")
    parser.add_argument("--workspace", default=WORKSPACE, help=f"the workspace inside each home (default {WORKSPACE})")
    args = parser.parse_args(argv)
    units = [u.strip().zfill(2) for u in args.unit or []]
    unknown = [u for u in units if u not in UNITS]
    if unknown:
        print(f"collect: no such unit: {', '.join(unknown)} (the course has {', '.join(UNITS)})", file=sys.stderr)
        return 2
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        print(f"collect: {out} is a file; give a folder", file=sys.stderr)
        return 2
    users = [u.strip() for u in (args.users or "").split(",") if u.strip()]
    odd = [u for u in users if u in (".", "..") or "/" in u or "\\" in u]
    if odd:
        print(f"collect: not a user name: {', '.join(odd)}", file=sys.stderr)
        return 2
    homes = [Path(h) for h in args.homes or ["/home"]]
    results = collect(homes, out, users or None, units or None, args.workspace)
    print(summary(results, out))
    return 0 if any(r.copied for r in results) else 1
