"""Warm workers: torch and the grader imported once, every submission run in a fresh process forked from there.

A grading run used to start, for every notebook, a worker, a Jupyter kernel,
``import torch`` and the grader (3-4 s before the learner's first cell), and
for every notebook with exercises one more process importing torch and
generating the exercises' cases (several seconds more). Here a :class:`Pool`
keeps ``jobs`` long-lived *warm parents*. Each is started once, contained the
way :mod:`grader.instructor.grading.containment` contains one submission (with bubblewrap: no
network, its own PID and IPC namespaces, a private capped ``/tmp``, an
allow-listed read-only file system except its own 0700 folder, a user of its
own), imports torch, the grader, every question and IPython, and generates the
exercises' cases. It never runs submitted code itself: for each job (in a
folder with an unpredictable name, see :meth:`Worker.job_folder`) it forks a
child that

* starts a new session, closes every descriptor but its own pipes, takes the
  job's environment (its own home) and folder, and its limits
  (:func:`grader.instructor.grading.containment.set_limits`: processes, file
  size, CPU time, memory beyond what the warm parent maps);
* for a notebook, gets an event stream (``AGL_EVENT_FD``): the progress store
  writes each event there as it happens, and the reply carries it (capped);
* runs the restored notebook's code cells one by one in a fresh IPython shell
  (the same code a kernel runs; a cell past its time limit is interrupted with
  KeyboardInterrupt, as nbclient interrupts a kernel), or the exercise runner
  of :mod:`grader.instructor.grading.learner_function` on a request file.

The warm parent watches the child (its stdout and stderr are counted, never
kept; its messages are capped), and when it ends, dies or runs out of time,
kills every process left in its namespace (without bubblewrap: every
descendant, and every process carrying the job's token), then composes the
report the cold worker would have sent. Before the next job it empties its
folder, ``/tmp``, ``/dev/shm`` and the System V IPC objects of its namespace:
nothing of one submission is there for the next. The warm parent makes itself
non-dumpable, so a child cannot read or write its memory or descriptors
through ``/proc`` or ptrace; a child that kills it gets "worker died" (the run
cannot be trusted), and the pool starts a new one.

Verdicts are never computed here: the child's store is read, and every
answer recomputed, by the grading process, exactly as for the cold path.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from grader.instructor.grading import containment

MESSAGE_CAP = 8 * 2**20
EVENTS_CAP = 8 * 2**20  # bytes of one job's event stream kept
BORROW_S = 3600.0  # a job waits this long for a free warm parent at most (each of its jobs has a timeout)
ACCEPT_S = 300.0  # a warm parent takes a job at once, once warm; (re)starting one imports torch and every unit first
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 4, 36, 1, 38
PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the folder that holds the grader package
# The warm parent's first line (python -I -c BOOT ROOT FOLDER UNITS): -I puts no folder a job could write on the
# module path (no current folder, no PYTHONPATH, no user site); the package's root, read-only in the sandbox, goes first.
BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from grader.instructor.grading.workers import main; sys.exit(main(sys.argv[1:]))"
)


# --- the grading process's side -------------------------------------------------------------------


class Worker:
    """One warm parent, started contained, answering one job at a time.

    Every start is fresh: a new sandbox user, an interpreter that reads no module from a folder a job could write
    (``-I``, the package's root put first on its path by the grading process), and a warm folder emptied of
    whatever a job left there: a job that killed its warm parent has left nothing the next one trusts. Run as
    root, the warm folder belongs to root and only lets the sandbox's user pass (0711): a job writes its own job
    folder (made by the grading process, handed to that user, deleted after the job), its /tmp and /dev/shm, and
    nothing one folder up."""

    def __init__(self, env: dict, units: list | None = None):
        self.units = sorted(units) if units is not None else None
        self.env = dict(env)
        self.jobs = 0
        self.proc: subprocess.Popen | None = None
        self.folder: Path = containment.private_folder("agl-warm-")  # the warm parent's, emptied at each start
        self.ready = False
        self.start()

    def start(self, keep: str = "") -> None:
        """Start a warm parent as a fresh user, in its folder emptied of everything an earlier job may have left
        there (but ``keep``, the folder the grading process made for the job about to run)."""
        _empty(self.folder, keep)
        self.uid = containment.fresh_uid()  # the warm parent and its jobs run as a user of their own
        if self.uid is not None:
            os.chmod(self.folder, 0o711)  # its user passes through to its job folders; it can neither list nor write
        self.token = secrets.token_hex(16)
        sandboxed = containment.bwrap_works()
        scratch = Path("/tmp/agl-warm-parent") if sandboxed else self.folder / "parent"
        if not sandboxed:
            scratch.mkdir(mode=0o700)
        env = dict(self.env, **{containment.TOKEN_VAR: self.token})
        env.update(
            HOME=str(scratch / "home"),
            TMPDIR=str(scratch / "tmp"),
            MPLCONFIGDIR=str(scratch / "mpl"),
            IPYTHONDIR=str(scratch / "ipython"),
            MPLBACKEND="Agg",
            PYTHONUNBUFFERED="1",
        )
        self.reply_r, reply_w = os.pipe()
        env[containment.RESULT_FD_VAR] = str(reply_w)
        units = ",".join(self.units) if self.units is not None else "all"
        root = PACKAGE_ROOT
        cmd = containment.sandboxed(
            [containment.python(), "-I", "-c", BOOT, root, str(self.folder), units], self.folder, uid=self.uid
        )
        self.proc = proc = containment.start_live(
            cmd,
            cwd="/",
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(reply_w,),
        )
        os.close(reply_w)
        assert proc.stderr is not None, "started with its stderr piped"
        self.stderr = containment.Drain(os.dup(proc.stderr.fileno()), 64 * 1024)
        proc.stderr.close()
        self.stderr.start()
        self.buffer = b""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, deadline: float) -> bool:
        """Whether the warm parent said it is ready (torch and the course imported) before ``deadline``."""
        return bool(self._reply(deadline, lambda r: r.get("ready") is True))

    def why(self) -> str:
        """Why a warm parent did not start: the last line it wrote to stderr, or how it ended."""
        self.stderr.join(timeout=2)
        lines = bytes(self.stderr.kept).decode(errors="replace").strip().splitlines()
        code = self.proc.poll() if self.proc is not None else None
        how = f"it ended with exit status {code}" if code is not None else "it did not answer"
        return f"{how}: {lines[-1][:300]}" if lines else how

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        containment.forget(self.proc.pid)
        containment.kill_everything(self.proc.pid, f"{containment.TOKEN_VAR}={self.token}".encode())
        try:
            os.close(self.reply_r)
        except OSError:
            pass
        self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def job_folder(self) -> Path:
        """A fresh folder for one job, named so that no submission can guess or make it first, in the folder of a
        warm parent that is alive (one that a job killed is replaced first, in a fresh folder)."""
        if not self.alive():
            self.stop()
            self.start()
        self.jobs += 1
        for _ in range(5):
            path = self.folder / f"job-{secrets.token_hex(12)}"
            try:
                path.mkdir(mode=0o700)
                return path
            except FileExistsError:
                continue
        raise OSError("no fresh job folder could be made")

    def _reply(self, deadline: float, wanted) -> dict | None:
        """The next line on the reply pipe that ``wanted`` accepts (others are skipped); None when the deadline
        passes, {} when the pipe ends or floods."""
        while True:
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                ready, _, _ = select.select([self.reply_r], [], [], left)
                if not ready:
                    continue
                chunk = os.read(self.reply_r, 1 << 16)
                if not chunk:
                    return {}
                self.buffer += chunk
                if len(self.buffer) > 2 * MESSAGE_CAP + 3 * EVENTS_CAP:
                    return {}
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if isinstance(reply, dict) and wanted(reply):
                return reply

    def run(self, job: dict, timeout: float) -> containment.Finished:
        """Send one job; a :class:`containment.Finished` as if the job had run in a process of its own.

        Each job carries a fresh nonce. The warm parent answers ``{"accepted": nonce}`` when it takes the job
        and puts the nonce in its reply; any other line on the reply pipe is not this job's and is skipped.
        A warm parent that is dead before it accepted the job (the previous job killed it) is replaced and
        the job sent again, so a learner is never charged with what the notebook before theirs did."""
        started = time.monotonic()
        job = dict(
            job,
            timeout=timeout,
            nonce=secrets.token_hex(16),
            write_mb=containment.writable_mb(),
            write_files=containment.writable_files(),
        )
        for attempt in (1, 2):
            if not self.alive():
                self.stop()
                self.start(keep=str(job["dir"]))
            containment.give_to(self.folder / str(job["dir"]), self.uid)
            stdin = self.proc.stdin if self.proc is not None else None  # start() pipes it
            accepted: dict | None
            try:
                if stdin is None:
                    raise ValueError("no warm parent to send the job to")
                stdin.write((json.dumps(job) + "\n").encode())
                stdin.flush()
            except (OSError, ValueError):
                accepted = {}
            else:
                accepted = self._reply(time.monotonic() + ACCEPT_S, lambda r: r.get("accepted") == job["nonce"])
            if accepted:
                break
            self.stop()  # dead, or not answering, before this job began: not this job's doing
            if attempt == 2:
                return Finished_died(started)
        reply = self._reply(started + timeout + 60, lambda r: r.get("nonce") == job["nonce"])
        if not reply:  # the warm parent died (this job's notebook killed it) or stopped answering
            self.stop()
            return Finished_died(started, timed_out=reply is None)
        out = containment.Finished(
            returncode=reply.get("returncode"),
            timed_out=bool(reply.get("timed_out")),
            result=str(reply.get("result", "")).encode("utf-8", "surrogateescape"),
            result_overflow=bool(reply.get("result_overflow")),
            output_bytes=int(reply.get("output_bytes", 0)),
            leftovers=int(reply.get("leftovers", 0)),
            over_cap=str(reply.get("over_cap", ""))[:200],
        )
        if isinstance(reply.get("events"), str):
            out.events = reply["events"].encode("utf-8", "surrogateescape")
        out.seconds = time.monotonic() - started
        return out


def Finished_died(started: float, timed_out: bool = False) -> containment.Finished:
    out = containment.Finished(returncode=-signal.SIGKILL, timed_out=timed_out)
    out.seconds = time.monotonic() - started
    return out


class NoWorker(RuntimeError):
    """Every warm parent stayed busy past the borrowing timeout, or none could start."""


class Pool:
    """``size`` warm parents; ``borrow()`` one (with a timeout), ``give_back()`` it when the job is over."""

    def __init__(self, size: int, env: dict, units: list | None = None):
        """``units``: the units whose exercise cases the warm parents build first (None: every unit).

        The warm parents are started from this thread, the one that keeps the pool: bubblewrap's --die-with-parent
        kills a sandbox when the *thread* that started it ends (a starter thread of its own used to end at once, and
        every warm parent died before its first job, to be started again then). They warm up together; a parent
        that does not say it is ready is :class:`NoWorker` with the reason."""
        self.idle: queue.Queue = queue.Queue()
        self.all = [Worker(env, units) for _ in range(max(1, size))]
        deadline = time.monotonic() + ACCEPT_S
        for w in self.all:
            w.ready = w.wait_ready(deadline)
        broken = [w for w in self.all if not w.ready]
        if broken:
            self.close()
            raise NoWorker(f"the grading workers could not start: {broken[0].why()}")
        for w in self.all:
            self.idle.put(w)

    def borrow(self, timeout: float = BORROW_S) -> Worker:
        """An idle warm parent; :class:`NoWorker` when none comes free within ``timeout`` seconds."""
        try:
            return self.idle.get(timeout=timeout)
        except queue.Empty:
            raise NoWorker(f"no grading worker came free within {timeout:g} s") from None

    def give_back(self, worker: Worker) -> None:
        self.idle.put(worker)

    def close(self) -> None:
        for w in self.all:
            w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def base_env() -> dict:
    """The environment a warm parent starts from (its jobs bring their own): the allow-list of
    :func:`containment.environment`, nothing else of the grading process's."""
    return containment.environment()


# --- the warm parent (runs contained) ------------------------------------------------------------


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _warm(units: list | None = None) -> None:
    """Everything a notebook or an exercise runner would import or build first, done once here."""
    import sqlite3  # noqa: F401

    import ipywidgets  # noqa: F401
    import nbformat  # noqa: F401
    import torch  # noqa: F401
    from IPython.core.interactiveshell import InteractiveShell  # noqa: F401

    import grader  # noqa: F401
    from grader.engine import question
    from grader.engine.kinds import Function

    for q in question.load().values():
        if isinstance(q.kind, Function) and (units is None or q.unit in units):
            q.kind.cases()  # inputs only, never an answer; a child may see them anyway
    try:
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        pass


def _sandboxed() -> bool:
    return containment.inside_sandbox()


def _others() -> list[int]:
    """Processes that are not this warm parent: in its namespace, everything else but PID 1; outside, descendants."""
    me = os.getpid()
    pids = containment.proc_ids()
    if _sandboxed():
        return [p for p in pids if p not in (1, me)]
    parents = {}
    for p in pids:
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if fields[0] not in (b"Z", b"X"):
                parents[p] = int(fields[1])
        except (OSError, IndexError, ValueError):
            pass
    found, frontier = set(), {me}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier and p not in found and p != me}
        found |= frontier
    return sorted(found)


