"""Grade a class: run every learner notebook headless and write one gradebook row per learner and unit.

Each notebook runs in its own worker process and fresh kernel (nbclient), in a
temporary working folder, with its own throwaway progress store, a per-cell
time limit, a whole-notebook time limit and a memory limit (RLIMIT_DATA,
inherited by the kernel). Verdicts come from the grader's own events in that
store, never from cell positions, so deleted or reordered cells do not matter.
A notebook that is not JSON, crashes, loops or runs out of memory still gets a
row that says so, and the run goes on.

Where learners come from: a notebook inside a sub-folder of a given folder
belongs to the learner named by that sub-folder (``class/alice/01_x.ipynb``);
a notebook given directly or lying at the top of a given folder is its own
learner, named by its file name (``alice_01.ipynb`` -> ``alice_01``).
"""
from __future__ import annotations

import csv
import html
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from . import progress
from .course import UNITS
from .question import of_unit
from .store import FILENAME, Store

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Submission:
    learner: str
    path: Path


@dataclass
class Outcome:
    submission: Submission
    status: str = "ok"
    problems: list = field(default_factory=list)
    events: list = field(default_factory=list)
    units: list = field(default_factory=list)
    seconds: float = 0.0


def find(paths: list[str]) -> list[Submission]:
    subs = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for nb in sorted(p.rglob("*.ipynb")):
                if ".ipynb_checkpoints" in nb.parts:
                    continue
                rel = nb.relative_to(p)
                learner = rel.parts[0] if len(rel.parts) > 1 else nb.stem
                subs.append(Submission(learner, nb))
        else:
            subs.append(Submission(p.stem, p))
    return subs


# --- the worker: runs inside its own process, under the limits ------------------------------

def _worker(notebook: str, workdir: str, result_path: str, cell_timeout: int, memory_mb: int) -> None:
    if memory_mb and os.name == "posix":
        import resource   # the kernel this process starts inherits the limit
        limit = memory_mb * 2 ** 20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    report = {"status": "ok", "problems": [], "cells": 0}
    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception as exc:
        report.update(status="not a notebook", problems=[f"could not be read as a notebook: {type(exc).__name__}"])
        Path(result_path).write_text(json.dumps(report))
        return
    report["cells"] = len(nb.cells)
    report["cell_ids"] = [c.get("id", "") for c in nb.cells]
    report["text"] = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    Path(result_path).write_text(json.dumps(report))  # written early: survives a kernel that dies
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
                            interrupt_on_timeout=True, record_timing=False,
                            resources={"metadata": {"path": workdir}})
    try:
        client.execute()
    except DeadKernelError:
        report["status"] = "kernel died"
        report["problems"].append("the kernel died (a crash, os._exit, or memory)")
    except Exception as exc:
        report["status"] = "could not run"
        report["problems"].append(f"{type(exc).__name__}: {str(exc)[:200]}")
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                name = out.get("ename", "")
                if name == "KeyboardInterrupt":
                    report["problems"].append(f"cell {index + 1} ran past {cell_timeout} s and was stopped")
                    if report["status"] == "ok":
                        report["status"] = "timed out"
                else:
                    report["problems"].append(f"cell {index + 1} raised {name}: {str(out.get('evalue', ''))[:120]}")
                    if name == "MemoryError" or "can't allocate memory" in str(out.get("evalue", "")):
                        report["status"] = "out of memory"
                    elif report["status"] == "ok":
                        report["status"] = "cell errors"
    Path(result_path).write_text(json.dumps(report))


# --- the parent: one worker per notebook ---------------------------------------------------

def _expected_cells(unit: str) -> list[str]:
    path = ROOT / "notebooks" / UNITS[unit].notebook if unit in UNITS else None
    if not path or not path.exists():
        return []
    return [c.get("id", "") for c in json.loads(path.read_text(encoding="utf-8")).get("cells", [])]


def _units_of(events: list, submission: Submission, text: str) -> list[str]:
    units = sorted({e.unit for e in events if e.unit in UNITS})
    if units:
        return units
    import re
    found = sorted(set(re.findall(r"[\"'](\d\d)\.[a-z0-9-]+[\"']", text)) & set(UNITS))
    if found:
        return found
    prefix = submission.path.name[:2]
    return [prefix] if prefix in UNITS else ["?"]


