"""Whose notebook is it, as an LMS export names it: Canvas's file names, Moodle's folders, or the instructor's pattern.

Understood out of the box, besides the folder-per-learner layout of :func:`grader.instructor.grading.roster.learner_of`:

* **Canvas** ("Download Submissions"): a flat folder of files named
  ``<name>[_LATE]_<user id>_<attachment id>_<the file as handed in>``, e.g.
  ``mullerjurgen_4101_7730011_01_what_the_forward_pass_records.ipynb`` and
  ``mullerjurgen_LATE_4101_7730412_02_backward_and_why_gradients_add-1.ipynb``: one learner, ``mullerjurgen``,
  whose Canvas user id (4101) is kept for the Canvas gradebook's ID column; ``_LATE`` is kept as ``late``.
* **Moodle** ("Download all submissions"): a folder per submission,
  ``<full name>_<participant id>_assignsubmission_file_/`` holding the files as handed in (``Jürgen
  Müller_118822_assignsubmission_file_/01_….ipynb``: ``Jürgen Müller``, id 118822), or, with "download
  submissions in folders" off, files named ``<full name>_<participant id>_assignsubmission_file_<file>``.
* ``--name-pattern REGEX`` (as nbgrader's ``zip_collect`` takes one) for any other export: searched in the
  notebook's path below the folder given (``/`` between folders), it must have a group ``learner`` (or
  ``student_id``) and may have ``id`` (the LMS's id of the learner) and ``unit``. A notebook it does not
  match is named by the rules above, and :attr:`Named.unmatched` says so (``grade`` warns).

A file name is a learner's to choose, so an LMS name counts only where an export puts it: a file lying in the
folder given (the export's own folder) or given itself; in a learner's sub-folder it keeps that folder in
front (``class/mallory/alicesmith_1_2_01_x.ipynb`` -> ``mallory/alicesmith``), as ``roster.learner_of`` does.
Names are NFC-normalised (an archive unpacked on macOS writes ``Müller`` decomposed).
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from grader.instructor.grading.roster import learner_of

CANVAS = re.compile(r"^(?P<learner>[^\W_]+)(?P<late>_LATE)?_(?P<id>\d+)_(?P<attachment>\d+)_(?P<file>.+)$")
MOODLE_FOLDER = re.compile(r"^(?P<learner>.+?)_(?P<id>\d+)_assignsubmission_[a-z]+_?$")
MOODLE_FILE = re.compile(r"^(?P<learner>.+?)_(?P<id>\d+)_assignsubmission_[a-z]+_(?P<file>.+)$")


class PatternError(ValueError):
    pass


@dataclass(frozen=True)
class Named:
    learner: str
    file: str  # the notebook's name as the learner handed it in (the LMS's additions taken off)
    lms_id: str = ""  # the LMS's id of the learner, where its export gives one
    lms: str = ""  # "canvas", "moodle", "pattern" or "" (a folder per learner)
    late: bool = False  # Canvas's _LATE
    unit: str = ""  # a --name-pattern's unit group
    unmatched: bool = False  # a --name-pattern was given and did not match this notebook


def compile_pattern(text: str) -> re.Pattern:
    """A --name-pattern, checked: it compiles and has a group naming the learner."""
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise PatternError(f"--name-pattern {text!r} is not a regular expression: {exc}") from None
    if not {"learner", "student_id"} & set(pattern.groupindex):
        raise PatternError(f"--name-pattern {text!r} needs a group (?P<learner>...) (or (?P<student_id>...))")
    return pattern


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _in_export(notebook: Path, given: Path) -> bool:
    """The notebook lies in the folder given (an export's own folder), or is the path given."""
    if notebook == given:
        return True
    return Path(os.path.abspath(notebook)).parent == Path(os.path.abspath(given))


def _from_pattern(notebook: Path, given: Path, pattern: re.Pattern) -> Named | None:
    try:
        rel = notebook.relative_to(given).as_posix() if notebook != given else notebook.name
    except ValueError:
        rel = notebook.name
    m = pattern.search(_nfc(rel))
    if not m:
        return None
    groups = m.groupdict()
    learner = (groups.get("learner") or groups.get("student_id") or "").strip()
    if not learner:
        return None
    return Named(learner, notebook.name, (groups.get("id") or "").strip(), "pattern", unit=groups.get("unit") or "")


def name_of(notebook: Path, given: Path, pattern: re.Pattern | None = None) -> Named:
    """Who handed ``notebook`` in (``given`` being the path named on the command line); the module's rules."""
    if pattern is not None:
        found = _from_pattern(notebook, given, pattern)
        if found is not None:
            return found
    unmatched = pattern is not None
    holder = _nfc(Path(os.path.abspath(notebook)).parent.name)
    try:
        first = _nfc(notebook.relative_to(given).parts[0]) if notebook != given else holder
    except (ValueError, IndexError):
        first = holder
    for folder in dict.fromkeys((holder, first)):  # its folder, or the first below the one given (nested)
        m = MOODLE_FOLDER.match(folder)
        if m:
            return Named(_nfc(m["learner"]), notebook.name, m["id"], "moodle", unmatched=unmatched)
    name = _nfc(notebook.name)
    for lms, shape in (("canvas", CANVAS), ("moodle", MOODLE_FILE)):
        m = shape.match(name)
        if m:
            learner = m["learner"] if _in_export(notebook, given) else f"{holder}/{m['learner']}"
            late = bool(m.groupdict().get("late"))
            return Named(learner, m["file"], m["id"], lms, late=late, unmatched=unmatched)
    return Named(_nfc(learner_of(notebook, given)), notebook.name, unmatched=unmatched)
