"""The learner's workspace: their own copies of the course notebooks, outside git's and the tests' reach.

``make lab`` runs ``python -m grader workspace``, which copies ``notebooks/`` into ``my-work/`` at the
repository root (``AUTOGRAD_LAB_WORKSPACE`` moves it) and opens JupyterLab there. The learner's answers
are saved into their own files; ``notebooks/`` stays as built, so ``make test`` and ``build`` never meet
them.

A course update never overwrites a learner's file. For each notebook of the course:

* not in the workspace: copied in;
* in the workspace, still exactly as the course delivered it: replaced by the new version
  (nothing of the learner's is in it);
* in the workspace and changed by the learner: left alone; the new version is written beside it as
  ``<name>.course-update-<date>.ipynb`` and the report says so.

Each copy's ``language_info.version`` is this Python's (:func:`for_this_python`): JupyterLab writes the
running kernel's ``language_info`` into a notebook it opens, so a notebook built on another Python would be
marked unsaved the moment it opens, before the learner did anything.

What was delivered is recorded in ``.autograd-lab.json`` inside the workspace (hidden in JupyterLab).
Every notebook sits at the top of the workspace, as in ``notebooks/``, so the relative links between
units keep working.
"""

from __future__ import annotations

import datetime
import errno
import hashlib
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.engine import env_vars

ROOT = Path(__file__).resolve().parents[2]
ENV = env_vars.WORKSPACE
DEFAULT_NAME = "my-work"
RECORD = ".autograd-lab.json"
START = "00_start_here.ipynb"
# folders of the course itself: a workspace may not sit in (or be) one of them
COURSE_FOLDERS = ("notebooks", "solutions", "tests", "grader", "docs", "bench", ".git", ".github", ".venv")


class WorkspaceError(Exception):
    """The workspace cannot be used where it was asked for; the text says why and what to do."""


@dataclass(frozen=True)
class Change:
    name: str  # the course notebook, e.g. 07_version_counters_and_in_place_writes.ipynb
    action: str  # "added", "updated", "beside", "waiting" or "current"
    beside: str = ""  # for "beside" and "waiting": the file holding the course's new version

    def line(self) -> str:
        if self.action == "added":
            return f"  added    {self.name}"
        if self.action == "updated":
            return f"  updated  {self.name} (you had not changed it)"
        if self.action == "beside":
            return (
                f"  new version of {self.name} saved beside yours as {self.beside}\n"
                f"           (your {self.name} is untouched; the new one holds the course's changes)"
            )
        if self.action == "waiting":
            return (
                f"  {self.beside} (a course update) still waits beside your {self.name}"
                f" (delete it once you are done with it)"
            )
        return f"  current  {self.name}"


def default_dir(root: Path = ROOT) -> Path:
    """AUTOGRAD_LAB_WORKSPACE if set (``~`` expanded, relative to the current folder), else my-work/."""
    value = os.environ.get(ENV, "").strip()
    return Path(value).expanduser().resolve() if value else (root / DEFAULT_NAME).resolve()


