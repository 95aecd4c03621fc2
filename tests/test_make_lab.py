"""`make lab`: the terminal its JupyterLab opens finds the course's Python and a `grader` command, also when it was
started without a TTY (read from the Makefile, then run); `python -m grader` under a Python without torch says which
Python to use."""

import contextlib
import importlib
import json
import re
from pathlib import Path

from tests.cli import in_a_thread_of_its_own

ROOT = Path(__file__).resolve().parents[1]


def _lab_rule() -> tuple[list[str], str]:
    text = (ROOT / "Makefile").read_text()
    m = re.search(r"^lab:(.*)\n((?:\t.*\n)+)", text, re.M)
    assert m, "the Makefile has no lab rule"
    return m.group(1).split(), m.group(2)


def test_lab_installs_system_deps_first():
    prerequisites, _ = _lab_rule()
    assert "install" in prerequisites and "system-deps" in prerequisites


def test_lab_starts_the_server_with_the_venvs_bin_first_on_path():
    _, recipe = _lab_rule()
    path = recipe.index('PATH="$(abspath $(BIN)):$$PATH"; export PATH')
    assert path < recipe.index("jupyter lab")


def test_lab_prints_its_url_again_once_the_server_answers():
    _, recipe = _lab_rule()
    assert recipe.count("$$url") >= 2 and "is ready" in recipe
    assert recipe.index("is ready") < recipe.index("exec $(BIN)/jupyter lab")  # the waiter runs beside the server


def test_the_grader_console_script_resolves():
    scripts = (ROOT / "pyproject.toml").read_text().split("[project.scripts]")[1].split("\n[")[0]
    m = re.search(r'^grader = "([\w.]+):(\w+)"', scripts, re.M)  # Python 3.10 has no tomllib
    assert m, "no `grader` console script in pyproject.toml"
    module, name = m.groups()
    assert callable(getattr(importlib.import_module(module), name))


def test_jupyterlab_news_is_off():
    overrides = json.loads((ROOT / "jupyter" / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False


# --- `make lab` run without a TTY, then `grader status` in its terminal (issue 44) ---------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _terminal_says(port: int, token: str, command: str, until: str, timeout_s: float = 120) -> str:
    """Open a terminal of the server on ``port`` (its REST API, then its websocket, as JupyterLab's Terminal does),
    type ``command`` and return what it printed once ``until`` appears (or the time is up)."""
    import asyncio
    import json as js
    import urllib.request

    from tornado.websocket import websocket_connect

    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/terminals", method="POST", headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(req, timeout=30) as response:
        name = js.loads(response.read())["name"]

    async def talk() -> str:
        ws = await websocket_connect(f"ws://127.0.0.1:{port}/terminals/websocket/{name}?token={token}")
        said = ""
        await ws.write_message(js.dumps(["stdin", command + "\r"]))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while until not in said and loop.time() < deadline:
            try:
                message = await asyncio.wait_for(ws.read_message(), timeout=max(0.1, deadline - loop.time()))
            except asyncio.TimeoutError:
                break
            if message is None:
                break
            kind, *rest = js.loads(message)
            if kind == "stdout":
                said += rest[0]
        ws.close()
        return said

    return in_a_thread_of_its_own(talk())


def test_make_lab_without_a_tty_then_grader_status_in_its_terminal(tmp_path):
    """`make lab` started the way a spawner, nohup or `&` starts it (no TTY anywhere, a session of its own), then
    JupyterLab's terminal: `grader status` is the course's command (not "command not found" from a login shell whose
    /etc/profile put PATH back) and prints the course map of this learner's store. `-o install -o system-deps`: the venv this
    test runs in is the one make test installed; nothing is installed again."""
    import os
    import shutil
    import signal
    import subprocess
    import time
    import urllib.error
    import urllib.request

    if shutil.which("make") is None:
        import pytest

        pytest.skip("make is not installed")
    port, log = _free_port(), tmp_path / "lab.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "AUTOGRAD_LAB", "PYTEST"))}
    for key in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_WORKSPACES_DIR"):
        env[key] = str(tmp_path / key.lower())
    env.update(AUTOGRAD_LAB_WORKSPACE=str(tmp_path / "work"), AUTOGRAD_LAB_HOME=str(tmp_path / "home"), BROWSER="true")
    with open(log, "wb") as out:
        lab = subprocess.Popen(
            ["make", "--no-print-directory", "-o", "install", "-o", "system-deps", "lab", f"PORT={port}"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        token, deadline = "", time.time() + 120
        while time.time() < deadline and lab.poll() is None:
            m = re.search(rf"127\.0\.0\.1:{port}/lab/tree/00_start_here\.ipynb\?token=(\S+)", log.read_text())
            if m:
                token = m.group(1)
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=5)
                    break
                except (urllib.error.URLError, OSError):
                    pass
            time.sleep(0.5)
        assert token and lab.poll() is None, log.read_text()[-3000:]
        # the same server serves Notebook 7: the address make lab prints for it opens the notebook there
        nb7 = f"http://127.0.0.1:{port}/tree/00_start_here.ipynb?token={token}"
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # the token logs in, as a browser
        with browser.open(nb7, timeout=30) as response:
            assert "/notebooks/00_start_here.ipynb" in response.url and response.status == 200
        from grader.engine.course import UNITS

        last = list(UNITS.values())[-1].title  # the course map's last line
        said = _terminal_says(port, token, "grader status", last)
        assert "command not found" not in said and last in said, said[-2000:]
        assert "Traceback" not in said and f"progress: {tmp_path / 'home'}" in said, said[-2000:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait(timeout=10)


def test_python_m_grader_without_torch_names_the_course_python_and_exits_2():
    """The checkout's grader imported by a Python without torch (the system's): one message naming the course's
    Python, exit status 2, no traceback."""
    import subprocess

    bare = "/usr/bin/python3"
    if not Path(bare).exists() or subprocess.run([bare, "-c", "import torch"], capture_output=True).returncode == 0:
        import pytest

        pytest.skip(f"no Python without torch at {bare}")
    done = subprocess.run([bare, "-m", "grader", "status"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr and "has no torch" in done.stderr, done.stderr
    assert "-m grader status" in done.stderr and ".venv/bin/python" in done.stderr, done.stderr
