"""Grade a class: every verdict recomputed by live torch in a process no submitted code has run in.

One submission goes through five named steps, each a function that can be tested alone:

* ``find`` (:mod:`.submission`): every notebook under the given paths becomes a submission (an unreadable file or
  a broken link too: it gets a row), named by :func:`.lms_names.name_of`;
* ``restore`` (:mod:`.restore`, a chain of one-concern steps): the notebook read safely, the evidence it saved of
  its own run taken as data, every grader-owned cell put back from ``notebooks/``;
* ``execute`` (here): the restored notebook runs contained (:mod:`.containment`, :mod:`.workers`); its events come
  out as they happen, and the store it wrote is read as untrusted data (:mod:`.untrusted_store`);
* ``recompute`` (here): each learner function re-run in another contained process (:mod:`.learner_function`), and
  every answer compared with torch's live answer computed here (:mod:`.verify`);
* ``write`` (:mod:`.gradebook`): the rows.

A class is graded by :func:`grade`, a short driver over :func:`select`, :func:`run_all`, :func:`settle` and
:func:`write`, with one :class:`.options.GradeOptions`; docs/threat-model.md says what each step defends.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader.engine import env_vars
from grader.engine.course import UNITS
from grader.engine.kinds import Function
from grader.engine.store import FILENAME, Event
from grader.instructor.grading import (
    containment,
    duplicates,
    gradebook,
    late,
    learner_function,
    lms_gradebook,
    lms_names,
    outputs,
    report,
    roster,
    scores,
    shards,
    untrusted_store,
    versions,
    workers,
)
from grader.instructor.grading import verify as verify_submission
from grader.instructor.grading.copies import cell_label
from grader.instructor.grading.options import GradeOptions
from grader.instructor.grading.printable import escape
from grader.instructor.grading.restore import (  # noqa: F401 - step 2, and names other modules read here
    CELL_CAP,
    NOT_RESTORED,
    NOTEBOOK_CAP,
    carried_variants,
    restore,
    unit_named,
)
from grader.instructor.grading.submission import (  # noqa: F401 - what passes between the steps
    Execution,
    GradedSubmission,
    Restored,
    Submission,
    find,
)

if TYPE_CHECKING:
    from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[3]
STORE_CAP = untrusted_store.STORE_CAP  # bytes of a progress store (and of its WAL) read at most
EVENTS_CAP = untrusted_store.EVENTS_CAP  # events read at most
ANSWER_CAP = untrusted_store.ANSWER_CAP  # characters of one recorded answer
TAMPERED = ("worker died", "worker lied")
NOT_RUN = (*TAMPERED, "could not run", "grader error")  # the grading itself did not run the notebook
# a plain file that is no notebook of this course: where every file is one, the run was pointed at the wrong thing
# (a zip not unpacked, another course's folder). A link or a file too large is the grader refusing one learner's
# file ("unreadable", each row says why), not a run gone wrong
NOT_READ = ("not a notebook", NOT_RESTORED)


def judged_identity(restored: Restored) -> str:
    """Whose programs the copy's self-tests are judged on: the identity its records say they were drawn for, where
    they all name one (a learner who answered on a laptop under the identity made there is judged on the programs
    they were asked); else the name it is graded under (or its roster id: ``grade --identity student-id``). A copy
    passed from one learner to another carries the first one's identity: :func:`shared_identities` names it."""
    from grader.engine.identity import key

    named = {key(c.drawn_for) for c in restored.variants.values() if c.drawn_for}
    return named.pop() if len(named) == 1 else restored.submission.whose()