def _kill_rest(token: bytes) -> int:
    killed: set[int] = set()
    for _ in range(10):
        pids = set(_others())
        if not _sandboxed():
            pids.update(p for p in containment.proc_ids() if containment.carries(p, token))
        pids.discard(os.getpid())
        if not pids:
            break
        killed |= containment.kill_each(pids)
        _reap()
        time.sleep(0.02)
    _reap()
    return len(killed)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _remove(path: str) -> None:
    """Delete ``path`` and all below it, first giving back the permissions a job took from its own folders (a folder
    made 0500 keeps what it holds from rmtree): everything here belongs to the job's user, the warm parent's own."""
    stack = [path]
    while stack:
        top = stack.pop()
        try:
            info = os.lstat(top)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            try:
                os.unlink(top)
            except OSError:
                pass
            continue
        try:
            os.chmod(top, 0o700)
            names = os.listdir(top)
        except OSError:
            names = []
        if names:
            stack += [top, *(os.path.join(top, n) for n in names)]  # the folder again, once emptied
        else:
            try:
                os.rmdir(top)
            except OSError:
                pass


def _empty(folder: Path, keep: str | set = "") -> list[str]:
    """Remove everything in ``folder`` but ``keep``; what could not be removed, by name."""
    keep = {keep} if isinstance(keep, str) else set(keep)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        if name not in keep:
            _remove(str(folder / name))
    try:
        return [n for n in os.listdir(folder) if n not in keep]
    except OSError:
        return []


