"""The gradebook in the shape an LMS imports as it is: ``grade --lms canvas|moodle --lms-out FILE``.

Both are UTF-8 with a byte-order mark (Excel reads ``Müller`` right only with it; Canvas and Moodle take it),
every cell written by :mod:`grader.instructor.grading.csv_cells`, one row per learner (as the wide CSV: every
learner graded or in the roster, a unit not handed in counts 0), one column per unit graded, named
``Unit NN: title``.

* **canvas**: Canvas's gradebook CSV (Grades > Import): ``Student``, ``ID`` (Canvas's user id, from Canvas's
  export names, see :mod:`.lms_names`), ``SIS User ID`` (the roster's student ID), ``SIS Login ID``,
  ``Section``, then the units; the second row is Canvas's ``Points Possible`` row, each unit's maximum.
  Canvas matches a row by ID, SIS User ID or SIS Login ID; a new column becomes a new assignment.
* **moodle**: Moodle's grade import from CSV (Grades > Import > CSV file), whose file format is its plain-text
  export's (https://docs.moodle.org/en/Grade_import): ``First name``, ``Last name``, ``ID number`` (the
  roster's student ID, the column the import maps users by: "Map from" ID number, "Map to" useridnumber),
  ``Institution``, ``Department``, ``Email address``, then the units as grade values (each grade item's maximum
  is set in Moodle), and no Points Possible row (Moodle would read it as a user). The learner's name is split
  at its last space (Moodle's full name is "first last"); a name is only shown, never matched on.

Where a unit's maximum differs between learners (a question added after some copies were handed out,
``--handed-out``), that unit's column holds the percent (its Points Possible 100), and the column's name says
``(percent)``: points out of different maxima cannot be entered in one column.
"""

from __future__ import annotations

from pathlib import Path

from grader.engine.course import UNITS
from grader.instructor.grading import csv_cells, gradebook, scores

SHAPES = ("canvas", "moodle")
# The user columns of Moodle's plain-text grade export, which its CSV import reads back
MOODLE_USER_COLUMNS = ("First name", "Last name", "ID number", "Institution", "Department", "Email address")
BOM = "utf-8-sig"


def columns_of(rows: list[dict], weights: scores.Weights | None = None, ids: dict | None = None):
    """(units, wide rows, the units whose maximum differs by learner)."""
    _, wide = gradebook.wide_rows(rows, weights, ids)
    units = sorted({r["unit"] for r in rows if r["unit"] in UNITS})
    varying = {u for u in units if len({w[f"{u} max"] for w in wide}) > 1}
    return units, wide, varying


def _header(unit: str, varying: set) -> str:
    return f"Unit {unit}: {UNITS[unit].title}" + (" (percent)" if unit in varying else "")


def _value(w: dict, unit: str, varying: set):
    return w[f"{unit} percent"] if unit in varying else w[f"{unit} points"]


def lms_ids(rows: list[dict]) -> dict[str, str]:
    """Each learner's id in the LMS, where its export names gave one (the long CSV's ``lms id``)."""
    found: dict[str, str] = {}
    for r in rows:
        if r.get("lms id"):
            found.setdefault(r["learner"], str(r["lms id"]))
    return found


def default_path(out: Path, shape: str) -> Path:
    """Beside the long CSV: ``grades.csv`` -> ``grades-canvas.csv``."""
    return out.with_name(f"{out.stem}-{shape}.csv")


def write(shape: str, rows: list[dict], path: Path, weights: scores.Weights | None = None, ids=None) -> list[str]:
    """Write ``shape``'s CSV to ``path``; returns notes for the run to print (units in percent, IDs missing)."""
    if shape not in SHAPES:
        raise ValueError(f"--lms {shape}: choose {' or '.join(SHAPES)}")
    units, wide, varying = columns_of(rows, weights, ids)
    heads = [_header(u, varying) for u in units]
    notes = [f"{path}: unit {u} is in percent (its maximum differs between learners)" for u in sorted(varying)]
    no_id = [w["learner"] for w in wide if not w["student id"]]
    if shape == "canvas":
        canvas = lms_ids(rows)
        fixed = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
        table = [{"Student": "    Points Possible"}]  # Canvas's own export writes it so, and reads it back
        table[0].update({h: 100 if u in varying else wide[0][f"{u} max"] for u, h in zip(units, heads)})
        for w in wide:
            row = {"Student": w["learner"], "ID": canvas.get(w["learner"], ""), "SIS User ID": w["student id"]}
            row.update({h: _value(w, u, varying) for u, h in zip(units, heads)})
            table.append(row)
        no_id = [w["learner"] for w in wide if not w["student id"] and not canvas.get(w["learner"])]
    else:
        fixed = list(MOODLE_USER_COLUMNS)
        table = []
        for w in wide:
            first, _, last = w["learner"].rpartition(" ")
            first, last = (first, last) if first else (last, "")
            row = {"First name": first, "Last name": last, "ID number": w["student id"]}
            row.update({h: _value(w, u, varying) for u, h in zip(units, heads)})
            table.append(row)
    if no_id:
        what = "a Canvas ID or a student ID" if shape == "canvas" else "a student ID (Moodle's ID number)"
        notes.append(
            f"{path}: {len(no_id)} learner(s) without {what}, which the import cannot match: " + ", ".join(no_id)
        )
    csv_cells.write(path, fixed + heads, table, encoding=BOM)
    return notes
