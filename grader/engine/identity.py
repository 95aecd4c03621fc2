"""Who the learner is, for the programs their self-tests ask: one name per learner, kept stable.

A self-test's program is generated from a seed that comes from the learner's identity and the attempt
(:mod:`grader.engine.variants`), so the identity must be the same wherever the learner works and the one the
gradebook grades them under. Where it comes from, first found wins:

1. ``AUTOGRAD_LAB_LEARNER`` in the environment: what an instructor sets (a hub's spawner environment, a lab
   image), and what the course's own runs set (``course``: the solutions' stored outputs);
2. on a JupyterHub, the hub's user name (``JUPYTERHUB_USER``: the Unix user the course runs as there), which a
   learner cannot change from a notebook;
3. the file ``learner-id`` beside the progress store, written by ``python -m grader identity NAME`` (the
   instructor's roster id, so that batch grading, which grades each copy under the learner's name or roster id,
   derives the same programs);
4. otherwise a random name made once and kept in that file, so programs stay the learner's own from one kernel
   to the next (batch grading under another name then grades other programs: the gradebook says so).

Names compare without case and surrounding spaces. Nothing here is a secret: a learner may always run their
own program; what the identity buys is that two learners get two programs and a retry gets a new one.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

from grader.engine import env_vars
from grader.engine.store import home

ENV = env_vars.LEARNER
HUB_ENV = "JUPYTERHUB_USER"
FILENAME = "learner-id"
COURSE = "course"  # the identity of the course's own runs (build --execute, nbval over solutions/)
MAX_CHARS = 200

_made: dict[Path, str] = {}  # a random identity made where its file could not be written, per store folder


def key(name: str) -> str:
    """An identity as seeds read it: stripped, without case."""
    return " ".join(str(name).split()).casefold()[:MAX_CHARS]


def path() -> Path:
    return home() / FILENAME


def _from_file(where: Path) -> str:
    try:
        return key(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return ""


def current() -> str:
    """The learner's identity here (see the module's text for the order); made and kept on first use."""
    for var in (ENV, HUB_ENV):
        value = key(os.environ.get(var, ""))
        if value:
            return value
    where = path()
    found = _from_file(where)
    if found:
        return found
    made = _made.setdefault(where, "local-" + uuid.uuid4().hex[:12])
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        with open(where, "x", encoding="utf-8") as f:  # another kernel may have made one first: then read it
            f.write(made + "\n")
    except FileExistsError:
        return _from_file(where) or made
    except OSError:
        pass
    return made


def source() -> str:
    """Where :func:`current` takes the identity from, in words."""
    if key(os.environ.get(ENV, "")):
        return f"the environment ({ENV})"
    if key(os.environ.get(HUB_ENV, "")):
        return "the JupyterHub user"
    return f"{path()}"


def set_identity(name: str) -> str:
    """Keep ``name`` (the instructor's roster id, say) as this learner's identity beside the progress store."""
    value = key(name)
    if not value:
        raise ValueError("an identity is a non-empty name, such as the id on the course roster")
    where = path()
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(value + "\n", encoding="utf-8")
    _made.pop(where, None)
    return value


def fingerprint(name: str) -> str:
    """A short digest of an identity: what a notebook's records carry, so a copy answered under another identity
    can be named without writing the identity itself into every output."""
    return hashlib.sha256(key(name).encode()).hexdigest()[:10]
