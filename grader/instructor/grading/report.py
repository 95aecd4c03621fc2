"""The class report a teacher reads: per unit and per question, what the class predicted and got wrong.

``grade ... --report report.html`` (and ``grade merge ... --report``) writes one
self-contained page: no script, no stylesheet or font from elsewhere, every
chart an inline SVG drawn by matplotlib with its numbers as text, so it opens
offline and a test can read the numbers the chart shows.

Its numbers come from the gradebook's rows (how many learners' rows say
"predicted, correct", "correct", ...: the same words the CSV holds, so the two
always agree) and from each graded notebook's *facts*: the wrong answers its
predictions and self-test checks gave (re-read and compared with torch's live
answer in the grading process), so the page can show the wrong answers the
class holds most often, with the note the question declares for a known
misconception, and for each exercise the generated case each learner's function
failed first (:func:`failed_cases`), counted per case, with the note of a known bug
(a misconception the question declares) where the function returned that bug's
answer. Above the units, every question of every unit is ranked by how many
learners tried it and did not get it right (:func:`ranked`); each question's
prompt is shown in the page. Hints and attempts are the gradebook's. Learner time per unit
is read from cell timing metadata where the notebook carries it (JupyterLab's
"Record timing" setting); otherwise the page says it was not recorded.
"""

from __future__ import annotations

import html
import io
import json
import statistics
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

from grader.engine.course import UNITS
from grader.engine.question import of_unit
from grader.instructor.grading import items

ANSWER_CHARS = 120


# --- facts of one graded notebook ----------------------------------------------------------------