def _under(base: str, folder: Path) -> str:
    """The entry of ``base`` that leads to ``folder`` (its bind mount lives there), or ""."""
    try:
        return folder.resolve().relative_to(base).parts[0]
    except (ValueError, IndexError):
        return ""


def _clear_ipc() -> None:
    """Remove the System V shared memory, queues and semaphores a child left in this IPC namespace."""
    if not _sandboxed():
        return  # outside a namespace these belong to everyone; leave them
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    for table, call in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", libc.semctl)):
        try:
            with open(f"/proc/sysvipc/{table}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            try:
                ident = int(line.split()[1])
                call(ident, 0, 0) if table == "sem" else call(ident, 0, None)  # IPC_RMID
            except (ValueError, IndexError, OSError):
                pass


def _clean(folder: Path, keep: str) -> bool:
    """Nothing left of a job for the next one; False where something could not be removed (the warm parent then
    ends, and the next job gets a fresh one: a new sandbox, new /tmp and /dev/shm)."""
    left = _empty(folder, keep)
    if _sandboxed():
        from grader.instructor.grading.containment import code_paths

        left += _empty(Path("/tmp"), keep={_under("/tmp", folder)} | {_under("/tmp", p) for p in code_paths()})
        left += _empty(Path("/dev/shm"))
    _clear_ipc()
    return not left


def _child(job: dict, work: Path, fds: dict, cells: list) -> None:
    """In the forked child: become the job's own process, then run it. Never returns."""
    code = 0
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(fds["out"], 1)
        os.dup2(fds["err"], 2)
        msg = fds["msg"]
        events = fds.get("events")
        keep = sorted({0, 1, 2, msg} | ({events} if events is not None else set()))
        for low, high in zip(keep, keep[1:] + [65536]):
            os.closerange(low + 1, high)
        os.set_inheritable(msg, False)
        if events is not None:
            os.set_inheritable(events, False)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _prctl(PR_SET_DUMPABLE, 1)  # the warm parent (not dumpable) reads what the job holds open in /proc/PID/fd
        env = {str(k): str(v) for k, v in job.get("env", {}).items()}
        os.environ.clear()
        os.environ.update(env)
        if events is not None:
            os.environ[containment.EVENT_FD_VAR] = str(events)
        os.chdir(work)
        memory = int(job.get("memory_mb", 0))
        space = containment.address_space_now() + memory if memory else 0  # beyond what the warm parent maps
        containment.set_limits(memory, float(job.get("timeout", 600)), space, int(job.get("write_mb", 0)))
        sys.stdout = open(1, "w", closefd=False, buffering=1)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        if job["kind"] == "notebook":
            _run_cells(cells, int(job.get("cell_timeout", 60)), msg)
        else:
            os.dup2(os.open(work / "request.json", os.O_RDONLY | os.O_NOFOLLOW), 0)
            sys.stdin = open(0, closefd=False)
            os.environ[containment.RESULT_FD_VAR] = str(msg)
            from grader.instructor.grading import learner_function as run_learner_function

            code = run_learner_function.main()
    except BaseException:  # noqa: BLE001 - the child's end, whatever happened
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
        os._exit(code or 0)


def _run_cells(cells: list, cell_timeout: int, msg: int) -> None:
    """Run each code cell as a kernel would: errors recorded, a cell past its time interrupted, the rest still run."""
    if os.environ.get("AGL_SEAL") == "1":  # imported before the job's environment: seal the answer key now
        from grader.learner.api import seal_for_grading

        seal_for_grading()
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    def send(item):
        containment.send(msg, (json.dumps(item) + "\n").encode())

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    signal.signal(signal.SIGALRM, interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for index, source in cells:
        send({"cell": index})
        error = None
        try:
            signal.setitimer(signal.ITIMER_REAL, cell_timeout)
            result = shell.run_cell(source, store_history=False)
            error = result.error_before_exec or result.error_in_exec
        except KeyboardInterrupt as exc:
            error = exc
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if error is not None:
            send({"cell": index, "ename": type(error).__name__, "evalue": str(error)[:200]})
        if getattr(shell, "exit_now", False):
            os._exit(0)  # exit() in a cell ends a kernel: the report says so
    send({"done": True})


def _measured(folder: Path, work: Path) -> tuple[list[str], list[str]]:
    """What a job can write, to measure together (see :func:`containment.writable_places`): its job folder, or the
    whole warm folder where the job's user may write there too (no user of its own: the grader was not run as
    root), and the sandbox's /tmp and /dev/shm."""
    writable = folder if os.access(folder, os.W_OK | os.R_OK) else work
    return containment.writable_places(writable, inside=_sandboxed())


def _watch(pid: int, fds: dict, timeout: float, places: tuple | None = None, caps: tuple = (0, 0)) -> dict:
    """Drain the child's pipes (counting output, keeping messages up to a cap) until it ends or time runs out;
    a child that wrote past ``caps`` (bytes, entries) in ``places`` (:func:`_measured`: every writable place
    together) is stopped too."""
    deadline = time.monotonic() + timeout
    measured, over_cap = 0.0, ""
    max_bytes, max_entries = caps
    open_fds = {fds["out_r"]: "out", fds["err_r"]: "err", fds["msg_r"]: "msg"}
    if "events_r" in fds:
        open_fds[fds["events_r"]] = "events"
    output, messages, overflow, events = 0, bytearray(), False, bytearray()
    status, timed_out = None, False

    def read(fd):
        nonlocal output, overflow
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            open_fds.pop(fd, None)
            os.close(fd)
            return
        if open_fds[fd] == "events":
            events.extend(chunk[: max(EVENTS_CAP - len(events), 0)])
        elif open_fds[fd] == "msg":
            room = MESSAGE_CAP - len(messages)
            messages.extend(chunk[: max(room, 0)])
            overflow = overflow or len(chunk) > room
        else:
            output += len(chunk)

    while status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        if open_fds:
            ready, _, _ = select.select(list(open_fds), [], [], min(left, 0.2))
        else:
            ready = []
            time.sleep(0.02)
        for fd in ready:
            read(fd)
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
        elif places is not None and time.monotonic() - measured > containment.WATCH_S:
            measured = time.monotonic()
            held = _others()  # the job's processes: what they hold open is theirs too (unlinked files, memfd)
            over_cap = containment.usage(places[0], max_bytes, max_entries, places[1], held).over(
                max_bytes, max_entries
            )
            if over_cap:
                break
    if status is None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        _, status = os.waitpid(pid, 0)
    return {
        "status": status,
        "timed_out": timed_out,
        "open": open_fds,
        "output": output,
        "messages": messages,
        "overflow": overflow,
        "events": events,
        "read": read,
        "over_cap": over_cap,
    }


def _job(job: dict, folder: Path) -> dict:
    work = folder / str(job["dir"])
    token = str(job.get("env", {}).get(containment.TOKEN_VAR, "")).encode()
    cells = []
    names: dict[int, str] = {}  # index -> the cell as the learner sees it, for the report's problems
    if job["kind"] == "notebook":
        import nbformat

        nb = nbformat.reads(
            containment.read_capped(work / "submission.ipynb", 64 * 2**20).decode("utf-8"), as_version=4
        )
        total = len(nb.cells)
        for index, cell in enumerate(nb.cells):
            if cell.get("cell_type") == "code":
                src = cell.get("source", "")
                cells.append((index, "".join(src) if isinstance(src, list) else str(src)))
                names[index] = containment.cell_name(index, cell)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    msg_r, msg_w = os.pipe()
    ends = {"out": out_w, "err": err_w, "msg": msg_w}
    reads = {"out_r": out_r, "err_r": err_r, "msg_r": msg_r}
    if job["kind"] == "notebook":  # the progress store writes each event there as it happens
        reads["events_r"], ends["events"] = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(job, work, ends, cells)
    for fd in ends.values():
        os.close(fd)
    places = _measured(folder, work)  # every place it can write, together (RLIMIT_FSIZE caps one file)
    caps = (int(job.get("write_mb") or containment.WRITABLE_MB) * 2**20, int(job.get("write_files") or 0))
    w = _watch(pid, reads, float(job.get("timeout", 600)), places, (caps[0], caps[1] or containment.FILES_CAP))
    leftovers = _kill_rest(b"%s=%s" % (containment.TOKEN_VAR.encode(), token))
    end = time.monotonic() + 5
    while w["open"] and time.monotonic() < end:  # everything that held the pipes is dead: read to the end
        ready, _, _ = select.select(list(w["open"]), [], [], 0.2)
        for fd in ready:
            w["read"](fd)
    for fd in list(w["open"]):
        os.close(fd)
    status = w["status"]
    code = os.waitstatus_to_exitcode(status)
    reply = {"returncode": 0, "timed_out": w["timed_out"], "output_bytes": w["output"], "leftovers": 0}
    reply["over_cap"] = w["over_cap"]
    if job["kind"] == "notebook":
        if w["timed_out"]:
            reply["returncode"] = -signal.SIGKILL
        else:
            report = _report(w["messages"], code, total, int(job.get("cell_timeout", 60)), leftovers, names)
            reply["result"] = json.dumps(report) + "\n"
            reply["events"] = bytes(w["events"]).decode("utf-8", "surrogateescape")
        reply["leftovers"] = 0
    else:
        reply["returncode"] = code
        reply["result"] = bytes(w["messages"]).decode("utf-8", "surrogateescape")
        reply["result_overflow"] = w["overflow"]
        reply["leftovers"] = leftovers
    return reply


def _report(raw: bytes, code: int, cells: int, cell_timeout: int, leftovers: int, names: dict | None = None) -> dict:
    """The cold worker's report (see grader/instructor/grading/notebook_worker.py), from what the child said and how it
    ended; ``names`` say each cell as the learner sees it (:func:`containment.cell_name`)."""
    names = names or {}
    report: dict[str, Any] = {"status": "ok", "problems": [], "cells": cells, "leftovers": leftovers}  # a JSON line
    done, running = False, None
    for line in bytes(raw).splitlines()[:100_000]:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if item.get("done") is True:
            done = True
        if isinstance(item.get("cell"), int) and set(item) == {"cell"}:
            running = item["cell"]  # the cell it started last
        name = item.get("ename")
        if not isinstance(name, str) or not isinstance(item.get("cell"), int):
            continue
        evalue = str(item.get("evalue", ""))
        where = names.get(item["cell"], f"cell {item['cell'] + 1}")
        if name == "KeyboardInterrupt":
            report["problems"].append(f"{where} ran past {cell_timeout} s and was stopped")
            if report["status"] == "ok":
                report["status"] = "timed out"
        else:
            report["problems"].append(f"{where} raised {name[:60]}: {evalue[:120]}")
            if name == "MemoryError" or "can't allocate memory" in evalue:
                report["status"] = "out of memory"
            elif report["status"] == "ok":
                report["status"] = "cell errors"
    if not done:
        report["status"] = "kernel died"
        where = f"while {names.get(running, f'cell {running + 1}')} ran " if isinstance(running, int) else ""
        report["problems"].append(f"the kernel died {where}(a crash, os._exit, or memory)")
    report["problems"] = report["problems"][:50]
    return report


def serve(folder: Path, units: list | None = None) -> int:
    """The warm parent's loop: one JSON job per line on stdin, one JSON reply per line on the result pipe."""
    reply_fd = containment.result_pipe()
    for name in ("HOME", "TMPDIR", "MPLCONFIGDIR", "IPYTHONDIR"):  # its own scratch (a job's are in its folder)
        os.makedirs(os.environ.get(name, "/tmp"), mode=0o700, exist_ok=True)
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _warm(units)
    containment.send(reply_fd, b'{"ready": true}\n')
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return 0
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        try:
            job = json.loads(line)
            if not (
                isinstance(job, dict)
                and isinstance(job.get("nonce"), str)
                and isinstance(job.get("dir"), str)
                and job.get("kind") in ("notebook", "exercises")
            ):
                raise ValueError
        except ValueError:
            continue  # not a job the grading process sent
        containment.send(reply_fd, (json.dumps({"accepted": job["nonce"]}) + "\n").encode())
        _clean(folder, job["dir"])
        try:
            reply = _job(job, folder)
        except Exception as exc:  # noqa: BLE001 - the worker's own failure: the job cannot be trusted
            reply = {"returncode": 70, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        _reap()
        reply["nonce"] = job["nonce"]
        containment.send(reply_fd, (json.dumps(reply) + "\n").encode())
        if not _clean(folder, ""):  # a job left what cannot be removed: no later job may meet it
            return 75


def main(argv: list[str]) -> int:
    """``FOLDER [UNITS]``: serve jobs in FOLDER, the exercises of UNITS (comma-separated, or "all") made first."""
    wanted = argv[1] if len(argv) > 1 else "all"
    return serve(Path(argv[0]), None if wanted == "all" else [u for u in wanted.split(",") if u])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
