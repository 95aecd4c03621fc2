"""autograd-lab on JupyterHub: the local hub (`make hub`, tests/test_hub.py).

* Every user's server on a hub (the spawner's ``cmd``) is ``python -m grader.learner.hub_start``
  (:mod:`grader.learner.hub_start`; ``python -m grader.instructor.hub singleuser`` still runs it): running as the
  user, it creates or updates the user's workspace from the installed course's ``notebooks/``, makes it and the
  progress folder private, then becomes ``jupyterhub-singleuser`` rooted there.
* ``python -m grader.instructor.hub start --users 3`` starts a hub on 127.0.0.1 for trying the course: JupyterHub,
  configurable-http-proxy (installed by ``make hub`` under ``.hub/``), ``hub/jupyterhub_config.py``,
  and N demo users with a random password each. As root the demo users are real Unix users
  (``agl-demo-1`` ...), created if missing, each server running as its user (LocalProcessSpawner);
  ``python -m grader.instructor.hub remove-users`` deletes them. Without root, every server runs as you.
  Ctrl-C, SIGTERM (systemd, ``kill``) and SIGHUP (a closed terminal) stop the hub, every user's server and the
  proxy (:func:`serve`).

**What the learners can read.** A hub's learners get what ``grader release`` produces and nothing else: the demo hub
writes the student bundle into ``.hub/course/`` (:func:`prepare_course`: learner notebooks and the grader, no
``solutions/``, no manifest of live answers, no tests, no instructor's tools) and every user's server runs with it
first on its path, so their kernels import that grader and their workspaces are made from its notebooks. As root,
the checkout the hub runs from is made unreadable where it holds what a learner must not read (:func:`protect`:
``solutions/``, ``tests/``, ``.git``, ``test-artifacts/`` become 0700): the demo users are real Unix users, and
``tests/test_hub_install.py`` logs in as one and fails to open them.

Nothing here imports jupyterhub: the course itself does not need it; the hub's environment does.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "hub" / "jupyterhub_config.py"
LOCAL = ROOT / ".hub"  # ignored by git: the proxy (npm), the demo hub's state and the course its users get
COURSE = LOCAL / "course"  # the student bundle the demo hub's users run (grader release), rebuilt on each start
PRIVATE = ("solutions", "tests", ".git", "test-artifacts")  # what of the checkout learners must not read
CHP = LOCAL / "node_modules" / ".bin" / "configurable-http-proxy"
DEMO_PREFIX = "agl-demo-"


# --- each user's server: grader.learner.hub_start (in the student bundle a hub installs) ----------------------

from grader.learner.hub_start import WORKSPACE_NAME, private, singleuser  # noqa: E402,F401  (older configurations)

# --- what the learners get, and what they must not read ------------------------------------------------------


def prepare_course(where: Path = COURSE, root: Path = ROOT) -> Path:
    """The student bundle (``grader release``) written afresh at ``where``, readable by every user: what the demo
    hub's users run. Written beside it first, then put in its place."""
    from grader.instructor.release import release

    where = Path(where)
    fresh = where.with_name(where.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    release(fresh, root=root)
    for folder, _dirs, files in os.walk(fresh):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    shutil.rmtree(where, ignore_errors=True)
    fresh.rename(where)
    return where


def protect(root: Path = ROOT) -> list[str]:
    """Make the folders of the checkout that hold what a learner must not read (solutions and the manifest of live
    answers, the tests and their reference implementations, git's history of both) readable by their owner only;
    the names of those changed. A hub's learners are other Unix users: an install they can read must not hold them."""
    changed = []
    for name in PRIVATE:
        path = Path(root) / name
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) and mode & 0o077:
            os.chmod(path, 0o700)
            changed.append(name)
    return changed


