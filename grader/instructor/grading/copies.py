"""What a learner's copy of a unit holds, compared with the unit's notebook today (used by ``grade``'s restore step).

A copy may come from an older version of the course: a question added after it
was handed out is in ``notebooks/`` but not in the copy. Such a question is
*not in this copy* (excluded from the maximum unless the instructor counts it)
only when the copy has exactly that shape: none of the question's cells, nor
any cell between its first and last cell, is in the copy, and every other cell
of the unit is. A copy that lost other cells too was edited, so nothing is
excused: every question counts and every absent cell is a *missing cell*,
named. (Deleting one whole question and nothing else cannot be told from an
older copy; the gradebook names such questions, and ``--count-absent`` counts
them.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class CopyContents:
    absent: list = field(default_factory=list)  # question ids not in this copy (added after it was handed out)
    missing: list = field(default_factory=list)  # (cell id, its first line) of cells really deleted
    expected: int = 0  # cells of the unit this copy should hold
    unanswered: list = field(default_factory=list)  # predict questions whose answer cell is still the placeholder

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


def _names(text: str, qids) -> set:
    return {q for q in qids if re.search(r"(?<![\w.-])" + re.escape(q) + r"(?![\w-])", text)}


def what_the_copy_holds(qids: list[str], predict_qids: list[str], template: list[dict], cells: list) -> CopyContents:
    """Compare a copy's cells (read before anything is restored) with the unit's notebook, by cell id."""
    ids = {c.get("id") for c in cells if isinstance(c, dict) and c.get("id")}
    copy_text = "\n".join(_source(c) for c in cells if isinstance(c, dict))
    named_in_copy = _names(copy_text, qids)
    order = [c.get("id", "") for c in template]
    named_at = {q: [i for i, c in enumerate(template) if q in _names(_source(c), [q])] for q in qids}
    candidates = []
    for q in qids:
        where = named_at[q]
        if q in named_in_copy or not where:
            continue
        span = order[min(where) : max(where) + 1]
        if not any(cid in ids for cid in span):
            candidates.append(q)
    missing_at = [i for i, cid in enumerate(order) if cid and cid not in ids]
    # runs of consecutive missing cells; each must hold a candidate's cell for the copy to be an older version
    runs, run = [], []
    for i in missing_at:
        if run and i != run[-1] + 1:
            runs.append(run)
            run = []
        run.append(i)
    if run:
        runs.append(run)
    cand_cells = {i for q in candidates for i in named_at[q]}
    older = bool(candidates) and all(any(i in cand_cells for i in r) for r in runs)
    out = CopyContents()
    excused = {i for r in runs for i in r} if older else set()
    out.absent = candidates if older else []
    out.missing = [(order[i], _first_line(template[i])) for i in missing_at if i not in excused]
    out.expected = sum(1 for i, cid in enumerate(order) if cid and i not in excused)
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
