"""The gradebook in the shape an LMS imports as it is: ``grade --lms canvas|moodle [--lms-out FILE]
[--lms-columns COLUMNS.csv]``.

Both are UTF-8 with a byte-order mark (Excel reads ``Müller`` right only with it; Canvas and Moodle take it),
every cell written by :mod:`grader.instructor.grading.csv_cells` (names with their control characters escaped:
:mod:`.printable`), one row per learner (as the wide CSV: every learner graded or in the roster), one column per
unit graded.

**Columns.** By default a unit's column is named ``Unit NN: title``, which both LMSs take as a new grade item. To
fill the instructor's own assignments instead, ``--lms-columns COLUMNS.csv`` names them: a CSV with the columns
``unit,column`` and optionally ``points`` (``01,Autograd unit 1,10``). ``column`` is the LMS's name of the
assignment; for Canvas a bare number is the assignment's id (Canvas's export heads each assignment ``Name (id)``
and its import matches on the id, so the column is written ``Unit 01: title (id)``); ``points`` is the
assignment's maximum in the LMS, and each learner's points are scaled to it. A unit graded but not in the file is
left out of the LMS file (said in the run).

**A unit not handed in** is written blank, never 0: Canvas leaves a blank cell's grade as it is (an excused mark
stays excused), and Moodle's import reads ``-`` as "no grade" (Moodle's own export writes it so).

* **canvas**: Canvas's gradebook CSV (Grades > Import): ``Student``, ``ID`` (Canvas's user id, from Canvas's
  export names, see :mod:`.lms_names`), ``SIS User ID`` (the roster's student ID), ``SIS Login ID``,
  ``Section``, then the units; the second row is Canvas's ``Points Possible`` row, each column's maximum.
  Canvas matches a row by ID, SIS User ID or SIS Login ID.
* **moodle**: Moodle's grade import from CSV (Grades > Import > CSV file), whose file format is its plain-text
  export's (https://docs.moodle.org/en/Grade_import): ``First name``, ``Last name``, ``ID number`` (the roster's
  student ID: "Map from" ID number, "Map to" useridnumber), ``Institution``, ``Department``, ``Email address``
  (the roster's ``email`` column, where it has one: "Map to" useremail; a roster keyed by e-mail alone,
  ``learner,email``, fills this column and leaves ``ID number`` empty), then the units. Moodle's CSV import
  carries no maximum: a grade item it creates has a maximum of 100, and it refuses a grade above the site's
  maximum grade (100 unless unlimited grades are on); so each unit is written in percent (0 to 100) unless
  ``--lms-columns`` gives the points of an existing grade item. No Points Possible row (Moodle would read it as
  a user). The learner's name is split at its last space (Moodle's full name is "first last"); a name is only
  shown, never matched on.

**No row the LMS would give to someone else.** Moodle's import skips the identifier of a row whose identifier is
blank and gives that row's grades to the student of the row before it; Canvas cannot match such a row at all. So a
learner with no identifier the file uses (Canvas: neither a Canvas id nor a student ID; Moodle: no ID number, or
no e-mail where the roster gives e-mails) is refused from the file and named, and so are two learners with one
identifier (both). ``write`` returns the notes the run prints.

Where a unit's maximum differs between learners (a question added after some copies were handed out,
``--handed-out``), that unit's column holds the percent (its Points Possible 100), and the column's name says
``(percent)``: points out of different maxima cannot be entered in one column.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from grader.engine.course import UNITS
from grader.instructor.grading import csv_cells, gradebook, scores
from grader.instructor.grading.printable import escape

SHAPES = ("canvas", "moodle")
# The user columns of Moodle's plain-text grade export, which its CSV import reads back
MOODLE_USER_COLUMNS = ("First name", "Last name", "ID number", "Institution", "Department", "Email address")
BOM = "utf-8-sig"
NOT_HANDED_IN = {"canvas": "", "moodle": "-"}


class ColumnsError(ValueError):
    """The --lms-columns file cannot be used: the text says where and why."""


@dataclass(frozen=True)
class Column:
    name: str  # the LMS's name of the assignment (or, for Canvas, its id)
    points: float | None = None  # the assignment's maximum in the LMS, where given


def read_columns(path: Path) -> dict[str, Column]:
    """unit -> the instructor's own LMS column, from a CSV ``unit,column[,points]``; ColumnsError says what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ColumnsError(f"cannot read --lms-columns {path}: {exc.strerror or exc}") from None
    reader = csv.DictReader(text.splitlines())
    heads = {(h or "").strip().lower(): h for h in reader.fieldnames or []}
    if "unit" not in heads or "column" not in heads:
        raise ColumnsError(f"--lms-columns {path} needs the columns unit,column (and points, optionally)")
    out: dict[str, Column] = {}
    for line, row in enumerate(reader, start=2):
        unit = (row.get(heads["unit"]) or "").strip()
        name = (row.get(heads["column"]) or "").strip()
        points = (row.get(heads["points"]) or "").strip() if "points" in heads else ""
        if not (unit or name or points):
            continue
        where = f"--lms-columns {path} line {line}"
        unit = unit.zfill(2)
        if unit not in UNITS:
            raise ColumnsError(f"{where}: {unit!r} is not a unit of the course ({', '.join(UNITS)})")
        if unit in out:
            raise ColumnsError(f"{where}: unit {unit} is named twice")
        if not name:
            raise ColumnsError(f"{where}: give the LMS's column for unit {unit}")
        value = None
        if points:
            try:
                value = float(points)
            except ValueError:
                value = -1.0
            if not value > 0:
                raise ColumnsError(f"{where}: points is the assignment's maximum, a positive number, not {points!r}")
        out[unit] = Column(name, value)
    return out


