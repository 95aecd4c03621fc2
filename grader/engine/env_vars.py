"""Every environment variable the course reads or sets, named once here, each with who sets it and what it does.

tests/test_env_vars.py fails on an ``AGL_`` or ``AUTOGRAD_LAB_`` name that the code (``grader/``, ``hub/``,
``bench/``, ``tools/``, the tests, the Makefile) spells and this module does not describe, on one described here
that nothing reads any more, and when docs/environment.md (this list, :func:`described`) is out of date. The code
reads a variable by its constant here (``os.environ.get(env_vars.STRICT)``), but for the modules that run apart
from the package: ``grading/containment.py`` (loaded alone by its path in the cold worker) and ``grading/workers.py``
(the warm parent's side) keep their names as constants of their own; the demo hub's are set by name in
``instructor/hub.py`` and read by name in ``hub/jupyterhub_config.py`` (JupyterHub's process). How each value is read (a number, a flag, any non-empty text) is said by the
module that reads it, in its ``does`` line here.

Who sets them:

* ``learner``: a learner (or a lab image) in the shell that starts JupyterLab;
* ``instructor``: whoever runs ``grade``, a hub, or the course's own runs;
* ``grader``: the grader itself, for a process it starts (never set by hand: each says which process reads it);
* ``platform``: Jupyter, JupyterHub or the operating system.

This module imports nothing of the course, so that a module loaded alone by its path (as the cold grading worker
loads :mod:`grader.instructor.grading.containment`, importing neither the ``grader`` package nor torch) can load it
the same way.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Who = Literal["learner", "instructor", "grader", "platform"]


class Switch(NamedTuple):
    name: str
    who: Who
    does: str


SWITCHES: dict[str, Switch] = {}  # name -> its Switch, in the order below (README and docs point here)
COURSE_PREFIX = "AUTOGRAD_LAB_"  # the course's own settings (a hub's spawner drops them from the hub's environment)


def _switch(name: str, who: Who, does: str) -> str:
    SWITCHES[name] = Switch(name, who, " ".join(does.split()))
    return name


# --- a learner's or an instructor's settings -------------------------------------------------------------------
HOME = _switch(
    "AUTOGRAD_LAB_HOME",
    "learner",
    """Where the progress store (and the learner-id file beside it) lives; default: the platform's per-user data
    folder (grader.engine.store.home). Every grading run and the course's own runs set it to a folder of their own.""",
)
WORKSPACE = _switch(
    "AUTOGRAD_LAB_WORKSPACE",
    "learner",
    "The learner's workspace folder, made from notebooks/ (default: my-work/ beside the course; a hub: the home).",
)
LEARNER = _switch(
    "AUTOGRAD_LAB_LEARNER",
    "instructor",
    """The learner's identity, which seeds every generated self-test's programs; first of all the sources
    (grader.engine.identity). The course's own runs set it to `course`; a grading run to the identity graded.""",
)
MASTERY = _switch(
    "AUTOGRAD_LAB_MASTERY",
    "instructor",
    "Right answers in a row, each on a fresh program, that pass a generated self-test: 1 to 5, default 1.",
)
TIME_SCALE = _switch(
    "AUTOGRAD_LAB_TIME_SCALE",
    "learner",
    """A positive number forces the factor every exercise's time limits are scaled by (a slow laptop, a test that
    emulates load); unset, the course measures it (grader.engine.pace). Contained grading processes keep it.""",
)
WIDGETS = _switch(
    "AUTOGRAD_LAB_WIDGETS",
    "learner",
    "0 (or false, no, off): plain text everywhere, no widget is drawn (grader.learner.display).",
)
STRICT = _switch(
    "AUTOGRAD_LAB_STRICT",
    "instructor",
    """1 (or true, yes, on): every result short of success raises GraderCheckFailed (grader.learner.api), so a
    solution whose own checks fail cannot pass nbval; the test suite and `build --execute` set it.""",
)