# --- demo users (root only) ----------------------------------------------------------------------


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def create_user(name: str, homes: Path) -> Path:
    """A Unix user ``name`` with a private home in ``homes`` (0700); its home's path."""
    home = homes / name
    subprocess.run(
        ["useradd", "--create-home", "--home-dir", str(home), "--user-group", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
        timeout=60,
    )
    home.chmod(0o700)
    return home


def remove_user(name: str) -> None:
    """Stop what still runs as ``name``, then delete the user, its group and its home."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    for pid in _pids_of(uid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)
    # what torch leaves in the shared temporary folder under the user's name (its compile cache)
    leftover = Path(tempfile.gettempdir()) / f"torchinductor_{name}"
    if leftover.is_dir() and leftover.stat().st_uid == uid:
        shutil.rmtree(leftover, ignore_errors=True)


def _pids_of(uid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


# --- the local hub -------------------------------------------------------------------------------


def runnable_by_all(path: str | Path) -> bool:
    """True if every user can reach and run ``path`` (its real file, and every folder above it)."""
    real = Path(os.path.realpath(path))
    try:
        return bool(real.stat().st_mode & 0o001) and all(p.stat().st_mode & 0o001 for p in real.parents)
    except OSError:
        return False


def python_for_users(where: Path) -> tuple[str, str]:
    """(an interpreter every user can run that imports this course's environment, a note); ("", why) if none.

    Normally this very interpreter. Where it sits in a folder other users cannot enter (a Python built
    under /root, as on the course's test machines), a thin environment on the system's Python of the same
    version is made in ``where``: a venv without packages whose one .pth file adds this environment's
    site-packages, and whose ``share/jupyter`` and ``etc/jupyter`` are links to this environment's (JupyterLab,
    its settings and the widget extensions live there, found through ``sys.prefix``; without them a user's server
    loads only the hub's extension and serves "404 : Not Found"). On a real hub, install the course where every
    user can read it and this is not needed.
    """
    if runnable_by_all(sys.executable) and runnable_by_all(sys.prefix):
        return sys.executable, ""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    import sysconfig

    site_dirs = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    if not all(runnable_by_all(d) for d in site_dirs):
        return "", f"this environment ({sys.prefix}) cannot be read by other users"
    for candidate in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}", "/usr/bin/python3"):
        if not (Path(candidate).exists() and runnable_by_all(candidate)):
            continue
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if probe.stdout.strip() != version:
            continue
        env = Path(where) / f"python{version}-env"
        python = env / "bin" / "python"
        if not python.exists():
            subprocess.run(
                [candidate, "-m", "venv", "--without-pip", str(env)], check=True, capture_output=True, timeout=120
            )
        site = env / "lib" / f"python{version}" / "site-packages"
        lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in site_dirs)
        (site / "autograd-lab-course.pth").write_text(lines)
        missing = link_jupyter_data(env)
        if missing:
            return "", missing
        return str(python), (
            f"{sys.executable} lies where other users cannot run it; users' servers run "
            f"{candidate} with this environment's packages ({env})"
        )
    return "", (
        f"{os.path.realpath(sys.executable)} lies where other users cannot run it, and no system "
        f"Python {version} was found to run this environment's packages"
    )


JUPYTER_DATA = (Path("share") / "jupyter", Path("etc") / "jupyter")  # under sys.prefix: what Jupyter finds there


def link_jupyter_data(env: Path) -> str:
    """Link ``env``'s ``share/jupyter`` and ``etc/jupyter`` to this environment's; '' when done, else why not."""
    for part in JUPYTER_DATA:
        source, link = Path(sys.prefix) / part, Path(env) / part
        if not source.is_dir():
            continue
        if not runnable_by_all(source):
            return f"{source} cannot be read by other users: their servers would not find JupyterLab"
        if link.is_symlink() and os.readlink(link) == str(source):
            continue
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.is_dir():
            shutil.rmtree(link)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(source, target_is_directory=True)
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proxy() -> Path | None:
    """configurable-http-proxy: the one `make hub-deps` installed under .hub/, else one on PATH (conda)."""
    if CHP.exists():
        return CHP
    found = shutil.which("configurable-http-proxy")
    return Path(found) if found else None


def missing_requirements() -> str:
    """Why the local hub cannot start here, or '' when it can."""
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "jupyterhub is not installed in this environment (pip install -e '.[test]')"
    if proxy() is None:
        return (
            f"configurable-http-proxy is not installed at {CHP.relative_to(ROOT)}: `make hub-deps` "
            f"installs it with npm" + ("" if shutil.which("npm") else " (npm was not found)")
        )
    if not shutil.which("node"):
        return "node is not installed: configurable-http-proxy runs on Node.js"
    return ""


class Hub:
    """JupyterHub on 127.0.0.1 with its proxy, as a child process group; ``stop()`` ends all of it."""

    def __init__(
        self,
        users: dict[str, str],
        state: Path,
        homes: Path | None = None,
        port: int | None = None,
        python: str | None = None,
        course: Path | None = None,
    ):
        self.users, self.state = users, Path(state)
        self.course = course  # the student bundle the users' servers run (prepare_course); None: this install
        self.python = python or sys.executable  # what users' servers run (see python_for_users)
        self.state.mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o700)
        self.port = port or free_port()
        self.homes = homes
        self.log_path = self.state / "jupyterhub.log"
        self.proc: subprocess.Popen | None = None
        self.started_in = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 150) -> Hub:
        passwords = self.state / "passwords.json"
        passwords.write_text(json.dumps(self.users))
        passwords.chmod(0o600)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOGRAD_LAB_", "JUPYTER"))}
        env.update(
            AGL_HUB_STATE=str(self.state),
            AGL_HUB_PYTHON=self.python,
            AGL_HUB_USERS=",".join(self.users),
            AGL_HUB_PORT=str(self.port),
            AGL_HUB_INTERNAL_PORT=str(free_port()),
            AGL_HUB_PROXY_API_PORT=str(free_port()),
            AGL_HUB_CHP=str(proxy()),
            PYTHONUNBUFFERED="1",
        )
        if self.homes is not None:
            env["AGL_HUB_HOMES"] = str(self.homes)
        if self.course is not None:
            env["AGL_HUB_COURSE"] = str(self.course)
        started = time.monotonic()
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)],
            cwd=self.state,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("JupyterHub stopped while starting:\n" + self.tail())
            try:
                with urllib.request.urlopen(self.url + "/hub/api/", timeout=5) as r:
                    if r.status == 200:
                        self.started_in = time.monotonic() - started
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"JupyterHub did not answer within {timeout:.0f} s:\n" + self.tail())

    def tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM: the hub stops every user's server and its proxy; whatever is left is killed."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the proxy and anything else in the hub's group
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=10)
        pid_file = self.state / "proxy.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        self.log.close()


class _Stop(Exception):
    """SIGTERM or SIGHUP while the hub runs."""


def _on_signal(signum, frame):
    raise _Stop(signal.Signals(signum).name)


def serve(hub, poll: float = 1.0, users: list[str] | None = None) -> int:
    """Wait while the hub runs; on Ctrl-C, SIGTERM (systemd, ``kill``, a supervisor) or SIGHUP (the terminal
    closed), or when it stops by itself, stop it: JupyterHub stops every user's server, the proxy is killed, and
    whatever still runs as a demo user (``users``, root only) is stopped too. The handlers are put back after."""
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while hub.proc.poll() is None:
            time.sleep(poll)
    except (KeyboardInterrupt, _Stop) as exc:
        print(f"\nstopping ({exc or 'Ctrl-C'})", flush=True)
    finally:
        try:
            hub.stop()
            for name in users or []:
                stop_processes_of(name)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    return 0


def stop_processes_of(name: str, grace: float = 5.0) -> None:
    """SIGTERM every process of the Unix user ``name``, then SIGKILL what is left after ``grace`` seconds."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _pids_of(uid)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while pids and _pids_of(uid) and time.monotonic() < deadline:
            time.sleep(0.1)


def _start(args) -> int:
    why = missing_requirements()
    if why:
        print(f"hub: {why}", file=sys.stderr)
        return 2
    root = os.geteuid() == 0
    names = [f"{DEMO_PREFIX}{i}" for i in range(1, args.users + 1)]
    homes = (
        Path(args.homes)
        if args.homes
        else (Path("/home") if root else Path.home() / ".cache" / "autograd-lab-hub" / "homes")
    )
    if root:
        for name in names:
            if not user_exists(name):
                print(f"created the Unix user {name} (home {create_user(name, homes)}, mode 0700)")
    else:
        homes.mkdir(parents=True, exist_ok=True)
    python, note = python_for_users(LOCAL) if root else (sys.executable, "")
    if not python:
        print(f"hub: {note}", file=sys.stderr)
        return 2
    if note:
        print(note)
    course = prepare_course()
    print(f"the learners' course: the student bundle in {course} (grader release: no solutions, no tests)")
    if root:
        hidden = protect()
        if hidden:
            print(f"made {', '.join(f'{h}/' for h in hidden)} of {ROOT} readable by its owner only (chmod 700)")
    users = {name: secrets.token_urlsafe(9) for name in names}
    hub = Hub(users, LOCAL / "state", homes=None if root else homes, port=args.port, python=python, course=course)
    try:
        hub.start()
    except RuntimeError as exc:
        print(f"hub: {exc}", file=sys.stderr)
        return 1
    print(f"JupyterHub is ready at {hub.url} (started in {hub.started_in:.1f} s); log: {hub.log_path}")
    print("log in as:" + "".join(f"\n  {name}  password {pw}" for name, pw in users.items()))
    if root:
        print("each server runs as its own Unix user (LocalProcessSpawner); homes are 0700")
    else:
        print(
            "not root: every server runs as you, with its own HOME under "
            + str(homes)
            + " (no isolation between users)"
        )
    print(
        f"the instructor's view: {sys.executable} -m grader class --homes {homes if not root else '/home'} "
        f"--users {','.join(names)} --html class.html"
    )
    print(
        "Ctrl-C (or SIGTERM) stops the hub and every user's server"
        + ("; python -m grader.instructor.hub remove-users deletes the demo users" if root else "")
    )
    return serve(hub, users=names if root else None)


def _remove_users(args) -> int:
    if os.geteuid() != 0:
        print("hub: only root can remove users", file=sys.stderr)
        return 2
    names = sorted(p.pw_name for p in pwd.getpwall() if p.pw_name.startswith(DEMO_PREFIX))
    for name in names:
        remove_user(name)
        print(f"removed {name} and its home")
    if not names:
        print("no demo users to remove")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["singleuser"]:  # every argument after it belongs to jupyterhub-singleuser
        return singleuser(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m grader.instructor.hub", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start", help="start a local JupyterHub with demo users (what `make hub` runs)")
    p.add_argument("--users", type=int, default=3, help="how many demo users (default 3)")
    p.add_argument("--port", type=int, default=8000, help="the hub's port on 127.0.0.1 (default 8000)")
    p.add_argument("--homes", help="where demo users' homes go (default /home as root)")
    p.set_defaults(run=_start)
    p = sub.add_parser("remove-users", help=f"delete the demo users ({DEMO_PREFIX}N) and their homes (root)")
    p.set_defaults(run=_remove_users)
    sub.add_parser("singleuser", help="a user's server (python -m grader.learner.hub_start does the same)")
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
