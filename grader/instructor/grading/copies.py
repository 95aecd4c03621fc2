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


# --- a copy saved without cell ids ------------------------------------------------------------------------------

PLACEHOLDER_LINES = ("YOUR ANSWER HERE", "YOUR CODE HERE", "raise NotImplementedError()")
ADDED = "agl-added-"  # the id given to a cell of a copy without ids that matches none of the unit's cells


def _lines(cell) -> list[str]:
    return [line.rstrip() for line in _source(cell).strip().splitlines()]


def _fingerprint(cell) -> frozenset[str]:
    """What of a learner-owned cell (one with a placeholder) a learner's answer keeps: its lines other than the
    placeholder's, stripped (``predict("01.pow-node", answer)``, ``def graph_nodes(t):``)."""
    return frozenset(
        line.strip() for line in _lines(cell) if line.strip() and not any(p in line for p in PLACEHOLDER_LINES)
    )


def match_by_source(cells: list, template: list[dict]) -> int:
    """Give a copy whose cells carry no ids (nbformat 4.4 and older, Colab, an editor that drops them; or ids an
    upgrade made up) the ids of the unit's cells, matched by source, in place; the number of the unit's cells found.

    A cell whose source is a unit cell's exactly (ends of lines aside) takes its id: the grader's own cells, which a
    copy keeps as they were handed out, and anything unchanged. Then each learner-owned cell of the unit (one with a
    placeholder) takes the first cell after the last one matched before it that keeps every other line of it (its
    ``predict("QID", answer)`` line, its ``def name(...):`` line). Every other cell gets an id of its own
    (``agl-added-N``): a cell the learner added."""
    exact: dict[tuple[str, str], list[str]] = {}
    for c in template:
        if c.get("id"):
            exact.setdefault((c.get("cell_type", ""), "\n".join(_lines(c))), []).append(c["id"])
    taken: set[str] = set()
    position: dict[str, int] = {}  # template id -> index in the copy
    mine = [c if isinstance(c, dict) else {} for c in cells]
    for i, cell in enumerate(mine):
        ids = exact.get((cell.get("cell_type", ""), "\n".join(_lines(cell))), [])
        free = [cid for cid in ids if cid not in taken]
        if len(ids) == 1 and free:  # a source the unit has once: that cell (a repeated one is matched by place)
            cell["id"] = free[0]
            taken.add(free[0])
            position[free[0]] = i
    used = set(position.values())
    last = -1
    for c in template:
        cid = c.get("id")
        if cid in position:
            last = position[cid]
            continue
        if not cid or c.get("cell_type") != "code" or not any(p in _source(c) for p in PLACEHOLDER_LINES):
            continue
        wanted = _fingerprint(c)
        if not wanted:
            continue
        found = [
            i
            for i, cell in enumerate(mine)
            if i not in used and cell.get("cell_type") == "code" and wanted <= {x.strip() for x in _lines(cell)}
        ]
        after = [i for i in found if i > last] or found
        if after:
            mine[after[0]]["id"] = cid
            position[cid] = last = after[0]
            used.add(last)
    n = 0
    for i, cell in enumerate(mine):
        if i not in used and isinstance(cells[i], dict):
            n += 1
            cell["id"] = f"{ADDED}{n}"
    return len(position)
