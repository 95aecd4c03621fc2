"""The instructor's view of a class: every learner's own progress record, collected read-only.

On a hub each learner's progress store lies in their home
(``~/.local/share/autograd-lab/progress.sqlite3``). This reads every such store and never writes to one: each
part of its path is opened from the one above it without following a link, owned by the home's owner
(:mod:`grader.instructor.homes`: a store, or a whole ``~/.local``, made a link to another learner's is refused,
with a finding, never read), its bytes (and its write-ahead log's) are copied through the opened descriptors into
a private folder, and only that copy is read, as untrusted data (:mod:`grader.instructor.grading.untrusted_store`).
Nothing is created beside a learner's file. It never runs a notebook, and reports:

* per unit and question: how many predicted correctly, wrongly, revealed without predicting or predicted
  after a reveal; the most common wrong answers with their counts (a generated self-test's per program asked,
  each with the question's note when it is a known misconception on that program); hints and attempts;
* per learner: last activity, the unit in progress, and what it still misses. The learners are the users named
  (``--users``, ``--group``), else every home in ``--homes`` that holds the course (its workspace or progress
  folder); one without a store reads "not started", and the homes left out are named.

This is the learners' own record, derived exactly as their panel and ``python -m grader status`` derive it
(:mod:`grader.engine.progress`). It is not recomputed: ``python -m grader grade`` re-runs submitted notebooks and
grades them afresh; this only reads what the learners' kernels wrote. Every name and answer it prints has its
control characters escaped (:mod:`grader.instructor.grading.printable`).

    python -m grader.instructor.classview --homes /home [--users alice,bob | --group students] [--html class.html]
        [--json]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import html
import json
import os
import sqlite3
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader.engine import moves, progress
from grader.engine.course import UNITS
from grader.engine.question import of_unit
from grader.engine.store import FILENAME, Event
from grader.instructor import homes as home_files
from grader.instructor.grading import untrusted_store
from grader.instructor.grading.printable import escape

ROOT = Path(__file__).resolve().parents[2]
STORE_IN_HOME = Path(*home_files.PROGRESS) / FILENAME
TOP = 5  # wrong answers listed per question
NOT_STARTED = "not started (no progress store yet: never ran a graded cell)"
MISSING_SHOWN = 8  # items of a learner's missing list shown on the page (the JSON has all)


# --- reading the stores --------------------------------------------------------------------


def _read_copy(folder_fd: int, owner: int | None, name: str = FILENAME) -> list[Event]:
    """The events of the store in ``folder_fd``, read from a private copy of its bytes (and of its write-ahead log)
    taken through the descriptor: the store file, then its log, then the store again, until the store did not
    change meanwhile (a kernel's checkpoint between the two would pair a log with a store it does not belong to)."""
    cap = untrusted_store.STORE_CAP
    for _ in range(4):
        db, _ = home_files.read_file(folder_fd, name, cap, owner)
        try:
            wal, _ = home_files.read_file(folder_fd, name + "-wal", cap, owner)
        except home_files.Missing:
            wal = None
        again, _ = home_files.read_file(folder_fd, name, cap, owner)
        if again == db:
            break
    events, _ = untrusted_store.read_bytes(db, wal)
    return moves.moved_events(events)  # a unit-wide event of a split unit counts for both halves


def _retrying(read) -> list[Event]:
    """``read()``, again while the store is caught mid-write (a kernel writing it as it is copied)."""
    for attempt in range(4):
        try:
            return read()
        except untrusted_store.Refused as exc:
            busy = "locked" in str(exc) or "busy" in str(exc) or "malformed" in str(exc)
            if attempt == 3 or not busy:
                raise
            time.sleep(0.2 * (attempt + 1))
    return []


def read_events(path: Path) -> list[Event]:
    """Every event in the store at ``path`` (a store given by its path, ``--store NAME=PATH``), read as untrusted
    data (:mod:`grader.instructor.grading.untrusted_store`: only a plain ``events`` table, ``trusted_schema`` off,
    an operation budget, a size cap) from a private copy taken without following a link at its last part. Nothing
    is created beside the file. Raises :class:`untrusted_store.Refused` or :class:`home_files.Refused`."""
    path = Path(path)
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise home_files.Missing(f"{path.parent}: {exc.strerror}") from None
    try:
        return _retrying(lambda: _read_copy(folder, None, path.name))
    finally:
        os.close(folder)


def read_home_store(user: str, home: Path) -> list[Event]:
    """The events of the store in ``home`` (``~/.local/share/autograd-lab/progress.sqlite3``), every part of the
    path opened from the one above it without following a link, each owned by the home's owner
    (:mod:`grader.instructor.homes`). Raises Missing (no store yet), home_files.Refused or untrusted_store.Refused."""
    with home_files.open_home(user, home) as opened:
        folder = home_files.open_folder(opened, home_files.PROGRESS)
        try:
            return _retrying(lambda: _read_copy(folder, opened.owner))
        finally:
            os.close(folder)


@dataclass
class Learner:
    name: str
    store: Path
    events: list = field(default_factory=list)
    problem: str = ""  # why the store could not be read; '' when it was
    home: Path | None = None  # read through the home (every part without links); None: a store given by path

    def states(self) -> dict[str, progress.UnitState]:
        return {u: progress.unit_state(u, self.events) for u in UNITS}


def find(
    homes: list[Path], users: list[str] | None = None, stores: dict[str, Path] | None = None, others=None
) -> list[tuple[str, Path | None, Path]]:
    """(learner, home or None, store path) for the given users, else for every home in ``homes`` that holds the
    course (:func:`grader.instructor.homes.learners`; the other homes are appended to ``others``), and each store
    given by path."""
    found: dict[str, tuple[Path | None, Path]] = {}
    if users or homes:
        listed = home_files.learners(homes, users)
        if others is not None:
            others += listed.others
        for user, home in listed.learners:
            found[user] = (home, home / STORE_IN_HOME)
    for name, path in (stores or {}).items():
        found[name] = (None, Path(path))
    return [(name, home, path) for name, (home, path) in sorted(found.items())]


def collect(
    homes: list[Path], users: list[str] | None = None, stores: dict[str, Path] | None = None, others=None
) -> list[Learner]:
    learners = []
    for name, home, path in find(homes, users, stores, others):
        learner = Learner(name, path, home=home)
        try:
            learner.events = read_home_store(name, home) if home is not None else read_events(path)
        except home_files.Missing:
            learner.problem = NOT_STARTED
        except home_files.Refused as exc:
            learner.problem = f"store not read: {exc}"
        except (OSError, sqlite3.Error) as exc:
            learner.problem = f"store not readable: {exc}"
        learners.append(learner)
    return learners


# --- the report ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _truths() -> dict:
    """Torch's answers as the course recorded them at build time (solutions/manifest.json); nothing is run."""
    try:
        return json.loads((ROOT / "solutions" / "manifest.json").read_text())["questions"]
    except (OSError, ValueError, KeyError):
        return {}


def _answer_text(q, answer, variant=None) -> tuple[str, str]:
    """(how the answer reads, the question's misconception note for it or ''). A generated self-test's answer is
    judged on ``variant``, the program the learner was asked (torch's answer on it, computed here), never on the
    canonical program's: the same wrong words mean another mistake on another program."""
    try:
        value = q.kind.read_recorded(answer)
        text = q.kind.show(value)
    except Exception:
        return (json.dumps(answer) if not isinstance(answer, str) else answer)[:120], ""
    if variant is not None:
        from grader.instructor.grading.report import _wrong

        try:
            _, note = _wrong(q, answer, variant)
        except Exception:
            note = ""
        return text[:120], note
    truth = None  # only a misconception declared as a function of torch's answer needs it
    try:
        truth = q.kind.read(_truths()[q.qid]["answer"])
    except Exception:
        pass
    try:
        note = q.misconception(truth, value)
    except Exception:
        note = ""
    return text[:120], note


PROGRAMS_NOTED = 400  # distinct programs of a class whose torch answers are worked out for the notes, at most


def _program_of(q, e: Event, budget: list):
    """(the program a self-test's check event says it graded, as the course's generator draws it from the seed the
    event records; its label) or (None, label) where it names none or the budget of programs is spent. The seed is
    the learner's own record, as everything here is."""
    from grader.engine import variants

    if q.program is None:
        return None, ""
    seed = e.detail.get("seed") if isinstance(e.detail, dict) else None
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**48):
        return None, "?"
    label = variants.label(seed)
    if budget[0] <= 0:
        return None, label
    budget[0] -= 1
    try:
        return variants.Variant(q.qid, variants.number_in(e.detail), seed, q.program(variants.Draw(seed))), label
    except Exception:
        return None, label


