"""What a gradebook's other outputs need beyond its CSV, kept beside it so a regrade or a merge can rebuild them all.

The long CSV holds every verdict, but a feedback page also shows each answer beside torch's, the explanation
and the failing case (the rows' ``_feedback``), and the class report the wrong answers and times (its
*facts*, :func:`grader.instructor.grading.report.facts_of`); neither fits a spreadsheet's cells. Every gradebook
``grade`` writes (``--out``, ``--merge-into``, a shard's partial, ``grade merge --out``) therefore gets
``GRADES.csv.outputs.json`` beside it: the facts, and the feedback of each row by learner, unit and notebook.

* ``grade one.ipynb --merge-into grades.csv --html feedback/ --report report.html`` reads grades.csv's file,
  replaces what belongs to the (learner, unit) pairs graded now (the rule of
  :func:`grader.instructor.grading.gradebook.merge`), and writes the learner's whole page and the class
  report from the merged gradebook;
* ``grade merge part-*.csv --out g.csv`` joins the partials' files, so its pages and report are those one
  run would have written.

A gradebook written before this file existed has none: its rows still merge, and their pages show the
verdicts without the answers (:func:`read` says so in its note).
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.engine.course import UNITS

VERSION = 1


def path_of(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.name + ".outputs.json")


def _key(row: dict) -> str:
    return "\n".join(str(row.get(k, "")) for k in ("learner", "unit", "notebook"))


def write(csv_path: Path, rows: list[dict], facts: list[dict]) -> Path:
    feedback = {_key(r): r["_feedback"] for r in rows if r.get("_feedback")}
    target = path_of(csv_path)
    target.write_text(json.dumps({"version": VERSION, "facts": facts, "feedback": feedback}), encoding="utf-8")
    return target


def read(csv_path: Path) -> tuple[list[dict], dict, str]:
    """(facts, feedback by row, a note: '' when the file was read, else why the outputs lack it)."""
    source = path_of(csv_path)
    if not source.is_file():
        return [], {}, f"{csv_path} has no {source.name} beside it: its other learners' answers are not shown"
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        facts = [f for f in data.get("facts", []) if isinstance(f, dict)]
        feedback = {k: v for k, v in data.get("feedback", {}).items() if isinstance(v, dict)}
    except (ValueError, AttributeError, OSError) as exc:
        return [], {}, f"{source} is unreadable ({type(exc).__name__}): its other learners' answers are not shown"
    return facts, feedback, ""


def attach(rows: list[dict], feedback: dict) -> list[dict]:
    """Give each row read back from a CSV its feedback again (rows graded now keep their own)."""
    for r in rows:
        if not r.get("_feedback") and _key(r) in feedback:
            r["_feedback"] = feedback[_key(r)]
    return rows


def merge_facts(old: list[dict], new_rows: list[dict], new: list[dict]) -> list[dict]:
    """The old facts without those of every (learner, unit) graded now (as gradebook.merge drops rows), plus
    the new ones."""
    fresh = {(r["learner"], r["unit"]) for r in new_rows}
    learners = {r["learner"] for r in new_rows}
    kept = [
        f
        for f in old
        if (f.get("learner"), f.get("unit")) not in fresh
        and not (f.get("learner") in learners and f.get("unit") not in UNITS)
    ]
    return kept + list(new)
