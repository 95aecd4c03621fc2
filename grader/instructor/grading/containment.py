"""Contain one untrusted process: its own session, a private folder, capped output, a result pipe, nothing left behind.

``run(cmd, ...)`` starts ``cmd`` in a new session inside a private working
folder and returns a :class:`Finished` that says how it ended. What it hands
back comes through a pipe (file descriptor ``AGL_RESULT_FD`` in its
environment), never through a file it could have swapped; its stdout and
stderr are drained by the parent and only the first ``output_cap`` bytes kept.
When it ends, or runs past ``timeout``, everything it started is killed: its
process group, its session, and any process carrying its private token in the
environment.

Where bubblewrap (``bwrap``) works, the process runs with no network and its
own PID namespace (whatever it leaves behind dies with it), and sees only an
allow-list bound read-only (``_system_binds``: /usr, the library folders, a few
/etc files; ``code_paths``: this Python, its environment and the ``grader``
package folder alone, never the repository's solutions/, tests/ or .git); its
own folder is its only writable place besides a private ``/tmp`` and
``/dev/shm``, each a tmpfs of ``writable_mb()`` MB. No /run, /var or host socket
is there. Run by root, it becomes a fresh unprivileged user of its own
(``fresh_uid``, through ``setpriv``: no capabilities, no_new_privs), so
root-only files are closed to it and ``RLIMIT_NPROC`` holds. ``set_limits``
caps, in the contained process, processes, file size, CPU time and memory
(``RLIMIT_AS`` counts shared mappings too). ``isolation()`` names what is in
use; the gradebook reports it.

A contained process starts from an allow-listed environment (:func:`environment`): the locale, the time zone,
torch's thread counts and the course's own pace switch, a PATH of the system folders and this Python's, and
nothing else of the grading process's (a token in the instructor's shell never reaches a submission).
Everything it may write (its folder, and in bubblewrap its /tmp and /dev/shm) is measured together, bytes and
entries (:func:`usage`): a process past :func:`writable_mb` MB or :func:`writable_files` entries is stopped.
Interpreters are started by an absolute path (:func:`python`), whatever folder the grader was started from.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

TOKEN_VAR = "AGL_CONTAINED"
RESULT_FD_VAR = "AGL_RESULT_FD"
EVENT_FD_VAR = "AGL_EVENT_FD"  # the progress store writes each event there as a line, as it happens
SANDBOX_VAR = "AGL_SANDBOX"  # "bwrap" inside bubblewrap's sandbox (set by sandboxed())
EVENTS_STREAM_CAP = 64 * 2**20  # bytes of streamed events kept

_bwrap_ok: bool | None = None
ADOPTING = False  # set when this process is a subreaper (grade does it): orphans come to us
_LIVE: set[int] = set()  # contained processes still running, never taken for orphans (see start_live)
_LIVE_LOCK = threading.Lock()


def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can make the namespaces it needs here (checked once)."""
    global _bwrap_ok
    if _bwrap_ok is None:
        exe = shutil.which("bwrap")
        if not exe or os.environ.get("AGL_NO_BWRAP"):
            _bwrap_ok = False
        else:
            try:
                probe = subprocess.run([exe, *_bwrap_base(), "--", "/bin/true"], capture_output=True, timeout=30)
                _bwrap_ok = probe.returncode == 0
            except (OSError, subprocess.SubprocessError):
                _bwrap_ok = False
    return _bwrap_ok


def isolation() -> str:
    """The words the gradebook uses for the isolation in force."""
    if bwrap_works():
        return "bubblewrap: no network, private capped /tmp, own PID namespace, allow-listed read-only file system"
    return "process session only (no bubblewrap): network and file system reachable"


WRITABLE_MB = 256  # default size of each writable place in the sandbox (/tmp, /dev/shm); AGL_WRITABLE_MB overrides
NPROC_CAP = 256  # processes and threads of one sandbox's own user (a warm parent and its job together)
FIRST_UID = 200_000  # sandbox users are drawn from FIRST_UID up (no passwd entry; never a real user)
AS_ALLOWANCE_MB = 1024  # address space a fresh interpreter needs for torch before the notebook's own memory
_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "passwd",
    "group",
    "nsswitch.conf",
    "ssl",
    "ca-certificates",
    "mime.types",
    "os-release",
)


