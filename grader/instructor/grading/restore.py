"""Step 2 of a grading run: a submitted notebook read safely, its grader-owned cells put back from notebooks/.

:func:`restore` is a chain of one-concern steps (as nbgrader chains its preprocessors), each reading and adding to
one :class:`Reading`; a step that finds the copy cannot be graded ends the chain with a row that says why:

1. ``read``: the file, size-capped, links not followed; parsed as a notebook;
2. ``match``: the unit (its name, else its code), its cells matched to the unit's by cell id, or by their source
   where the copy carries no ids (nbformat 4.4, Colab); a copy none of whose cells is the unit's is not restored;
3. ``bound``: the copy's own code within what the grading process reads (cells too large are run, not read);
4. ``evidence``: what the copy saved of its own run: a reveal shown before its prediction (:mod:`.prediction_order`),
   predictions locked with the widget written into their cells (:mod:`.locks`), the records of the self-tests'
   programs (:func:`carried_variants`), cells that reach past the API (:mod:`.reach`);
5. ``put_back``: every grader-owned cell's source put back from notebooks/, edits named, missing cells named;
6. ``plan``: each exercise's function rebuilt from the copy (:mod:`.exercise_sources`) and the cells the run
   executes (:mod:`.slicing`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.engine import syntax
from grader.engine.course import UNITS, leading_unit
from grader.engine.question import of_unit
from grader.engine.variants import Carried
from grader.instructor.grading import containment, prediction_order, reach, roster, slicing, versions
from grader.instructor.grading.copies import CopyContents, match_by_source, what_the_copy_holds
from grader.instructor.grading.exercise_sources import ExerciseSource, exercise_sources, grader_owned
from grader.instructor.grading.locks import apply_locks
from grader.instructor.grading.submission import Restored, Submission

if TYPE_CHECKING:
    from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK_CAP = 32 * 2**20  # bytes of a submitted notebook read at most
NOT_RESTORED = "could not be restored"
CELL_CAP = 5_000  # cells of a submitted notebook graded at most (a unit's notebook has about 100)
SOURCE_CAP = 2 * 2**20  # characters of code in a copy's own cells the grading process reads at most


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _template(unit: str) -> list[dict]:
    path = ROOT / "notebooks" / UNITS[unit].notebook if unit in UNITS else None
    if not path or not path.exists():
        return []
    return json.loads(path.read_text(encoding="utf-8")).get("cells", [])


def unit_named(sub: Submission) -> str:
    """The unit the file's name says (a --name-pattern's unit, else the name as handed in: ``01_…``), or '?'."""
    named = sub.named
    if named is not None and named.unit and named.unit.zfill(2) in UNITS:
        return named.unit.zfill(2)
    return leading_unit(named.file if named is not None else sub.path.name) or "?"


def unit_said(sub: Submission) -> str:
    """The unit a file that cannot be read is shown under: :func:`unit_named`'s, or the unit of a name given per
    learner (``frank_02.ipynb``, ``frank-03_x.ipynb``), or '?'. (A readable notebook's own code decides first.)"""
    if unit_named(sub) != "?":
        return unit_named(sub)
    return roster.unit_in_name(Path(sub.named.file if sub.named is not None else sub.path.name).stem) or "?"


def _unit_of(sub: Submission, cells: list) -> str:
    if unit_named(sub) != "?":
        return unit_named(sub)
    text = "\n".join(_source(c) for c in cells if isinstance(c, dict) and c.get("cell_type") == "code")
    found = re.findall(r"[\"'](\d\d[a-z]?)\.[a-z0-9-]+[\"']", text)
    found = [u for u in found if u in UNITS]
    return max(set(found), key=found.count) if found else "?"


@dataclass
class Reading:
    """What the chain knows of one copy so far; ``out`` is what it hands on."""

    out: Restored
    as_unit: str | None = None
    nb: NotebookNode | None = None  # set by read(): every later step has it
    # the copy's cells (anything JSON holds: a cell is not trusted to be a dict)
    cells: list = field(default_factory=list)
    template: list[dict[str, Any]] = field(default_factory=list)
    owned: dict[str, dict[str, Any]] = field(default_factory=dict)  # cell id -> the unit's grader-owned cell
    done: bool = False  # the chain stops: the copy is not graded (out says why)

    def refuse(self, status: str, problem: str) -> None:
        self.out.status, self.out.problems, self.done = status, [problem], True


def read(r: Reading) -> None:
    """The file, size-capped and no link followed, parsed as a notebook."""
    sub = r.out.submission
    if sub.problem:
        return r.refuse("unreadable", f"the notebook is {sub.problem}")
    try:
        raw = containment.read_capped(sub.path, NOTEBOOK_CAP)
    except containment.UnsafeFile as exc:
        return r.refuse("unreadable", f"the notebook is {exc}")
    try:
        import nbformat  # here, not at the top: the grade command alone needs it

        r.nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
        r.cells = r.nb.cells
        if not isinstance(r.cells, list):
            raise ValueError("no cells")
    except Exception as exc:
        r.refuse("not a notebook", f"could not be read as a notebook: {type(exc).__name__}")


def match(r: Reading) -> None:
    """The unit, and the copy's cells matched to the unit's: by cell id, else by their source."""
    r.out.unit = r.as_unit or _unit_of(r.out.submission, r.cells)
    r.template = _template(r.out.unit)
    r.owned = {c["id"]: c for c in r.template if c.get("id") and grader_owned(c)}
    ids = [c.get("id") for c in r.cells if isinstance(c, dict)]
    had_ids = any(ids)
    if r.out.unit in UNITS and len(r.cells) <= CELL_CAP and not r.owned.keys() & set(ids):
        # saved without cell ids (nbformat 4.4 and older, Colab, an editor that drops them; or ids an upgrade made
        # up): the unit's cells are found by their source instead (copies.match_by_source)
        found = match_by_source(r.cells, r.template)
        ids = [c.get("id") for c in r.cells if isinstance(c, dict)]
        if r.owned.keys() & set(ids) and r.nb is not None:
            r.nb.nbformat_minor = max(int(r.nb.get("nbformat_minor", 0) or 0), 5)  # ids belong to nbformat 4.5
            r.out.findings.append(
                f"its cells carried {'ids of no cell of the unit' if had_ids else 'no ids'} (nbformat 4.4 or older, "
                f"Colab, or an editor that drops them): {found} of the unit's {len(r.template)} cells were found by "
                "their source"
            )
    if r.out.unit not in UNITS:
        why = "it is not a notebook of this course (no unit in its file name or its code)"
    elif len(r.cells) > CELL_CAP:
        why = (
            f"it has {len(r.cells):,} cells (the unit's notebook has {len(r.template)}; at most {CELL_CAP:,} are read)"
        )
    elif not r.owned.keys() & set(ids):
        why = (
            "none of its cells is a cell of the unit's notebook (matched by cell id)"
            if had_ids
            else "its cells carry no ids (nbformat 4.4 or older, or a tool that drops them), and none of them is a "
            "cell of the unit's notebook by its source either"
        )
    else:
        return
    r.refuse(NOT_RESTORED, f"not graded: {why}")


def bound(r: Reading) -> None:
    """The copy's code within what the grading process reads: a copy past SOURCE_CAP is not graded; a cell past
    ``syntax.SUBMITTED_CAP`` is run but not read (a finding names it)."""
    code = [_source(c) for c in r.cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    if sum(map(len, code)) > SOURCE_CAP:
        why = f"its cells hold {sum(map(len, code)):,} characters of code, more than the {SOURCE_CAP:,} it reads"
        return r.refuse(NOT_RESTORED, f"not graded: {why}")
    big = [
        containment.cell_name(i, c)
        for i, c in enumerate(r.cells)
        if isinstance(c, dict) and c.get("id") not in r.owned and len(_source(c)) > syntax.SUBMITTED_CAP
    ]
    if big:
        r.out.findings.append(
            f"{len(big)} cell(s) too large for the grader to read ({', '.join(big[:3])}: more than "
            f"{syntax.SUBMITTED_CAP:,} characters each): run, but not read for definitions or answers"
        )


def evidence(r: Reading) -> None:
    """What the copy saved of its own run, read as data before any cell is rewritten."""
    out = r.out
    predictions = {q.qid for q in of_unit(out.unit) if q.role == "predict"}
    out.revealed_first = prediction_order.revealed_first(r.cells, r.template, predictions)
    metadata = r.nb.get("metadata") if r.nb is not None else None
    widgets = (metadata or {}).get("widgets")  # what the widgets saved (a lock after a page reload)
    out.findings += apply_locks(r.cells, r.template, widgets=widgets)  # predictions locked, into their cells
    out.variants = carried_variants(r.cells, out.unit)
    out.copy = _what_the_copy_holds(out.unit, r.template, r.cells, out.handed_out)
    out.findings += reach.findings(r.template, r.cells)


def put_back(r: Reading) -> None:
    """Every grader-owned cell's source as notebooks/ has it; an edited cell of a question and a missing cell named."""
    out, edited = r.out, []
    copy = out.copy
    assert copy is not None, "evidence() reads what the copy holds before put_back()"
    for cell in r.cells:
        mine = r.owned.get(cell.get("id"))
        if mine is None:
            continue
        if cell.get("cell_type") != "code" or _source(cell) != _source(mine):
            edited.append(cell.get("id"))
        cell["cell_type"] = "code"
        cell["source"] = _source(mine)
        cell.setdefault("outputs", [])
        cell.setdefault("execution_count", None)
        cell.setdefault("metadata", {})
    edited_questions = [cid for cid in edited if cid in copy.question_cells]
    if edited_questions:
        out.findings.append(
            f"{len(edited_questions)} grader cell(s) of a question had been edited and were restored: "
            + ", ".join(edited_questions[:8])
        )
    if copy.missing:
        out.problems.append(
            f"{len(copy.missing)} cell(s) of the unit's questions are missing (their questions count as "
            "not answered): " + copy.missing_words()
        )
        out.status = "missing cells"


def plan(r: Reading) -> None:
    """The notebook the run executes, each exercise's function rebuilt, and which cells the run needs."""
    r.out.notebook = r.nb
    r.out.exercises = _exercise_sources(r.out.unit, r.template, r.cells)
    r.out.runs = slicing.needed(r.cells, [c.get("id") not in r.owned for c in r.cells])


STEPS = (read, match, bound, evidence, put_back, plan)


def restore(sub: Submission, handed_out: str | None = None, as_unit: str | None = None) -> Restored:
    """The copy restored by :data:`STEPS` (see the module's text); a copy that cannot be matched to the unit's
    notebook is *not restored*: its row says why and it gets no score. ``handed_out`` names the course version the
    class was given (:mod:`.versions`): only questions added after it may be "not in this copy". ``as_unit`` grades
    the copy as that unit (a copy handed out before its unit was split is restored once for each half)."""
    r = Reading(Restored(sub, unit=unit_said(sub), handed_out=handed_out), as_unit=as_unit)
    for step in STEPS:
        step(r)
        if r.done:
            break
    return r.out


def carried_variants(cells: list, unit: str) -> dict[str, Carried]:
    """For each generated self-test of ``unit``, the record its cells' saved outputs carry (data, never trusted:
    :func:`grader.engine.variants.read_record`) with the highest program number: the program in force when the
    learner saved. Records of the course's own run (a solution's stored outputs) are no learner's: left out."""
    from grader.engine import identity, variants

    wanted = {q.qid for q in of_unit(unit) if q.program is not None} if unit in UNITS else set()
    course = identity.fingerprint(identity.COURSE)
    found: dict[str, Carried] = {}
    for cell in cells:
        outputs = cell.get("outputs") if isinstance(cell, dict) and cell.get("cell_type") == "code" else None
        for output in outputs if isinstance(outputs, list) else []:
            carried = variants.read_record(output)
            if carried is not None and carried.qid in wanted and carried.fingerprint != course:
                if carried.qid not in found or carried.number >= found[carried.qid].number:
                    found[carried.qid] = carried
    return found


def _what_the_copy_holds(unit: str, template: list, cells: list, handed_out: str | None = None) -> CopyContents:
    """Which of the unit's questions and cells this copy holds; only questions added after the version the
    class was handed (``handed_out``) may be absent without counting."""
    qs = of_unit(unit) if unit in UNITS else []
    return what_the_copy_holds(
        [q.qid for q in qs],
        [q.qid for q in qs if q.role == "predict"],
        template,
        [c for c in cells if isinstance(c, dict)],
        excusable=versions.added_since(handed_out, unit) if handed_out else (),
    )


def _exercise_sources(unit: str, template: list, cells: list) -> dict[str, ExerciseSource]:
    """For each exercise of the unit, its function rebuilt from the copy (see :mod:`.exercise_sources`)."""
    from grader.engine.kinds import Function

    qids = [q.qid for q in of_unit(unit) if isinstance(q.kind, Function)] if unit in UNITS else []
    return exercise_sources(qids, template, cells)
