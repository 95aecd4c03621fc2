"""The write step of ``grade``: recomputed outcomes become a gradebook an LMS takes and feedback a learner can act on.

* the long CSV (``--out``): one row per learner and unit, every number a number (points, max,
  percent, done, correct, questions), the student ID from the roster, the submission's time,
  and one column per question with its honest record;
* the wide CSV (``--wide``): one row per learner, every unit as columns, and totals; a unit a
  learner did not hand in counts 0 of its maximum;
* ``--merge-into``: an existing long gradebook with the rows of the learners (and units) graded now
  replaced, so one learner can be regraded alone; the wide CSV, that learner's page and the class report are
  then written from the merged gradebook (the answers and report facts kept beside it: :mod:`.outputs`);
* feedback pages (``--html``): for each question the learner's answer beside torch's, the
  explanation, and for an exercise the smallest failing case as the notebook shows it; one page per
  learner, units in order, every verdict coloured, nothing loaded from the network. A page is named
  :func:`page_name`: the learner's name kept as UTF-8 where a file name can hold it (letters and
  digits of any script), then 8 hex digits of the SHA-256 of the learner's name (``Zoé-….html``,
  ``Zoë-….html``, ``李明-….html``), so two learners never share a page; nothing else links to it.

Every CSV is written by :mod:`grader.instructor.grading.csv_cells`: every field quoted, and every
text cell that a spreadsheet would run (one beginning with ``=``, ``+``, ``-``, ``@``, tab or
carriage return: a learner's folder named ``=HYPERLINK(...)``, a notebook path, a finding) written
with a single quote in front. The grader's own numbers (points, max, percent, counts, seconds) and any
cell that is only a plain number are written as numbers. :func:`read_csv` takes the quote off again,
so ``--merge-into`` matches a learner named ``=1+2`` with their own rows.

A question's record in the gradebook says what the learner did, not what the re-run did: the
grader runs every cell, so a reveal cell always runs; a prediction left as the placeholder is
"not answered", and a question the copy never had (an older copy) is "not in this copy".
"""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from grader.engine import progress
from grader.engine.course import UNITS
from grader.engine.question import of_unit
from grader.engine.verdicts import Role
from grader.instructor.grading import csv_cells, scores
from grader.instructor.grading.overrides import apply as apply_override

FIXED = [
    "learner",
    "student id",
    "notebook",
    "unit",
    "submitted",
    "run",
    "problems",
    "findings",
    "marked passed",
    "points",
    "max",
    "percent",
    "done",
    "correct",
    "questions",
    "not in copy",
    "hints",
    "attempts",
    "isolation",
    "seconds",
]
TAMPERED = ("worker died", "worker lied")
# runs that did not go to the end: what was recorded before is scored, but the unit is never marked passed
UNFINISHED = (*TAMPERED, "kernel died", "killed", "could not run", "could not be restored", "grader error")
NOT_IN_COPY = "not in this copy"


def question_verdict(q, flag: str = "", absent: bool = False, unanswered: bool = False) -> str:
    """The question's honest record, in the words the panel and `status` use; a flag found while
    recomputing (such as "predicted after reveal") wins over a record that does not say it already
    (the record "predicted after reveal, correct" is the panel's words, and stays). In a graded copy the
    re-run revealed every question, so a reveal with no prediction before it and the placeholder still
    in the answer cell is "not answered"."""
    if absent:
        return NOT_IN_COPY
    words = q.record if flag and q.record.startswith(flag) else (flag or q.record)
    if words == "revealed without prediction" and unanswered:
        return "not answered"
    return words


def _done(role: Role, verdict: str, state: progress.QuestionState) -> bool:
    if role == "predict":
        return state.predicted and verdict not in ("not answered", "revealed without prediction")
    return state.passed


def _show(kind, answer) -> str:
    from grader.engine.kinds import short

    try:
        return kind.show(kind.read_recorded(answer))
    except Exception:
        return short(answer)


