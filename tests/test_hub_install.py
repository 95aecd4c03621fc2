"""What a hub's learners can read: both hub recipes install what ``grader release`` produces, and the demo hub
keeps the checkout it runs from out of its users' reach. A learner's own Unix user tries to open the solutions,
the manifest of live answers, the tests and git's history, and fails; the course's notebooks it can read.

Before (the issue's attack): README's recipe cloned the whole repository into /opt and made it readable by all,
hub/Dockerfile copied the whole checkout into the image, and the demo hub's users ran the checkout itself:
every learner could read ``solutions/`` (every exercise solved) and ``solutions/manifest.json`` (every answer).

Needs root (a Unix user of its own, ``runuser``); no hub is started (tests/test_hub.py runs one, on the bundle).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from grader.instructor import hub

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"),
    reason="needs root, useradd and runuser (a learner's Unix user to log in as)",
)
SECRETS = ("solutions/manifest.json", "solutions/00_start_here.ipynb", "tests/reference", ".git/HEAD")


@pytest.fixture(scope="module")
def learner():
    name = f"agl-learn-{secrets.token_hex(2)}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True, timeout=60)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True, timeout=60)


def as_learner(user: str, *argv: str) -> subprocess.CompletedProcess:
    """A command run as the learner's Unix user (their login's uid and groups, no root left)."""
    return subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True, timeout=60)


def cannot_open(user: str, path: Path) -> str:
    """How the learner fails to open ``path`` ('' when they can)."""
    done = as_learner(user, "cat", str(path)) if not path.is_dir() else as_learner(user, "ls", str(path))
    return "" if done.returncode == 0 else done.stderr.strip()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """A folder every user may pass through (pytest's own is root's alone), removed after."""
    where = Path(tempfile.mkdtemp(prefix="agl-install-"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def test_the_readmes_recipe_installs_the_bundle_and_the_learner_cannot_read_what_it_leaves_out(learner, shared):
    """README, "Deploy on an existing hub": the instructor's clone in a folder only root reads, the student bundle
    (``grader release``) in /opt, readable by all (here under a temporary folder)."""
    private = shared / "root-only"
    private.mkdir(mode=0o700)
    clone = private / "autograd-lab"
    shutil.copytree(ROOT / "solutions", clone / "solutions")  # what the instructor's clone holds
    (clone / "tests").mkdir()
    opt = shared / "opt" / "autograd-lab"
    opt.parent.mkdir()
    from grader.instructor.release import release

    release(opt)
    subprocess.run(["chmod", "-R", "a+rX,go-w", str(opt)], check=True)
    assert cannot_open(learner, opt / "notebooks" / "00_start_here.ipynb") == "", "the course is the learner's"
    assert cannot_open(learner, opt / "grader" / "learner" / "hub_start.py") == "", "and so is its start command"
    for secret in (*SECRETS, "grader/instructor/grading/verify.py"):
        assert "No such file" in cannot_open(learner, opt / secret), secret
    for secret in ("solutions/manifest.json", "solutions"):
        assert "Permission denied" in cannot_open(learner, clone / secret), secret


def test_the_demo_hub_gives_its_users_the_bundle_and_closes_the_checkout_it_runs_from(learner, shared):
    """``make hub``: the users' servers run ``.hub/course/`` (the bundle, :func:`hub.prepare_course`), and the
    checkout's solutions, tests and git history are made its owner's alone (:func:`hub.protect`)."""
    course = hub.prepare_course(shared / "course")
    checkout = shared / "checkout"
    for secret in SECRETS:
        (checkout / secret).parent.mkdir(parents=True, exist_ok=True)
        (checkout / secret).write_text("an answer")
    subprocess.run(["chmod", "-R", "a+rX", str(checkout)], check=True)
    assert cannot_open(learner, checkout / "solutions" / "manifest.json") == "", "readable before: the attack"
    assert sorted(hub.protect(checkout)) == sorted([".git", "solutions", "tests"])
    for secret in SECRETS:
        assert "Permission denied" in cannot_open(learner, checkout / secret), secret
    assert hub.protect(checkout) == [], "nothing left to close"
    assert cannot_open(learner, course / "notebooks" / "01_what_the_forward_pass_records.ipynb") == ""
    for secret in (*SECRETS, "grader/instructor"):
        assert "No such file" in cannot_open(learner, course / secret), secret


def test_the_hub_image_holds_only_the_bundle():
    """hub/Dockerfile (not built here): the checkout is copied into a stage that runs ``grader release`` and is
    not kept; the image's own stage takes only that stage's bundle; the users' servers start the bundle's command."""
    text = (ROOT / "hub" / "Dockerfile").read_text()
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    final = stages[-1]
    assert not re.search(r"^COPY (?!--from=)", final, re.M), "the image's stage copies nothing from the checkout"
    assert re.search(r"^COPY --from=release /bundle /opt/autograd-lab", final, re.M)
    release = next(s for s in stages if s.split("\n")[0].rstrip().endswith("AS release"))
    assert "COPY . /src" in release and "-m grader release /bundle" in release
    assert 'CMD ["python", "-m", "grader.learner.hub_start"]' in final
    config = (ROOT / "hub" / "jupyterhub_config.py").read_text()
    assert '"-m", "grader.learner.hub_start"' in config
