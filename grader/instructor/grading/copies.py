"""What a learner's copy of a unit holds, compared with the unit's notebook today (used by ``grade``'s restore step).

Only the cells of a question matter: a cell that names one of the unit's question ids (its
predict, reveal or check cell) belongs to it. A cell that only shows a self-test's program (a lone ``program`` call)
holds no answer and belongs to none: a copy handed out before the question drew its programs lacks it, and
loses nothing. A missing question cell is a *missing cell*, named;
its question counts in the maximum, as not answered. A missing or changed cell that belongs to no
question (prose, an experiment, a drawing) is no one's fault and is not mentioned.

A question may be *not in this copy* (left out of the maximum unless the instructor counts it)
only when the instructor names the course version the class was handed (``grade --handed-out``)
and the question was added after it (:mod:`grader.instructor.grading.versions`), and none of its
cells is in the copy. Deleting a question from a copy therefore never removes it from the maximum.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class CopyContents:
    absent: list = field(default_factory=list)  # question ids not in this copy (added after it was handed out)
    missing: list = field(default_factory=list)  # (cell id, its first line) of question cells deleted
    expected: int = 0  # question cells of the unit this copy should hold
    unanswered: list = field(default_factory=list)  # predict questions whose answer cell is still the placeholder
    question_cells: set = field(default_factory=set)  # ids of the unit's cells that belong to a question
    questions_of: dict = field(default_factory=dict)  # cell id -> the question ids that cell belongs to (sorted)

    def missing_words(self, limit: int = 8) -> str:
        """The deleted cells, named: 'c013 reveal("00.warmup-flag"), c011 ...'."""
        named = [f"{cid} {first}" if first else cid for cid, first in self.missing[:limit]]
        more = len(self.missing) - limit
        return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def _source(cell) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(src) if isinstance(src, list) else str(src)


def _first_line(cell) -> str:
    for line in _source(cell).splitlines():
        line = line.lstrip("#").strip()
        if line:
            return line if len(line) <= 60 else line[:57] + "..."
    return f"(empty {cell.get('cell_type', 'cell')})"


def cell_label(cell, questions: list | None = None) -> str:
    """A cell as the learner sees it, for a message such as "cell 18 (01.pow-node) ran past 60 s": the question
    ids it belongs to, else its first line in quotes."""
    return ", ".join(questions) if questions else f'"{_first_line(cell)}"'


def _names(text: str, qids) -> set:
    return {q for q in qids if re.search(r"(?<![\w.-])" + re.escape(q) + r"(?![\w-])", text)}


_PROGRAM_CELL = re.compile(r"""\s*program\(\s*["'][\w.-]+["']\s*\)\s*""")


def _shows_program(cell) -> bool:
    """A code cell that only shows a self-test's program: it records nothing (the check cell records the program)."""
    return cell.get("cell_type") == "code" and _PROGRAM_CELL.fullmatch(_source(cell)) is not None


def what_the_copy_holds(
    qids: list[str], predict_qids: list[str], template: list[dict], cells: list, excusable=()
) -> CopyContents:
    """Compare a copy's cells (read before anything is restored) with the unit's notebook, by cell id;
    ``excusable`` are the questions added after the version the class was handed."""
    ids = {c.get("id") for c in cells if isinstance(c, dict) and c.get("id")}
    belongs = {c.get("id"): _names(_source(c), qids) for c in template if c.get("id") and not _shows_program(c)}
    belongs = {cid: named for cid, named in belongs.items() if named}
    out = CopyContents(question_cells=set(belongs), questions_of={cid: sorted(n) for cid, n in belongs.items()})
    excusable = set(excusable)
    out.absent = [
        q for q in qids if q in excusable and not any(q in named and cid in ids for cid, named in belongs.items())
    ]
    gone = set(out.absent)
    order = [c.get("id") for c in template if c.get("id") in belongs and not belongs[c.get("id")] <= gone]
    out.missing = [
        (cid, _first_line(next(c for c in template if c.get("id") == cid))) for cid in order if cid not in ids
    ]
    out.expected = len(order)
    by_id = {c.get("id"): c for c in cells if isinstance(c, dict) and c.get("id")}
    for q in predict_qids:
        if q in out.absent:
            continue
        mine = [
            c
            for c in template
            if c.get("cell_type") == "code" and re.search(r"predict\(\s*[\"']" + re.escape(q) + r"[\"']", _source(c))
        ]
        if not mine:
            continue
        theirs = by_id.get(mine[0].get("id"))
        if theirs is None or _source(theirs).strip() == _source(mine[0]).strip():
            out.unanswered.append(q)
    return out