def grade_one(sub: Submission, cell_timeout: int = 60, notebook_timeout: int = 600,
              memory_mb: int = 3072) -> Outcome:
    started = time.monotonic()
    out = Outcome(sub)
    with tempfile.TemporaryDirectory(prefix="agl-grade-") as tmp:
        work, home = Path(tmp) / "work", Path(tmp) / "home"
        work.mkdir()
        home.mkdir()
        copy = work / "submission.ipynb"
        try:
            shutil.copyfile(sub.path, copy)
        except OSError as exc:
            out.status, out.problems = "unreadable", [str(exc)]
            return out
        result = Path(tmp) / "result.json"
        env = {k: v for k, v in os.environ.items() if k not in ("AUTOGRAD_LAB_STRICT",)}
        env.update(AUTOGRAD_LAB_HOME=str(home), PYTHONUNBUFFERED="1",
                   JUPYTER_RUNTIME_DIR=str(Path(tmp) / "runtime"), MPLBACKEND="Agg")
        cmd = [sys.executable, "-m", "grader.grade", "--worker", str(copy), str(work), str(result),
               str(cell_timeout), str(memory_mb)]
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            _, err = proc.communicate(timeout=notebook_timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
            proc.communicate()
            out.status = "killed"
            out.problems.append(f"the notebook ran past {notebook_timeout} s in all and was stopped")
            err = b""
        report = json.loads(result.read_text()) if result.exists() else {}
        if report:
            if out.status == "ok":
                out.status = report.get("status", "ok")
            out.problems += report.get("problems", [])
        elif out.status == "ok":
            out.status = "could not run"
            tail = (err or b"").decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            out.problems.append(f"the worker failed: {tail[0][:200]}")
        events = Store(home / FILENAME).events() if (home / FILENAME).exists() else []
        out.events = events
        out.units = _units_of(events, sub, report.get("text", ""))
        ids = report.get("cell_ids")
        if ids is not None:
            for unit in out.units:
                expected = _expected_cells(unit)
                missing = [i for i in expected if i and i not in ids]
                if missing:
                    out.problems.append(f"{len(missing)} of the unit's {len(expected)} cells are missing")
                    if out.status == "ok":
                        out.status = "missing cells"
    out.seconds = time.monotonic() - started
    return out


def question_verdict(q: progress.QuestionState) -> str:
    if q.role == "predict":
        if q.revealed:
            return f"predicted, {q.reveal_verdict}" if q.predicted_before_reveal else "revealed without prediction"
        return "predicted, not revealed" if q.predicted else "not attempted"
    if q.passed:
        return "correct"
    return {"": "not attempted", "unanswered": "not answered"}.get(q.last_check, q.last_check)


def rows_of(out: Outcome) -> list[dict]:
    rows = []
    for unit in out.units:
        state = progress.unit_state(unit, out.events) if unit in UNITS else None
        row = {"learner": out.submission.learner, "notebook": str(out.submission.path), "unit": unit,
               "run": out.status, "problems": "; ".join(out.problems),
               "marked passed": "yes" if state and state.passed else "no",
               "done": f"{sum(q.done for q in state.questions.values())}/{len(state.questions)}" if state else "",
               "seconds": f"{out.seconds:.1f}"}
        if state:
            for qid, q in state.questions.items():
                row[qid] = question_verdict(q)
        rows.append(row)
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    fixed = ["learner", "notebook", "unit", "run", "problems", "marked passed", "done", "seconds"]
    questions = []
    for unit in sorted({r["unit"] for r in rows}):
        questions += [q.qid for q in of_unit(unit)] if unit in UNITS else []
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fixed + questions, restval="")
        writer.writeheader()
        for r in sorted(rows, key=lambda r: (r["learner"], r["unit"])):
            writer.writerow(r)


def write_html(rows: list[dict], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for learner in sorted({r["learner"] for r in rows}):
        parts = [f"<!doctype html><meta charset='utf-8'><title>autograd-lab: {html.escape(learner)}</title>",
                 "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}td,th{padding:2px 8px;"
                 "text-align:left}.good{color:#1a7f37}.bad{color:#cf222e}</style>",
                 f"<h1>Feedback for {html.escape(learner)}</h1>"]
        for r in (r for r in rows if r["learner"] == learner):
            unit = r["unit"]
            title = UNITS[unit].title if unit in UNITS else "unknown unit"
            parts.append(f"<h2>Unit {html.escape(unit)}: {html.escape(title)}</h2>")
            parts.append(f"<p>Run: {html.escape(r['run'])}. Marked passed: {r['marked passed']}. "
                         f"Done: {html.escape(r['done'])}.</p>")
            if r["problems"]:
                parts.append("<ul>" + "".join(f"<li>{html.escape(p)}</li>" for p in r["problems"].split("; ")) + "</ul>")
            parts.append("<table><tr><th>question</th><th>result</th><th>prompt</th></tr>")
            for q in of_unit(unit) if unit in UNITS else []:
                verdict = r.get(q.qid, "")
                cls = "good" if verdict in ("correct", "predicted, correct") else \
                    "bad" if verdict in ("incorrect", "invalid", "not attempted", "not answered") else ""
                parts.append(f"<tr><td>{q.qid}</td><td class='{cls}'>{html.escape(verdict)}</td>"
                             f"<td>{html.escape(q.prompt)}</td></tr>")
            parts.append("</table>")
        page = folder / f"{learner}.html"
        page.write_text("\n".join(parts), encoding="utf-8")
        written.append(page)
    return written


def grade(paths: list[str], out: Path, jobs: int = 1, cell_timeout: int = 60, notebook_timeout: int = 600,
          memory_mb: int = 3072, html_dir: Path | None = None, progress_to=sys.stderr) -> list[dict]:
    subs = find(paths)
    rows: list[dict] = []
    started = time.monotonic()
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(grade_one, s, cell_timeout, notebook_timeout, memory_mb) for s in subs]
        for future in as_completed(futures):
            result = future.result()
            rows += rows_of(result)
            done += 1
            if progress_to is not None:
                width = 30
                filled = int(width * done / max(1, len(subs)))
                print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{len(subs)} "
                      f"{result.submission.learner}: {result.status} ({result.seconds:.1f} s)   ",
                      end="" if done < len(subs) else "\n", file=progress_to, flush=True)
    write_csv(rows, out)
    if html_dir:
        write_html(rows, html_dir)
    if progress_to is not None:
        elapsed = time.monotonic() - started
        print(f"graded {len(subs)} notebooks in {elapsed:.1f} s ({60 * len(subs) / max(elapsed, 1e-9):.1f} per minute) "
              f"-> {out}", file=progress_to)
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    else:
        print("this module is run by `python -m grader grade`", file=sys.stderr)
        sys.exit(2)