FILES_CAP = 20_000  # default: entries (files, folders, links) a submission may make; AGL_WRITABLE_FILES overrides
KEPT_ENV = (  # what a contained process keeps of the grading process's environment (see environment())
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_COLLATE",
    "LC_MESSAGES",
    "TZ",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "AUTOGRAD_LAB_TIME_SCALE",
)


def python() -> str:
    """This interpreter by an absolute, normalised path that keeps its virtual environment.

    ``sys.executable`` is the path the grader was started by, joined to the folder it was started from:
    ``../course/.venv/bin/python`` run in ``/srv/submissions`` gives ``/srv/submissions/../course/.venv/bin/python``,
    a path that does not exist inside the sandbox (whose /tmp, say, is its own). The folder is resolved, the name
    kept: resolving the name too would leave the virtual environment for the interpreter it links to."""
    exe = Path(sys.executable or "python3")
    return str(exe.absolute().parent.resolve() / exe.name)


def environment(**settings: str) -> dict:
    """The environment a contained process starts from: the allow-list KEPT_ENV of this process's, a PATH of
    this Python's folder and the system's, a user name (torch's compiler names its cache after it; the sandbox's
    user has no passwd entry), then ``settings``. No other variable of the grading process is passed on."""
    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    env["PATH"] = os.pathsep.join([str(Path(python()).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    env.update(USER="learner", LOGNAME="learner", LANG=env.get("LANG", "C.UTF-8"))
    env.update({k: str(v) for k, v in settings.items()})
    return env


def writable_files() -> int:
    """Entries a submission may make in all its writable places together: AGL_WRITABLE_FILES, else FILES_CAP."""
    try:
        return max(100, int(os.environ.get("AGL_WRITABLE_FILES", "")))
    except ValueError:
        return FILES_CAP


@dataclass
class Usage:
    bytes: int = 0
    entries: int = 0

    def over(self, max_bytes: int, max_entries: int) -> str:
        """What a process that wrote this much went past, in words ("" where it stayed within both caps)."""
        if self.bytes > max_bytes:
            return f"it wrote more than {max_bytes // 2**20} MB into its folder and was stopped"
        if self.entries > max_entries:
            return f"it made more than {max_entries:,} files and folders and was stopped"
        return ""


def held_bytes(pids: Iterable[int]) -> int:
    """Bytes of the files ``pids`` hold open that no folder shows: unlinked while open, and memory files
    (``memfd_create``), which no rlimit on memory counts. Each file once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                info = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


def usage(
    places: list[str], max_bytes: int = 0, max_entries: int = 0, skip: Iterable[str] = (), pids: Iterable[int] = ()
) -> Usage:
    """Bytes on disk and entries under ``places`` together (links not followed, ``skip``'s paths left out), and
    the bytes of the files ``pids`` hold open that no folder shows (:func:`held_bytes`); counting stops once past
    either cap. A place that cannot be listed counts nothing."""
    out = Usage(bytes=held_bytes(pids))
    skipped = {str(p) for p in skip}
    for place in places:
        for top, dirs, files in os.walk(place):
            dirs[:] = [d for d in dirs if os.path.join(top, d) not in skipped]
            for name in files + dirs:
                out.entries += 1
                try:
                    out.bytes += os.lstat(os.path.join(top, name)).st_blocks * 512
                except OSError:
                    continue
            if (max_bytes and out.bytes > max_bytes) or (max_entries and out.entries > max_entries):
                return out
    return out


def writable_mb() -> int:
    """The size of each writable tmpfs (/tmp, /dev/shm, a job's folder cap): AGL_WRITABLE_MB, else WRITABLE_MB."""
    try:
        return max(8, int(os.environ.get("AGL_WRITABLE_MB", "")))
    except ValueError:
        return WRITABLE_MB


def _system_binds() -> list[str]:
    """Read-only binds of what a Python process needs from the host: /usr, the library folders, a few /etc files."""
    out: list[str] = ["--perms", "0755", "--dir", "/etc"]
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        path = Path(top)
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            out += ["--ro-bind", top, top]
    for name in _ETC:
        path = Path("/etc") / name
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), str(path)]
        elif path.exists():
            out += ["--ro-bind", str(path), str(path)]
    return out


def _bwrap_base() -> list[str]:
    # Run by root, bubblewrap leaves the sandboxed process every capability unless told otherwise; with them
    # it could open /proc/<parent>/fd/* of a non-dumpable parent (a warm worker's pipes) or ptrace it. Only
    # those it needs to enter its folder and become its own unprivileged user (see sandboxed()) are kept, and
    # lost at that step (a change to a user other than root clears every capability).
    drop = ["--cap-drop", "ALL"] if os.geteuid() == 0 else []
    if drop and _drop_to() is not None:
        drop += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_DAC_OVERRIDE"]
    size = str(writable_mb() * 2**20)
    return [
        *drop,
        *_system_binds(),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--perms",
        "1777",
        "--size",
        size,
        "--tmpfs",
        "/tmp",
        "--perms",
        "1777",
        "--size",
        size,
        "--tmpfs",
        "/dev/shm",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
    ]


def _drop_to() -> str | None:
    """setpriv, when this process is root and can hand the sandbox to a user of its own; else None."""
    return shutil.which("setpriv") if os.geteuid() == 0 else None


def fresh_uid() -> int | None:
    """A user id no one else uses, for one sandbox (its process cap counts per user), or None when not root."""
    return FIRST_UID + secrets.randbelow(1_000_000) if _drop_to() and bwrap_works() else None


def give_to(path: Path, uid: int | None) -> None:
    """Hand a folder this process made (and everything in it) to the sandbox's user."""
    if uid is None:
        return
    os.lchown(path, uid, uid)
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(top, name), uid, uid)


def set_limits(memory_mb: int = 0, cpu_s: float = 0, address_space_mb: int = 0, write_mb: int = 0) -> None:
    """In a contained process, before it runs submitted code: rlimits on processes, file size, CPU time and
    memory (RLIMIT_DATA, and RLIMIT_AS, which also counts shared mappings). RLIMIT_NPROC holds only for a
    user other than root: the sandbox's own (see sandboxed())."""
    import resource

    def cap(which: int, value: int) -> None:
        try:
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_CORE, 0)
    if os.geteuid() >= FIRST_UID:  # a user of its own (fresh_uid()); the count would include others' otherwise
        cap(resource.RLIMIT_NPROC, NPROC_CAP)
    cap(resource.RLIMIT_FSIZE, (write_mb or writable_mb()) * 2**20)
    if cpu_s:
        cap(resource.RLIMIT_CPU, int(cpu_s) + 1)
    if memory_mb:
        cap(resource.RLIMIT_DATA, memory_mb * 2**20)
        cap(resource.RLIMIT_AS, (address_space_mb or memory_mb) * 2**20)


def address_space_now() -> int:
    """This process's mapped address space in MB (VmSize)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def private_folder(prefix: str = "agl-") -> Path:
    """A fresh folder with an unpredictable name, readable by this user only (0700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix + secrets.token_hex(8) + "-"))
    os.chmod(path, 0o700)
    return path


