"""Unit 01 in a real browser: JupyterLab, headless Debian Chromium, driven by Playwright.

1. The learner notebook: run the cells above a reveal, lock a prediction in through its
   widget (a toggle clicked; a name typed), run the reveal and every cell after it, and
   read the verdicts the page shows. Every cell runs, none writes a traceback; the reveals run past
   without a prediction wait (issue 44).
2. A solved copy without its ``mark_passed("01")`` cell: run all cells, press the unit
   panel's "Mark passed" button, and read the progress store the kernel wrote.
3. A scratch notebook of the loop's refusals and tools: the reset button a refusal offers, a wrong
   self-test's misconception note and hint button, a course-map link, and the notebook reopened.

Unit 00's walk through a widget lock, a restart, Run All, a reload, a reset and a reopen is
tests/test_browser_restart.py (it uses the helpers below).

One JupyterLab (127.0.0.1, a free port, a token, its state in a temporary folder) and one Chromium serve every
browser test of a process (tests/conftest.py: ``jupyterlab``, ``chromium``); each test works in a folder of its own
under the server's root, whose kernels keep that test's progress store (``course``, HOME_STARTUP): a server and a
browser started once instead of once a test. Screenshots go to test-artifacts/. Where Chromium or Playwright is
missing the tests are skipped and say why.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
UNIT = "01_what_the_forward_pass_records.ipynb"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
IDLE = "Python 3 (ipykernel) | Idle"


def _requirements() -> str:
    if not Path(CHROMIUM).exists():
        return f"Chromium is not installed at {CHROMIUM}; `make system-deps` installs it with apt-get when run as root"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install -e '.[test]')"
    return ""


pytestmark = pytest.mark.skipif(bool(_requirements()), reason=_requirements() or "ready")


# --- JupyterLab ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(folder: Path) -> None:
    """No news toast, no update check, and every cell kept in the page (no windowing)."""
    overrides = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    }
    for name, value in overrides.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


# A kernel started in a test's folder (Jupyter starts it there) keeps that test's progress store, named in the
# folder's .agl-home: one server serves every browser test of a process (see ``course`` below), each with its own.
HOME_STARTUP = """def _agl_test_home():
    import os

    named = os.path.join(os.getcwd(), ".agl-home")
    if os.path.exists(named):
        with open(named) as f:
            os.environ["AUTOGRAD_LAB_HOME"] = f.read().strip()


