"""Grade a class: every verdict recomputed by live torch in a process no submitted code has run in.

The run is a pipeline of five named steps, each a function here that can be
tested alone:

* ``find``: every notebook under the given paths becomes a submission (an
  unreadable file or a broken link too: it gets a row);
* ``restore``: the notebook is read (no links followed, size-capped) and every
  grader-owned cell (one whose source in ``notebooks/`` has no solution
  placeholder: imports, predict, reveal, check, mark, experiments) is put back
  from ``notebooks/`` by cell id; a deleted one is reported;
* ``execute``: the restored notebook runs headless in a worker and a fresh
  kernel, contained by :mod:`grader.instructor.grading.containment` (own session, private 0700
  folder, capped output, result through a pipe, everything it started killed
  at the end; with bubblewrap also no network, a private capped /tmp and an
  allow-listed read-only file system); its events come out as they happen
  (an event stream), and the progress store it wrote is then read as untrusted
  data (:mod:`grader.instructor.grading.untrusted_store`) and compared;
* ``recompute``: each learner function is re-run on the generated cases in
  another contained process (:mod:`grader.instructor.grading.learner_function`), and every
  answer is compared with torch's live answer computed here
  (:mod:`grader.instructor.grading.verify`); "marked passed" follows the rule
  ``mark_passed`` uses, applied to the recomputed verdicts;
* ``write``: the gradebook (long and wide CSV, merged into an existing one
  where asked) and feedback pages: :mod:`grader.instructor.grading.gradebook`.

Where learners come from: :func:`grader.instructor.grading.lms_names.name_of` (Canvas's and Moodle's export
names, a ``--name-pattern``, else :func:`grader.instructor.grading.roster.learner_of`: the folder that
holds the notebook; a file named for a learner inside a folder of another name is
``folder/learner``), the same whatever path is given on the command line.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import stat
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from grader.engine.course import UNITS, leading_unit
from grader.engine.question import of_unit
from grader.engine.store import FILENAME, Event
from grader.instructor.grading import (
    containment,
    duplicates,
    gradebook,
    late,
    lms_gradebook,
    lms_names,
    outputs,
    reach,
    report,
    roster,
    scores,
    shards,
    slicing,
    untrusted_store,
    versions,
    workers,
)
from grader.instructor.grading import verify as verify_submission
from grader.instructor.grading.copies import cell_label, what_the_copy_holds
from grader.instructor.grading.exercise_sources import exercise_sources, grader_owned
from grader.instructor.grading.locks import apply_locks

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK_CAP = 32 * 2**20  # bytes of a submitted notebook read at most
STORE_CAP = untrusted_store.STORE_CAP  # bytes of a progress store (and of its WAL) read at most
EVENTS_CAP = untrusted_store.EVENTS_CAP  # events read at most
ANSWER_CAP = untrusted_store.ANSWER_CAP  # characters of one recorded answer
TAMPERED = ("worker died", "worker lied")
NOT_RESTORED = "could not be restored"
CELL_CAP = 5_000  # cells of a submitted notebook graded at most (a unit's notebook has about 100)


@dataclass
class Submission:
    learner: str
    path: Path
    problem: str = ""  # set by find() for a path that cannot be a notebook (a broken link, say)
    named: lms_names.Named | None = None  # how find() named it: the file as handed in, the LMS's id, late
    identity: str = ""  # whose programs its generated self-tests are judged on (grade: the learner, or a roster id)
    mastery: int | None = None  # right answers in a row that pass a generated self-test (grade --mastery)

    def whose(self) -> str:
        return self.identity or self.learner


@dataclass
class Restored:
    submission: Submission
    notebook: dict | None = None  # the notebook with grader-owned cells put back
    unit: str = "?"
    status: str = "ok"
    problems: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    exercises: dict = field(default_factory=dict)  # qid -> exercise_sources.ExerciseSource
    copy: object = None  # copies.CopyContents: what the copy holds
    runs: list = field(default_factory=list)  # per cell: whether the grading run executes it (slicing.needed)
    handed_out: str | None = None  # the course version the class was handed (grade --handed-out)
    variants: dict = field(default_factory=dict)  # qid -> variants.Carried: what the copy's records say was asked


@dataclass
class Execution:
    status: str = "ok"
    problems: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    events: list = field(default_factory=list)
    isolation: str = ""
    seconds: float = 0.0


@dataclass
class GradedSubmission:
    submission: Submission
    status: str = "ok"
    problems: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    units: list = field(default_factory=list)  # Recomputed, one per unit
    isolation: str = ""
    seconds: float = 0.0
    unit: str = "?"
    copy: object = None  # copies.CopyContents, from restore
    facts: list = field(
        default_factory=list
    )  # for the class report (grader.instructor.grading.report.facts_of), one per unit
    halves: list = field(default_factory=list)  # the same copy graded as the units split from its own (grade_one)

    def graded(self) -> list[GradedSubmission]:
        """This grading and each half's: what the gradebook writes rows for."""
        return [self, *self.halves]