_STANDING_COUNT = {
    "revealed only": "revealed_without_prediction",
    "predicted after reveal": "predicted_after_reveal",
    "predicted": "predicted_not_revealed",
    "not attempted": "not_attempted",
}


def _question_row(
    q, learners: list[Learner], states: dict[str, dict[str, progress.UnitState]], budget: list | None = None
) -> dict:
    budget = budget if budget is not None else [PROGRAMS_NOTED]
    row = {"qid": q.qid, "role": q.role, "prompt": q.prompt, "records": Counter()}
    wrong: Counter = Counter()
    notes: dict[tuple[str, str], str] = {}
    hinted = hints = 0
    if q.role == "predict":
        counts = dict.fromkeys(
            (
                "predicted_correct",
                "predicted_wrong",
                "revealed_without_prediction",
                "predicted_after_reveal",
                "predicted_not_revealed",
                "not_attempted",
            ),
            0,
        )
    else:
        counts = dict.fromkeys(("passed", "passed_first_try", "failing", "not_answered"), 0)
        attempts_to_pass = []
    for learner in learners:
        if learner.problem:
            continue
        s = states[learner.name][q.unit].questions[q.qid]
        row["records"][s.words(variant=False)] += 1  # counted by standing: each learner's program is their own
        hinted += s.hints > 0
        hints += s.hints
        if q.role == "predict":
            if s.standing == "predicted, revealed":
                counts["predicted_correct" if s.reveal_verdict == "correct" else "predicted_wrong"] += 1
            else:  # the same standing the learner's panel and its record read
                counts[_STANDING_COUNT[s.standing]] += 1
            if s.revealed and s.reveal_verdict == "incorrect" and s.prediction is not None:
                text, note = _answer_text(q, s.prediction)
                wrong[(text, "")] += 1
                notes[(text, "")] = note
        else:
            if s.passed:
                counts["passed"] += 1
                counts["passed_first_try"] += s.attempts == 1
                attempts_to_pass.append(s.attempts)
            elif s.last_check in ("", "unanswered"):
                counts["not_answered"] += 1
            else:
                counts["failing"] += 1
            if q.role == "self-test":  # each learner's distinct wrong answers, once each, by the program asked
                seen = set()
                for e in learner.events:
                    if e.qid == q.qid and e.action == "check" and e.verdict == "incorrect":
                        variant, label = _program_of(q, e, budget)
                        text, note = _answer_text(q, e.answer, variant)
                        if (text, label) not in seen:
                            seen.add((text, label))
                            wrong[(text, label)] += 1
                            notes[(text, label)] = note if variant is not None or not label else ""
    row.update(counts)
    if q.role != "predict":
        row["attempts_total"] = sum(states[l.name][q.unit].questions[q.qid].attempts for l in learners if not l.problem)
        row["mean_attempts_to_pass"] = (
            round(sum(attempts_to_pass) / len(attempts_to_pass), 2) if attempts_to_pass else None
        )
    row["learners_with_hints"], row["hints_shown"] = hinted, hints
    # a generated self-test's wrong answers are counted per program (each learner's programs are their own):
    # one answer given on two programs is two entries, each with the note for its own program
    row["wrong_answers"] = [
        {"answer": a, "count": n, "note": notes.get((a, p), ""), **({"program": p} if p else {})}
        for (a, p), n in wrong.most_common(TOP)
    ]
    row["records"] = dict(row["records"].most_common())
    return row