# --- reading files the contained process could have replaced ------------------------------------


class UnsafeFile(Exception):
    """A file that is missing, not a plain file, a link, or too large; the text says which."""


def read_capped(path: Path, cap: int) -> bytes:
    """Read a plain file without following links or blocking on a FIFO, refusing more than ``cap`` bytes."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise UnsafeFile("missing") from None
    except OSError as exc:
        raise UnsafeFile(f"unreadable ({exc.strerror})") from None
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile("a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile("not a plain file (a folder, FIFO or device)")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise UnsafeFile(f"unreadable ({exc.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFile("not a plain file (swapped while opened)")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise UnsafeFile(f"larger than {cap:,} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


# --- draining a pipe with a cap -------------------------------------------------------------------


class Drain(threading.Thread):
    """Reads a pipe to its end, keeping the first ``cap`` bytes and counting the rest."""

    def __init__(self, fd: int, cap: int):
        super().__init__(daemon=True)
        self.fd, self.cap = fd, cap
        self.kept = bytearray()
        self.total = 0

    def run(self):
        try:
            while True:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    break
                self.total += len(chunk)
                room = self.cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except OSError:
            pass
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass


@dataclass
class Finished:
    returncode: int | None  # negative: killed by that signal
    timed_out: bool = False
    result: bytes = b""  # what came through the result pipe (capped)
    result_overflow: bool = False
    stdout: bytes = b""
    stderr: bytes = b""
    output_bytes: int = 0  # stdout + stderr written in all
    leftovers: int = 0  # processes still alive after it ended, killed
    seconds: float = 0.0
    events: bytes | None = None  # the event stream (EVENT_FD_VAR), when one was asked for
    notes: list = field(default_factory=list)
    over_cap: str = ""  # what it wrote past (Usage.over), when it was stopped for writing too much

    @property
    def died(self) -> bool:
        return not self.timed_out and self.returncode != 0


# --- starting, finding and killing what it started ------------------------------------------------


def start_live(cmd: list[str], **popen) -> subprocess.Popen:
    """``subprocess.Popen(cmd, **popen)`` in a session of its own, registered as a live contained process (which
    :func:`kill_everything`, adopting orphans, never takes for one of them) until :func:`forget` is called."""
    with _LIVE_LOCK:
        proc = subprocess.Popen(cmd, start_new_session=True, **popen)
        _LIVE.add(proc.pid)
    return proc


def forget(pid: int) -> None:
    """A contained process that has ended: no longer live (see :func:`start_live`)."""
    with _LIVE_LOCK:
        _LIVE.discard(pid)


def proc_ids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def _belongs(pid: int, session: int, token: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        if fields[0] in (b"Z", b"X"):
            return False  # already dead, waiting to be reaped
        if int(fields[3]) == session or int(fields[2]) == session:  # session id, process group id
            return True
        if ADOPTING and int(fields[1]) == os.getpid() and pid not in _LIVE:
            return True  # an orphan reparented to us: something a submission left behind
    except (OSError, IndexError, ValueError):
        return False
    return carries(pid, token)


def carries(pid: int, token: bytes) -> bool:
    """Whether process ``pid``'s environment holds ``token`` (the TOKEN_VAR entry every contained process and its
    children carry); False where it cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return token in f.read(1 << 20).split(b"\0")
    except OSError:
        return False