# --- step 1: find ---------------------------------------------------------------------------


def find(paths: list[str], pattern=None) -> list[Submission]:
    """Every notebook under ``paths``, named by :func:`lms_names.name_of` (``pattern``: a --name-pattern)."""
    subs = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir() and not p.is_symlink():
            for nb in sorted(p.rglob("*.ipynb")):
                if ".ipynb_checkpoints" in nb.parts:
                    continue
                named = lms_names.name_of(nb, p, pattern)
                subs.append(Submission(named.learner, nb, _path_problem(nb), named))
        else:
            named = lms_names.name_of(p, p, pattern)
            subs.append(Submission(named.learner, p, _path_problem(p), named))
    return subs


def _path_problem(path: Path) -> str:
    try:
        info = os.lstat(path)
    except OSError:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link (not followed)" if path.exists() else "a broken symbolic link"
    if not stat.S_ISREG(info.st_mode):
        return "not a plain file"
    return ""


# --- step 2: restore ------------------------------------------------------------------------


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


def restore(sub: Submission, handed_out: str | None = None, as_unit: str | None = None) -> Restored:
    """Read the submission safely and put every grader-owned cell back from notebooks/ by cell id.

    A copy whose cells cannot be matched to the unit's notebook (no cell ids, as nbformat 4.4 and older
    write; another notebook; an empty one) is *not restored*: it gets a row that says why and no score.
    ``handed_out`` names the course version the class was given (:mod:`.versions`): only questions
    added after it may be "not in this copy". ``as_unit`` grades the copy as that unit (a copy handed out before
    its unit was split holds the questions of both halves: :func:`grade_one` restores it once for each)."""
    # an unreadable file is shown under the unit its name says
    out = Restored(sub, unit=unit_said(sub), handed_out=handed_out)
    if sub.problem:
        out.status, out.problems = "unreadable", [f"the notebook is {sub.problem}"]
        return out
    try:
        raw = containment.read_capped(sub.path, NOTEBOOK_CAP)
    except containment.UnsafeFile as exc:
        out.status, out.problems = "unreadable", [f"the notebook is {exc}"]
        return out
    try:
        import nbformat

        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
        cells = nb.cells
        if not isinstance(cells, list):
            raise ValueError("no cells")
    except Exception as exc:
        out.status = "not a notebook"
        out.problems = [f"could not be read as a notebook: {type(exc).__name__}"]
        return out
    out.unit = as_unit or _unit_of(sub, cells)
    template = _template(out.unit)
    owned = {c.get("id"): c for c in template if c.get("id") and grader_owned(c)}
    ids = [c.get("id") for c in cells if isinstance(c, dict)]
    why = ""
    if out.unit not in UNITS:
        why = "it is not a notebook of this course (no unit in its file name or its code)"
    elif len(cells) > CELL_CAP:
        why = f"it has {len(cells):,} cells (the unit's notebook has {len(template)}; at most {CELL_CAP:,} are read)"
    elif not any(ids):
        why = (
            "its cells carry no ids (nbformat 4.4 or older, or a tool that drops them), so the grader's cells "
            "cannot be matched and put back"
        )
    elif not owned.keys() & set(ids):
        why = "none of its cells is a cell of the unit's notebook (matched by cell id)"
    if why:
        out.status, out.problems = NOT_RESTORED, [f"not graded: {why}"]
        return out
    # predictions locked with the widget, into their cells (read from the saved widget state first, then the outputs)
    out.findings += apply_locks(cells, template, widgets=(nb.get("metadata") or {}).get("widgets"))
    out.variants = carried_variants(cells, out.unit)
    out.copy = _what_the_copy_holds(out.unit, template, cells, handed_out)
    out.findings += reach.findings(template, cells)
    edited = []
    for cell in cells:
        mine = owned.get(cell.get("id"))
        if mine is None:
            continue
        if cell.get("cell_type") != "code" or _source(cell) != _source(mine):
            edited.append(cell.get("id"))
        cell["cell_type"] = "code"
        cell["source"] = _source(mine)
        cell.setdefault("outputs", [])
        cell.setdefault("execution_count", None)
        cell.setdefault("metadata", {})
    edited_questions = [cid for cid in edited if cid in out.copy.question_cells]
    if edited_questions:
        out.findings.append(
            f"{len(edited_questions)} grader cell(s) of a question had been edited and were restored: "
            + ", ".join(edited_questions[:8])
        )
    if out.copy.missing:
        out.problems.append(
            f"{len(out.copy.missing)} cell(s) of the unit's questions are missing (their questions count as "
            "not answered): " + out.copy.missing_words()
        )
        out.status = "missing cells"
    out.notebook = nb
    out.exercises = _exercise_sources(out.unit, template, cells)
    out.runs = slicing.needed(cells, [c.get("id") not in owned for c in cells])
    return out