def columns_of(rows: list[dict], weights: scores.Weights | None = None, ids: dict | None = None):
    """(units, wide rows, the units whose maximum differs by learner)."""
    _, wide = gradebook.wide_rows(rows, weights, ids)
    units = sorted({r["unit"] for r in rows if r["unit"] in UNITS})
    varying = {u for u in units if len({w[f"{u} max"] for w in wide}) > 1}
    return units, wide, varying


def _header(shape: str, unit: str, varying: set, mapping: dict) -> str:
    title = f"Unit {unit}: {UNITS[unit].title}"
    if unit in mapping:
        column = mapping[unit]
        return f"{title} ({column.name})" if shape == "canvas" and column.name.isdigit() else column.name
    return title + (" (percent)" if unit in varying or shape == "moodle" else "")


def _scale(shape: str, unit: str, varying: set, mapping: dict) -> float | None:
    """The maximum a unit's column is written out of: the LMS column's points, else 100 (percent) where the points
    cannot stand (Moodle's new grade items, a maximum that differs by learner), else None (the unit's points)."""
    if unit in mapping and mapping[unit].points:
        return mapping[unit].points
    return 100.0 if shape == "moodle" or unit in varying else None


def _value(shape: str, w: dict, unit: str, out_of: float | None):
    if w[f"{unit} passed"] == "not submitted":
        return NOT_HANDED_IN[shape]
    if out_of is None:
        return w[f"{unit} points"]
    if out_of == 100:
        return w[f"{unit} percent"]
    top = float(w[f"{unit} max"] or 0)
    return round(float(w[f"{unit} points"] or 0) / top * out_of, 2) if top else 0


def lms_ids(rows: list[dict]) -> dict[str, str]:
    """Each learner's Canvas user id, where Canvas's export names gave one (the long CSV's ``lms id``)."""
    found: dict[str, str] = {}
    for r in rows:
        if r.get("lms id") and r.get("lms", "canvas") in ("canvas", ""):
            found.setdefault(r["learner"], str(r["lms id"]))
    return found


def default_path(out: Path, shape: str) -> Path:
    """Beside the long CSV: ``grades.csv`` -> ``grades-canvas.csv``."""
    return out.with_name(f"{out.stem}-{shape}.csv")


