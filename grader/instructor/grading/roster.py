"""Who a submission belongs to: the learner's name (found the same way whatever subset is graded), the
student ID from the instructor's roster, and when it was handed in.

Learner names, for a notebook found under a path given to ``grade``:

* in a sub-folder of a given folder: that sub-folder (``class/alice/01_x.ipynb`` -> ``alice``);
* otherwise by its file name, less the course's part: ``frank_01.ipynb``,
  ``frank_01_what_the_forward_pass_records.ipynb`` and ``frank-02.ipynb`` -> ``frank``;
* a file named as the course names it (``01_what_the_forward_pass_records.ipynb``) carries no learner:
  it belongs to the folder that holds it (``grade class/dave`` and ``grade class/dave/01_x.ipynb``
  name the same learner as ``grade class``: ``dave``).

A roster is a CSV file with a header: one column naming the learner (``learner``, ``name``,
``folder``, ``file`` or ``username``) and one the student ID (``id``, ``student id``,
``student_id``, ``sis id`` or ``email``). A row matches a learner by name, or a notebook by its
file name or stem.

Submission times come from the file's modification time, or from a CSV the LMS export gives
(``--times``: a column ``file`` or ``path`` and a column ``time`` or ``submitted``), written as
the LMS wrote them.
"""

from __future__ import annotations

import csv
import datetime
import os
import re
from pathlib import Path

from grader.engine.course import UNITS

NAME_COLUMNS = ("learner", "name", "folder", "file", "username", "user")
ID_COLUMNS = ("id", "student id", "student_id", "studentid", "sis id", "sis_id", "email")


class RosterError(ValueError):
    pass


def learner_of(notebook: Path, given: Path) -> str:
    """The learner a notebook belongs to, ``given`` being the path named on the command line."""
    if given != notebook:
        rel = notebook.relative_to(given)
        if len(rel.parts) > 1:
            return rel.parts[0]
    stem = notebook.stem
    if stem[:2] in UNITS and (len(stem) == 2 or stem[2] in "_- ."):
        holder = notebook.parent.name if notebook.parent.name else Path.cwd().name
        return holder or stem
    m = re.match(r"^(.+?)[_\-. ]+(\d\d)(?:[_\-. ].*)?$", stem)
    if m and m.group(2) in UNITS:
        return m.group(1)
    return stem


def _table(path: Path, what: str, first: tuple, second: tuple) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise RosterError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    reader = csv.DictReader(text.splitlines())
    heads = {h.strip().lower(): h for h in reader.fieldnames or [] if h}
    a = next((heads[h] for h in first if h in heads), None)
    b = next((heads[h] for h in second if h in heads), None)
    if a is None or b is None:
        raise RosterError(
            f"{what} {path} needs a header with a column {' / '.join(first)} and a column "
            f"{' / '.join(second)}; it has {', '.join(reader.fieldnames or []) or 'none'}"
        )
    table = {}
    for row in reader:
        key, value = (row.get(a) or "").strip(), (row.get(b) or "").strip()
        if key:
            table[key] = value
    return table


def read_roster(path: Path) -> dict[str, str]:
    return _table(path, "roster", NAME_COLUMNS, ID_COLUMNS)


def read_times(path: Path) -> dict[str, str]:
    return _table(path, "submission times", ("file", "path", "notebook"), ("time", "submitted", "date"))


def lookup(table: dict[str, str], learner: str, notebook: str) -> str | None:
    """The value for a learner (by name) or a notebook (by path, file name or stem); None when not listed."""
    p = Path(notebook)
    folded = {k.lower(): v for k, v in table.items()}
    for key in (learner, notebook, p.name, p.stem):
        if key in table:
            return table[key]
        if key.lower() in folded:
            return folded[key.lower()]
    return None


def submitted(notebook: str, times: dict[str, str] | None = None) -> str:
    """When it was handed in: the LMS's own time where given, else the file's modification time (local)."""
    if times:
        given = lookup(times, "", notebook)
        if given is not None:
            return given
    try:
        when = os.lstat(notebook).st_mtime
    except OSError:
        return ""
    return datetime.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")