def carried_variants(cells: list, unit: str) -> dict:
    """For each generated self-test of ``unit``, the record its cells' saved outputs carry (data, never trusted:
    :func:`grader.engine.variants.read_record`) with the highest program number: the program in force when the
    learner saved. Records of the course's own run (a solution's stored outputs) are no learner's: left out."""
    from grader.engine import identity, variants

    wanted = {q.qid for q in of_unit(unit) if q.program is not None} if unit in UNITS else set()
    course = identity.fingerprint(identity.COURSE)
    found: dict = {}
    for cell in cells:
        outputs = cell.get("outputs") if isinstance(cell, dict) and cell.get("cell_type") == "code" else None
        for output in outputs if isinstance(outputs, list) else []:
            carried = variants.read_record(output)
            if carried is not None and carried.qid in wanted and carried.fingerprint != course:
                if carried.qid not in found or carried.number >= found[carried.qid].number:
                    found[carried.qid] = carried
    return found


def pins(restored: Restored) -> dict:
    """The program numbers a grading run asks (``AGL_VARIANTS``): those the copy's records say were in force, where
    they were answered under the identity graded (another identity's numbers mean nothing for this learner)."""
    from grader.engine import identity

    mine = identity.fingerprint(restored.submission.whose())
    return {qid: c.number for qid, c in restored.variants.items() if c.fingerprint == mine}


def _what_the_copy_holds(unit: str, template: list, cells: list, handed_out: str | None = None):
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


def _exercise_sources(unit: str, template: list, cells: list) -> dict:
    """For each exercise of the unit, its function rebuilt from the copy (see :mod:`.exercise_sources`)."""
    from grader.engine.kinds import Function

    qids = [q.qid for q in of_unit(unit) if isinstance(q.kind, Function)] if unit in UNITS else []
    return exercise_sources(qids, template, cells)


# --- step 3: execute ------------------------------------------------------------------------