def kill_each(pids: Iterable[int]) -> set[int]:
    """SIGKILL each of ``pids``; the ones the signal reached."""
    killed: set[int] = set()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        except OSError:
            pass
    return killed


def inside_sandbox() -> bool:
    """Whether this process runs inside bubblewrap's sandbox (its own PID, IPC and mount namespaces)."""
    return os.environ.get(SANDBOX_VAR) == "bwrap"


def kill_everything(session: int, token: bytes) -> int:
    """SIGKILL every process in ``session`` or carrying ``token``; return how many were found."""
    me = os.getpid()
    found: set[int] = set()
    for _ in range(5):  # a process may fork while we look: look again until none are left
        with _LIVE_LOCK:
            pids = [p for p in proc_ids() if p != me and _belongs(p, session, token)]
        if not pids:
            break
        found |= kill_each(pids)
        time.sleep(0.05)
    try:
        os.killpg(session, signal.SIGKILL)
    except OSError:
        pass
    if ADOPTING:  # reap the orphans we killed, so they do not linger as zombies
        for pid in [p for p in proc_ids() if p not in _LIVE]:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    if int(f.read().rsplit(b")", 1)[1].split()[1]) != me:
                        continue
                os.waitpid(pid, os.WNOHANG)
            except (OSError, IndexError, ValueError, ChildProcessError):
                pass
    return len(found)


def code_paths() -> list[Path]:
    """What the contained process reads besides the system (see _system_binds): this Python and its environment
    (sys.prefix, sys.base_prefix, the interpreter's folder) and the grader package, bound read-only at their
    own paths. Never the repository around the package: not solutions/, tests/, notebooks/ or .git."""
    import grader

    wanted = [
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.executable).resolve().parent,
        Path(grader.__file__).resolve().parent,
    ]
    out: list[Path] = []
    for path in sorted({p.resolve() for p in wanted}, key=lambda p: len(p.parts)):
        if not any(o == path or o in path.parents for o in out):
            out.append(path)
    return out


def _folders_above(paths: list[Path]) -> list[str]:
    """``--dir`` for each folder above a bind's destination, world-traversable (bwrap would make them 0700)."""
    made: list[str] = []
    out: list[str] = []
    for path in paths:
        for parent in reversed(Path(path).parents):
            text = str(parent)
            # under /tmp too: the sandbox's /tmp is a fresh tmpfs, and a checkout under /tmp is bound onto it
            if text == "/" or text == "/tmp" or text in made or parent.parts[1] in ("dev", "proc", "usr"):
                continue
            made.append(text)
            out += ["--perms", "0755", "--dir", text]
    return out