def _refused(table: list[dict], keys: tuple[str, ...], required: tuple[str, ...]) -> dict[str, str]:
    """learner -> why their row is not written: no identifier among ``required`` filled (each of them, where
    several are required; at least one of ``keys`` otherwise), or an identifier another learner has too."""
    why: dict[str, str] = {}
    for row in table:
        if required and not all(row.get(k) for k in required):
            why[row["_learner"]] = "no " + " and no ".join(k for k in required if not row.get(k))
        elif not required and not any(row.get(k) for k in keys):
            why[row["_learner"]] = "no " + " and no ".join(keys)
    for key in keys:
        counts = Counter(row.get(key) for row in table if row.get(key))
        for row in table:
            if counts.get(row.get(key), 0) > 1:
                why.setdefault(row["_learner"], f"the {key} {row[key]} is given to another learner too")
    return why


def write(
    shape: str,
    rows: list[dict],
    path: Path,
    weights: scores.Weights | None = None,
    ids=None,
    mapping: dict[str, Column] | None = None,
) -> list[str]:
    """Write ``shape``'s CSV to ``path``; returns notes for the run to print (units in percent or left out, the
    learners refused from the file and why)."""
    if shape not in SHAPES:
        raise ValueError(f"--lms {shape}: choose {' or '.join(SHAPES)}")
    mapping = mapping or {}
    units, wide, varying = columns_of(rows, weights, ids)
    notes = []
    if mapping:
        left = [u for u in units if u not in mapping]
        if left:
            notes.append(f"{path}: unit(s) {', '.join(left)} graded but not in --lms-columns: left out of the file")
        units = [u for u in units if u in mapping]
    heads = [_header(shape, u, varying, mapping) for u in units]
    scales = {u: _scale(shape, u, varying, mapping) for u in units}
    notes += [
        f"{path}: unit {u} is in percent (its maximum differs between learners)"
        for u in sorted(varying)
        if u in units and shape == "canvas" and scales[u] == 100.0 and u not in mapping
    ]
    table = []
    if shape == "canvas":
        canvas = lms_ids(rows)
        fixed = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
        possible = {"Student": "    Points Possible"}  # Canvas's own export writes it so, and reads it back
        possible.update(
            {h: scores.number(scales[u] or wide[0][f"{u} max"]) for u, h in zip(units, heads)} if wide else {}
        )
        for w in wide:
            row = {"_learner": w["learner"], "Student": escape(w["learner"]), "ID": canvas.get(w["learner"], "")}
            row["SIS User ID"] = w["student id"]
            row.update({h: _value(shape, w, u, scales[u]) for u, h in zip(units, heads)})
            table.append(row)
        refused = _refused(table, ("ID", "SIS User ID"), ())
        written = [possible] + [r for r in table if r["_learner"] not in refused]
    else:
        emails = getattr(ids, "emails", {}) or {}
        fixed = list(MOODLE_USER_COLUMNS)
        for w in wide:
            shown = escape(w["learner"])
            first, _, last = shown.rpartition(" ")
            first, last = (first, last) if first else (last, "")
            number = "" if getattr(ids, "ids_are_emails", False) else w["student id"]  # an e-mail is no ID number
            row = {"_learner": w["learner"], "First name": first, "Last name": last, "ID number": number}
            row["Email address"] = emails.get(w["learner"], "")
            row.update({h: _value(shape, w, u, scales[u]) for u, h in zip(units, heads)})
            table.append(row)
        required: tuple[str, ...] = ("ID number", "Email address") if emails else ("ID number",)
        if getattr(ids, "ids_are_emails", False):
            required = ("Email address",)
        refused = _refused(table, required, required)
        written = [r for r in table if r["_learner"] not in refused]
    if refused:
        notes.append(
            f"{path}: {len(refused)} learner(s) refused from the file (the import would give their grades to "
            "someone else, or to no one): "
            + "; ".join(f"{escape(name)} ({why})" for name, why in sorted(refused.items()))
        )
    csv_cells.write(path, fixed + heads, written, encoding=BOM)
    return notes