def _contained_env(work: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOGRAD_LAB_STRICT",) and not k.startswith("AGL_")}
    env.update(
        AUTOGRAD_LAB_HOME=str(work / "home"),
        HOME=str(work / "home"),
        PYTHONUNBUFFERED="1",
        JUPYTER_RUNTIME_DIR=str(work / "runtime"),
        IPYTHONDIR=str(work / "ipython"),
        MPLCONFIGDIR=str(work / "mpl"),
        MPLBACKEND="Agg",
        TMPDIR=str(work / "tmp"),
    )
    for name in ("home", "runtime", "ipython", "mpl", "tmp"):
        (work / name).mkdir(exist_ok=True)
    return env


LABEL_KEY = containment.LABEL_KEY  # a code cell's metadata: how the worker names it in a problem (cell_label)


def _to_run(restored: Restored):
    """The restored notebook as the run executes it: the cells its verdicts do not need left empty (:mod:`.slicing`),
    each code cell labelled for the worker's messages as the learner sees it (:func:`.copies.cell_label`), a label
    the copy itself may have carried replaced."""
    import copy

    nb = copy.deepcopy(restored.notebook)
    questions = getattr(restored.copy, "questions_of", None) or {}
    for cell, keep in zip(nb.cells, restored.runs or [True] * len(nb.cells)):
        if cell.get("cell_type") != "code":
            continue
        cell.setdefault("metadata", {})[LABEL_KEY] = cell_label(cell, questions.get(cell.get("id")))
        if not keep:
            cell["source"] = ""
    return nb


def read_events(home: Path, scratch: Path) -> tuple[list[Event], list[str]]:
    """The events of a progress store the submission wrote, read as untrusted data
    (:mod:`grader.instructor.grading.untrusted_store`) from a private copy; (events, findings)."""
    try:
        data = containment.read_capped(home / FILENAME, STORE_CAP)
    except containment.UnsafeFile as exc:
        return [], [f"store missing or corrupt: the progress store is {exc}"]
    (scratch / FILENAME).write_bytes(data)
    try:
        wal = containment.read_capped(home / (FILENAME + "-wal"), STORE_CAP)
        (scratch / (FILENAME + "-wal")).write_bytes(wal)
    except containment.UnsafeFile as exc:
        if str(exc) != "missing":
            return [], [f"store missing or corrupt: its write-ahead log is {exc}"]
    try:
        return untrusted_store.read(scratch / FILENAME, copy=True)
    except untrusted_store.Refused as exc:
        return [], [f"store missing or corrupt: {str(exc)[:100]}"]


CHANGED = "the progress store was changed after it was written"


def events_of_run(home: Path, scratch: Path, stream: bytes | None) -> tuple[list[Event], list[str]]:
    """The events a run recorded: those its kernel streamed out as they happened (``stream``), when there is a
    stream and the store file is readable but lost or rewrote any of them (a finding); otherwise the store's.

    Rows the store holds besides the streamed ones (written into it by code) are read as the store's, exactly as
    before: they are data, every verdict is recomputed. A store that is missing or unreadable counts nothing."""
    stored, findings = read_events(home, scratch)
    if stream is None or any(f.startswith("store missing or corrupt") for f in findings):
        return stored, findings
    streamed, found = untrusted_store.events_of_stream(stream)
    findings += found
    if untrusted_store.kept_in_order(streamed, stored):
        return stored, list(dict.fromkeys(findings))
    return streamed, list(dict.fromkeys([*findings, CHANGED]))


def execute(
    restored: Restored, cell_timeout: int = 60, notebook_timeout: int = 600, memory_mb: int = 3072, pool=None
) -> Execution:
    """Run the restored notebook contained; return how it ended and the events its store holds.

    With a :class:`grader.instructor.grading.workers.Pool` the notebook runs in a process forked from a warm parent
    (torch and the grader already imported); without one, in a fresh worker and kernel."""
    import nbformat

    out = Execution(isolation=containment.isolation())
    started = time.monotonic()
    worker = work = scratch = None
    try:
        worker = pool.borrow() if pool is not None else None
        work = worker.job_folder() if worker else containment.private_folder("agl-grade-")
        scratch = containment.private_folder("agl-read-")
        env = _contained_env(work)
        env["AGL_SEAL"] = "1"  # the answer key is sealed in the run (grader/__init__.py, workers._run_cells)
        # the run asks the programs of the identity graded, numbered as the copy's records say (learner.api._pinned)
        env["AUTOGRAD_LAB_LEARNER"] = restored.submission.whose()
        env["AGL_VARIANTS"] = json.dumps(pins(restored))
        env.pop("JUPYTERHUB_USER", None)
        env.pop("AUTOGRAD_LAB_MASTERY", None)
        copy = work / "submission.ipynb"
        nbformat.write(_to_run(restored), str(copy))
        if worker:
            env[containment.TOKEN_VAR] = secrets.token_hex(16)
            run = worker.run(
                {
                    "kind": "notebook",
                    "dir": work.name,
                    "env": env,
                    "cell_timeout": cell_timeout,
                    "memory_mb": memory_mb,
                },
                notebook_timeout,
            )
        else:
            cmd = [
                sys.executable,
                str(Path(__file__).with_name("notebook_worker.py")),
                str(copy),
                str(work),
                str(cell_timeout),
                str(memory_mb),
                str(notebook_timeout),
            ]
            run = containment.run(cmd, work, env, notebook_timeout, events=True)
        if run.timed_out:
            out.status = "killed"
            out.problems.append(f"the notebook ran past {notebook_timeout} s in all and was stopped")
        elif run.returncode != 0:
            out.status = "worker died"
            how = f"signal {-run.returncode}" if run.returncode and run.returncode < 0 else f"exit {run.returncode}"
            out.problems.append(f"the grading worker did not finish ({how}); the run cannot be trusted")
            tail = run.stderr.decode(errors="replace").strip().splitlines()[-1:]
            if tail and run.returncode and 0 < run.returncode < 128:
                out.problems.append(f"the worker failed: {tail[0][:200]}")
        else:
            lines = run.result.splitlines()
            try:
                if len(lines) != 1 or run.result_overflow:
                    raise ValueError
                report = json.loads(lines[0])
                if not isinstance(report, dict) or report.get("cells") != len(restored.notebook.cells):
                    raise ValueError
            except ValueError:
                out.status = "worker lied"
                out.problems.append("the worker's report is not the one report it sends; the run cannot be trusted")
            else:
                out.status = str(report.get("status", "ok"))[:40]
                if isinstance(report.get("leftovers"), int) and report["leftovers"] > 0:
                    out.findings.append(
                        f"{report['leftovers']} process(es) it started outlived the notebook and were killed"
                    )
                out.problems += [str(p)[:300] for p in report.get("problems", [])][:50]
        if run.leftovers:
            out.findings.append(f"{run.leftovers} process(es) it started were still running at the end and were killed")
        if run.output_bytes > 10 * 2**20:
            out.findings.append(f"it wrote {run.output_bytes / 2**20:.0f} MB to stdout/stderr (kept 64 KB)")
        out.events, found = events_of_run(work / "home", scratch, run.events)
        out.findings += found
    finally:
        for folder in (work, scratch):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        if worker:
            pool.give_back(worker)
    out.seconds = time.monotonic() - started
    return out


# --- step 4: recompute ----------------------------------------------------------------------


def run_exercises(restored: Restored, timeout: float = 0, pool=None) -> tuple[dict, list[str]]:
    """Re-run the recovered learner functions in a contained process and judge their results here."""
    from grader.engine.question import get

    verdicts: dict[str, verify_submission.ExerciseVerdict] = {}
    if not restored.exercises:
        return verdicts, []
    qs = {qid: get(qid) for qid in restored.exercises}
    request = {"exercises": [item.request() for item in restored.exercises.values()]}
    timeout = timeout or 60 + sum(q.kind.budget_s for q in qs.values())
    worker = work = None
    try:
        worker = pool.borrow() if pool is not None else None
        work = worker.job_folder() if worker else containment.private_folder("agl-run-")
        env = _contained_env(work)
        if worker:  # forked from a warm parent: torch imported and the cases made already
            env[containment.TOKEN_VAR] = secrets.token_hex(16)
            (work / "request.json").write_text(json.dumps(request), encoding="utf-8")
            run = worker.run({"kind": "exercises", "dir": work.name, "env": env}, timeout)
        else:
            run = containment.run(
                [sys.executable, "-m", "grader.instructor.grading.learner_function"],
                work,
                env,
                timeout,
                stdin=json.dumps(request).encode(),
            )
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
        if worker:
            pool.give_back(worker)
    lines, findings = verify_submission.decode_lines(run.result)
    if run.timed_out:
        findings.append(f"the exercise runner ran past {timeout:g} s and was stopped")
    elif run.returncode != 0:
        findings.append("the exercise runner died before it finished")
    for qid, q in qs.items():
        verdicts[qid] = verify_submission.judge_exercise(q, lines.get(qid, []))
    return verdicts, findings


def recompute(restored: Restored, execution: Execution, pool=None) -> GradedSubmission:
    """Every verdict from recorded data and live torch here; never a verdict the kernel wrote."""
    out = GradedSubmission(
        restored.submission,
        status=restored.status,
        problems=list(restored.problems),
        findings=list(restored.findings),
        isolation=execution.isolation,
        seconds=execution.seconds,
        copy=restored.copy,
    )
    if execution.status != "ok" and (out.status == "ok" or execution.status in TAMPERED):
        out.status = execution.status
    out.problems += execution.problems
    out.findings += execution.findings
    if restored.unit not in UNITS:
        out.units = []
        return out
    exercises, found = run_exercises(restored, pool=pool)
    out.findings += found
    legacy_ok = versions.before_causes(restored.handed_out)
    out.units = [
        verify_submission.recompute(
            restored.unit,
            execution.events,
            exercises,
            legacy_ok,
            identity=restored.submission.whose(),
            carried=restored.variants,
            mastery=restored.submission.mastery,
            canonical=versions.before_variants(restored.handed_out),
        )
    ]
    for r in out.units:
        out.findings += r.findings
        for qid, v in exercises.items():
            if v.note and v.verdict != "correct":
                out.findings.append(f"{qid}: {v.note}")
    out.findings = list(dict.fromkeys(out.findings))
    return out


def grade_one(
    sub: Submission,
    cell_timeout: int = 60,
    notebook_timeout: int = 600,
    memory_mb: int = 3072,
    pool=None,
    handed_out: str | None = None,
) -> GradedSubmission:
    """One submission graded: a row's worth per unit. A copy of a unit that was split after the version the class
    was handed (:func:`.versions.split_since`) is restored and run once for each half, each half graded on its
    own questions, so the questions that moved are graded where they now belong."""
    started = time.monotonic()
    restored = restore(sub, handed_out)
    out = _graded(sub, restored, cell_timeout, notebook_timeout, memory_mb, pool)
    halves = versions.split_since(handed_out, restored.unit) if handed_out and restored.unit in UNITS else []
    for unit in halves:
        other = _graded(sub, restore(sub, handed_out, as_unit=unit), cell_timeout, notebook_timeout, memory_mb, pool)
        out.halves.append(other)
    out.seconds = time.monotonic() - started
    return out


def _graded(sub, restored: Restored, cell_timeout, notebook_timeout, memory_mb, pool) -> GradedSubmission:
    if restored.notebook is None:
        out = GradedSubmission(
            sub, status=restored.status, problems=restored.problems, isolation=containment.isolation()
        )
        out.units = [None]
        out.unit = restored.unit
    else:
        try:
            execution = execute(restored, cell_timeout, notebook_timeout, memory_mb, pool)
        except Exception as exc:  # the grader's own failure: still a row
            execution = Execution(status="could not run", problems=[f"{type(exc).__name__}: {str(exc)[:200]}"])
        out = recompute(restored, execution, pool)
        if not out.units:
            out.units = [None]
        out.unit = restored.unit
        try:
            exercises = out.units[0].exercises if out.units and out.units[0] is not None else {}
            out.facts = [
                report.facts_of(
                    sub.learner,
                    restored.unit,
                    restored.notebook,
                    execution.events,
                    exercises,
                    identity=None if versions.before_variants(restored.handed_out) else sub.whose(),
                )
            ]
        except Exception as exc:  # the report's facts never cost a learner a row
            out.facts = [
                {
                    "learner": sub.learner,
                    "unit": restored.unit,
                    "wrong": {},
                    "minutes": None,
                    "problem": f"{type(exc).__name__}: {str(exc)[:100]}",
                }
            ]
    return out


# --- step 5: write (grader/instructor/grading/gradebook.py) ----------------------------------------------------


def _adopt_orphans() -> None:
    """Become the subreaper of everything the submissions start, so a detached process cannot slip away."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
            containment.ADOPTING = True
        except (OSError, AttributeError):
            pass


THREADS_VAR = "OMP_NUM_THREADS"


def threads_per_job(jobs: int) -> int:
    """torch's intra-op threads for each process a grading run starts: the cores shared out among ``jobs``.
    torch's default, a thread per core in every process, makes ``jobs`` processes' threads wait on one another
    (on 2 cores, two such processes spent several times the CPU time one thread each does)."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def grade(
    paths: list[str],
    out: Path,
    jobs: int = 1,
    cell_timeout: int = 60,
    notebook_timeout: int = 600,
    memory_mb: int = 3072,
    html_dir: Path | None = None,
    progress_to=sys.stderr,
    weights: scores.Weights | None = None,
    ids: dict | None = None,
    times: dict | None = None,
    wide: Path | None = None,
    merge_into: Path | None = None,
    shard: tuple[int, int] | None = None,
    resume: bool = False,
    report_to: Path | None = None,
    handed_out: str | None = None,
    name_pattern=None,
    keep: str = "latest",
    lms: str | None = None,
    lms_out: Path | None = None,
    overrides=None,
    late_rule=None,
    identity_from: str = "learner",
    mastery: int | None = None,
) -> list[dict]:
    """Grade every submission found (or one shard of them), reusing a journal's work with ``resume``.

    ``identity_from`` says whose programs a copy's generated self-tests are judged on: ``"learner"`` (the name the
    copy is graded under: the Unix user a hub's collect names it by) or ``"student-id"`` (the roster's id, where the
    learners set it as their identity: ``python -m grader identity ID``); ``mastery``: right answers in a row, each
    on a fresh program, that pass one (the instructor's AUTOGRAD_LAB_MASTERY in the learners' kernels).

    ``late_rule`` (:mod:`.late`, from --due) takes points off late rows and says so in each.

    ``overrides`` (:mod:`.overrides`, a TA's --overrides file) change questions' points, each shown where it
    applies; one that changed nothing is warned of (not in a shard: its learner may be in another).

    ``name_pattern`` (a compiled --name-pattern) names learners as :mod:`.lms_names` says; every learner the
    roster (``ids``) does not know, and every notebook the pattern does not match, is warned of; two copies
    of one unit from one learner are kept as ``keep`` says (:mod:`.duplicates`); ``lms`` writes the whole
    gradebook (merged, where ``merge_into``) in that LMS's import shape to ``lms_out`` (:mod:`.lms_gradebook`).

    Notebooks run in processes forked from ``jobs`` warm parents (:mod:`grader.instructor.grading.workers`); with
    AGL_GRADE_COLD=1 in the environment, each in a fresh worker and kernel instead (slower; for comparison). Each
    process the run starts gets :func:`threads_per_job` intra-op threads (OMP_NUM_THREADS, unless already set)."""
    _adopt_orphans()
    verify_submission.new_run()
    found = find(paths, name_pattern)
    subs = [s for s in found if shard is None or shards.shard_of(s.learner, shard[1]) == shard[0]]
    for s in subs:
        s.mastery = mastery
        if identity_from == "student-id" and ids is not None:
            s.identity = roster.lookup(ids, s.learner, str(s.path)) or s.learner
    if progress_to is not None:
        for s in subs:
            if s.named is not None and s.named.unmatched:
                print(f"grade: warning: {s.path} does not match --name-pattern; named {s.learner}", file=progress_to)
        if ids is not None:
            unknown = sorted({s.learner for s in subs if roster.lookup(ids, s.learner, str(s.path)) is None})
            for learner in unknown:
                print(f"grade: warning: {learner} is not in the roster (no student ID)", file=progress_to)
    options = {
        "cell_timeout": cell_timeout,
        "notebook_timeout": notebook_timeout,
        "memory_mb": memory_mb,
        "shard": list(shard) if shard else None,
        "handed_out": handed_out,
        "name_pattern": name_pattern.pattern if name_pattern is not None else None,
        "identity_from": identity_from,
        "mastery": mastery,
        # rows in the journal carry points and student ids: a change of weights, roster or times redoes them
        "rows": repr(
            (
                vars(weights) if weights is not None else None,
                sorted((ids or {}).items()),
                sorted((times or {}).items()),
                bool(html_dir),
                overrides.fingerprint() if overrides else None,
                late_rule.fingerprint() if late_rule else None,
            )
        ),
    }
    journal = shards.Journal(out, options, resume)
    rows: list[dict] = []
    facts: list[dict] = []
    started = time.monotonic()
    todo = []
    for s in subs:
        sha = "" if s.problem else shards.file_hash(s.path, NOTEBOOK_CAP)
        entry = journal.reuse(s.path, sha) if resume else None
        if entry is not None:
            rows += entry["rows"]
            facts += entry.get("facts", [])
        else:
            todo.append((s, sha))
    if progress_to is not None:
        if shard:
            print(
                f"shard {shard[0]}/{shard[1]}: {len(subs)} of {len(found)} notebooks "
                f"({len({s.learner for s in subs})} of {len({s.learner for s in found})} learners)",
                file=progress_to,
            )
        if resume:
            print(
                journal.note
                or f"resuming: {len(subs) - len(todo)} notebook(s) already graded and unchanged, {len(todo)} to grade",
                file=progress_to,
            )
    done = 0
    needs_worker = any(not s.problem for s, _ in todo)
    warm = None
    threads_before = os.environ.get(THREADS_VAR)
    if threads_before is None:  # the instructor's own setting wins
        os.environ[THREADS_VAR] = str(threads_per_job(jobs))
    try:
        if needs_worker and not os.environ.get("AGL_GRADE_COLD"):
            units = {unit_named(s) for s, _ in todo}  # a hint: the exercises whose cases to build first
            warm = workers.Pool(
                min(max(1, jobs), len(todo)), workers.base_env(), units=sorted(units) if units <= set(UNITS) else None
            )
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {
                pool.submit(grade_one, s, cell_timeout, notebook_timeout, memory_mb, warm, handed_out): (s, sha)
                for s, sha in todo
            }
            for future in as_completed(futures):
                sub, sha = futures[future]
                try:
                    result = future.result()
                except Exception as exc:  # a grader bug on one notebook: a row that says so, and the run goes on
                    result = GradedSubmission(
                        sub, status="grader error", problems=[f"{type(exc).__name__}: {str(exc)[:200]}"], units=[None]
                    )
                mine, their_facts = [], []
                for part in result.graded():
                    mine += gradebook.rows_of(part, weights, ids, times, feedback=bool(html_dir), overrides=overrides)
                    their_facts += part.facts
                late.apply(mine, late_rule)
                for f in their_facts:  # which notebook they came from: duplicates.keep drops a copy's facts too
                    f.setdefault("notebook", str(sub.path))
                rows += mine
                facts += their_facts
                journal.add(sub.path, sub.learner, sha, mine, their_facts)
                done += 1
                if progress_to is not None:
                    width = 30
                    filled = int(width * done / max(1, len(todo)))
                    print(
                        f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{len(todo)} "
                        f"{result.submission.learner}: {result.status} ({result.seconds:.1f} s)   ",
                        end="" if done < len(todo) else "\n",
                        file=progress_to,
                        flush=True,
                    )
    finally:
        if warm is not None:
            warm.close()
        journal.close()
        if threads_before is None:
            os.environ.pop(THREADS_VAR, None)
    rows, facts, notes = duplicates.keep(rows, facts, keep)
    if progress_to is not None:
        for note in notes:
            print(f"grade: {note}", file=progress_to)
    if merge_into:  # read before --out is written: the two may be one file (--out's default is grades.csv)
        old_facts, old_feedback, note = outputs.read(merge_into) if merge_into.exists() else ([], {}, "")
        if note and progress_to is not None:
            print(f"grade: {note}", file=progress_to)
        old = outputs.attach(gradebook.read_csv(merge_into), old_feedback) if merge_into.exists() else []
    gradebook.write_csv(rows, out)
    outputs.write(out, rows, facts)
    if shard:
        shards.write_sidecar(out, shard, [s.learner for s in found], [s.learner for s in subs], facts)
    everyone, everyone_facts = rows, facts
    if merge_into:  # every output from the merged gradebook: the learner's whole page, the whole class's report
        everyone = gradebook.merge(old, rows)
        everyone_facts = outputs.merge_facts(old_facts, rows, facts)
        gradebook.write_csv(everyone, merge_into)
        outputs.write(merge_into, everyone, everyone_facts)
    if overrides and not shard and progress_to is not None:  # a line for a learner graded earlier is not unused
        for warning in overrides.unused(
            rows, {r["learner"] for r in everyone} | {r.get("student id") for r in everyone}
        ):
            print(f"grade: warning: {warning}", file=progress_to)
    write_outputs(
        everyone,
        everyone_facts,
        out,
        wide=wide,
        html_dir=html_dir,
        report_to=report_to,
        weights=weights,
        ids=ids,
        lms=lms,
        lms_out=lms_out,
        pages_for={r["learner"] for r in rows},
        progress_to=progress_to,
    )
    if progress_to is not None:
        elapsed = time.monotonic() - started
        print(
            f"graded {len(todo)} notebooks in {elapsed:.1f} s ({60 * len(todo) / max(elapsed, 1e-9):.1f} per minute) "
            f"-> {out}" + (f"; report {report_to}" if report_to else ""),
            file=progress_to,
        )
    return rows