def shared_identities(judged: dict[str, set[str]], ids: dict | None = None, names: set | None = None) -> dict[str, str]:
    """The learners whose self-tests were drawn for an identity that is not theirs alone, each with the finding that
    says so. ``judged``: learner -> the identities their copies were judged on; ``names``: every learner of the
    class (their names, and their roster ``ids``, are their own identities).

    Where the identity is one learner's own name or id, only the *other* learners carrying it are named (a copy
    claiming a classmate's identity must not put anything in the classmate's row); where it is no one's (a laptop's
    own identity), every learner carrying it is named: one learner's programs in several rows."""
    from grader.engine.identity import key

    carriers: dict[str, set[str]] = {}
    for learner, drawn in judged.items():
        for name in drawn:
            carriers.setdefault(key(name), set()).add(learner)
    owner: dict[str, str] = {}
    for learner in (names or set()) | set(judged):
        for own in (learner, (ids or {}).get(learner, "")):
            if own:
                owner.setdefault(key(own), learner)
    out = {}
    for name, learners in carriers.items():
        mine = owner.get(name)
        others = sorted(learners - {mine}) if mine else sorted(learners)
        if mine and others:
            for learner in others:
                out[learner] = (
                    f"its self-tests were drawn for {name!r}, the identity of {mine}: answered as another learner "
                    "(their notebook copied?)"
                )
        elif not mine and len(others) > 1:
            for learner in others:
                out[learner] = (
                    f"one identity, {name!r}, for {len(others)} learners ({', '.join(others)}): their self-tests "
                    "were drawn for the same programs (one notebook shared or copied?)"
                )
    return out


def pins(restored: Restored) -> dict:
    """The program numbers a grading run asks (``AGL_VARIANTS``): those the copy's records say were in force, where
    they were answered under the identity graded (another identity's numbers mean nothing for this learner)."""
    from grader.engine import identity

    mine = identity.fingerprint(judged_identity(restored))
    return {qid: c.number for qid, c in restored.variants.items() if c.fingerprint == mine}


# --- step 3: execute ------------------------------------------------------------------------


