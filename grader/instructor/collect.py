"""Collect a hub's class for grading: each learner's workspace notebooks, copied out, named by user, with the time.

    python -m grader collect --homes /home OUT/ [--users alice,bob | --group students] [--unit 01 --unit 02]
                             [--workspace autograd-lab]

The learners are the users named (``--users``, or the members of the Unix group ``--group``), else every home in
``--homes`` that holds the course (its workspace or progress folder; see :mod:`grader.instructor.homes`: a
service account's home is not a learner, and the summary names the homes left out). From each learner's workspace
(``~/autograd-lab``, what the hub's start command makes; see :mod:`grader.instructor.hub`) the course's notebooks
(named as the course names them, ``01_what_the_forward_pass_records.ipynb``) are copied to
``OUT/<user>/<the same name>``, the layout ``python -m grader grade OUT/`` reads as a folder per learner (as
``nbgrader collect`` files each student's submission under their id). A collect run again replaces the copies it
made before; nothing is ever written in a learner's home.

**When it was handed in.** A file's modification time is its owner's to set (``touch -d 2020-01-01``), so it is
never taken as the time a notebook was handed in. What collect knows is when it saw each notebook: it keeps a
record, ``OUT/collect-times.csv`` (``file,time,saved,sha256``), where ``time`` is the first collect run that saw
that notebook with these very bytes (a notebook unchanged since an earlier run keeps that run's time; a changed one
takes this run's), ``saved`` the file's own time (shown, never trusted) and ``sha256`` its content. ``grade OUT/``
reads the record by itself as the submission times. So run collect at the due time (``at``, ``cron``, a systemd
timer) and again later for late work: what was there at the due time is on time, whatever its file says.

A learner's home is the learner's to shape, and the instructor collects as root, so every part of every path is
opened from the folder above it without following a link (:mod:`grader.instructor.homes`: a workspace swapped for
a link to another learner's, even in a race, is refused), each folder and file must belong to the home's owner,
only plain files are read (a FIFO would block), at most ``MAX_BYTES`` each. Each refusal is listed in the summary,
with the learners who have no workspace yet ("not started"). Every name printed has its control characters
escaped (:mod:`grader.instructor.grading.printable`).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader.engine.course import UNITS
from grader.instructor import homes as home_files
from grader.instructor.grading.printable import escape

WORKSPACE = home_files.WORKSPACE
MAX_BYTES = 50 * 1024 * 1024  # a course notebook with outputs is well under 5 MB
TIMES = "collect-times.csv"  # the record of when collect saw each notebook, in OUT
TIME_COLUMNS = ("file", "time", "saved", "sha256")


@dataclass
class Collected:
    learner: str
    copied: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "<name>: why"
    problem: str = ""  # why nothing was collected ("not started", a refused workspace)
    seen: dict = field(default_factory=dict)  # file name -> (sha256, the file's own time): for the record


def _iso(when: float) -> str:
    return datetime.datetime.fromtimestamp(when).astimezone().isoformat(timespec="seconds")


def collect_one(user: str, home: Path, out: Path, units: list[str], workspace: str = WORKSPACE) -> Collected:
    result = Collected(user)
    parts = [p for p in Path(workspace).parts if p not in ("/",)]
    try:
        opened = home_files.open_home(user, home)
    except home_files.Missing:
        result.problem = "not started (no home yet)"
        return result
    except home_files.Refused as exc:
        result.problem = f"refused: {exc}"
        return result
    with opened:
        try:
            folder = home_files.open_folder(opened, parts)
        except home_files.Missing:
            result.problem = "not started (no workspace yet)"
            return result
        except home_files.Refused as exc:
            result.problem = f"refused: the workspace {exc}"
            return result
        try:
            for uid in units:
                name = UNITS[uid].notebook
                try:
                    data, info = home_files.read_file(folder, name, MAX_BYTES, opened.owner)
                except home_files.Missing:
                    continue
                except home_files.Refused as exc:
                    result.refused.append(str(exc))
                    continue
                target = out / user / name
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(target.name + ".part")
                partial.write_bytes(data)
                partial.replace(target)
                result.copied.append(name)
                result.seen[name] = (hashlib.sha256(data).hexdigest(), info.st_mtime)
        finally:
            os.close(folder)
    return result


def read_record(out: Path) -> dict[str, dict]:
    """The record of earlier runs (``file`` -> its row), or {} where there is none yet."""
    try:
        with open(out / TIMES, newline="", encoding="utf-8") as f:
            return {row["file"]: row for row in csv.DictReader(f) if row.get("file")}
    except (OSError, KeyError, csv.Error):
        return {}


def write_record(out: Path, results: list[Collected], now: float) -> Path:
    """Add this run's notebooks to ``OUT/collect-times.csv``: an unchanged notebook keeps the time it was first
    seen with these bytes, a new or changed one takes ``now``."""
    record = read_record(out)
    for r in results:
        for name, (sha, saved) in r.seen.items():
            key = f"{r.learner}/{name}"
            before = record.get(key)
            kept = before is not None and before.get("sha256") == sha and before.get("time")
            record[key] = {
                "file": key,
                "time": before["time"] if kept else _iso(now),
                "saved": _iso(saved),
                "sha256": sha,
            }
    path = out / TIMES
    partial = path.with_name(TIMES + ".part")
    with open(partial, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=TIME_COLUMNS)
        writer.writeheader()
        for key in sorted(record):
            writer.writerow({c: record[key].get(c, "") for c in TIME_COLUMNS})
    partial.replace(path)
    return path


def collect(
    homes: list[Path],
    out: Path,
    users: list[str] | None = None,
    units: list[str] | None = None,
    workspace=WORKSPACE,
    others: list | None = None,
    now: float | None = None,
) -> list[Collected]:
    """Collect every learner (:func:`grader.instructor.homes.learners`) into ``out`` and record when (``now``, a
    POSIX time: this moment unless given); the homes that are not learners are appended to ``others``."""
    out.mkdir(parents=True, exist_ok=True)
    wanted = units or list(UNITS)
    found = home_files.learners(homes, users, workspace)
    if others is not None:
        others += found.others
    now = datetime.datetime.now().timestamp() if now is None else now
    results = [collect_one(user, home, out, wanted, workspace) for user, home in found.learners]
    write_record(out, results, now)
    return results


def summary(results: list[Collected], out: Path, others: list[str] | None = None) -> str:
    lines = []
    for r in results:
        who = escape(r.learner)
        if r.problem:
            lines.append(f"  {who:<20} {escape(r.problem)}")
        else:
            lines.append(f"  {who:<20} {len(r.copied)} notebook{'' if len(r.copied) == 1 else 's'}")
        lines += [f"  {'':<20} refused {escape(why)}" for why in r.refused]
    if others:
        lines.append("  " + home_files.others_line(others))
    n = sum(len(r.copied) for r in results)
    lines.append(
        f"collected {n} notebook{'' if n == 1 else 's'} of {sum(bool(r.copied) for r in results)} of "
        f"{len(results)} learners into {out} (when each was first seen: {out / TIMES}); grade them with: "
        f"python -m grader grade {out} --out grades.csv"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader collect", description=__doc__.split("\n")[0])
    parser.add_argument("out", help="the folder to copy into (one folder per learner)")
    parser.add_argument("--homes", action="append", help="a folder of users' homes (repeatable; default /home)")
    parser.add_argument("--users", help="only these users, comma-separated")
    parser.add_argument("--group", help="the learners are the members of this Unix group")
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
    if args.group:
        if users:
            print("collect: give --users or --group, not both", file=sys.stderr)
            return 2
        try:
            users = home_files.group_members(args.group)
        except KeyError:
            print(f"collect: no such group: {escape(args.group)}", file=sys.stderr)
            return 2
    odd = [u for u in users if u in (".", "..") or "/" in u or "\\" in u]
    if odd:
        print(f"collect: not a user name: {', '.join(escape(u) for u in odd)}", file=sys.stderr)
        return 2
    if Path(args.workspace).is_absolute() or ".." in Path(args.workspace).parts:
        print("collect: --workspace is a folder inside each home (autograd-lab), not a path out of it", file=sys.stderr)
        return 2
    homes = [Path(h) for h in args.homes or ["/home"]]
    missing = [h for h in homes if not h.is_dir()]
    if missing:
        where = ", ".join(escape(str(h)) for h in missing)
        print(f"collect: --homes {where}: no such folder (a folder of users' homes, /home by default)", file=sys.stderr)
        return 2
    others: list[str] = []
    results = collect(homes, out, users or None, units or None, args.workspace, others)
    print(summary(results, out, others))
    return 0 if any(r.copied for r in results) else 1