def write_outputs(
    rows: list[dict],
    facts: list[dict],
    out: Path,
    wide: Path | None = None,
    html_dir: Path | None = None,
    report_to: Path | None = None,
    weights: scores.Weights | None = None,
    ids: dict | None = None,
    lms: str | None = None,
    lms_out: Path | None = None,
    pages_for: set | None = None,
    progress_to=sys.stderr,
) -> None:
    """Every output beside the long CSV, from one whole gradebook (``rows``, with their feedback, and the
    report's ``facts``): the wide CSV, an LMS's CSV, the pages (of ``pages_for``'s learners, default all) and
    the class report. A single run, a regrade merged into a gradebook and ``grade merge`` all write them here."""
    if wide:
        gradebook.write_wide(rows, wide, weights, ids)
    if lms:
        for note in lms_gradebook.write(lms, rows, lms_out or lms_gradebook.default_path(out, lms), weights, ids):
            if progress_to is not None:
                print(f"grade: {note}", file=progress_to)
    if html_dir:
        gradebook.write_html([r for r in rows if pages_for is None or r["learner"] in pages_for], html_dir)
    if report_to:
        report.write_report(rows, facts, report_to)


def merge(
    partials: list[Path],
    out: Path,
    html_dir: Path | None = None,
    report_to: Path | None = None,
    wide: Path | None = None,
    weights: scores.Weights | None = None,
    ids: dict | None = None,
    lms: str | None = None,
    lms_out: Path | None = None,
    progress_to=sys.stderr,
) -> list[dict]:
    """Join the partial gradebooks of `grade --shard i/n` into one (see :mod:`grader.instructor.grading.shards`),
    and write every output a single run writes (the partials' feedback and facts come from beside them)."""
    rows, facts = shards.read_partials(partials)
    for partial in partials:
        _, feedback, note = outputs.read(partial)
        if note and progress_to is not None:
            print(f"grade merge: {note}", file=progress_to)
        outputs.attach(rows, feedback)
    gradebook.write_csv(rows, out)
    outputs.write(out, rows, facts)
    write_outputs(
        rows,
        facts,
        out,
        wide=wide,
        html_dir=html_dir,
        report_to=report_to,
        weights=weights,
        ids=ids,
        lms=lms,
        lms_out=lms_out,
        progress_to=progress_to,
    )
    return rows


if __name__ == "__main__":
    print("this module is run by `python -m grader grade`", file=sys.stderr)
    sys.exit(2)