def sandboxed(cmd: list[str], workdir: Path, sandbox: bool | None = None, uid: int | None = None) -> list[str]:
    """``cmd`` wrapped in bubblewrap where it works (``sandbox=False``: never), with ``workdir`` its only writable
    folder; with ``uid`` (see fresh_uid()) it runs as that user, without capabilities and with no_new_privs."""
    use_bwrap = bwrap_works() if sandbox is None else (sandbox and bwrap_works())
    exe = shutil.which("bwrap")  # bwrap_works() found it
    if not use_bwrap or exe is None:
        return list(cmd)
    import grader

    package_root = Path(grader.__file__).resolve().parent.parent
    code = [arg for path in code_paths() for arg in ("--ro-bind", str(path), str(path))]
    become: list[str] = []
    drop = _drop_to() if uid is not None else None
    if drop:
        become = [drop, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
        become += ["--no-new-privs", "--"]
    return [
        exe,
        *_bwrap_base(),
        *_folders_above(code_paths()),
        *code,
        "--bind",
        str(workdir),
        str(workdir),
        "--chdir",
        str(workdir),
        "--setenv",
        SANDBOX_VAR,
        "bwrap",
        "--setenv",
        "AGL_WRITABLE_MB",
        str(writable_mb()),
        "--setenv",
        "PYTHONPATH",
        str(package_root),
        "--",
        *become,
        *cmd,
    ]


def run(
    cmd: list[str],
    workdir: Path,
    env: dict,
    timeout: float,
    *,
    stdin: bytes = b"",
    output_cap: int = 64 * 1024,
    result_cap: int = 8 * 2**20,
    sandbox: bool | None = None,
    events: bool = False,
) -> Finished:
    """Run ``cmd`` contained (see the module's text); never raises for anything the process does.

    ``events``: also give it an event stream (a pipe named by ``EVENT_FD_VAR``), read into ``Finished.events``."""
    started = time.monotonic()
    token = secrets.token_hex(16)
    env = dict(env, **{TOKEN_VAR: token})
    pipes = _Pipes(events)
    env.update(pipes.names())
    uid = fresh_uid() if sandbox is not False else None
    if uid is not None:
        give_to(workdir, uid)
    try:
        proc = start_live(
            sandboxed(cmd, workdir, sandbox, uid),
            cwd=workdir,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pipes.passed(),
        )
    except OSError as exc:
        pipes.close_all()
        return Finished(returncode=None, notes=[f"could not start: {exc}"])
    drains = pipes.drain(proc, output_cap, result_cap)
    threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
    out = Finished(returncode=None)
    _wait(proc, out, started + timeout, workdir, f"{TOKEN_VAR}={token}".encode())
    _stop(proc, out)
    out.leftovers = kill_everything(proc.pid, f"{TOKEN_VAR}={token}".encode())
    _collect(drains, out, result_cap)
    out.seconds = time.monotonic() - started
    return out


class _Pipes:
    """The pipes a contained process writes back through: its result, and (``events``) its event stream."""

    def __init__(self, events: bool):
        self.result_r, self.result_w = os.pipe()
        self.events_r: int | None = None
        self.events_w: int | None = None
        if events:
            self.events_r, self.events_w = os.pipe()

    def names(self) -> dict:
        out = {RESULT_FD_VAR: str(self.result_w)}
        return {**out, EVENT_FD_VAR: str(self.events_w)} if self.events_w is not None else out

    def passed(self) -> tuple:
        return tuple(fd for fd in (self.result_w, self.events_w) if fd is not None)

    def close_all(self) -> None:
        for fd in (self.result_r, self.result_w, self.events_r, self.events_w):
            if fd is not None:
                os.close(fd)

    def drain(self, proc: subprocess.Popen, output_cap: int, result_cap: int) -> list[Drain]:
        """The process started: our ends of its writing pipes closed, each of its outputs drained (capped)."""
        for fd in self.passed():
            os.close(fd)
        assert proc.stdout is not None and proc.stderr is not None, "run() starts it with both piped"
        drains = [
            Drain(os.dup(proc.stdout.fileno()), output_cap),
            Drain(os.dup(proc.stderr.fileno()), output_cap),
            Drain(self.result_r, result_cap),
        ]
        if self.events_r is not None:
            drains.append(Drain(self.events_r, EVENTS_STREAM_CAP))
        proc.stdout.close()
        proc.stderr.close()
        for d in drains:
            d.start()
        return drains


def _feed(proc: subprocess.Popen, stdin: bytes) -> None:
    assert proc.stdin is not None, "run() starts it with its stdin piped"
    try:
        proc.stdin.write(stdin)
    except (OSError, ValueError):
        pass
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass


def _stop(proc: subprocess.Popen, out: Finished) -> None:
    """A process still running (past its time, or its caps) killed with its group; no longer live."""
    if out.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        try:
            out.returncode = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            out.notes.append("the process could not be stopped")
    forget(proc.pid)


def _collect(drains: list[Drain], out: Finished, result_cap: int) -> None:
    for d in drains:
        d.join(timeout=5)
    stdout_d, stderr_d, result_d = drains[:3]
    if len(drains) > 3:
        out.events = bytes(drains[3].kept)
    out.stdout, out.stderr = bytes(stdout_d.kept), bytes(stderr_d.kept)
    out.output_bytes = stdout_d.total + stderr_d.total
    out.result = bytes(result_d.kept)
    out.result_overflow = result_d.total > result_cap


WATCH_S = 0.5  # how often what a contained process wrote is measured


def _wait(proc: subprocess.Popen, out: Finished, deadline: float, workdir: Path, token: bytes = b"") -> None:
    """Wait for ``proc`` until ``deadline``, measuring what it wrote every WATCH_S seconds: past a cap, stop waiting
    (``out.over_cap`` says which); past the deadline, ``out.timed_out``."""
    max_bytes, max_entries = writable_mb() * 2**20, writable_files()
    while out.returncode is None:
        left = deadline - time.monotonic()
        if left <= 0:
            out.timed_out = True
            return
        try:
            out.returncode = proc.wait(timeout=min(WATCH_S, left))
        except subprocess.TimeoutExpired:
            places, skip = writable_places(workdir, proc.pid)
            with _LIVE_LOCK:
                pids = [p for p in proc_ids() if _belongs(p, proc.pid, token)] if token else []
            out.over_cap = usage(places, max_bytes, max_entries, skip, pids).over(max_bytes, max_entries)
            if out.over_cap:
                return


def _sandbox_root(pid: int) -> str | None:
    """The root folder, seen from here, of the bubblewrap sandbox ``pid`` started (/proc/CHILD/root), or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = f.read().split()
    except OSError:
        return None
    return f"/proc/{children[0]}/root" if children else None


def writable_places(workdir: Path, pid: int | None = None, inside: bool = False) -> tuple[list[str], list[str]]:
    """Where a contained process can write, as folders to measure together, and the folders among them to leave
    out (the read-only code and the job folder's own mount under /tmp, measured once): its folder, and with
    bubblewrap its private /tmp and /dev/shm, reached from outside through ``pid``'s sandbox root, or directly
    ``inside`` it (the warm parent)."""
    places: list[str] = [str(workdir)]
    skip: list[str] = []
    if not (inside_sandbox() if inside else bwrap_works()):
        return places, skip
    root = "" if inside else _sandbox_root(pid) if pid else None
    if root is None:
        return places, skip
    mounted = [Path(workdir), *code_paths()]
    for top in ("/tmp", "/dev/shm"):
        places.append(root + top)
        for path in mounted:
            try:
                first = Path(path).resolve().relative_to(top).parts[0]
            except (ValueError, IndexError):
                continue
            skip.append(f"{root}{top}/{first}")
    return places, skip


def result_pipe() -> int | None:
    """In a contained process: take the result pipe, so nothing it starts inherits it."""
    raw = os.environ.pop(RESULT_FD_VAR, None)
    if raw is None:
        return None
    fd = int(raw)
    os.set_inheritable(fd, False)
    return fd


def others_alive() -> int:
    """Inside a bubblewrap PID namespace: how many processes besides this one and its init are running."""
    if not inside_sandbox():
        return 0
    me = os.getpid()
    return sum(1 for p in proc_ids() if p not in (1, me))


def send(fd: int | None, data: bytes) -> None:
    if fd is None:
        return
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


LABEL_KEY = "autograd_lab_label"  # set on each code cell of the run's copy by pipeline._to_run
LABEL_CHARS = 80


def cell_name(index: int, cell) -> str:
    """A cell in a worker's message as the learner sees it: ``cell 18 (01.pow-node)`` or ``cell 18 ("y = x ** 3")``,
    from the label the grading process put in its metadata; ``cell 18`` where there is none."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    label = meta.get(LABEL_KEY) if isinstance(meta, dict) else None
    if not isinstance(label, str) or not label.strip():
        return f"cell {index + 1}"
    label = " ".join(label.split())
    return f"cell {index + 1} ({label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 3] + '...'})"
