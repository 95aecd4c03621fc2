"""JupyterHub configuration for autograd-lab: the local hub of `make hub` and of tests/test_hub.py.

`python -m grader.instructor.hub start` (what `make hub` runs) sets the AGL_HUB_* variables below and starts
`jupyterhub -f hub/jupyterhub_config.py` as a child. Read this file as the excerpt to copy into an
existing hub's own configuration: the spawner part (cmd, default_url, umask) is what the course needs;
the authenticator and the ports are for the local demo only.

* Every user's server runs `python -m grader.learner.hub_start` from the course's environment (installed
  once for everybody: what `grader release` produces, never the checkout with its solutions/ and tests/). That
  command, already running as the user, creates or updates the user's own workspace ~/autograd-lab from the
  installed course's notebooks/, keeps the workspace and the progress folder (~/.local/share/autograd-lab)
  private to the user (0700, umask 077), then becomes `jupyterhub-singleuser` with that workspace as its root.
* The local demo hub runs the student bundle it wrote into .hub/course/ (AGL_HUB_COURSE, first on every user's
  server's PYTHONPATH), so learners' kernels import that grader and their workspaces come from its notebooks.
* Run as root, the hub starts each user's server as that Unix user (LocalProcessSpawner): the
  operating system keeps users apart. Not run as root, every user's server runs as you
  (SimpleLocalProcessSpawner, each with its own HOME): convenient for trying the course, no isolation.
"""

import json
import os
import sys
from pathlib import Path
from secrets import compare_digest

from jupyterhub.auth import Authenticator
from traitlets import Dict

c = get_config()  # noqa: F821 (provided by JupyterHub when it reads this file)

STATE = Path(os.environ.get("AGL_HUB_STATE", Path.cwd() / ".hub" / "state")).resolve()
PYTHON = os.environ.get("AGL_HUB_PYTHON", sys.executable)  # the course's environment, shared by all users
USERS = [u for u in os.environ.get("AGL_HUB_USERS", "").split(",") if u]


class DemoPasswords(Authenticator):
    """Throwaway logins for the local hub: each demo user has a random password of their own
    (written by `python -m grader.instructor.hub start` to a root-only file). Not for a real class."""

    passwords = Dict(config=True, help="user name -> password")

    async def authenticate(self, handler, data):
        name = (data or {}).get("username", "")
        expected = self.passwords.get(name)
        if expected and compare_digest(expected.encode(), str((data or {}).get("password", "")).encode()):
            return name
        return None


# --- local demo only: loopback addresses, throwaway logins, state in AGL_HUB_STATE -------------------
c.JupyterHub.bind_url = f"http://127.0.0.1:{os.environ.get('AGL_HUB_PORT', '8000')}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{os.environ.get('AGL_HUB_INTERNAL_PORT', '8081')}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('AGL_HUB_PROXY_API_PORT', '8001')}"
c.Spawner.ip = "127.0.0.1"  # users' servers too (JupyterHub's default, said outright)
if os.environ.get("AGL_HUB_CHP"):
    c.ConfigurableHTTPProxy.command = [os.environ["AGL_HUB_CHP"]]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.ConfigurableHTTPProxy.should_start = True
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every user's server
c.JupyterHub.cleanup_proxy = True
c.JupyterHub.authenticator_class = DemoPasswords
passwords = STATE / "passwords.json"
c.DemoPasswords.passwords = json.loads(passwords.read_text()) if passwords.exists() else {}
c.Authenticator.allowed_users = set(USERS)

# --- what the course needs from any hub -------------------------------------------------------------
# Each user's server: their own workspace made or updated on start, then jupyterhub-singleuser.
c.Spawner.cmd = [PYTHON, "-m", "grader.learner.hub_start"]
if os.environ.get("AGL_HUB_COURSE"):  # the local demo: the student bundle comes first on the users' path
    c.Spawner.environment = {"PYTHONPATH": os.environ["AGL_HUB_COURSE"]}
c.Spawner.default_url = "/lab/tree/00_start_here.ipynb"
c.Spawner.start_timeout = 180  # a busy machine: JupyterLab and torch load slowly
c.Spawner.http_timeout = 180
# PATH finds Graphviz's `dot` for drawings; PYTHONPATH and the locale pass through unchanged
c.Spawner.env_keep = ["PATH", "PYTHONPATH", "LANG", "LC_ALL", "JUPYTERHUB_SINGLEUSER_APP"]

if os.geteuid() == 0:
    # one Unix user per learner: their server, kernels and files belong to them alone
    c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
else:
    # no root, no user switching: every server runs as you, each with a HOME of its own
    c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
    c.SimpleLocalProcessSpawner.home_dir_template = (
        os.environ.get("AGL_HUB_HOMES", str(STATE.parent / "homes")) + "/{username}"
    )
