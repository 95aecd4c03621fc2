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
``student_id``, ``sis id`` or ``email``), and optionally an ``email`` column beside the ID (the Moodle import
file's ``Email address``). Names are identities, so matching is exact: a row matches the learner named exactly
so (case, spaces and accents count; names are NFC-normalised where they are read), or the notebook by its path
exactly as given. A file's name never gives a learner an ID: ``class/mallory/alice_00.ipynb`` is
``mallory/alice`` and gets no ID even where the roster knows ``alice`` (the run warns, saying what the file's name
claims); a flat folder's files (``submissions/frank_01.ipynb``: ``submissions/frank``) are matched by a row
``submissions/frank``. One name with two IDs, or one ID for two names, is refused with both lines named: one ID,
one learner.

Submission times are never a file's modification time, which its owner can set (``touch -d``): they come from a
CSV (``--times``: a column ``file`` or ``path`` and a column ``time`` or ``submitted``) that the LMS's export gives
or that ``grader collect`` writes (``collect-times.csv``: when collect first saw each notebook, paths relative to
the file's folder), written as they were written. ``--times mtime`` takes the files' own times instead, and every
row says so. Without a time, ``submitted`` is empty and a late rule says it cannot apply (:mod:`.late`).
"""

from __future__ import annotations

import csv
import datetime
import os
import re
import unicodedata
from pathlib import Path

from grader.engine.course import UNITS, leading_unit
from grader.instructor.grading import csv_cells

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


class Roster(dict):
    """learner -> student ID, exactly as the roster writes them; ``emails``: learner -> e-mail, where it gives one."""

    def __init__(self, *args, emails: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.emails: dict[str, str] = dict(emails or {})
        self.ids_are_emails = False  # the roster's only key is an e-mail column (`learner,email`)


def _rows(path: Path, what: str, first: tuple, second: tuple):
    """(the header's first column, its second, the reader), the columns chosen from the names given."""
    try:
        text = csv_cells.text_of(path)
    except OSError as exc:
        raise RosterError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except UnicodeError as exc:
        raise RosterError(f"cannot read {what} {path}: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    heads = {h.strip().lower(): h for h in reader.fieldnames or [] if h}
    a = next((heads[h] for h in first if h in heads), None)
    b = next((heads[h] for h in second if h in heads), None)
    if a is None or b is None:
        raise RosterError(
            f"{what} {path} needs a header with a column {' / '.join(first)} and a column "
            f"{' / '.join(second)}; it has {', '.join(reader.fieldnames or []) or 'none'}"
        )
    return a, b, heads, reader


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


EMAIL_COLUMNS = ("email", "email address", "e-mail")


def read_roster(path: Path) -> Roster:
    """The roster at ``path``; RosterError for a missing column, one name given two IDs or one ID given twice."""
    a, b, heads, reader = _rows(path, "roster", NAME_COLUMNS, ID_COLUMNS)
    mail = next((heads[h] for h in EMAIL_COLUMNS if h in heads and heads[h] != b), None)
    table, emails = Roster(), {}
    table.ids_are_emails = any(heads.get(h) == b for h in EMAIL_COLUMNS)
    line_of: dict[str, int] = {}
    owner: dict[str, str] = {}  # an ID -> the learner the roster gave it first
    for line, row in enumerate(reader, start=2):
        key, value = _nfc((row.get(a) or "").strip()), (row.get(b) or "").strip()
        if not key:
            continue
        if key in table and table[key] != value:
            raise RosterError(
                f"roster {path} line {line}: {key!r} has the ID {value!r} here and {table[key]!r} on line "
                f"{line_of[key]}: one name, one ID"
            )
        if value and owner.get(value, key) != key:
            raise RosterError(
                f"roster {path} line {line}: the ID {value!r} of {key!r} is already {owner[value]!r}'s (line "
                f"{line_of[owner[value]]}): one ID, one learner (rename the folder, or give each its own ID)"
            )
        table[key] = value
        line_of.setdefault(key, line)
        if value:
            owner[value] = key
        if mail and (row.get(mail) or "").strip():
            emails[key] = (row.get(mail) or "").strip()
        elif table.ids_are_emails and value:
            emails[key] = value
    table.emails = emails
    return table


class Times(dict):
    """file -> the time it was handed in, as the LMS or collect wrote it: a key with a ``/`` is a path relative to
    the times file's folder (stored resolved), one without is a file name. ``file_times``: ``--times mtime``."""

    def __init__(self, *args, source: str = "", file_times: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.source, self.file_times = source, file_times


FILE_TIMES = "mtime"  # --times mtime: the files' own times (their owners can set them), said in every row


def read_times(path: Path | str) -> Times:
    if str(path) == FILE_TIMES:
        return Times(source="the files' own modification times (their owners can set them)", file_times=True)
    a, b, _, reader = _rows(Path(path), "submission times", ("file", "path", "notebook"), ("time", "submitted", "date"))
    folder = os.path.abspath(Path(path).parent)
    table = Times(source=str(path))
    for row in reader:
        key, value = (row.get(a) or "").strip(), (row.get(b) or "").strip()
        if key:
            table[os.path.normpath(os.path.join(folder, key)) if "/" in key else key] = value
    return table


COLLECT_TIMES = "collect-times.csv"  # grader.instructor.collect.TIMES: what collect writes beside its copies


def collect_record(paths: list[str]) -> Path | None:
    """``collect-times.csv`` in the one folder given, where ``grader collect`` wrote it; else None."""
    if len(paths) == 1 and Path(paths[0]).is_dir():
        found = Path(paths[0]) / COLLECT_TIMES
        if found.is_file() and not found.is_symlink():
            return found
    return None


def time_of(times: dict, notebook: str) -> str | None:
    """A notebook's time in ``times``: by its path (resolved), else by its file name, else by the file name of the
    one path listed that ends in it (a regrade's copy of an export's file, in another folder); None when not
    listed, or where several listed paths end in that name."""
    for key in (os.path.normpath(os.path.abspath(notebook)), notebook, Path(notebook).name):
        if key in times:
            return times[key]
    name = Path(notebook).name
    found = [value for key, value in times.items() if os.sep in str(key) and Path(key).name == name]
    return found[0] if len(found) == 1 else None


def lookup(table: dict, learner: str, notebook: str) -> str | None:
    """The roster's value for a learner, matched exactly by name, or for the notebook by its path exactly as
    given; None when not listed. Never by a file's name: a learner names their files."""
    for key in (learner, notebook):
        if key in table:
            return table[key]
    return None


def not_in_roster(table: dict, learner: str) -> str:
    """The warning for a learner the roster does not know, saying what nearly matched and why it does not."""
    from grader.instructor.grading.printable import escape

    words = f"{escape(learner)} is not in the roster (no student ID)"
    folder, _, named = learner.rpartition("/")
    if folder and named in table:
        return (
            f"{words}: its files are named for {escape(named)}, but they lie in the folder {escape(folder)}, and a "
            f"file's name never gives a learner an ID (add a row {escape(learner)} if it is {escape(named)}'s)"
        )
    near = [k for k in table if k.strip().casefold() == learner.strip().casefold()]
    if near:
        return f"{words}: the roster has {escape(near[0])!r}; names match exactly (case and spaces count)"
    return words


def submitted(notebook: str, times: dict | None = None) -> str:
    """When it was handed in: the time ``times`` gives it (the LMS's own, or collect's record), else '' (unknown);
    the file's own time only with ``--times mtime``."""
    if times:
        given = time_of(times, notebook)
        if given is not None:
            return given
    if getattr(times, "file_times", False):
        try:
            when = os.lstat(notebook).st_mtime
        except OSError:
            return ""
        return datetime.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")
    return ""
