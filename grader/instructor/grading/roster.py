"""Who a submission belongs to: the learner's name (the same whatever path names the notebook on the
command line), the student ID from the instructor's roster, and when it was handed in.

A notebook's learner is found from where the notebook lies, not from the path given to ``grade``
(so ``grade class``, ``grade class/mallory`` and ``grade class/mallory/x.ipynb`` name it alike, and a
regrade merged with ``--merge-into`` replaces that learner's rows and no one else's):

* the folder that holds a notebook names its learner: ``class/alice/01_x.ipynb`` and
  ``late/alice/01_x.ipynb`` -> ``alice`` (``grade .`` inside it too: the folder's own name). A notebook
  named as the course names it (``01_what_the_forward_pass_records.ipynb``), or with no unit in its
  name (``scratch.ipynb``), or named for that same learner (``alice/alice_01.ipynb``) is that learner's;
* a file named per learner (``frank_01.ipynb``, ``frank_01_what_the_forward_pass_records.ipynb``,
  ``frank-02.ipynb``: ``frank``) in a folder named otherwise is named by both, the folder first:
  ``submissions/frank_01.ipynb`` -> ``submissions/frank``. A flat folder of an LMS export and a
  learner's own folder holding a file named for someone else look the same on disk, and a learner
  can name their files as they like, so a file name alone never makes a notebook someone else's:
  ``class/mallory/alice_00.ipynb`` -> ``mallory/alice``, never ``alice``;
* one exception, kept from the old rule: a notebook two or more folders below the folder given
  (``grade class`` over ``class/alice/week1/01_x.ipynb``, as nbgrader lays a class out) is named by
  the first folder below the given one (``alice``). That rule does depend on the path given: a
  learner's folder graded alone names its sub-folders (``grade class/mallory`` over
  ``class/mallory/alice/00_start_here.ipynb`` says ``alice``), so regrade a learner whose folder
  holds folders, or a class laid out deeper, from the class's top folder.

A roster is a CSV file with a header: one column naming the learner (``learner``, ``name``,
``folder``, ``file`` or ``username``) and one the student ID (``id``, ``student id``,
``student_id``, ``sis id`` or ``email``). A row matches a learner by name, or a notebook by its
file name or stem; a learner named by a flat folder and a file name (``submissions/frank``) is also
matched by the file's part (``frank``) where the folder's name (``submissions``) is not a learner of
the roster, so ``class/mallory/alice_00.ipynb`` never takes alice's student ID.

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

from grader.engine.course import UNITS, leading_unit

NAME_COLUMNS = ("learner", "name", "folder", "file", "username", "user")
ID_COLUMNS = ("id", "student id", "student_id", "studentid", "sis id", "sis_id", "email")


class RosterError(ValueError):
    pass


PER_LEARNER = re.compile(r"^(.+?)[_\-. ]+(\d\d[a-z]?)(?:[_\-. ].*)?$")  # frank_01, frank-02_slug: (learner, unit)


def _named_for(stem: str) -> str | None:
    """The learner a notebook's file name names (``frank_01`` -> ``frank``); None for the course's own
    name (``01_slug``) or a name with no unit in it."""
    if leading_unit(stem):
        return None
    m = PER_LEARNER.match(stem)
    if m and m.group(2) in UNITS:
        return m.group(1)
    return None


def unit_in_name(stem: str) -> str | None:
    """The unit a notebook's file name says: the course's own name (``01_slug``) or one named per learner
    (``frank_02``, ``frank-03_slug``); None where it says none."""
    if leading_unit(stem):
        return leading_unit(stem)
    m = PER_LEARNER.match(stem)
    return m.group(2) if m and m.group(2) in UNITS else None


def _holder(notebook: Path) -> str:
    """The name of the folder that holds a notebook, as it is on disk (``.`` and ``..`` resolved, links not)."""
    return Path(os.path.abspath(notebook)).parent.name


def learner_of(notebook: Path, given: Path) -> str:
    """The learner a notebook belongs to (``given`` being the path named on the command line, which
    matters only for a notebook two or more folders below it); the rule is the module's."""
    if given != notebook:
        try:
            rel = notebook.relative_to(given)
        except ValueError:
            rel = Path(notebook.name)
        if len(rel.parts) > 2:
            return rel.parts[0]
    holder = _holder(notebook)
    named = _named_for(notebook.stem)
    if named is None:
        return holder or notebook.stem
    if not holder or named.casefold() == holder.casefold():
        return holder or named
    return f"{holder}/{named}"


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
    """The value for a learner (by name) or a notebook (by path, file name or stem); None when not listed.
    A learner ``folder/name`` (a file named per learner in a folder named otherwise) is also found as
    ``name``, unless ``folder`` is itself a learner of the table: then the file is in that learner's folder."""
    p = Path(notebook)
    folded = {k.lower(): v for k, v in table.items()}
    keys = [learner, notebook, p.name, p.stem]
    folder, _, named = learner.rpartition("/")
    if folder and folder not in table and folder.lower() not in folded:
        keys.append(named)
    for key in keys:
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
