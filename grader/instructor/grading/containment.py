"""Contain one untrusted process: its own session, a private folder, capped output, a result pipe, nothing left behind.

``run(cmd, ...)`` starts ``cmd`` in a new session inside a private working
folder and returns a :class:`Finished` that says how it ended. What it hands
back comes through a pipe (file descriptor ``AGL_RESULT_FD`` in its
environment), never through a file it could have swapped; its stdout and
stderr are drained by the parent and only the first ``output_cap`` bytes kept.
When it ends, or runs past ``timeout``, everything it started is killed: its
process group, its session, and any process carrying its private token in the
environment.

Where bubblewrap (``bwrap``) works, the process runs with no network, a
private ``/tmp``, its own PID namespace (whatever it leaves behind dies with
it) and the whole file system read-only except its own folder. ``isolation()``
names what is in use; the gradebook reports it.
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
from dataclasses import dataclass, field
from pathlib import Path

TOKEN_VAR = "AGL_CONTAINED"
RESULT_FD_VAR = "AGL_RESULT_FD"

_bwrap_ok: bool | None = None
ADOPTING = False  # set when this process is a subreaper (grade does it): orphans come to us
_LIVE: set[int] = set()  # contained processes still running, never taken for orphans
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
        return "bubblewrap: no network, private /tmp, own PID namespace, read-only file system"
    return "process session only (no bubblewrap): network and file system reachable"


def _bwrap_base() -> list[str]:
    # Run by root, bubblewrap leaves the sandboxed process every capability unless told otherwise; with them
    # it could open /proc/<parent>/fd/* of a non-dumpable parent (a warm worker's pipes) or ptrace it.
    drop = ["--cap-drop", "ALL"] if os.geteuid() == 0 else []
    return [
        *drop,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
    ]


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


class _Drain(threading.Thread):
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
    notes: list = field(default_factory=list)

    @property
    def died(self) -> bool:
        return not self.timed_out and self.returncode != 0


# --- finding and killing what it started ----------------------------------------------------------


def _proc_ids() -> list[int]:
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
        with open(f"/proc/{pid}/environ", "rb") as f:
            return token in f.read(1 << 20).split(b"\0")
    except (OSError, IndexError, ValueError):
        return False


def kill_everything(session: int, token: bytes) -> int:
    """SIGKILL every process in ``session`` or carrying ``token``; return how many were found."""
    me = os.getpid()
    found: set[int] = set()
    for _ in range(5):  # a process may fork while we look: look again until none are left
        with _LIVE_LOCK:
            pids = [p for p in _proc_ids() if p != me and _belongs(p, session, token)]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                found.add(pid)
            except OSError:
                pass
        time.sleep(0.05)
    try:
        os.killpg(session, signal.SIGKILL)
    except OSError:
        pass
    if ADOPTING:  # reap the orphans we killed, so they do not linger as zombies
        for pid in [p for p in _proc_ids() if p not in _LIVE]:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    if int(f.read().rsplit(b")", 1)[1].split()[1]) != me:
                        continue
                os.waitpid(pid, os.WNOHANG)
            except (OSError, IndexError, ValueError, ChildProcessError):
                pass
    return len(found)


def code_paths() -> list[Path]:
    """Folders the contained process must still read when /tmp (and the temp folder) are hidden: this
    Python, its environment and the course. A checkout or a virtualenv under /tmp (a CI clone) is bound
    back read-only; elsewhere nothing is needed, as the whole file system is already bound read-only."""
    import grader

    wanted = [
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.executable).resolve().parent,
        Path(grader.__file__).resolve().parent.parent,
    ]
    wanted += [Path(p) for p in sys.path if p and Path(p).is_dir()]
    hidden = {Path("/tmp"), Path(tempfile.gettempdir()).resolve()}
    out: list[Path] = []
    for path in sorted({p.resolve() for p in wanted}, key=lambda p: len(p.parts)):
        if any(h == path or h in path.parents for h in hidden) and not any(o in path.parents for o in out):
            out.append(path)
    return out


def sandboxed(cmd: list[str], workdir: Path, sandbox: bool | None = None) -> list[str]:
    """``cmd`` wrapped in bubblewrap where it works (``sandbox=False``: never), with ``workdir`` its only writable folder."""
    use_bwrap = bwrap_works() if sandbox is None else (sandbox and bwrap_works())
    if not use_bwrap:
        return list(cmd)
    binds = ["--bind", str(workdir), str(workdir)]
    base = Path(tempfile.gettempdir()).resolve()
    hide = [] if base == Path("/tmp") else ["--tmpfs", str(base)]  # other learners' folders
    code = [arg for path in code_paths() for arg in ("--ro-bind", str(path), str(path))]
    return [
        shutil.which("bwrap"),
        *_bwrap_base(),
        *hide,
        *code,
        *binds,
        "--chdir",
        str(workdir),
        "--setenv",
        "AGL_SANDBOX",
        "bwrap",
        "--",
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
) -> Finished:
    """Run ``cmd`` contained (see the module's text); never raises for anything the process does."""
    started = time.monotonic()
    token = secrets.token_hex(16)
    env = dict(env)
    env[TOKEN_VAR] = token
    result_r, result_w = os.pipe()
    env[RESULT_FD_VAR] = str(result_w)
    cmd = sandboxed(cmd, workdir, sandbox)
    try:
        with _LIVE_LOCK:
            proc = subprocess.Popen(
                cmd,
                cwd=workdir,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(result_w,),
                start_new_session=True,
            )
            _LIVE.add(proc.pid)
    except OSError as exc:
        os.close(result_r)
        os.close(result_w)
        return Finished(returncode=None, notes=[f"could not start: {exc}"])
    os.close(result_w)
    drains = [
        _Drain(os.dup(proc.stdout.fileno()), output_cap),
        _Drain(os.dup(proc.stderr.fileno()), output_cap),
        _Drain(result_r, result_cap),
    ]
    proc.stdout.close()
    proc.stderr.close()
    for d in drains:
        d.start()

    def feed():
        try:
            proc.stdin.write(stdin)
        except (OSError, ValueError):
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    out = Finished(returncode=None)
    try:
        out.returncode = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        out.timed_out = True
    if out.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        try:
            out.returncode = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            out.notes.append("the process could not be stopped")
    with _LIVE_LOCK:
        _LIVE.discard(proc.pid)
    out.leftovers = kill_everything(proc.pid, f"{TOKEN_VAR}={token}".encode())
    for d in drains:
        d.join(timeout=5)
    stdout_d, stderr_d, result_d = drains
    out.stdout, out.stderr = bytes(stdout_d.kept), bytes(stderr_d.kept)
    out.output_bytes = stdout_d.total + stderr_d.total
    out.result = bytes(result_d.kept)
    out.result_overflow = result_d.total > result_cap
    out.seconds = time.monotonic() - started
    return out


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
    if os.environ.get("AGL_SANDBOX") != "bwrap":
        return 0
    me = os.getpid()
    return sum(1 for p in _proc_ids() if p not in (1, me))


def send(fd: int | None, data: bytes) -> None:
    if fd is None:
        return
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