def _feedback(q, r, verdict: str, earned: float, maximum: float) -> dict:
    from grader.instructor.grading.verify import truth_of, truth_on

    variant = getattr(r, "variants", {}).get(q.qid)  # a generated self-test: the learner's own program, as judged
    item = {
        "verdict": verdict,
        "prompt": variant.program.prompt if variant is not None else q.prompt,
        "explain": q.explain,
        "role": q.role,
        "yours": "",
        "torch": "",
        "case": "",
        "points": earned,
        "max": maximum,
    }
    try:
        if q.role == "exercise":
            v = r.exercises.get(q.qid)
            if v is not None and v.case >= 0:
                case = q.kind.cases()[v.case]
                item["case"] = case.source
                item["yours"] = q.kind.returns.show(v.got) if v.got is not None else v.note
                item["returned"] = v.got is not None  # else it raised, or never ran: the note says which
                item["torch"] = q.kind.returns.show(truth_of(q, case, key=v.case))
            elif v is not None:
                item["yours"] = v.note
        else:
            if q.qid in r.answers and r.answers[q.qid] is not None:
                item["yours"] = _show(q.kind, r.answers[q.qid])
            item["torch"] = q.kind.show(truth_on(q, variant) if variant is not None else truth_of(q))
            if variant is not None:
                item["variant"] = variant.name
    except Exception as exc:  # torch's answer could not be shown: say so, the row stands
        item["torch"] = item["torch"] or f"(not available: {type(exc).__name__})"
    return item


def rows_of(
    out,
    weights: scores.Weights | None = None,
    ids: dict | None = None,
    times: dict | None = None,
    feedback: bool = False,
    overrides=None,
) -> list[dict]:
    """One row per unit of one graded submission (``out`` is a pipeline.GradedSubmission); ``overrides`` (an
    :class:`.overrides.Overrides`) change a question's points and say so in the row's ``overrides`` column
    and its feedback, never in its verdict."""
    weights = weights or scores.Weights()
    rows = []
    for r in out.units:
        row = _row_base(out, r.unit if r is not None else out.unit, ids, times)
        if r is None:
            if row["unit"] in UNITS:
                row["max"] = scores.number(unit_maximum(row["unit"], weights))
                row["questions"] = len(of_unit(row["unit"]))
        else:
            _score_unit(row, out, r, weights, feedback, overrides)
        rows.append(row)
    return rows


def _row_base(out, unit: str, ids: dict | None, times: dict | None) -> dict:
    """A row's columns that do not depend on its questions: who, which notebook and unit, how the run went."""
    from grader.instructor.grading.roster import lookup, submitted

    learner, notebook = out.submission.learner, str(out.submission.path)
    student = lookup(ids, learner, notebook) if ids else None
    row = {
        "learner": learner,
        "student id": student or "",
        "notebook": notebook,
        "unit": unit,
        "submitted": submitted(notebook, times),
        "run": out.status,
        "problems": "; ".join(out.problems),
        "findings": "; ".join(out.findings),
        "marked passed": "no",
        "points": 0,
        "max": 0,
        "percent": 0,
        "done": 0,
        "correct": 0,
        "questions": 0,
        "not in copy": "",
        "hints": "",
        "attempts": "",
        "isolation": out.isolation,
        "seconds": scores.number(out.seconds),
    }
    named = getattr(out.submission, "named", None)
    if named is not None and named.lms_id:  # the LMS's own id of the learner (Canvas's user id), for --lms
        row["lms id"], row["lms"] = named.lms_id, named.lms
    if named is not None and named.lms == "canvas":
        row["late"] = "yes" if named.late else "no"  # Canvas's own mark (_LATE in the file's name), see .late
    if ids is not None and student is None:
        _note(row, "findings", "not in the roster")
    return row


def _note(row: dict, column: str, text: str) -> None:
    row[column] = "; ".join(p for p in (row[column], text) if p)


@dataclass
class _Tally:
    points: float = 0.0
    maximum: float = 0.0
    done: int = 0
    correct: int = 0
    counted: int = 0
    complete: bool = True
    changed: list = field(default_factory=list)  # the overrides applied, each saying what it changed and why
    details: dict = field(default_factory=dict)  # qid -> the feedback page's entry