def _contained_env(work: Path) -> dict:
    """A submission's environment: the allow-list :func:`containment.environment` (nothing else of the grading
    process's: no token in the instructor's shell reaches a notebook) and its own folders."""
    env = containment.environment(
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


def _notebook_of(restored: Restored) -> NotebookNode:
    """The restored notebook, which only a copy that was restored has (:func:`_graded` runs no other)."""
    if restored.notebook is None:
        raise ValueError(f"{restored.submission.path} was not restored: it is not run")
    return restored.notebook


def _to_run(restored: Restored) -> NotebookNode:
    """The restored notebook as the run executes it: the cells its verdicts do not need left empty (:mod:`.slicing`),
    each code cell labelled for the worker's messages as the learner sees it (:func:`.copies.cell_label`), a label
    the copy itself may have carried replaced."""
    import copy

    nb = copy.deepcopy(_notebook_of(restored))
    questions = restored.copy.questions_of if restored.copy is not None else {}
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
    out = Execution(isolation=containment.isolation())
    started = time.monotonic()
    worker = work = scratch = None
    try:
        worker = pool.borrow() if pool is not None else None
        work = worker.job_folder() if worker else containment.private_folder("agl-grade-")
        scratch = containment.private_folder("agl-read-")
        run = _run_notebook(restored, work, worker, cell_timeout, notebook_timeout, memory_mb)
        _how_it_ended(run, out, notebook_timeout, len(_notebook_of(restored).cells))
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


def _run_notebook(restored: Restored, work: Path, worker, cell_timeout: int, notebook_timeout: int, memory_mb: int):
    """The restored notebook written into ``work`` and run: in a process a warm ``worker`` forks, else cold."""
    import nbformat

    env = _contained_env(work)
    env[env_vars.SEAL] = "1"  # the answer key is sealed in the run (grader/__init__.py, workers._run_cells)
    env[env_vars.LEARNER] = judged_identity(restored)  # the programs of the identity judged
    env[env_vars.VARIANTS] = json.dumps(pins(restored))
    copy = work / "submission.ipynb"
    nbformat.write(_to_run(restored), str(copy))
    if worker:
        env[containment.TOKEN_VAR] = secrets.token_hex(16)
        job = {"kind": "notebook", "dir": work.name, "env": env, "cell_timeout": cell_timeout, "memory_mb": memory_mb}
        return worker.run(job, notebook_timeout)
    worker_script = str(Path(__file__).with_name("notebook_worker.py"))
    cmd = [containment.python(), worker_script, str(copy), str(work), str(cell_timeout), str(memory_mb)]
    return containment.run([*cmd, str(notebook_timeout)], work, env, notebook_timeout, events=True)


def _how_it_ended(run: containment.Finished, out: Execution, notebook_timeout: int, cells: int) -> None:
    """The run's status, problems and findings, from how its process ended and the one report it sent."""
    if run.over_cap and not run.result:  # stopped for what it wrote before it could report (the cold path)
        out.status, out.problems = "killed", [run.over_cap]
    elif run.timed_out:
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
        _read_report(run, out, cells)
    if run.over_cap and run.result and out.status not in TAMPERED:  # the warm parent stopped it and reported
        out.status = "killed"
        out.problems.insert(0, run.over_cap)
    if run.leftovers:
        out.findings.append(f"{run.leftovers} process(es) it started were still running at the end and were killed")
    if run.output_bytes > 10 * 2**20:
        out.findings.append(f"it wrote {run.output_bytes / 2**20:.0f} MB to stdout/stderr (kept 64 KB)")


def _read_report(run: containment.Finished, out: Execution, cells: int) -> None:
    """The worker's one report (a JSON line naming as many cells as the notebook has), or 'worker lied'."""
    lines = run.result.splitlines()
    try:
        if len(lines) != 1 or run.result_overflow:
            raise ValueError
        report = json.loads(lines[0])
        if not isinstance(report, dict) or report.get("cells") != cells:
            raise ValueError
    except ValueError:
        out.status = "worker lied"
        out.problems.append("the worker's report is not the one report it sends; the run cannot be trusted")
        return
    out.status = str(report.get("status", "ok"))[:40]
    if isinstance(report.get("leftovers"), int) and report["leftovers"] > 0:
        out.findings.append(f"{report['leftovers']} process(es) it started outlived the notebook and were killed")
    out.problems += [str(p)[:300] for p in report.get("problems", [])][:50]


# --- step 4: recompute ----------------------------------------------------------------------


def run_exercises(restored: Restored, timeout: float = 0, pool=None) -> tuple[dict, list[str]]:
    """Re-run the recovered learner functions in a contained process and judge their results here."""
    from grader.engine.question import get

    verdicts: dict[str, verify_submission.ExerciseVerdict] = {}
    if not restored.exercises:
        return verdicts, []
    qs = {qid: q for qid in restored.exercises if (q := get(qid)) is not None}  # restore found them by id
    request = {"exercises": [item.request() for item in restored.exercises.values()]}
    timeout = timeout or 60 + sum(q.kind.budget_s for q in qs.values() if isinstance(q.kind, Function))
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
                [containment.python(), "-I", "-c", learner_function.BOOT, str(ROOT)],
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
    if run.over_cap:
        findings.append(f"the exercise runner: {run.over_cap}")
    elif run.timed_out:
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
    out.identity = judged_identity(restored)
    if restored.unit not in UNITS:
        out.units = []
        return out
    exercises, found = run_exercises(restored, pool=pool)
    out.findings += found
    legacy_ok = versions.before_causes(restored.handed_out)
    recomputed = verify_submission.recompute(
        restored.unit,
        execution.events,
        exercises,
        legacy_ok,
        identity=out.identity,
        carried=restored.variants,
        mastery=restored.submission.mastery,
        canonical=versions.before_variants(restored.handed_out),
        revealed_first=restored.revealed_first,
    )
    out.units = [recomputed]
    out.findings += recomputed.findings
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
            judged = out.units[0] if out.units and out.units[0] is not None else None
            out.facts = [
                report.facts_of(
                    sub.learner,
                    restored.unit,
                    restored.notebook,
                    judged.events if judged is not None else execution.events,  # as the gradebook numbered them
                    judged.exercises if judged is not None else {},
                    identity=None if versions.before_variants(restored.handed_out) else out.identity,
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


def grade(paths: list[str], out: Path, options: GradeOptions | None = None, **settings) -> list[dict]:
    """Grade every submission found (or one shard of them), reusing a journal's work with ``--resume``; the rows.

    ``options`` (:class:`.options.GradeOptions`, built by the command line; or its fields as keywords) says the rest:
    whose programs a copy's self-tests are judged on, the late rule, overrides, the LMS file, the outputs. The run is
    four steps, each a function below: :func:`select` (which notebooks, named how, which a journal already holds),
    :func:`run_all` (each graded in a process forked from a warm parent, ``jobs`` at a time: restore, execute,
    recompute, rows), :func:`settle` (what only the whole class shows: shared identities, two copies of one unit)
    and :func:`write` (the gradebook, merged where asked, and every output beside it)."""
    options = options or GradeOptions(**settings)
    started = time.monotonic()
    _adopt_orphans()
    verify_submission.new_run()
    chosen = select(paths, out, options)
    try:
        rows, facts, judged = run_all(chosen, options)
    finally:
        chosen.journal.close()
    rows, facts = settle(rows, facts, judged, chosen, options)
    write(rows, facts, out, chosen, options)
    options.say(
        f"graded {len(chosen.todo)} notebooks in {time.monotonic() - started:.1f} s "
        f"({60 * len(chosen.todo) / max(time.monotonic() - started, 1e-9):.1f} per minute) -> {out}"
        + (f" (merged into {options.merge_into})" if options.merge_into else "")
        + (f"; {options.lms} import file {chosen.lms_path}" if chosen.lms_path else "")
        + (f"; report {options.report_to}" if options.report_to else "")
    )
    return rows


@dataclass
class Selection:
    """What :func:`select` chose: the submissions found, those of this shard, those to grade (with their files'
    hashes), and the rows and facts a journal already held for the rest."""

    found: list
    subs: list
    todo: list  # (Submission, sha)
    journal: shards.Journal
    rows: list = field(default_factory=list)
    facts: list = field(default_factory=list)
    lms_path: Path | None = None  # where write() put the LMS file


def select(paths: list[str], out: Path, options: GradeOptions) -> Selection:
    """Every notebook under ``paths`` (one shard's), named, each given whose programs it is judged on; the warnings
    on names; and what a journal from an earlier run of the same options already graded."""
    found = find(paths, options.name_pattern)
    shard = options.shard
    subs = [s for s in found if shard is None or shards.shard_of(s.learner, shard[1]) == shard[0]]
    for s in subs:
        s.mastery = options.mastery
        if options.identity_from == "student-id" and options.ids is not None:
            s.identity = roster.lookup(options.ids, s.learner, str(s.path)) or s.learner
    _warn_about_names(subs, options)
    journal = shards.Journal(out, options.journal_key(), options.resume)
    chosen = Selection(found, subs, [], journal)
    for s in subs:
        sha = "" if s.problem else shards.file_hash(s.path, NOTEBOOK_CAP)
        entry = journal.reuse(s.path, sha) if options.resume else None
        if entry is not None:
            chosen.rows += entry["rows"]
            chosen.facts += entry.get("facts", [])
        else:
            chosen.todo.append((s, sha))
    if shard:
        learners = len({s.learner for s in subs}), len({s.learner for s in found})
        options.say(
            f"shard {shard[0]}/{shard[1]}: {len(subs)} of {len(found)} notebooks ({learners[0]} of {learners[1]} learners)"
        )
    if options.resume:
        done = len(subs) - len(chosen.todo)
        options.say(
            journal.note or f"resuming: {done} notebook(s) already graded and unchanged, {len(chosen.todo)} to grade"
        )
    return chosen


def _warn_about_names(subs: list, options: GradeOptions) -> None:
    """Names a learner chose are printed escaped (printable.escape)."""
    for s in subs:
        if s.named is not None and s.named.unmatched:
            options.say(f"grade: warning: {escape(s.path)} does not match --name-pattern; named {escape(s.learner)}")
    for warning in lms_names.warnings([(s.path, s.named) for s in subs if s.named is not None]):
        options.say(f"grade: warning: {warning}")
    if options.ids is not None:
        for learner in sorted({s.learner for s in subs if roster.lookup(options.ids, s.learner, str(s.path)) is None}):
            options.say(f"grade: warning: {roster.not_in_roster(options.ids, learner)}")
    if options.times and not getattr(options.times, "file_times", False):
        untimed = [s for s in subs if roster.time_of(options.times, str(s.path)) is None]
        if untimed:
            options.say(
                f"grade: warning: {len(untimed)} notebook(s) have no time in {escape(getattr(options.times, 'source', ''))} "
                f"(first: {escape(untimed[0].path)}): their 'submitted' is empty, so a late rule counts them from the "
                "LMS's own mark, or as on time"
            )


def run_all(chosen: Selection, options: GradeOptions) -> tuple[list, list, dict]:
    """Grade what :func:`select` left to grade, ``jobs`` at a time in processes forked from warm parents (with
    AGL_GRADE_COLD=1, each in a fresh worker and kernel instead); each process gets :func:`threads_per_job` intra-op
    threads (OMP_NUM_THREADS, unless already set). The rows and facts (the journal's too), and each learner's judged
    identities."""
    rows, facts = list(chosen.rows), list(chosen.facts)
    judged: dict[str, set[str]] = {}  # learner -> identities their self-tests were judged on
    todo, warm = chosen.todo, None
    threads_before = os.environ.get(THREADS_VAR)
    if threads_before is None:  # the instructor's own setting wins
        os.environ[THREADS_VAR] = str(threads_per_job(options.jobs))
    try:
        if any(not s.problem for s, _ in todo) and not os.environ.get(env_vars.GRADE_COLD):
            units = {unit_named(s) for s, _ in todo}  # a hint: the exercises whose cases to build first
            size = min(max(1, options.jobs), len(todo))
            warm = workers.Pool(size, workers.base_env(), units=sorted(units) if units <= set(UNITS) else None)
        with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
            futures = {pool.submit(_graded_safely, s, options, warm): (s, sha) for s, sha in todo}
            for done, future in enumerate(as_completed(futures), start=1):
                sub, sha = futures[future]
                result = future.result()
                if result.identity and any(u is not None and u.variants for u in result.units):
                    judged.setdefault(sub.learner, set()).add(result.identity)
                mine, their_facts = rows_of_result(result, options)
                rows += mine
                facts += their_facts
                chosen.journal.add(sub.path, sub.learner, sha, mine, their_facts)
                _progress(done, len(todo), result, options)
    finally:
        if warm is not None:
            warm.close()
        if threads_before is None:
            os.environ.pop(THREADS_VAR, None)
    return rows, facts, judged


def _graded_safely(sub: Submission, options: GradeOptions, warm) -> GradedSubmission:
    """:func:`grade_one`; a grader bug on one notebook gives a row that says so, and the run goes on."""
    try:
        return grade_one(
            sub, options.cell_timeout, options.notebook_timeout, options.memory_mb, warm, options.handed_out
        )
    except Exception as exc:
        return GradedSubmission(
            sub, status="grader error", problems=[f"{type(exc).__name__}: {str(exc)[:200]}"], units=[None]
        )


def rows_of_result(result: GradedSubmission, options: GradeOptions) -> tuple[list, list]:
    """The gradebook rows (late rule applied) and the report's facts of one graded submission (and its halves)."""
    mine, their_facts = [], []
    for part in result.graded():
        mine += gradebook.rows_of(
            part,
            options.weights,
            options.ids,
            options.times,
            feedback=bool(options.html_dir),
            overrides=options.overrides,
        )
        their_facts += part.facts
    late.apply(mine, options.late_rule)
    for f in their_facts:  # which notebook they came from: duplicates.keep drops a copy's facts too
        f.setdefault("notebook", str(result.submission.path))
    return mine, their_facts


def _progress(done: int, total: int, result: GradedSubmission, options: GradeOptions) -> None:
    width, filled = 30, int(30 * done / max(1, total))
    options.say(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
        f"{escape(result.submission.learner)}: {result.status} ({result.seconds:.1f} s)   ",
        end="" if done < total else "\n",
        flush=True,
    )


def settle(rows: list, facts: list, judged: dict, chosen: Selection, options: GradeOptions) -> tuple[list, list]:
    """What only the whole class shows: learners whose self-tests were drawn for an identity not theirs alone
    (:func:`shared_identities`, a finding in their rows), and two copies of one unit from one learner (one kept)."""
    everyone = {s.learner for s in chosen.found}
    for learner, finding in shared_identities(judged, options.ids, everyone).items():
        options.say(f"grade: warning: {escape(learner)}: {escape(finding)}")
        for row in rows:
            if row["learner"] == learner:
                row["findings"] = "; ".join(f for f in (row["findings"], finding) if f)
    rows, facts, notes = duplicates.keep(rows, facts, options.keep)
    for note in notes:
        options.say(f"grade: {escape(note)}")
    return rows, facts


def write(rows: list, facts: list, out: Path, chosen: Selection, options: GradeOptions) -> None:
    """The gradebook (``out``, merged into ``merge_into`` where asked), its outputs file, a shard's sidecar, and
    every output beside it (:func:`write_outputs`); the LMS file is the whole gradebook's, and is not written for a
    run whose grading itself failed (:func:`grading_failed`)."""
    merge_into = options.merge_into
    old: list[dict] = []
    old_facts: list[dict] = []
    if merge_into and merge_into.exists():  # read before --out is written: the two may be one file
        old_facts, old_feedback, note = outputs.read(merge_into)
        if note:
            options.say(f"grade: {note}")
        old = outputs.attach(gradebook.read_csv(merge_into), old_feedback)
    gradebook.write_csv(rows, out)
    outputs.write(out, rows, facts)
    if options.shard:
        found = [s.learner for s in chosen.found]
        shards.write_sidecar(out, options.shard, found, [s.learner for s in chosen.subs], facts)
    everyone, everyone_facts = rows, facts
    if merge_into:  # every output from the merged gradebook: the learner's whole page, the whole class's report
        everyone = gradebook.merge(old, rows)
        everyone_facts = outputs.merge_facts(old_facts, rows, facts)
        gradebook.write_csv(everyone, merge_into)
        outputs.write(merge_into, everyone, everyone_facts)
    if options.overrides and not options.shard:  # a line for a learner graded earlier is not unused
        known = {r["learner"] for r in everyone} | {r.get("student id") for r in everyone}
        for warning in options.overrides.unused(rows, known):
            options.say(f"grade: warning: {warning}")
    lms = options.lms
    # in a regrade, the LMS file beside the gradebook merged into (the file the instructor uploads)
    chosen.lms_path = (options.lms_out or lms_gradebook.default_path(merge_into or out, lms)) if lms else None
    failed = grading_failed(rows)
    if failed and lms:
        options.say(f"grade: {failed}; the {lms} import file was not written")
        lms = chosen.lms_path = None
    write_outputs(
        everyone,
        everyone_facts,
        out,
        wide=options.wide,
        html_dir=options.html_dir,
        report_to=options.report_to,
        weights=options.weights,
        ids=options.ids,
        lms=lms,
        lms_out=chosen.lms_path,
        pages_for={r["learner"] for r in rows},
        progress_to=options.progress_to,
        lms_columns=options.lms_columns,
    )
    if options.late_rule and late.untimed(rows):
        options.say(f"grade: warning: --due: {late.untimed(rows)} row(s) with no late rule applied: {late.NO_TIME}")


def grading_failed(rows: list[dict]) -> str:
    """Why a run's grading itself failed ("" where it did not): more than half of its notebooks were never run to
    the end by the grader (a worker that died or lied, a notebook that could not run, a grader error). Each such
    row reads 0 points, which must never reach an LMS as a grade."""
    notebooks = {r.get("notebook") or r.get("learner") for r in rows}
    unread = {r.get("notebook") or r.get("learner") for r in rows if r.get("run") in NOT_READ}
    if notebooks and unread == notebooks:
        return (
            f"none of the {len(notebooks)} file(s) could be read as a notebook of this course (each row says why: "
            f"{', '.join(sorted({str(r['run']) for r in rows}))}): nothing was graded"
        )
    failed = {r.get("notebook") or r.get("learner") for r in rows if r.get("run") in NOT_RUN}
    if not failed or 2 * len(failed) <= len(notebooks):
        return ""
    runs = sorted({str(r["run"]) for r in rows if r.get("run") in NOT_RUN})
    return (
        f"the grading itself failed for {len(failed)} of {len(notebooks)} notebook(s) ({', '.join(runs)}): "
        "their rows read 0 points for the grader's failure, not the learners'"
    )


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
    lms_columns: dict | None = None,
) -> None:
    """Every output beside the long CSV, from one whole gradebook (``rows``, with their feedback, and the
    report's ``facts``): the wide CSV, an LMS's CSV, the pages (of ``pages_for``'s learners, default all) and
    the class report. A single run, a regrade merged into a gradebook and ``grade merge`` all write them here."""
    if wide:
        gradebook.write_wide(rows, wide, weights, ids)
    if lms:
        target = lms_out or lms_gradebook.default_path(out, lms)
        for note in lms_gradebook.write(lms, rows, target, weights, ids, lms_columns):
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
    lms_columns: dict | None = None,
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
        lms_columns=lms_columns,
    )
    return rows


if __name__ == "__main__":
    print("this module is run by `python -m grader grade`", file=sys.stderr)
    sys.exit(2)
