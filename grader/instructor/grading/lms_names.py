"""Whose notebook is it, as an LMS export names it: Canvas's file names, Moodle's folders, or the instructor's pattern.

Names are identities, and two students can share one: so wherever an LMS's export carries its own id of the
learner, that id keeps learners apart. Understood out of the box, besides the folder-per-learner layout of
:func:`grader.instructor.grading.roster.learner_of`:

* **Canvas** ("Download Submissions"): files named
  ``<name>[_LATE]_<user id>_<attachment id>_<the file as handed in>``, e.g.
  ``mullerjurgen_4101_7730011_01_what_the_forward_pass_records.ipynb`` and
  ``mullerjurgen_LATE_4101_7730412_02_backward_and_why_gradients_add-1.ipynb``: one learner,
  ``mullerjurgen_4101`` (Canvas's sortable name, then its user id, which is the same in every assignment of the
  course: two students named ``smithalice`` are ``smithalice_4101`` and ``smithalice_4999``, never one learner);
  the id is also kept for the Canvas gradebook's ID column, and ``_LATE`` (Canvas's own mark) as ``late``.
* **Moodle** ("Download all submissions"): a folder per submission,
  ``<full name>_<participant id>_assignsubmission_file_/`` holding the files as handed in (``Jürgen
  Müller_118822_assignsubmission_file_/01_….ipynb``), or, with "download submissions in folders" off, files named
  ``<full name>_<participant id>_assignsubmission_file_<file>``. Moodle's participant id is the assignment's own
  (another assignment gives the same student another), so the learner is the full name, ``Jürgen Müller``, which
  joins a student's units across per-unit assignments; where two participants of one export share a full name,
  each is named with their id (``Alice Smith_118822``, ``Alice Smith_119999``), and blind marking, which names
  everyone ``Participant``, becomes one learner per participant (``Participant_118822``). The run warns of both.
* ``--name-pattern REGEX`` (as nbgrader's ``zip_collect`` takes one) for any other export: searched in the
  notebook's path below the folder given (``/`` between folders), it must have a group ``learner`` (or
  ``student_id``) and may have ``id`` (the LMS's id of the learner) and ``unit``. A notebook it does not
  match is named by the rules above, and :attr:`Named.unmatched` says so (``grade`` warns).

A file name is a learner's to choose, so an LMS's file name counts only where an export put it: in an *export
folder*, one whose notebooks all carry that LMS's names (the folder of a whole export, or an export unzipped into
a folder of its own: ``unit01/``, ``unit02/`` from one zip per unit are one learner per Canvas user). Elsewhere
(a learner's own folder holding a file named like an export's) it keeps that folder in front
(``class/mallory/alicesmith_1_2_01_x.ipynb`` -> ``mallory/alicesmith_1``), as ``roster.learner_of`` does. Which
folders are export folders is read from the disk, so a notebook is named alike whatever path is given. Names are
NFC-normalised (an archive unpacked on macOS writes ``Müller`` decomposed). :func:`warnings` names every LMS id that
spreads over several learners and every name several Moodle participants share.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from grader.instructor.grading.roster import learner_of

CANVAS = re.compile(r"^(?P<learner>[^\W_]+)(?P<late>_LATE)?_(?P<id>\d+)_(?P<attachment>\d+)_(?P<file>.+)$")
BLIND = "Participant"  # the name Moodle's blind marking gives every participant
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
    shared: bool = False  # a Moodle full name several participants of one export share: named with the id


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


LMS_SHAPES = {"canvas": CANVAS, "moodle": MOODLE_FILE}


def _listing(folder: Path) -> tuple[str, ...] | None:
    """The names in ``folder`` (NFC), or None where it cannot be listed; read again whenever the folder changed."""
    try:
        changed = os.stat(folder).st_mtime_ns
    except OSError:
        return None
    return _listed(str(folder), changed)


@functools.lru_cache(maxsize=256)
def _listed(folder: str, changed: int) -> tuple[str, ...] | None:
    try:
        return tuple(_nfc(n) for n in os.listdir(folder))
    except OSError:
        return None


def _export_folder(folder: Path, lms: str, given: Path, notebook: Path) -> bool:
    """Whether ``folder`` is an export folder of ``lms``: every notebook in it carries that LMS's names. Where it
    cannot be listed (a path given that is not there yet), the folder given on the command line is one."""
    names = _listing(folder)
    if names is None:
        return notebook == given or Path(os.path.abspath(notebook)).parent == Path(os.path.abspath(given))
    notebooks = [n for n in names if n.endswith(".ipynb")]
    return bool(notebooks) and all(LMS_SHAPES[lms].match(n) for n in notebooks)


def _lms_named(name: str) -> bool:
    return bool(MOODLE_FOLDER.match(name) or any(shape.match(name) for shape in LMS_SHAPES.values()))


def _lms_layout(given: Path) -> bool:
    """Whether the folder given on the command line is laid out as an LMS made it: each entry below it is named by
    the LMS (a Moodle submission folder, a Canvas or Moodle file), or is a folder (one unit's export, unzipped) whose
    entries all are. A folder per learner (a hub's collect, notebooks handed in by hand) is not: a learner's own
    folder may hold anything, a folder named like another learner's Moodle submission included."""
    names = _listing(Path(os.path.abspath(given)))
    if not names:
        return False
    for name in names:
        path = Path(os.path.abspath(given)) / name
        if _lms_named(name):
            continue
        if path.is_dir() and not path.is_symlink():
            inner = _listing(path) or ()
            if inner and all(_lms_named(n) for n in inner if n.endswith(".ipynb") or (path / n).is_dir()):
                continue
            return False
        if name.endswith(".ipynb"):
            return False
    return True


def _moodle_learner(name: str, ident: str, export: Path) -> tuple[str, bool]:
    """(the learner a Moodle participant is, whether their full name is shared): the full name, or ``name_id``
    where another participant of the same export (``export``, the folder holding the submissions) has that name."""
    ids = set()
    for entry in _listing(export) or ():
        m = MOODLE_FOLDER.match(entry) or MOODLE_FILE.match(entry)
        if m and _nfc(m["learner"]) == name:
            ids.add(m["id"])
    shared = len(ids - {ident}) > 0 or name == BLIND  # blind marking: a name every participant has, in every unit
    return (f"{name}_{ident}" if shared else name), shared


def name_of(notebook: Path, given: Path, pattern: re.Pattern | None = None) -> Named:
    """Who handed ``notebook`` in (``given`` being the path named on the command line); the module's rules."""
    if pattern is not None:
        found = _from_pattern(notebook, given, pattern)
        if found is not None:
            return found
    unmatched = pattern is not None
    where = Path(os.path.abspath(notebook)).parent
    holder = _nfc(where.name)
    try:
        rel = notebook.relative_to(given) if notebook != given else None
        first = Path(os.path.abspath(given)) / rel.parts[0] if rel is not None and len(rel.parts) > 1 else where
    except (ValueError, IndexError):
        first = where
    top = Path(os.path.abspath(given))
    for folder in dict.fromkeys((where, first)):  # its folder, or the first below the one given (nested)
        m = MOODLE_FOLDER.match(_nfc(folder.name))
        if m and (folder.parent == top or _lms_layout(given)):  # never one inside a learner's own folder
            learner, shared = _moodle_learner(_nfc(m["learner"]), m["id"], folder.parent)
            return Named(learner, notebook.name, m["id"], "moodle", unmatched=unmatched, shared=shared)
    name = _nfc(notebook.name)
    for lms, shape in LMS_SHAPES.items():
        m = shape.match(name)
        if m:
            shared = False
            if lms == "canvas":
                base = f"{m['learner']}_{m['id']}"
            else:
                base, shared = _moodle_learner(_nfc(m["learner"]), m["id"], where)
            learner = base if _export_folder(where, lms, given, notebook) else f"{holder}/{base}"
            late = bool(m.groupdict().get("late"))
            return Named(learner, m["file"], m["id"], lms, late=late, unmatched=unmatched, shared=shared)
    return Named(_nfc(learner_of(notebook, given)), notebook.name, unmatched=unmatched)


def warnings(named: list[tuple[Path, Named]]) -> list[str]:
    """What the run says about the names it found: each Canvas (or --name-pattern) id on the notebooks of several
    learners (a student renamed between exports, or one export graded outside its folder), and each full name
    several Moodle participants of one export share (graded apart, by participant id)."""
    from grader.instructor.grading.printable import escape

    by_id: dict[tuple[str, str], set[str]] = {}
    shared: dict[tuple[str, str], set[str]] = {}
    for path, n in named:
        if n.lms_id and n.lms in ("canvas", "pattern"):
            by_id.setdefault((n.lms, n.lms_id), set()).add(n.learner)
        if n.shared:
            folder = Path(os.path.abspath(path)).parent
            folder = folder.parent if MOODLE_FOLDER.match(_nfc(folder.name)) else folder
            shared.setdefault((str(folder), n.learner.rpartition("_")[0]), set()).add(n.learner)
    out = []
    for (lms, ident), learners in sorted(by_id.items()):
        if len(learners) > 1:
            what = "Canvas user id" if lms == "canvas" else "the --name-pattern's id"
            out.append(
                f"{what} {escape(ident)} is on the notebooks of {len(learners)} learners, graded apart: "
                + ", ".join(escape(x) for x in sorted(learners))
                + " (one student renamed, or an export not in a folder of its own: join them with a --name-pattern)"
            )
    for (export, name), learners in sorted(shared.items()):
        if name == BLIND:
            out.append(
                f"{escape(export)} is a blind-marked Moodle export ({len(learners)} participant(s) named "
                f"{BLIND}): each is graded apart by participant id ({', '.join(escape(x) for x in sorted(learners))}); "
                "ids are per assignment, so a student's units cannot be joined (reveal identities before downloading)"
            )
            continue
        out.append(
            f"{len(learners)} Moodle participants of {escape(export)} share the name {escape(name)}: graded apart by "
            f"participant id ({', '.join(escape(x) for x in sorted(learners))}); Moodle's participant ids are per "
            "assignment, so their units in other assignments cannot be told apart by name (blind marking names "
            "everyone Participant: reveal identities before downloading to join a student's units)"
        )
    return out