def _canonical(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= ANSWER_CHARS else text[: ANSWER_CHARS - 1] + "…"


def _wrong(q, answer, variant=None):
    """(is it wrong, the misconception note) for a recorded answer, judged against torch's live answer here (on
    ``variant``'s program, for a generated self-test)."""
    from grader.instructor.grading.verify import truth_on

    try:
        value = q.kind.read_recorded(answer)
    except Exception:
        return False, ""
    truth = truth_on(q, variant)
    try:
        if q.kind.agrees(truth, value):
            return False, ""
    except Exception:
        return False, ""
    return True, q.misconception(truth, value, variant.program if variant is not None else None)


def learner_minutes(notebook) -> float | None:
    """Minutes between the first and last cell run, where the notebook records cell timing; else None."""
    stamps = []
    for cell in getattr(notebook, "cells", None) or []:
        timing = (cell.get("metadata") or {}).get("execution") or {}
        for key in ("iopub.execute_input", "shell.execute_reply"):
            raw = timing.get(key)
            if isinstance(raw, str):
                try:
                    stamps.append(datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp())
                except ValueError:
                    pass
    if len(stamps) < 2:
        return None
    return round((max(stamps) - min(stamps)) / 60, 1)


def failed_cases(exercises: dict) -> dict:
    """For each exercise that failed on a generated case: that case (its index and label) and, where the question
    declares a misconception (a known bug) whose answer on that case is what the function returned, its note."""
    from grader.engine.question import get
    from grader.instructor.grading.verify import truth_of

    out = {}
    for qid, v in (exercises or {}).items():
        if v.verdict == "correct" or v.case < 0:
            continue
        q = get(qid)
        case = q.kind.cases()[v.case]
        bug = ""
        if v.got is not None and q.misconceptions:
            try:
                bug = q.misconception(truth_of(q, case, key=v.case), v.got)
            except Exception:  # a note that cannot be worked out is left out, never a lost row
                bug = ""
        out[qid] = {"case": v.case, "label": str(getattr(case, "label", "") or f"case {v.case + 1}"), "bug": bug}
    return out


def facts_of(
    learner: str, unit: str, notebook, events: list, exercises: dict | None = None, identity: str | None = None
) -> dict:
    """What the report needs of one graded notebook beyond its gradebook row: its wrong answers, the generated
    case each failed exercise failed on first (``exercises``: the recomputed ExerciseVerdicts) and its time.
    ``identity``: whose programs a generated self-test's answers are judged on (None: the canonical ones)."""
    from grader.instructor.grading.verify import variant_of

    facts = {"learner": learner, "unit": unit, "wrong": {}, "minutes": learner_minutes(notebook)}
    if unit not in UNITS:
        return facts
    facts["failed"] = failed_cases(exercises)
    questions = {q.qid: q for q in of_unit(unit)}
    wrong: dict[str, dict[str, str]] = defaultdict(dict)
    for e in events:
        q = questions.get(e.qid) if e.unit == unit else None
        if q is None or e.answer is None:
            continue
        if (q.role == "predict" and e.action == "predict" and e.verdict == "recorded") or (
            q.role == "self-test" and e.action == "check"
        ):
            bad, note = _wrong(q, e.answer, variant_of(q, e, identity) if q.role == "self-test" else None)
            if bad:
                wrong[q.qid].setdefault(_canonical(e.answer), note)
    facts["wrong"] = {qid: [[a, n] for a, n in answers.items()] for qid, answers in wrong.items()}
    return facts


# --- the page ----------------------------------------------------------------------------------------


def _good(record: str, role: str) -> bool:
    return record == "predicted, correct" if role == "predict" else record.startswith("correct")


def _attempted(record: str) -> bool:
    return bool(record) and record not in ("not attempted", "not answered")


def _judged(record: str, role: str) -> bool:
    """A record that says right or wrong: a prediction not revealed (the run stopped first) is neither."""
    return _attempted(record) and not (role == "predict" and record.endswith(("not revealed", "not revealed yet")))


def _numbers(field: str) -> dict[str, int]:
    out = {}
    for part in (field or "").split(", "):
        qid, _, n = part.rpartition(": ")
        if qid and n.isdigit():
            out[qid] = int(n)
    return out


def summary(rows: list[dict], facts: list[dict]) -> dict:
    """Per unit and question, the counts the page shows (and a test compares with the CSV), with each question's
    item analysis (:mod:`.items`: difficulty, discrimination, a flag)."""
    analysed = {i["qid"]: i for i in items.analyse(rows)}
    units = {}
    for unit in sorted({r["unit"] for r in rows if r.get("unit") in UNITS}):
        mine = [r for r in rows if r["unit"] == unit]
        unit_facts = [f for f in facts if f.get("unit") == unit]
        minutes = [f["minutes"] for f in unit_facts if isinstance(f.get("minutes"), (int, float))]
        questions = []
        for q in of_unit(unit):
            records = [r.get(q.qid, "") for r in mine]
            hints = sum(_numbers(r.get("hints", "")).get(q.qid, 0) for r in mine)
            tries = [_numbers(r.get("attempts", "")).get(q.qid) for r in mine]
            tries = [t for t in tries if t]
            wrong = Counter()
            notes = {}
            cases: Counter = Counter()
            labels = {}
            for f in unit_facts:
                for answer, note in f.get("wrong", {}).get(q.qid, []):
                    wrong[answer] += 1
                    notes.setdefault(answer, note)
                failed = (f.get("failed") or {}).get(q.qid)
                if isinstance(failed, dict) and isinstance(failed.get("case"), int):
                    key = (failed["case"], str(failed.get("bug") or ""))
                    cases[key] += 1
                    labels[key] = str(failed.get("label", ""))
            questions.append(
                {
                    "qid": q.qid,
                    "role": q.role,
                    "prompt": q.prompt,
                    "learners": len(mine),
                    "attempted": sum(_attempted(x) for x in records),
                    "correct": sum(_good(x, q.role) for x in records),
                    "hints": hints,
                    "attempts_mean": round(statistics.mean(tries), 2) if tries else None,
                    "wrong": [{"answer": a, "learners": n, "note": notes[a]} for a, n in wrong.most_common(5)],
                    "failed_cases": [
                        {"case": c + 1, "label": labels[(c, bug)], "bug": bug, "learners": n}
                        for (c, bug), n in sorted(cases.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
                    ],
                }
            )
            judged = sum(_judged(x, q.role) for x in records)
            questions[-1]["wrong_learners"] = max(0, judged - questions[-1]["correct"])
            item = analysed.get(q.qid, {})
            questions[-1]["item"] = {k: item.get(k) for k in ("learners", "difficulty", "r", "D", "flag")}
        units[unit] = {
            "title": UNITS[unit].title,
            "notebooks": len(mine),
            "learners": len({r["learner"] for r in mine}),
            "passed": sum(r.get("marked passed") == "yes" for r in mine),
            "late": sum(bool(r.get("late rule")) for r in mine),  # rows a --due rule marked (grade's late.py)
            "learner_minutes_median": round(statistics.median(minutes), 1) if minutes else None,
            "timed": len(minutes),
            "grading_seconds_median": round(statistics.median(float(r["seconds"]) for r in mine if r.get("seconds")), 1)
            if any(r.get("seconds") for r in mine)
            else None,
            "questions": questions,
        }
    return units


def ranked(units: dict) -> list[dict]:
    """Every question of every unit graded that someone got wrong (tried and not right), most learners first;
    ties by the share of those who tried, then in course order."""
    every = [dict(q, unit=unit) for unit, u in units.items() for q in u["questions"]]
    wrong = [q for q in every if q["wrong_learners"] > 0]
    return sorted(wrong, key=lambda q: (-q["wrong_learners"], -q["wrong_learners"] / max(1, q["attempted"])))


KIND_WORDS = {"predict": "prediction", "self-test": "self-test", "exercise": "exercise"}


def _ranking(units: dict) -> str:
    e = html.escape
    rows = ranked(units)
    if not rows:
        return "<section id='ranking'><h2>Questions most often wrong</h2><p>No question was got wrong.</p></section>"
    body = "".join(
        f"<tr class='ranked' data-rank-qid='{e(q['qid'])}' data-wrong='{q['wrong_learners']}'><td class='num'>{i}</td>"
        f"<td><code>{e(q['qid'])}</code><div class='prompt'>{e(q['prompt'])}</div></td>"
        f"<td>{e(q['unit'])}</td><td>{KIND_WORDS.get(q['role'], q['role'])}</td>"
        f"<td class='num wrong'>{q['wrong_learners']}</td><td class='num'>{q['attempted']}</td>"
        f"<td class='num'>{q['correct']}/{q['learners']}</td></tr>"
        for i, q in enumerate(rows, start=1)
    )
    return (
        "<section id='ranking'><h2>Questions most often wrong</h2><p>Every unit's questions, ranked by how many "
        "learners tried and did not get them right.</p><table><tr><th class='num'>#</th><th>question</th>"
        "<th>unit</th><th>kind</th><th class='num'>wrong</th><th class='num'>tried</th><th class='num'>right</th>"
        f"</tr>{body}</table></section>"
    )


def _item_analysis(units: dict) -> str:
    """Every question's difficulty and discrimination (:mod:`.items`), the flagged ones first."""
    e = html.escape
    every = [dict(q, unit=unit) for unit, u in units.items() for q in u["questions"] if q["item"].get("learners")]
    if not every:
        return ""
    every.sort(key=lambda q: (not q["item"]["flag"], q["unit"], q["qid"]))

    def num(x) -> str:
        return "" if x is None else f"{x:.2f}"

    body = "".join(
        f"<tr class='item' data-item='{e(q['qid'])}' data-difficulty='{num(q['item']['difficulty'])}' "
        f"data-r='{num(q['item']['r'])}' data-d='{num(q['item']['D'])}' data-flagged='{int(bool(q['item']['flag']))}'>"
        f"<td><code>{e(q['qid'])}</code></td><td>{KIND_WORDS.get(q['role'], q['role'])}</td>"
        f"<td class='num'>{q['item']['learners']}</td><td class='num'>{num(q['item']['difficulty'])}</td>"
        f"<td class='num'>{num(q['item']['r'])}</td><td class='num'>{num(q['item']['D'])}</td>"
        f"<td class='note'>{e(q['item']['flag'])}</td></tr>"
        for q in every
    )
    flagged = sum(bool(q["item"]["flag"]) for q in every)
    return (
        "<section id='items'><h2>Item analysis</h2><p>Per question: <b>difficulty</b>, the share right at the first "
        "try; <b>r</b>, the correlation of the question's score with each learner's score on every other question "
        "(corrected point-biserial); <b>D</b>, the share right among the top 27% of learners by that score minus "
        f"the share among the bottom 27%. {flagged} question(s) flagged: near-zero or negative r or D means the "
        "question does not separate learners who know the course from those who do not (a generator whose "
        "programs differ in difficulty, or luck).</p><table><tr><th>question</th><th>kind</th>"
        "<th class='num'>learners</th><th class='num'>difficulty</th><th class='num'>r</th><th class='num'>D</th>"
        f"<th>flag</th></tr>{body}</table></section>"
    )


def _failures(q: dict) -> str:
    """An exercise's generated cases that failed most often (the smallest failing case of each learner)."""
    e = html.escape
    return "".join(
        f"<li class='failed-case'>case {c['case']}: {e(c['label'])} ({c['learners']})"
        + (f"<div class='note'>known bug: {e(c['bug'])}</div>" if c["bug"] else "")
        + "</li>"
        for c in q.get("failed_cases", [])
    )


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    start, end = text.find("<metadata>"), text.find("</metadata>")
    return text[:start] + text[end + len("</metadata>") :] if 0 <= start < end else text


def _unit_chart(unit: str, data: dict) -> str:
    """Bars: per question, the share of the unit's learners who got it right; each bar labelled k/n."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    qs = data["questions"]
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "autograd-lab", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(qs) + 0.9))
        names = [q["qid"] for q in qs][::-1]
        shares = [q["correct"] / q["learners"] if q["learners"] else 0 for q in qs][::-1]
        colours = ["#1f77b4" if q["role"] == "predict" else "#2ca02c" for q in qs][::-1]
        ax.barh(names, shares, color=colours)
        ax.set_xlim(0, 1.18)
        ax.set_xlabel("share of learners right (blue: predicted before running; green: self-test or exercise)")
        ax.set_title(f"Unit {unit}: who got each question right")
        for y, q in enumerate(qs[::-1]):
            label = ax.text(min(shares[y], 1.0) + 0.01, y, f"{q['correct']}/{q['learners']}", va="center")
            label.set_gid(f"count-{q['qid']}")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        svg = _svg(fig)
        plt.close(fig)
    return svg


def _overview_chart(units: dict) -> str:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    names = list(units)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "autograd-lab", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(7.5, 2.6))
        passed = [units[u]["passed"] for u in names]
        total = [units[u]["notebooks"] for u in names]
        ax.bar(names, total, color="#d0d7de", label="graded")
        ax.bar(names, passed, color="#1a7f37", label="marked passed")
        for x, u in enumerate(names):
            label = ax.text(x, total[x], f"{passed[x]}/{total[x]}", ha="center", va="bottom")
            label.set_gid(f"passed-{u}")
        ax.set_xlabel("unit")
        ax.set_ylabel("notebooks")
        ax.set_ylim(0, max(total + [1]) * 1.25)
        ax.legend(frameon=False, loc="upper right")
        ax.set_title("Notebooks graded and marked passed, per unit")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        svg = _svg(fig)
        plt.close(fig)
    return svg


STYLE = """body{font-family:system-ui,sans-serif;max-width:62em;margin:2em auto;color:#1f2328;padding:0 1em}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{padding:3px 8px;text-align:left;vertical-align:top;
border-bottom:1px solid #d0d7de}th{background:#f6f8fa}.num{text-align:right}.note{color:#57606a;font-size:90%}
code{background:#f6f8fa;padding:0 3px}.prompt{font-size:90%;max-width:34em}figure{margin:1em 0}svg{max-width:100%;height:auto}"""


def write_report(rows: list[dict], facts: list[dict], path: Path) -> dict:
    """Write the class report; returns the summary it shows."""
    units = summary(rows, facts)
    learners = len({r["learner"] for r in rows})
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>autograd-lab: class report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Class report</h1>",
        f"<p id='totals' data-learners='{learners}' data-notebooks='{len(rows)}'>{learners} learners, "
        f"{len(rows)} notebooks graded. Every verdict was recomputed with live torch; "
        "<em>predicted correctly</em> counts predictions the copies record as made before torch's answer was shown "
        "(the learners' own record: a notebook cannot prove the order).</p>",
    ]
    if units:
        parts.append(f"<figure id='overview'>{_overview_chart(units)}</figure>")
        parts.append(_ranking(units))
        parts.append(_item_analysis(units))
    parts += [_unit_section(unit, u) for unit, u in units.items()]
    parts.append(_overrides_section(rows))
    other = [r for r in rows if r.get("unit") not in UNITS]
    if other:
        parts.append(
            f"<h2>Not graded as a unit</h2><p>{len(other)} notebook(s) could not be matched to a unit or "
            "read: " + ", ".join(html.escape(r["learner"]) for r in other[:30]) + ".</p>"
        )
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return units


def _unit_section(unit: str, u: dict) -> str:
    e = html.escape
    minutes = (
        f"median {u['learner_minutes_median']} minutes (from {u['timed']} notebook(s) with cell timing)"
        if u["learner_minutes_median"] is not None
        else "not recorded (turn on JupyterLab's Settings → Notebook → Record timing to see it)"
    )
    late = f" Handed in late: <b class='late'>{u['late']}</b> (their late rule is in each row)." if u["late"] else ""
    parts = [
        f"<section class='unit' id='unit-{e(unit)}' data-unit='{e(unit)}'>",
        f"<h2>Unit {e(unit)}: {e(u['title'])}</h2>",
        f"<p>{u['learners']} learner(s), {u['notebooks']} notebook(s); marked passed: "
        f"<b class='passed'>{u['passed']}</b>. Learner time: {minutes}. "
        f"Grading took a median {u['grading_seconds_median']} s per notebook.{late}</p>",
        f"<figure class='chart' data-unit='{e(unit)}'>{_unit_chart(unit, u)}</figure>",
        "<table><tr><th>question</th><th>kind</th><th class='num'>right</th>"
        "<th class='num'>tried</th><th class='num'>hints</th><th class='num'>attempts (mean)</th>"
        "<th>most common wrong answers, or an exercise's failing cases (learners)</th></tr>",
    ]
    parts += [_question_row(q) for q in u["questions"]]
    parts.append("</table></section>")
    return "".join(parts)


def _question_row(q: dict) -> str:
    e = html.escape
    kind = KIND_WORDS.get(q["role"], q["role"])
    wrong = "".join(
        f"<li><code>{e(w['answer'])}</code> ({w['learners']})"
        + (f"<div class='note'>{e(w['note'])}</div>" if w["note"] else "")
        + "</li>"
        for w in q["wrong"]
    ) + _failures(q)
    return (
        f"<tr class='question' data-qid='{e(q['qid'])}' data-correct='{q['correct']}' "
        f"data-learners='{q['learners']}'><td title='{e(q['prompt'])}'><code>{e(q['qid'])}</code>"
        f"<div class='prompt'>{e(q['prompt'])}</div></td>"
        f"<td>{kind}</td><td class='num right'>{q['correct']}/{q['learners']}</td>"
        f"<td class='num'>{q['attempted']}</td><td class='num'>{q['hints']}</td>"
        f"<td class='num'>{q['attempts_mean'] if q['attempts_mean'] is not None else ''}</td>"
        f"<td>{'<ul>' + wrong + '</ul>' if wrong else ''}</td></tr>"
    )


def _overrides_section(rows: list[dict]) -> str:
    """A person's change of points is never silent."""
    e = html.escape
    changed = [r for r in rows if r.get("overrides")]
    if not changed:
        return ""
    return (
        f"<section id='overrides'><h2>Overrides</h2><p>{len(changed)} notebook(s) had points changed by a "
        "teaching assistant (the verdicts above are torch's):</p><table><tr><th>learner</th><th>unit</th>"
        "<th>what changed, and why</th></tr>"
        + "".join(
            f"<tr class='override'><td>{e(r['learner'])}</td><td>{e(r['unit'])}</td><td>{e(r['overrides'])}</td></tr>"
            for r in sorted(changed, key=lambda r: (r["learner"], str(r["unit"])))
        )
        + "</table></section>"
    )