# --- grade's settings ------------------------------------------------------------------------------------------
NO_BWRAP = _switch(
    "AGL_NO_BWRAP",
    "instructor",
    """Any non-empty value TURNS THE SANDBOX OFF: grade runs submissions without bubblewrap, as on a machine that
    lacks it, so each runs as your user with your network and your files (no namespaces, no read-only file system,
    no user of its own); what still holds is the rlimits, the allow-listed environment and the answer key sealed.
    The gradebook's isolation column says so. For debugging the grader; never for grading a class.""",
)
GRADE_COLD = _switch(
    "AGL_GRADE_COLD",
    "instructor",
    "Any non-empty value: each notebook runs in a fresh worker and kernel (the old path) instead of a warm parent.",
)
WRITABLE_MB = _switch(
    "AGL_WRITABLE_MB",
    "instructor",
    "Megabytes a submission may write (its folder, and the size of its private /tmp and /dev/shm); at least 8.",
)
WRITABLE_FILES = _switch(
    "AGL_WRITABLE_FILES",
    "instructor",
    "Entries (files, folders, links) a submission may make in all its writable places together; at least 100.",
)
THREADS = _switch(
    "OMP_NUM_THREADS",
    "instructor",
    """torch's intra-op threads; grade sets it for the processes it starts (the cores shared out among its jobs)
    unless it is set already, and contained processes keep it.""",
)

# --- what the grader sets for a process it starts --------------------------------------------------------------
SEAL = _switch(
    "AGL_SEAL",
    "grader",
    """1 in a grading run's kernel: the answer key is sealed before any cell runs; the learner's API records
    answers and judges none (grader.learner.api.judge).""",
)
VARIANTS = _switch(
    "AGL_VARIANTS",
    "grader",
    "A grading run's kernel: JSON {question id: number} of the programs the copy's records say were in force.",
)
EVENT_FD = _switch(
    "AGL_EVENT_FD",
    "grader",
    "A grading run's kernel: the pipe the progress store writes each event to as it happens (grader.engine.store).",
)
RESULT_FD = _switch(
    "AGL_RESULT_FD",
    "grader",
    "A contained process: the pipe of its one report (grader.instructor.grading.containment.result_pipe).",
)
CONTAINED = _switch(
    "AGL_CONTAINED",
    "grader",
    "A contained process: a token that marks it and every process it starts, so the grader can find and kill them.",
)
SANDBOX = _switch(
    "AGL_SANDBOX",
    "grader",
    "bwrap inside bubblewrap's sandbox: a contained process measures its own private /tmp and /dev/shm.",
)

# --- the local demo hub: `make hub` (grader.instructor.hub) sets them, hub/jupyterhub_config.py reads them -----
HUB_STATE = _switch("AGL_HUB_STATE", "instructor", "The demo hub's state folder (its database, cookie secret).")
HUB_PYTHON = _switch("AGL_HUB_PYTHON", "instructor", "The interpreter every user's server runs: the course's.")
HUB_USERS = _switch("AGL_HUB_USERS", "instructor", "The demo hub's users, comma-separated.")
HUB_PORT = _switch("AGL_HUB_PORT", "instructor", "The port the demo hub serves on (127.0.0.1 only).")
HUB_INTERNAL_PORT = _switch("AGL_HUB_INTERNAL_PORT", "instructor", "The hub's own API port (127.0.0.1 only).")
HUB_PROXY_API_PORT = _switch("AGL_HUB_PROXY_API_PORT", "instructor", "The proxy's API port (127.0.0.1 only).")
HUB_CHP = _switch("AGL_HUB_CHP", "instructor", "The configurable-http-proxy command the hub starts.")
HUB_HOMES = _switch("AGL_HUB_HOMES", "instructor", "The folder of the users' home folders (default: beside the state).")
HUB_COURSE = _switch("AGL_HUB_COURSE", "instructor", "The student bundle put first on every user's PYTHONPATH.")

# --- set by the platform ---------------------------------------------------------------------------------------
HUB_USER = _switch(
    "JUPYTERHUB_USER",
    "platform",
    "JupyterHub's user name: the learner's identity there, after AUTOGRAD_LAB_LEARNER (grader.engine.identity).",
)
SESSION_NAME = _switch(
    "JPY_SESSION_NAME",
    "platform",
    "Jupyter's path of the notebook a kernel runs: the file whose saved answers a mark reports (grader.learner.saved).",
)
LOCALAPPDATA = _switch("LOCALAPPDATA", "platform", "Windows: the per-user data folder the progress store goes in.")
XDG_DATA_HOME = _switch("XDG_DATA_HOME", "platform", "Linux: the per-user data folder (default ~/.local/share).")

_YES = ("1", "true", "yes", "on")


def yes(value: str | None) -> bool:
    """A yes/no switch's value read as yes: 1, true, yes or on (any case, spaces around ignored)."""
    return (value or "").strip().lower() in _YES


def described() -> str:
    """Every switch as a Markdown list, one item each: its name, who sets it, what it does (docs/environment.md)."""
    return "\n".join(f"- `{s.name}` ({s.who}): {s.does}" for s in SWITCHES.values()) + "\n"