def check_location(workspace: Path, root: Path = ROOT) -> Path:
    """The workspace's absolute path, or WorkspaceError if it would mix with the course's own files."""
    workspace, root = Path(workspace).expanduser().resolve(), Path(root).resolve()
    if workspace == root or workspace in root.parents:
        raise WorkspaceError(
            f"{workspace} holds the course itself; choose a folder of its own, such as {root / DEFAULT_NAME}"
        )
    if root in workspace.parents:
        rel = workspace.relative_to(root)
        if rel.parts[0] in COURSE_FOLDERS:
            where = "is" if len(rel.parts) == 1 else "is inside"
            raise WorkspaceError(f"{rel}/ {where} the course's own {rel.parts[0]}/; choose a folder of your own")
        if rel != Path(DEFAULT_NAME):
            # git and pytest are told to skip my-work/ by name; any other folder in here they would read
            raise WorkspaceError(
                f"inside the repository the workspace must be {DEFAULT_NAME}/ "
                f"(git and the tests skip that folder); {rel}/ is not. "
                f"Put it outside the repository or leave {ENV} unset."
            )
    if workspace.exists() and not workspace.is_dir():
        raise WorkspaceError(f"{workspace} exists and is not a folder")
    return workspace


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def for_this_python(data: bytes) -> bytes:
    """A course notebook as this Python's kernel describes it: its ``language_info.version`` made this
    interpreter's (what ipykernel reports), the rest byte for byte. A file not in nbformat's own layout, or
    without that field, is returned unchanged."""
    version = sys.version.split()[0]
    try:
        text = data.decode("utf-8")
        nb = json.loads(text)
        info = nb["metadata"]["language_info"]
        if not isinstance(info, dict) or info.get("version") in (None, version):
            return data
        if json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n" != text:
            return data
        info["version"] = version
        return (json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    except (ValueError, KeyError, TypeError, AttributeError):
        return data


def _course_files(source: Path) -> list[Path]:
    return sorted(p for p in source.glob("*.ipynb") if p.is_file())


def _read_record(workspace: Path) -> dict:
    try:
        data = json.loads((workspace / RECORD).read_text())
        return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else {"files": {}}
    except (OSError, ValueError):
        return {"files": {}}


def _write(path: Path, data: bytes) -> None:
    """Write a new file; never replaces one that appeared meanwhile (FileExistsError)."""
    with open(path, "xb") as f:
        f.write(data)


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _beside_name(workspace: Path, name: str, data: bytes, day: str) -> tuple[str, bool]:
    """A free name for the new version of ``name``; (name, True) if that very version is already there."""
    stem = name[: -len(".ipynb")]
    for n in range(1, 1000):
        candidate = f"{stem}.course-update-{day}{'' if n == 1 else f'-{n}'}.ipynb"
        path = workspace / candidate
        if not path.exists():
            return candidate, False
        if path.read_bytes() == data:
            return candidate, True
    raise WorkspaceError(f"too many course updates of {name} beside it in {workspace}")


def sync(workspace: Path | None = None, root: Path = ROOT, today: datetime.date | None = None) -> list[Change]:
    """Create or update the workspace from root/notebooks; never overwrite a file the learner changed."""
    root = Path(root).resolve()
    workspace = check_location(workspace if workspace is not None else default_dir(root), root)
    source = root / "notebooks"
    files = _course_files(source)
    if not files:
        raise WorkspaceError(f"no notebooks in {source}: run `python -m grader build` first")
    workspace.mkdir(parents=True, exist_ok=True)
    ignore = workspace / ".gitignore"
    if not ignore.exists():
        # git skips the whole folder wherever it sits, in this repository or another
        ignore.write_text("# the learner's own work: never committed to the course repository\n*\n")
    record = _read_record(workspace)
    delivered: dict = record["files"]
    day = (today or datetime.date.today()).isoformat()
    changes = []
    for path in files:
        name, data = path.name, for_this_python(path.read_bytes())
        new = _digest(data)
        mine = workspace / name
        entry = delivered.get(name) if isinstance(delivered.get(name), dict) else {}
        if not mine.exists():
            _write(mine, data)
            delivered[name] = {"base": new, "offered": new}
            changes.append(Change(name, "added"))
            continue
        current = _digest(mine.read_bytes())
        if current == new:
            delivered[name] = {"base": new, "offered": new}
            changes.append(Change(name, "current"))
        elif entry.get("offered") == new:  # this version was already offered beside the learner's
            waiting = entry.get("beside", "")
            changes.append(
                Change(name, "waiting", waiting)
                if waiting and (workspace / waiting).exists()
                else Change(name, "current")
            )
        elif entry.get("base") == current:
            _replace(mine, data)  # exactly what the course delivered: no work of theirs in it
            delivered[name] = {"base": new, "offered": new}
            changes.append(Change(name, "updated"))
        else:
            beside, there = _beside_name(workspace, name, data, day)
            if not there:
                _write(workspace / beside, data)
            delivered[name] = {"base": entry.get("base", ""), "offered": new, "beside": beside}
            changes.append(Change(name, "beside", beside))
    record["files"] = delivered
    _replace(workspace / RECORD, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    return changes


def report(changes: list[Change], workspace: Path) -> str:
    shown = [c.line() for c in changes if c.action != "current"]
    head = f"your workspace: {workspace}"
    if not shown:
        return head + f" ({len(changes)} notebooks, all current)"
    return "\n".join([head, *shown])


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True if something already listens on host:port (binds as Jupyter does, with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


WIDGETS = "@jupyter-widgets/jupyterlab-manager:plugin"  # the widget manager's settings, in overrides.json


def lab_settings(prefix: Path | None = None, source: Path | None = None) -> str:
    """JupyterLab's overrides.json in this environment (``prefix``/share/jupyter/lab/settings) holding the course's
    settings: above all the widget manager's ``saveState``, without which a prediction locked after a page reload
    reaches the saved notebook through nothing (``make lab`` copies the file; the conda path runs this). Settings
    already there are kept; what was done, in one line ('' when nothing was needed)."""
    prefix = Path(sys.prefix) if prefix is None else prefix
    source = ROOT / "jupyter" / "overrides.json" if source is None else source
    target = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    try:
        wanted = json.loads(source.read_text(encoding="utf-8"))
        have = json.loads(target.read_text(encoding="utf-8")) if target.exists() else {}
    except (OSError, ValueError) as exc:
        return (
            f"JupyterLab's settings {target} could not be read ({exc}): set saveState in the widget manager's settings"
        )
    if not isinstance(have, dict):
        return f"JupyterLab's settings {target} are not a JSON object: set saveState in the widget manager's settings"
    merged = {**wanted, **have, WIDGETS: {**wanted.get(WIDGETS, {}), **have.get(WIDGETS, {}), "saveState": True}}
    if merged == have:
        return ""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _replace(target, (json.dumps(merged, indent=2) + "\n").encode())
    except OSError as exc:
        return f"JupyterLab's settings {target} could not be written ({exc.strerror or exc}): widget state is not saved"
    return f"JupyterLab set to save widget state with the notebook ({target})"
