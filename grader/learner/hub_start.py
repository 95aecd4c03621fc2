"""Each user's server on a JupyterHub: ``python -m grader.learner.hub_start [ARGS]`` is the spawner's ``cmd``.

Running as the user, it creates or updates the user's workspace (``~/autograd-lab``, or ``AUTOGRAD_LAB_WORKSPACE``)
from the installed course's ``notebooks/``, makes the workspace and the progress folder private (0700, umask 077),
then replaces itself with ``jupyterhub-singleuser`` rooted there (every argument is passed on to it). It is a
learner's command, so it is in the student bundle that a hub installs (``grader release``), which ships no
instructor's tools; ``python -m grader.instructor.hub singleuser`` (older hub configurations) runs it too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from grader.engine import env_vars

WORKSPACE_NAME = "autograd-lab"


def private(folder: Path) -> None:
    """Create ``folder`` if needed and make it readable by its owner only."""
    folder.mkdir(parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o077:
        folder.chmod(0o700)


def singleuser(args: list[str]) -> int:
    """Prepare this user's workspace and progress folder, then exec jupyterhub-singleuser there."""
    from grader.engine.store import home as progress_home
    from grader.learner.workspace import WorkspaceError, report, sync

    os.umask(0o077)  # every file the user's server and kernels write: theirs alone
    value = os.environ.get(env_vars.WORKSPACE, "").strip()
    workspace = Path(value).expanduser() if value else Path.home() / WORKSPACE_NAME
    try:
        private(workspace)
        print(report(sync(workspace), workspace), file=sys.stderr, flush=True)
        private(progress_home())
    except (WorkspaceError, OSError) as exc:
        print(
            f"autograd-lab: the workspace could not be prepared ({exc}); starting without it",
            file=sys.stderr,
            flush=True,
        )
        workspace = Path.home()
    os.execv(
        sys.executable, [sys.executable, "-m", "jupyterhub.singleuser", f"--ServerApp.root_dir={workspace}", *args]
    )
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(singleuser(sys.argv[1:]))