def _score_unit(row: dict, out, r, weights: scores.Weights, feedback: bool, overrides) -> None:
    """A recomputed unit's questions into ``row``: each verdict, the points, what is done and correct."""
    copy = getattr(out, "copy", None)
    absent = set(copy.absent) if copy else set()
    unanswered = set(copy.unanswered) if copy else set()
    tally = _Tally(complete=out.status not in UNFINISHED)
    for q in of_unit(row["unit"]):
        _score_question(row, q, r, weights, tally, q.qid in absent, q.qid in unanswered, feedback, overrides)
    if not tally.counted:
        tally.complete = False
        _note(row, "problems", "no question of the unit counts")
    elif out.status in UNFINISHED:
        _note(row, "problems", f"the run did not finish ({out.status}): not marked passed")
    row.update(
        {
            "marked passed": "yes" if tally.complete else "no",
            "points": scores.number(tally.points),
            "max": scores.number(tally.maximum),
            "percent": scores.percent(tally.points, tally.maximum),
            "done": tally.done,
            "correct": tally.correct,
            "questions": tally.counted,
            "not in copy": ", ".join(sorted(absent)),
            "hints": ", ".join(f"{qid}: {n}" for qid, n in r.hints.items()),
            "attempts": ", ".join(f"{qid}: {n}" for qid, n in r.attempts.items()),
        }
    )
    if absent:
        counted = ", counted" if weights.count_absent else ", not counted"
        _note(
            row, "findings", f"not in this copy (added after it was handed out{counted}): {', '.join(sorted(absent))}"
        )
    if tally.changed:
        row["overrides"] = "; ".join(tally.changed)
    if feedback:
        row["_feedback"] = tally.details


def _score_question(row, q, r, weights, tally: _Tally, missing: bool, unanswered: bool, feedback: bool, overrides):
    """One question: its verdict in its column, its points (an override applied), and its feedback entry."""
    st, flag = r.state.questions[q.qid], r.flags.get(q.qid, "")
    verdict = question_verdict(st, flag, missing, unanswered)
    row[q.qid] = verdict
    w = weights.of(q.qid, q.role)
    if missing and not weights.count_absent:
        tally.details[q.qid] = {
            **dict.fromkeys(("explain", "yours", "torch", "case"), ""),
            "verdict": verdict,
            "prompt": q.prompt,
            "role": q.role,
            "points": 0,
            "max": 0,
        }
        return
    got = {} if missing else scores.earned(q.role, st, flag, w, weights.self_test_attempts)
    q_points, q_max, note = sum(got.values()), sum(w.values()), ""
    if overrides and not missing:
        student = row["student id"]
        honest = scores.honest(st, flag)
        q_points, note, line = apply_override(
            overrides, q, row["learner"], student, r.answers.get(q.qid), honest, q_points, q_max, _show
        )
        if note:
            tally.changed.append(note)
            row.setdefault("_overridden", []).append(line)
    tally.points, tally.maximum, tally.counted = tally.points + q_points, tally.maximum + q_max, tally.counted + 1
    is_done = not missing and _done(q.role, verdict, st)
    tally.done += is_done
    tally.correct += not missing and scores.correct(q.role, st, flag)
    tally.complete = tally.complete and is_done
    if feedback:
        tally.details[q.qid] = _feedback(q, r, verdict, scores.number(q_points), scores.number(q_max))
        if note:
            tally.details[q.qid]["override"] = note


def unit_maximum(unit: str, weights: scores.Weights) -> float:
    return sum(sum(weights.of(q.qid, q.role).values()) for q in of_unit(unit)) if unit in UNITS else 0.0


def _unit_key(unit: str):
    """Course order (04 before 04b before 05); a unit the course does not have after every unit it has."""
    order = list(UNITS)
    return (0, order.index(unit), "") if unit in UNITS else (1, 0, str(unit))


# --- the long gradebook ---------------------------------------------------------------------


def read_csv(path: Path) -> list[dict]:
    """A gradebook as :func:`write_csv` wrote it: every cell as it was before it was made safe."""
    return csv_cells.read(path)