_agl_test_home()
del _agl_test_home
"""


class Lab:
    def __init__(self, root: Path, state: Path, progress_home: Path):
        self.root, self.token = root, secrets.token_urlsafe(24)
        env = dict(os.environ)
        for key, sub in (
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_DATA_DIR", "data"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
            ("JUPYTERLAB_SETTINGS_DIR", "settings"),
            ("IPYTHONDIR", "ipython"),
        ):
            env[key] = str(state / sub)
            (state / sub).mkdir(parents=True, exist_ok=True)
        _settings(state / "settings")
        startup = state / "ipython" / "profile_default" / "startup"
        startup.mkdir(parents=True, exist_ok=True)
        (startup / "00-agl-test-home.py").write_text(HOME_STARTUP)
        env["AUTOGRAD_LAB_HOME"] = str(progress_home)
        # the kernel imports the grader of this checkout (a worktree's), not the one the venv was installed from
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        env.pop("AUTOGRAD_LAB_STRICT", None)
        env.pop("AUTOGRAD_LAB_WIDGETS", None)
        self.env, self.log_path = env, state / "jupyter.log"
        self.proc = None
        for _ in range(3):  # a port taken between choosing and binding: choose again
            self.port = _free_port()
            if self._start():
                return
        raise AssertionError("JupyterLab did not start:\n" + self.log())

    def _start(self) -> bool:
        cmd = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        self.log_file = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=self.log_file, stderr=subprocess.STDOUT, cwd=self.root)
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.log_file.close()
                return False
            try:
                self.api("GET", "/api/status")
                return True
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
        self.stop()
        return False

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def api(self, method: str, path: str):
        request = urllib.request.Request(
            self.url(path), method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def delete_sessions(self) -> None:
        for session in self.api("GET", "/api/sessions") or []:
            self.api("DELETE", f"/api/sessions/{session['id']}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if not self.log_file.closed:
            self.log_file.close()


_RUNNING: list = []  # the Chromium of chromium_browser() while it runs: Playwright's sync API runs one a thread


@contextlib.contextmanager
def chromium_browser():
    """A headless Chromium, closed afterwards; the one already running in this process where there is one (the
    ``chromium`` fixture's: a second Playwright cannot start in the same thread)."""
    if _RUNNING:
        yield _RUNNING[-1]
        return
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        _RUNNING.append(browser)
        try:
            yield browser
        finally:
            _RUNNING.remove(browser)
            browser.close()


@contextlib.contextmanager
def lab_server(root: Path, state: Path, home: Path):
    """A JupyterLab on ``root`` (its state in ``state``, the learner's progress in ``home``), stopped afterwards; its
    log printed on failure."""
    lab = Lab(root, state, progress_home=home)
    try:
        lab.delete_sessions()
        yield lab
    except Exception:
        print(lab.log(), file=sys.stderr)
        raise
    finally:
        lab.stop()


@contextlib.contextmanager
def new_page(browser, failed_shot: str, width: int = 1400, height: int = 1000, lab: Lab | None = None):
    """A page of ``browser`` at ``width`` x ``height``; on failure a screenshot (``failed_shot``) and the end of the
    server's log (``lab``); closed afterwards."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(60_000)
    try:
        yield page
    except Exception:
        with contextlib.suppress(Exception):
            page.screenshot(path=str(ARTIFACTS / failed_shot))
        if lab is not None:
            print(lab.log(), file=sys.stderr)
        raise
    finally:
        with contextlib.suppress(Exception):
            page.close()


@dataclass
class Course:
    """A test's own folder under the shared server's root, with its own progress store (``home``, the test's): its
    kernels keep that store (HOME_STARTUP). ``at(name)`` is a file's path as the server names it."""

    lab: Lab
    browser: Any
    folder: Path
    home: Path

    def at(self, name: str) -> str:
        return f"{self.folder.name}/{name}"

    def page(self, failed_shot: str, width: int = 1400, height: int = 1000):
        return new_page(self.browser, failed_shot, width, height, lab=self.lab)


def course_for(shared, home: Path, name: str) -> Course:
    """The ``course`` fixture's folder (tests/conftest.py): named after the test, under the shared server's root."""
    lab, browser = shared
    folder = lab.root / re.sub(r"[^A-Za-z0-9_-]+", "-", name)[:80]
    folder.mkdir()
    (folder / ".agl-home").write_text(str(home))
    return Course(lab, browser, folder, home)


@contextlib.contextmanager
def shared_lab(base: Path):
    """The server of ``jupyterlab`` (tests/conftest.py), in ``base``."""
    (base / "root").mkdir(parents=True, exist_ok=True)
    with lab_server(base / "root", base / "jupyter", base / "home") as lab:
        yield lab


# --- the page ------------------------------------------------------------------------------


def open_notebook(page, lab: Lab, name: str) -> None:
    page.goto(lab.url(f"/lab/tree/{name}?reset&token={lab.token}"))
    page.get_by_text(IDLE).wait_for(timeout=120_000)
    no = page.locator(".jp-toast-button", has_text="No")  # the news question, should it appear
    if no.count():
        no.first.click()


def code_cell(page, source_line: str):
    editor = page.locator(".jp-InputArea-editor", has_text=source_line)
    return page.locator(".jp-CodeCell").filter(has=editor).first


def run_menu(page, command: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(f"li.lm-Menu-item[data-command='{command}']").click()


def wait_until_done(page, last, timeout_s: float = 240) -> None:
    """Every cell has run: the last cell's output (``last``) is there, no '[*]' prompt is left,
    and the kernel reads Idle again."""
    last.wait_for(timeout=timeout_s * 1000)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if not page.locator(".jp-InputPrompt", has_text="[*]").count() and page.get_by_text(IDLE).count():
            time.sleep(0.5)
            if not page.locator(".jp-InputPrompt", has_text="[*]").count():
                return
        time.sleep(0.5)
    raise AssertionError("the notebook did not finish running")


def tracebacks(page) -> list[str]:
    return page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()


def solved_copy(target: Path) -> None:
    """The worked notebook without its mark_passed cell: passing is left to the panel's button."""
    nb = nbformat.read(ROOT / "solutions" / UNIT, as_version=4)
    nb.cells = [c for c in nb.cells if not (c.cell_type == "code" and c.source.strip() == 'mark_passed("01")')]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, target)


def unit_state(uid: str):
    from grader.engine import progress
    from grader.engine.store import current

    return progress.unit_state(uid, current().events(uid)), current().events(uid)


# --- the test ---------------------------------------------------------------------------------


def test_unit_01_with_the_mouse_in_jupyterlab(course):
    from grader import reset

    started = time.time()
    shutil.copy(ROOT / "notebooks" / UNIT, course.folder / UNIT)
    solved_copy(course.folder / "01_solved.ipynb")
    lab = course.lab
    with course.page("browser-unit01-failed.png") as page:
        # 1. the learner notebook: predictions locked in through their widgets, then revealed
        open_notebook(page, lab, course.at(UNIT))
        first = code_cell(page, 'reveal("01.x-is-leaf")')
        first.locator(".jp-InputPrompt").click()
        run_menu(page, "notebook:run-all-above")  # up to, not including, the reveal
        widget = page.locator(".agl-q-01-x-is-leaf")
        widget.wait_for(timeout=120_000)
        widget.locator("button.widget-toggle-button", has_text="False").click()  # the mouse
        widget.locator("button.agl-lock").click()
        widget.locator(".agl-result", has_text="prediction locked in").wait_for()
        state, events = unit_state("01")
        assert [(e.qid, e.action, e.verdict, e.answer) for e in events] == [
            ("01.x-is-leaf", "predict", "recorded", False)
        ]

        second = code_cell(page, 'reveal("01.pow-node")')
        second.locator(".jp-InputPrompt").click()
        run_menu(page, "notebook:run-all-above")  # runs the first reveal on the way
        widget = page.locator(".agl-q-01-pow-node")
        widget.wait_for(timeout=120_000)
        widget.locator("input").first.click()
        page.keyboard.type("PowBackward0")  # the keyboard
        widget.locator("button.agl-lock").click()
        widget.locator(".agl-result", has_text="prediction locked in").wait_for()
        verdict = first.locator(".jp-OutputArea-output").first
        assert "✓ 01.x-is-leaf: correct" in verdict.inner_text()
        assert "you predicted False" in " ".join(verdict.inner_text().split())

        second.locator(".jp-InputPrompt").click()
        run_menu(page, "notebook:run-all-below")  # the second reveal and the rest
        panel = page.locator(".agl-panel-01")
        wait_until_done(page, panel)
        verdict = second.locator(".jp-OutputArea-output").first
        verdict.scroll_into_view_if_needed()
        assert "✓ 01.pow-node: correct" in verdict.inner_text()
        page.screenshot(path=str(ARTIFACTS / "browser-unit01-reveal.png"))
        assert tracebacks(page) == []
        assert "in progress" in panel.inner_text()
        state, _ = unit_state("01")
        assert state.questions["01.x-is-leaf"].done and state.questions["01.pow-node"].done
        # the questions run past without a prediction were not revealed: each reveal waits (issue 44)
        assert not state.questions["01.walk-shared"].revealed and not state.passed
        held = code_cell(page, 'reveal("01.walk-shared")')
        assert "Not revealed, and nothing recorded" in " ".join(held.inner_text().split())

        # 2. a solved copy: everything answered in code, passed through the panel's button
        reset("01")
        lab.delete_sessions()
        open_notebook(page, lab, course.at("01_solved.ipynb"))
        run_menu(page, "runmenu:run-all")
        panel = page.locator(".agl-panel-01")
        wait_until_done(page, panel)
        assert tracebacks(page) == []
        panel.scroll_into_view_if_needed()
        assert "Everything is done" in panel.inner_text()
        state, _ = unit_state("01")
        assert not state.missing() and not state.passed
        panel.locator("button.agl-mark").click()
        panel.locator(".agl-result", has_text="is recorded as passed").wait_for()
        page.screenshot(path=str(ARTIFACTS / "browser-unit01-passed.png"))
        state, events = unit_state("01")
        assert state.passed
        assert (events[-1].action, events[-1].verdict) == ("mark", "passed")
    print(f"browser test took {time.time() - started:.0f} s")


# --- the learner-loop details, in the browser --------------------------------------------------


def _scratch(target: Path, self_test) -> None:
    """A small notebook of the loop's refusals and tools: a refusal with a reset button, the course map,
    a wrong self-test answer with a misconception note and a hint button."""
    wrong, note = next((w, n) for w, n in self_test.misconceptions if not callable(w))
    cells = [
        "from grader import predict, reveal, check, mark_passed, reset, hint, course_map",
        'reveal("01.x-is-leaf")',
        'predict("01.x-is-leaf", True)',
        "course_map()",
        f"check({self_test.qid!r}, {wrong!r})",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, target)


def test_refusal_buttons_map_links_hints_and_a_reopened_notebook(course):
    from grader.engine.question import all_questions

    with_note = [
        q
        for q in all_questions()
        if q.role == "self-test" and q.hints and any(not callable(w) for w, _ in q.misconceptions)
    ]
    if not with_note:
        pytest.fail("no self-test declares a literal misconception and hints; the browser cannot show one")
    q = with_note[0]
    note = next(n for w, n in q.misconceptions if not callable(w))
    overrides = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert overrides.exists() and "saveState" in overrides.read_text(), (
        "JupyterLab's overrides.json (saveState) is not installed: run make install"
    )

    root, lab = course.folder, course.lab
    shutil.copy(ROOT / "notebooks" / UNIT, root / UNIT)
    _scratch(root / "loop.ipynb", q)
    with course.page("browser-loop-failed.png") as page:
        open_notebook(page, lab, course.at("loop.ipynb"))
        run_menu(page, "runmenu:run-all")
        wait_until_done(page, page.locator(".agl-course-map"))
        assert tracebacks(page) == []

        # a refusal that names reset offers it as a button, and the button resets
        button = page.locator(".agl-action-reset")
        button.click()
        page.locator(".agl-actions .agl-result", has_text="starts again").wait_for()
        _, events = unit_state("01")
        assert [(e.action, e.verdict) for e in events][-1] == ("reset", "recorded")

        # a wrong self-test answer: its misconception note, and a hint button that gives hint 1
        wrong = page.locator(".agl-actions", has_text=q.qid).last
        assert " ".join(note.split()[:6]) in " ".join(wrong.inner_text().split())
        wrong.locator(".agl-action-hint").click()
        wrong.locator(".agl-result", has_text="hint 1 of").wait_for()
        _, events = unit_state(q.unit)
        assert any(e.action == "hint" and e.qid == q.qid for e in events)

        # a course-map link opens the unit inside JupyterLab: no page load
        page.evaluate("window.__agl_same_page = true")
        page.locator(".agl-course-map a", has_text="What the forward pass records").click()
        page.locator(".lm-TabBar-tab", has_text=UNIT).first.wait_for()
        assert page.evaluate("window.__agl_same_page === true"), "the map link reloaded the page"
        page.screenshot(path=str(ARTIFACTS / "browser-loop.png"))

        # reopened after the kernel is gone: widgets come back from saved state, never an error
        page.locator(".lm-TabBar-tab", has_text="loop.ipynb").first.click()
        page.keyboard.press("Control+s")
        time.sleep(2)
        lab.delete_sessions()
        saved = json.loads((root / "loop.ipynb").read_text())
        assert "application/vnd.jupyter.widget-state+json" in saved["metadata"].get("widgets", {})
        page.goto(lab.url(f"/lab/tree/{course.at('loop.ipynb')}?reset&token={lab.token}"))
        page.locator(".jp-Notebook").first.wait_for()
        page.locator(".agl-course-map").first.wait_for(timeout=60_000)
        time.sleep(2)
        body = page.locator(".jp-Notebook").first.inner_text()
        page.screenshot(path=str(ARTIFACTS / "browser-reopened.png"))
        assert "model not found" not in body and "What the forward pass records" in body


# --- helpers of the record walk (tests/test_browser_restart.py) and the other browser modules ----------------


START = "00_start_here.ipynb"


def _grade(notebook: Path, out: Path) -> dict:
    import csv

    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(notebook), "--out", str(out), "--cell-timeout", "60"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out, newline="") as f:
        (row,) = list(csv.DictReader(f))
    return row


def _saved_record(path: Path, cell_id: str):
    from grader.engine import locked

    cell = next(c for c in json.loads(path.read_text())["cells"] if c.get("id") == cell_id)
    found = [o["data"][locked.MIME] for o in cell.get("outputs", []) if locked.MIME in o.get("data", {})]
    return found[-1] if found else None


def _save_and_wait(page, path: Path, cell_id: str, want) -> None:
    """Ctrl+S, then wait until the file on disk holds the record ``want`` says it should."""
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if want(_saved_record(path, cell_id)):
                return
        except (OSError, ValueError, StopIteration):
            pass
        time.sleep(0.5)
    raise AssertionError(f"the saved notebook does not hold the lock record: {_saved_record(path, cell_id)}")


def kernel_idle(lab: Lab, timeout_s: float = 180) -> None:
    """Every kernel of the server reads idle (asked of the server: Notebook 7 has no status bar to read)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        kernels = lab.api("GET", "/api/kernels") or []
        if kernels and all(k.get("execution_state") == "idle" for k in kernels):
            return
        time.sleep(0.5)
    raise AssertionError(f"the kernels did not go idle: {lab.api('GET', '/api/kernels')}")


def wait_for_saved(path: Path, found, timeout_s: float = 30):
    """Wait until ``found(notebook as saved)`` is not None (the page saved what it should); what it returned."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            got = found(json.loads(path.read_text()))
            if got is not None:
                return got
        except (OSError, ValueError, KeyError, StopIteration):
            pass
        time.sleep(0.5)
    raise AssertionError(f"{path.name} as saved never held what the test waits for")


def record_in(nb: dict, cell_id: str, wanted, widgets: bool = False):
    """The lock record the cell ``cell_id`` of a saved notebook carries (its widget's record in the saved widget state
    where ``widgets``, else its output's), when ``wanted(record)`` holds; else None."""
    from grader.engine import locked

    cells = [dict(c, outputs=list(c.get("outputs", []))) for c in nb["cells"] if c.get("id") == cell_id]
    if widgets and not locked.from_widgets(cells, nb.get("metadata", {}).get("widgets")):
        return None
    found = [o["data"][locked.MIME] for c in cells for o in c["outputs"] if locked.MIME in o.get("data", {})]
    return found[-1] if found and wanted(found[-1]) else None


def run_cell(page, cell) -> None:
    """Select ``cell`` and run it without moving on (Ctrl+Enter in command mode)."""
    cell.locator(".jp-InputPrompt").click()
    page.keyboard.press("Control+Enter")


def cell_by_id(page, notebook: Path, cell_id: str, added_above: int = 0):
    """The cell with ``cell_id`` in ``notebook`` as the page shows it (by its place; ``added_above`` cells were
    inserted above it in the page since). Found by place, not by its editor's text, which the page may not draw."""
    ids = [c.get("id") for c in json.loads(notebook.read_text())["cells"]]
    return page.locator(".jp-Notebook .jp-Cell").nth(ids.index(cell_id) + added_above)


def restart_kernel(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").first.click()
    page.locator("li.lm-Menu-item[data-command='kernelmenu:restart']").click()
    page.locator(".jp-Dialog button.jp-mod-accept").click()


def live_inputs(page) -> int:
    """Inputs and buttons a learner could reach inside the course's widgets."""
    return page.locator(".agl-live-only button:visible, .agl-live-only input:visible").count()


def same_record(page, home: Path, uid: str) -> dict:
    """The panel (refreshed where it is live), ``python -m grader status --json`` and the store agree: each
    question's row reads its record, the counts are the same. The records, by question."""
    state, _ = unit_state(uid)
    panel = page.locator(f".agl-panel-{uid}").last
    refresh = panel.locator("button", has_text="Refresh")
    if refresh.count() and refresh.first.is_visible():
        refresh.first.click()
    records = {qid: s.record for qid, s in state.questions.items()}
    c = state.counts()
    header = f"done {c['done']} of {c['questions']} · predicted before the reveal {c['predicted']}/{c['predict_total']}"

    def agrees() -> bool:  # the header alone can read the same before and after a refresh: the rows too
        rows = {qid: panel.locator("tr", has_text=qid).inner_text() for qid in records}
        return header in panel.inner_text() and all(records[q] in rows[q] for q in records)

    deadline = time.time() + 90  # a refresh is a round trip to the kernel: slow on a loaded machine
    while not agrees() and time.time() < deadline:
        time.sleep(0.5)
    assert header in panel.inner_text(), (header, panel.inner_text())
    for qid, record in records.items():
        assert record in panel.locator("tr", has_text=qid).inner_text(), (qid, record)
    env = {**os.environ, "AUTOGRAD_LAB_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "grader", "status", "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = [u for u in json.loads(done.stdout)["units"] if u["unit"] == uid]
    assert {k: row[k] for k in c} == c, (row, c)
    return records