def _when(t: float | None) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else ""


def _learner_row(learner: Learner, unit_states: dict[str, progress.UnitState], now: float) -> dict:
    row = {
        "learner": learner.name,
        "store": str(learner.store),
        "problem": learner.problem,
        "events": len(learner.events),
        "passed": [u for u, s in unit_states.items() if s.passed],
        "last_activity": None,
        "idle": "",
        "last_action": "",
        "unit_in_progress": "",
        "done": "",
        "missing": [],
        "unsaved": unsaved(learner),  # answers the store holds that the saved notebooks lack
    }
    if not learner.events:
        return row
    last = learner.events[-1]
    row["last_activity"] = _when(last.time)
    minutes = max(0, int((now - last.time) // 60))
    row["idle"] = (
        f"{minutes // 1440} d" if minutes >= 1440 else f"{minutes // 60} h" if minutes >= 60 else f"{minutes} min"
    )
    row["last_action"] = " ".join(x for x in (last.qid or last.unit, last.action, last.verdict) if x)
    latest: dict[str, float] = {}
    for e in learner.events:
        latest[e.unit] = e.time
    open_units = [
        u
        for u in sorted(latest, key=latest.get, reverse=True)
        if u in unit_states and unit_states[u].started and not unit_states[u].passed
    ]
    if open_units:
        u = open_units[0]
        s = unit_states[u]
        row["unit_in_progress"] = u
        row["done"] = f"{s.counts()['done']}/{s.counts()['questions']}"
        row["missing"] = s.missing()
    return row


NOTEBOOK_READ_CAP = 32 * 2**20


def unsaved(learner: Learner) -> list[str]:
    """The questions whose latest answer the learner's store holds and the notebook saved in their workspace lacks
    (:func:`grader.learner.saved.lacking`): work the handed-in copies will not carry unless the learner saves.
    Read through the home like the store (no link followed); a learner without a home or workspace has none."""
    from grader.instructor import homes
    from grader.learner.saved import lacking

    if learner.home is None or not learner.events:
        return []
    out: list[str] = []
    try:
        with homes.open_home(learner.name, learner.home) as home:
            folder = homes.open_folder(home, [p for p in Path(homes.WORKSPACE).parts if p != "/"])
            try:
                for uid in dict.fromkeys(e.unit for e in learner.events if e.unit in UNITS):
                    try:
                        data, _ = homes.read_file(folder, UNITS[uid].notebook, NOTEBOOK_READ_CAP, home.owner)
                        out += lacking(json.loads(data.decode("utf-8")), uid, learner.events)
                    except (homes.Missing, homes.Refused, ValueError, UnicodeDecodeError):
                        continue
            finally:
                os.close(folder)
    except (homes.Missing, homes.Refused, OSError):
        return []
    return out


def report(learners: list[Learner], now: float | None = None) -> dict:
    now = time.time() if now is None else now
    states = {l.name: l.states() for l in learners}
    readable = [l for l in learners if not l.problem]
    budget = [PROGRAMS_NOTED]
    units = []
    for uid, unit in UNITS.items():
        started = sum(states[l.name][uid].started for l in readable)
        passed = sum(states[l.name][uid].passed for l in readable)
        entry = {"unit": uid, "title": unit.title, "started": started, "passed": passed, "questions": []}
        if started:
            entry["questions"] = [_question_row(q, readable, states, budget) for q in of_unit(uid)]
        units.append(entry)
    return {
        "generated": _when(now),
        "source": "the learners' own progress stores, read-only; nothing re-run",
        "learners": len(learners),
        "readable": len(readable),
        "units": units,
        "class": [_learner_row(l, states[l.name], now) for l in learners],
    }


# --- output ---------------------------------------------------------------------------------


def text(rep: dict) -> str:
    lines = [
        f"{rep['readable']} of {rep['learners']} learners' stores read (generated {rep['generated']}; "
        "the learners' own record, nothing re-run)"
    ]
    for u in rep["units"]:
        if not u["started"]:
            continue
        lines.append(f"\nunit {u['unit']} {u['title']}: {u['started']} started, {u['passed']} passed")
        for q in u["questions"]:
            if q["role"] == "predict":
                figures = (
                    f"predicted correctly {q['predicted_correct']}, wrongly {q['predicted_wrong']}, "
                    f"revealed without prediction {q['revealed_without_prediction']}, "
                    f"after reveal {q['predicted_after_reveal']}, not attempted {q['not_attempted']}"
                )
            else:
                figures = (
                    f"passed {q['passed']} ({q['passed_first_try']} first try), failing {q['failing']}, "
                    f"not answered {q['not_answered']}, attempts {q['attempts_total']}"
                )
            lines.append(f"  {q['qid']:<30} {figures}, hints {q['hints_shown']} ({q['learners_with_hints']} learners)")
            for w in q["wrong_answers"]:
                on = f" (program {escape(w['program'])})" if w.get("program") else ""
                lines.append(
                    f"      wrong: {escape(w['answer'])}{on} x{w['count']}"
                    + (f"  ({w['note'][:80]})" if w["note"] else "")
                )
    lines.append("\nwho is where:")
    for r in rep["class"]:  # every name and every text a learner's store gave is escaped for the terminal
        if r["problem"]:
            lines.append(f"  {escape(r['learner']):<16} {escape(r['problem'])}")
            continue
        where = (
            f"in {escape(r['unit_in_progress'])} ({r['done']} done), missing: " + escape("; ".join(r["missing"]))
            if r["unit_in_progress"]
            else "nothing in progress"
        )
        lines.append(
            f"  {escape(r['learner']):<16} last {r['last_activity'] or 'never'} ({r['idle']} ago), "
            f"last action {escape(r['last_action']) or 'none'}, passed {', '.join(r['passed']) or 'none'}; {where}"
        )
        if r.get("unsaved"):
            lines.append(f"  {'':<16} answered but not in the saved notebook: {escape(', '.join(r['unsaved']))}")
    if rep.get("others"):
        lines.append("\n" + home_files.others_line(rep["others"]))
    return "\n".join(lines)


STYLE = """body{font-family:system-ui,sans-serif;max-width:75em;margin:2em auto;padding:0 1em;color:#1f2328}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border-bottom:1px solid #d0d7de;padding:3px 8px;
text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:.6em 1em;border-radius:6px}
.wrong{color:#cf222e}.muted{color:#656d76}.prompt{max-width:28em}"""


def _cell(qid: str, key: str, value) -> str:
    shown = "" if value is None else value
    return f"<td class='n' data-q='{html.escape(qid)}' data-k='{key}'>{html.escape(str(shown))}</td>"


PREDICT_COLUMNS = (
    "predicted_correct",
    "predicted_wrong",
    "revealed_without_prediction",
    "predicted_after_reveal",
    "predicted_not_revealed",
    "not_attempted",
)
CHECK_COLUMNS = (
    "passed",
    "passed_first_try",
    "failing",
    "not_answered",
    "attempts_total",
    "mean_attempts_to_pass",
    "learners_with_hints",
    "hints_shown",
)


def page(rep: dict) -> str:
    e = html.escape
    out = [
        "<!doctype html><html lang='en'><meta charset='utf-8'>",
        "<title>autograd-lab: the class</title>",
        f"<style>{STYLE}</style>",
        "<h1>autograd-lab: the class</h1>",
        f"<p class='note' id='honesty'><b>This is the learners' own record.</b> It is read from each "
        f"learner's progress store, as their own notebooks wrote it while they worked; nothing was re-run "
        f"and nothing was recomputed (unlike <code>python -m grader grade</code>, which runs submitted "
        f"notebooks again). A learner can edit their own store, so treat it as their account of their work. "
        f"Generated {e(rep['generated'])} from <span id='readable'>{rep['readable']}</span> of "
        f"<span id='learners'>{rep['learners']}</span> learners' stores, opened read-only.</p>",
        "<h2>Who is where</h2>",
        "<table id='class'><tr><th>learner</th><th>last activity</th><th>idle</th><th>last action</th>"
        "<th>units passed</th><th>in progress</th><th>done</th><th>still missing</th></tr>",
    ]
    out += [_learner_html(r) for r in rep["class"]]
    out.append("</table><h2>Per question</h2>")
    out += [_unit_tables(u) for u in rep["units"] if u["started"]]
    quiet = [u for u in rep["units"] if not u["started"]]
    if quiet:
        out.append(
            "<p class='muted'>Not started by anyone: "
            + ", ".join(f"{e(u['unit'])} {e(u['title'])}" for u in quiet)
            + ".</p>"
        )
    out.append(
        "<script type='application/json' id='report'>" + json.dumps(rep).replace("</", "<\\/") + "</script></html>"
    )
    return "\n".join(out)


def _learner_html(r: dict) -> str:
    e = html.escape
    if r["problem"]:
        return (
            f"<tr data-learner='{e(r['learner'])}'><td>{e(r['learner'])}</td>"
            f"<td colspan='7' class='muted'>{e(r['problem'])}</td></tr>"
        )
    shown = r["missing"][:MISSING_SHOWN]
    more = len(r["missing"]) - len(shown)
    missing = "<br>".join(e(m) for m in shown) + (f"<br><span class='muted'>and {more} more</span>" if more else "")
    return (
        f"<tr data-learner='{e(r['learner'])}'><td>{e(r['learner'])}</td>"
        f"<td>{e(r['last_activity'] or 'never')}</td><td>{e(r['idle'])}</td><td>{e(r['last_action'])}</td>"
        f"<td class='passed'>{e(', '.join(r['passed']) or '–')}</td>"
        f"<td class='unit'>{e(r['unit_in_progress'] or '–')}</td><td>{e(r['done'])}</td>"
        f"<td class='missing'>{missing}{_unsaved_note(r)}</td></tr>"
    )


def _unsaved_note(r: dict) -> str:
    if not r.get("unsaved"):
        return ""
    names = ", ".join(html.escape(q) for q in r["unsaved"][:MISSING_SHOWN])
    return f"<div class='unsaved'>answered but not in the saved notebook (save, then hand in): {names}</div>"


def _unit_tables(u: dict) -> str:
    """One unit's questions: the predictions' table, then the self-tests' and exercises'."""
    e = html.escape
    out = [
        f"<h3 id='unit-{u['unit']}'>Unit {e(u['unit'])}: {e(u['title'])}</h3>"
        f"<p>{u['started']} started, {u['passed']} marked passed.</p>"
    ]
    predicts = [q for q in u["questions"] if q["role"] == "predict"]
    checks = [q for q in u["questions"] if q["role"] != "predict"]
    if predicts:
        out.append(
            "<table class='predict'><tr><th>question</th><th>predicted correctly</th>"
            "<th>predicted wrongly</th><th>revealed without prediction</th><th>predicted after reveal</th>"
            "<th>not revealed yet</th><th>not attempted</th><th>most common wrong predictions</th></tr>"
        )
        for q in predicts:
            cells = "".join(_cell(q["qid"], k, q[k]) for k in PREDICT_COLUMNS)
            out.append(f"<tr><td title='{e(q['prompt'])}'>{e(q['qid'])}</td>{cells}<td>{_wrongs(q)}</td></tr>")
        out.append("</table>")
    if checks:
        out.append(
            "<table class='check'><tr><th>question</th><th>kind</th><th>passed</th><th>first try</th>"
            "<th>failing</th><th>not answered</th><th>attempts</th><th>mean attempts to pass</th>"
            "<th>learners with hints</th><th>hints shown</th><th>most common wrong answers</th></tr>"
        )
        for q in checks:
            cells = "".join(_cell(q["qid"], k, q[k]) for k in CHECK_COLUMNS)
            out.append(
                f"<tr><td title='{e(q['prompt'])}'>{e(q['qid'])}</td><td>{e(q['role'])}</td>{cells}"
                f"<td>{_wrongs(q)}</td></tr>"
            )
        out.append("</table>")
    return "".join(out)


def _wrongs(q: dict) -> str:
    items = []
    for w in q["wrong_answers"]:
        note = f" <span class='muted'>({html.escape(w['note'])})</span>" if w["note"] else ""
        on = f" <span class='muted'>on program {html.escape(w['program'])}</span>" if w.get("program") else ""
        items.append(
            f"<span class='wrong' data-q='{html.escape(q['qid'])}' data-count='{w['count']}'>"
            f"{html.escape(w['answer'])} ×{w['count']}</span>{on}{note}"
        )
    return "<br>".join(items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grader.instructor.classview",
        description="the class's progress, read from every learner's own store",
    )
    parser.add_argument(
        "--homes", action="append", default=[], help="a folder of home folders (repeatable; default /home)"
    )
    parser.add_argument("--users", help="only these users, comma-separated (their homes from the system)")
    parser.add_argument("--group", help="the learners are the members of this Unix group")
    parser.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a learner's store at a path of its own (repeatable)",
    )
    parser.add_argument("--html", help="also write the page here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    homes = [Path(h) for h in args.homes] or ([] if args.store and not args.users else [Path("/home")])
    stores = {}
    for item in args.store:
        name, sep, path = item.partition("=")
        if not sep:
            parser.error(f"--store takes NAME=PATH, not {item!r}")
        stores[name] = Path(path)
    users = [u for u in (args.users or "").split(",") if u] or None
    if args.group:
        if users:
            parser.error("give --users or --group, not both")
        try:
            users = home_files.group_members(args.group)
        except KeyError:
            parser.error(f"no such group: {escape(args.group)}")
    others: list[str] = []
    learners = collect(homes, users, stores, others)
    if not learners:
        print(
            f"no learners found under {', '.join(escape(h) for h in homes)}"
            + (f"; {home_files.others_line(others)}" if others else ""),
            file=sys.stderr,
        )
        return 1
    rep = report(learners)
    rep["others"] = others
    if args.html:
        Path(args.html).write_text(page(rep), encoding="utf-8")
    print(json.dumps(rep, indent=1) if args.json else text(rep))
    if args.html:
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