def merge(old: list[dict], new: list[dict]) -> list[dict]:
    """The old gradebook with every (learner, unit) graded now replaced (and the learner's unreadable rows)."""
    fresh = {(r["learner"], r["unit"]) for r in new}
    learners = {r["learner"] for r in new}
    kept = [
        r
        for r in old
        if (r.get("learner"), r.get("unit")) not in fresh
        and not (r.get("learner") in learners and r.get("unit") not in UNITS)
    ]
    return kept + list(new)


def write_csv(rows: list[dict], path: Path) -> None:
    questions = []
    for unit in sorted({r["unit"] for r in rows}, key=_unit_key):
        questions += [q.qid for q in of_unit(unit)] if unit in UNITS else []
    extra = [k for r in rows for k in r if k not in FIXED and k not in questions and not k.startswith("_")]
    ordered = sorted(rows, key=lambda r: (r["learner"], _unit_key(r["unit"]), r["notebook"]))
    csv_cells.write(path, FIXED + questions + list(dict.fromkeys(extra)), ordered)


# --- the wide gradebook: one row per learner ------------------------------------------------


def _num(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return 0.0


def wide_rows(
    rows: list[dict], weights: scores.Weights | None = None, ids: dict | None = None, units: list[str] | None = None
) -> tuple[list[str], list[dict]]:
    """(columns, rows): each learner once, each unit graded for anyone as columns, and the totals."""
    weights = weights or scores.Weights()
    units = units or sorted({r["unit"] for r in rows if r["unit"] in UNITS}, key=_unit_key)
    columns = ["student id", "learner"]
    for u in units:
        columns += [f"{u} points", f"{u} max", f"{u} percent", f"{u} passed", f"{u} submitted"]
    columns += ["points", "max", "percent", "units passed", "units"]
    # said wherever a person changed points or a late rule took some
    shown = [c for c in ("overrides", "late rule") if any(r.get(c) for r in rows)]
    columns += shown
    learners = sorted({r["learner"] for r in rows} | set(_roster_only(ids, rows)))
    out = []
    for name in learners:
        mine = [r for r in rows if r["learner"] == name]
        student = next((r.get("student id") for r in mine if r.get("student id")), "") or (
            (ids or {}).get(name, "") if ids else ""
        )
        row = {"student id": student, "learner": name}
        total = top = 0.0
        passed = 0
        for u in units:
            graded = [r for r in mine if r["unit"] == u]
            if graded:
                best = max(graded, key=lambda r: (_num(r["points"]), r.get("submitted", "")))
                p, m = _num(best["points"]), _num(best["max"])
                row.update(
                    {
                        f"{u} points": scores.number(p),
                        f"{u} max": scores.number(m),
                        f"{u} percent": scores.percent(p, m),
                        f"{u} passed": best["marked passed"],
                        f"{u} submitted": best.get("submitted", ""),
                    }
                )
                passed += best["marked passed"] == "yes"
            else:
                p, m = 0.0, unit_maximum(u, weights)
                row.update(
                    {
                        f"{u} points": 0,
                        f"{u} max": scores.number(m),
                        f"{u} percent": 0,
                        f"{u} passed": "not submitted",
                        f"{u} submitted": "",
                    }
                )
            total, top = total + p, top + m
        row.update(
            {
                "points": scores.number(total),
                "max": scores.number(top),
                "percent": scores.percent(total, top),
                "units passed": passed,
                "units": len(units),
            }
        )
        for c in shown:
            row[c] = "; ".join(
                f"{r['unit']}: {r[c]}" for r in sorted(mine, key=lambda r: _unit_key(r["unit"])) if r.get(c)
            )
        out.append(row)
    return columns, out


def _roster_only(ids: dict | None, rows: list[dict]) -> list[str]:
    """Roster names that match no graded learner (by name or by student id): they handed nothing in."""
    if not ids:
        return []
    seen_ids = {r.get("student id") for r in rows}
    seen = {r["learner"] for r in rows}
    names = set()
    for name, sid in ids.items():
        if name in seen or sid in seen_ids or name.endswith(".ipynb"):
            continue
        names.add(name)
    return sorted(names)


def write_wide(rows: list[dict], path: Path, weights: scores.Weights | None = None, ids: dict | None = None) -> None:
    """The wide CSV, each learner's name and ID with its control characters escaped (:mod:`.printable`): it is
    read by people, in a spreadsheet or a terminal, never merged back."""
    from grader.instructor.grading.printable import escape

    columns, table = wide_rows(rows, weights, ids)
    for row in table:
        row["learner"], row["student id"] = escape(row["learner"]), escape(row["student id"])
    csv_cells.write(path, columns, table)


# --- feedback pages -------------------------------------------------------------------------


def verdict_class(verdict: str) -> str:
    """Every verdict gets a colour: good, partial (participation but wrong), bad, absent."""
    v = verdict or ""
    if v == NOT_IN_COPY:
        return "absent"
    if v.startswith("correct") or v.startswith("predicted, correct"):
        return "good"
    if (
        v.startswith("predicted, incorrect")
        or v.startswith("predicted, not revealed")
        or v.startswith("predicted after reveal")
    ):
        return "partial"
    return "bad"


STYLE = """body{font-family:system-ui,sans-serif;max-width:64em;margin:2em auto;padding:0 1em;color:#1f2328}
table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}td,th{padding:4px 8px;text-align:left;
vertical-align:top;border-bottom:1px solid #d0d7de}th{background:#f6f8fa}
.verdict{font-weight:600;border-radius:4px;padding:1px 6px;white-space:nowrap}
.good{background:#dafbe1;color:#116329}.partial{background:#fff8c5;color:#7d4e00}
.bad{background:#ffebe9;color:#a40e26}.absent{background:#eaeef2;color:#57606a}
.explain{color:#57606a;font-size:.95em}.override{background:#ddf4ff;padding:2px 6px}pre{background:#f6f8fa;padding:6px;overflow-x:auto;margin:.3em 0}
code{font-size:.95em}.summary{font-size:1.1em}"""


def _esc(x) -> str:
    return html.escape(str(x))


def _page(learner: str, rows: list[dict]) -> str:
    total = sum(_num(r["points"]) for r in rows)
    top = sum(_num(r["max"]) for r in rows)
    parts = [
        f"<!doctype html><html lang='en'><meta charset='utf-8'><title>autograd-lab: {_esc(learner)}</title>",
        f"<style>{STYLE}</style>",
        f"<h1>Feedback for {_esc(learner)}</h1>",
        f"<p class='summary'>{scores.number(total)} of {scores.number(top)} points "
        f"({scores.percent(total, top)}%) in {len(rows)} unit(s).</p>",
    ]
    for r in sorted(rows, key=lambda r: (_unit_key(r["unit"]), r["notebook"])):
        unit = r["unit"]
        title = UNITS[unit].title if unit in UNITS else "unknown unit"
        parts.append(f"<h2 id='unit-{_esc(unit)}'>Unit {_esc(unit)}: {_esc(title)}</h2>")
        parts.append(
            f"<p><b>{r['points']} of {r['max']} points ({r['percent']}%)</b>. Marked passed: "
            f"<span class='verdict {'good' if r['marked passed'] == 'yes' else 'bad'}'>"
            f"{_esc(r['marked passed'])}</span>. Run: {_esc(r['run'])}. Predictions and checks done: "
            f"{r['done']} of {r['questions']}, correct: {r['correct']}."
            + (f" Handed in: {_esc(r['submitted'])}." if r.get("submitted") else "")
            + "</p>"
        )
        notes = [p for p in (r["problems"].split("; ") + r["findings"].split("; ")) if p]
        if notes:
            parts.append("<ul class='notes'>" + "".join(f"<li>{_esc(p)}</li>" for p in notes) + "</ul>")
        if r.get("overrides"):
            parts.append(
                "<p class='overrides'><b>Points changed by your teaching assistant:</b></p><ul class='overrides'>"
                + "".join(f"<li>{_esc(p)}</li>" for p in r["overrides"].split("; ") if p)
                + "</ul>"
            )
        details = r.get("_feedback", {})
        if not details:
            continue
        parts.append(
            "<table><tr><th>question</th><th>result</th><th>your answer</th><th>torch's answer</th><th>points</th></tr>"
        )
        for qid, d in details.items():
            parts.append(
                f"<tr class='question' id='{_esc(qid)}'><td><code>{_esc(qid)}</code></td>"
                f"<td><span class='verdict {verdict_class(d['verdict'])}'>{_esc(d['verdict'])}</span></td>"
                f"<td class='yours'>{_esc(d['yours'])}</td><td class='torch'>{_esc(d['torch'])}</td>"
                f"<td>{d['points']} / {d['max']}</td></tr>"
            )
            body = [f"<div class='prompt'>{_esc(d['prompt'])}</div>"]
            if d.get("override"):
                body.append(f"<div class='override'><b>Override:</b> {_esc(d['override'])}</div>")
            if d.get("case"):
                body.append(
                    "<div class='failing'><b>Smallest failing case</b><pre class='case'>"
                    f"{_esc(d['case'])}</pre>"
                    + (
                        f"your function returned <code>{_esc(d['yours'])}</code>; "
                        if d.get("returned", True)
                        else f"your function did not return an answer: {_esc(d['yours'])}; "
                    )
                    + f"torch says <code>{_esc(d['torch'])}</code></div>"
                )
            if d.get("explain"):
                body.append(f"<div class='explain'><b>Why:</b> {_esc(d['explain'])}</div>")
            parts.append(f"<tr class='detail'><td></td><td colspan='4'>{''.join(body)}</td></tr>")
        parts.append("</table>")
    parts.append("</html>")
    return "\n".join(parts)


def write_html(rows: list[dict], folder: Path) -> list[Path]:
    """One page per learner in ``rows``, named by :func:`page_name`; two learners never share a page. Rows read
    back from a CSV carry no answers until :func:`grader.instructor.grading.outputs.attach` gives them back."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    fresh = list(rows)
    learners = sorted({r["learner"] for r in fresh})
    names = page_names(learners)
    for learner in learners:
        page = folder / names[learner]
        page.write_text(_page(learner, [r for r in fresh if r["learner"] == learner]), encoding="utf-8")
        written.append(page)
    return written


PAGE_NAME_CHARS = 48  # characters of the learner's name kept in a page's file name (then the hash)
HASH_CHARS = 8


def _identity_hash(learner: str, chars: int = HASH_CHARS) -> str:
    return hashlib.sha256(learner.encode("utf-8", "surrogateescape")).hexdigest()[:chars]


def _readable(learner: str) -> str:
    """The learner's name as a file name can hold it on any system: letters, digits and marks of any
    script (kept as UTF-8, in NFC), ``-`` and ``_``; every other character (path separators, dots,
    spaces, control and direction marks) becomes ``_``; at most PAGE_NAME_CHARS characters."""
    text = unicodedata.normalize("NFC", learner)
    kept = "".join(ch if ch.isalnum() or ch in "-_" or unicodedata.category(ch) in ("Mn", "Mc") else "_" for ch in text)
    kept = re.sub(r"_+", "_", kept).strip("_-")
    return kept[:PAGE_NAME_CHARS].rstrip("_-") or "learner"


def page_name(learner: str, chars: int = HASH_CHARS) -> str:
    """A learner's feedback page: the readable name, then the first hex digits of the SHA-256 of the
    learner's name as the gradebook holds it: ``Zoé`` -> ``Zoé-<8 hex>.html``, ``Zoë`` another page."""
    return f"{_readable(learner)}-{_identity_hash(learner, chars)}.html"


def page_names(learners) -> dict[str, str]:
    """Each learner's page; where two short names would meet (on a case-blind file system too), both
    take the whole hash, so no page ever holds two learners."""
    learners = sorted(set(learners))
    short = {name: page_name(name) for name in learners}
    seen: dict[str, int] = {}
    for name in short.values():
        seen[name.casefold()] = seen.get(name.casefold(), 0) + 1
    return {learner: name if seen[name.casefold()] == 1 else page_name(learner, 64) for learner, name in short.items()}
