"""Unit 01 in a real browser: JupyterLab, headless Debian Chromium, driven by Playwright.

1. The learner notebook: run the cells above a reveal, lock a prediction in through its
   widget (a toggle clicked; a name typed), run the reveal and every cell after it, and
   read the verdicts the page shows. Every cell runs, none writes a traceback.
2. A solved copy without its ``mark_passed("01")`` cell: run all cells, press the unit
   panel's "Mark passed" button, and read the progress store the kernel wrote.
3. Unit 00: a prediction locked with the widget, saved with Ctrl+S, and the saved file graded
   (the prediction counts); then Restart Kernel and Run All: the predict cell shows the
   locked prediction, refuses nothing, and the record and the saved file are unchanged.

JupyterLab runs on 127.0.0.1 at a free port with a token, its state and the learner's
progress in this test's temporary folder. Screenshots go to test-artifacts/. Where
Chromium or Playwright is missing the test is skipped and says why.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

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


@contextlib.contextmanager
def lab_page(root: Path, state: Path, home: Path, failed_shot: str):
    """A JupyterLab on ``root`` and a Chromium page for it; on failure a screenshot (``failed_shot``) and the
    server's log; both stopped afterwards."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    lab = Lab(root, state, progress_home=home)
    try:
        lab.delete_sessions()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)
                try:
                    yield lab, page
                except Exception:
                    page.screenshot(path=str(ARTIFACTS / failed_shot))
                    raise
            finally:
                browser.close()
    except Exception:
        print(lab.log(), file=sys.stderr)
        raise
    finally:
        lab.stop()


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


def test_unit_01_with_the_mouse_in_jupyterlab(tmp_path, home):
    from playwright.sync_api import sync_playwright

    from grader import reset

    started = time.time()
    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / UNIT, root / UNIT)
    solved_copy(root / "01_solved.ipynb")
    ARTIFACTS.mkdir(exist_ok=True)

    lab = Lab(root, tmp_path / "jupyter", progress_home=home)
    try:
        lab.delete_sessions()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)

                # 1. the learner notebook: predictions locked in through their widgets, then revealed
                open_notebook(page, lab, UNIT)
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
                assert state.questions["01.walk-y"].reveal_verdict == "revealed" and not state.passed

                # 2. a solved copy: everything answered in code, passed through the panel's button
                reset("01")
                lab.delete_sessions()
                open_notebook(page, lab, "01_solved.ipynb")
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
            finally:
                browser.close()
    except Exception:
        print(lab.log(), file=sys.stderr)
        raise
    finally:
        lab.stop()
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


def test_refusal_buttons_map_links_hints_and_a_reopened_notebook(tmp_path, home):
    from playwright.sync_api import sync_playwright

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

    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / UNIT, root / UNIT)
    _scratch(root / "loop.ipynb", q)
    lab = Lab(root, tmp_path / "jupyter", progress_home=home)
    try:
        lab.delete_sessions()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)
                open_notebook(page, lab, "loop.ipynb")
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
                page.goto(lab.url(f"/lab/tree/loop.ipynb?reset&token={lab.token}"))
                page.locator(".jp-Notebook").first.wait_for()
                page.locator(".agl-course-map").first.wait_for(timeout=60_000)
                time.sleep(2)
                body = page.locator(".jp-Notebook").first.inner_text()
                page.screenshot(path=str(ARTIFACTS / "browser-reopened.png"))
                assert "model not found" not in body and "What the forward pass records" in body
            finally:
                browser.close()
    except Exception:
        print(lab.log(), file=sys.stderr)
        raise
    finally:
        lab.stop()


def test_a_feedback_page_opens_offline_with_answers_explanation_and_failing_case(tmp_path):
    """The grader's feedback page (``grade --html``), opened from disk with every network request refused."""
    from playwright.sync_api import sync_playwright

    from grader.engine.question import get
    from tests.test_gradebook import feedback_page

    path = feedback_page(tmp_path)
    remote = []
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.set_default_timeout(30_000)

            def refuse(route):
                if not route.request.url.startswith("file:"):
                    remote.append(route.request.url)
                    return route.abort()
                return route.continue_()

            page.route("**/*", refuse)
            page.goto(path.as_uri())
            body = " ".join(page.inner_text("body").split())
            page.screenshot(path=str(ARTIFACTS / "feedback-page.png"), full_page=True)
            assert remote == [], remote
            pow_node, walk = get("01.pow-node"), get("01.graph-walk")
            row = " ".join(page.locator("tr#\\30 1\\.pow-node").inner_text().split())
            assert "MulBackward0" in row and "PowBackward0" in row  # the answer beside torch's
            assert " ".join(pow_node.explain.split()[:8]) in body  # the explanation
            failing = page.locator(".failing")
            assert failing.count() == 1 and "Smallest failing case" in failing.inner_text()
            assert walk.kind.cases()[0].source.strip().splitlines()[0].strip() in failing.locator("pre").inner_text()
            colours = page.eval_on_selector_all(".verdict", "els => els.map(e => getComputedStyle(e).backgroundColor)")
            assert colours and all(c not in ("rgba(0, 0, 0, 0)", "transparent") for c in colours), colours
        finally:
            browser.close()


def test_the_class_report_renders_offline_and_its_figures_match_the_csv(tmp_path):
    """A small class graded with --report; the page opened from disk with every network request refused."""
    import csv

    from playwright.sync_api import sync_playwright

    solution = ROOT / "solutions" / "00_start_here.ipynb"
    klass = tmp_path / "class"
    for name, old, new in (
        ("ann", "", ""),
        ("ben", "answer = [2.0, 3.0]", "answer = [1.0, 2.0]"),
        ("cat", "answer = [2.0, 3.0]", "answer = [1.0, 2.0]"),
        ("dan", "answer = 6.0", "answer = 5.0"),
    ):
        nb = nbformat.read(solution, as_version=4)
        for cell in nb.cells:
            cell.source = cell.source.replace(old, new) if old else cell.source
        (klass / name).mkdir(parents=True)
        nbformat.write(nb, klass / name / "00_start_here.ipynb")
    out, report = tmp_path / "grades.csv", tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(klass), "--out", str(out), "-j", "2", "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            asked = []
            page.route(
                "**/*",
                lambda route: (
                    asked.append(route.request.url),
                    route.continue_() if route.request.url.startswith("file:") else route.abort(),
                ),
            )
            page.goto(report.as_uri())
            page.locator("section.unit[data-unit='00'] svg").wait_for()
            assert [u for u in asked if not u.startswith("file:")] == [], "the report asked the network"
            assert page.locator("#totals").get_attribute("data-learners") == "4"
            chart = page.locator("section.unit[data-unit='00'] figure.chart svg")
            box = chart.bounding_box()
            assert box and box["width"] > 300 and box["height"] > 80  # drawn, not an empty box
            for qid in ("00.warmup-add", "00.warmup-flag", "00.warmup-square"):
                role_right = (
                    (lambda v: v == "predicted, correct")
                    if qid != "00.warmup-square"
                    else (lambda v: v.startswith("correct"))
                )
                right = sum(role_right(r[qid]) for r in rows)
                label = chart.locator(f"[id='count-{qid}']").text_content().strip()
                assert label == f"{right}/{len(rows)}", (qid, label)  # the figure says what the CSV says
                cell = page.locator(f"tr.question[data-qid='{qid}'] td.right").inner_text()
                assert cell == f"{right}/{len(rows)}"
            passed = sum(r["marked passed"] == "yes" for r in rows)
            assert page.locator("#overview [id='passed-00']").text_content().strip() == f"{passed}/{len(rows)}"
            wrong = page.locator("tr.question[data-qid='00.warmup-add']").inner_text()
            assert "[1.0, 2.0] (2)" in wrong
            page.screenshot(path=str(ARTIFACTS / "class-report.png"), full_page=True)
        finally:
            browser.close()


# --- a prediction locked with the widget, saved by JupyterLab, graded ------------------------------

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


def test_a_prediction_locked_with_the_widget_is_saved_graded_and_survives_restart_and_run_all(tmp_path, home):
    """Unit 00: lock 00.warmup-add in with the widget, run the rest, save, grade the saved file: the prediction
    is graded. Then Restart Kernel and Run All: the predict cell shows the locked prediction (no refusal, no
    reset button), the record is unchanged, and the saved file still grades it."""
    from playwright.sync_api import sync_playwright

    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / START, root / START)
    saved = root / START
    ARTIFACTS.mkdir(exist_ok=True)
    lab = Lab(root, tmp_path / "jupyter", progress_home=home)
    try:
        lab.delete_sessions()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)
                open_notebook(page, lab, START)
                predict_cell = code_cell(page, 'predict("00.warmup-add", answer)')
                reveal_cell = code_cell(page, 'reveal("00.warmup-add")')
                reveal_cell.locator(".jp-InputPrompt").click()
                run_menu(page, "notebook:run-all-above")
                widget = page.locator(".agl-q-00-warmup-add")
                widget.wait_for(timeout=120_000)
                assert "00.warmup-add: not locked yet" in predict_cell.inner_text()
                widget.locator("input").first.click()
                page.keyboard.type("2, 3")
                widget.locator("button.agl-lock").click()
                widget.locator(".agl-result", has_text="prediction locked in").wait_for()
                predict_cell.get_by_text("00.warmup-add: locked in").wait_for()  # the record, updated in place
                reveal_cell.locator(".jp-InputPrompt").click()
                run_menu(page, "notebook:run-all-below")
                panel = page.locator(".agl-panel-00")
                wait_until_done(page, panel)
                assert "✓ 00.warmup-add: correct" in reveal_cell.inner_text()
                _save_and_wait(page, saved, "c006", lambda r: r and r.get("locked"))
                record = _saved_record(saved, "c006")
                assert record == {"qid": "00.warmup-add", "locked": True, "answer": [2.0, 3.0], "before_reveal": True}
                shutil.copy(saved, tmp_path / "first.ipynb")
                state, _ = unit_state("00")
                records = {qid: s.record for qid, s in state.questions.items()}
                assert records["00.warmup-add"] == "predicted, correct"

                # Restart Kernel and Run All: the predict cell shows the record as it stands, and changes nothing
                run_menu(page, "runmenu:restart-and-run-all")
                page.locator(".jp-Dialog button.jp-mod-accept").click()
                time.sleep(2)
                wait_until_done(page, page.locator(".agl-panel-00"))
                text = " ".join(predict_cell.inner_text().split())
                predict_cell.scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / "browser-locked-rerun.png"))
                assert "prediction refused" not in text and "your prediction [2, 3]" in text.replace(".0", ""), text
                assert "torch says" in text and "00.warmup-add: locked in" in text
                assert predict_cell.locator(".agl-action-reset").count() == 0
                assert (
                    page.locator(".agl-action-reset").count() == 0 and page.locator(".agl-again:visible").count() == 0
                )
                assert tracebacks(page) == []
                state, events = unit_state("00")
                assert {qid: s.record for qid, s in state.questions.items()} == records
                assert not [e for e in events if e.action in ("predict", "reset") and e.qid == "00.warmup-add"][1:]
                _save_and_wait(page, saved, "c006", lambda r: r and r.get("locked"))
                assert _saved_record(saved, "c006") == record
            finally:
                browser.close()
    except Exception:
        print(lab.log(), file=sys.stderr)
        raise
    finally:
        lab.stop()

    for name in ("first.ipynb", START):  # as first saved, and as saved after Restart and Run All
        notebook = tmp_path / name if name != START else saved
        target = tmp_path / name.replace(".ipynb", "") / START  # the course's file name: unit 00
        target.parent.mkdir(exist_ok=True)
        shutil.copy(notebook, target)
        row = _grade(target, tmp_path / f"{name}.csv")
        assert row["run"] == "ok", row
        assert row["00.warmup-add"] == "predicted, correct", (name, row)
        assert row["00.warmup-flag"] == "not answered", (name, row)


# --- the record on the recovery paths: restart, an old widget, reload, reset, reopen (issue 27) -----------


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


def test_the_record_survives_restart_an_old_widget_reload_reset_and_reopen(tmp_path, home):
    """Unit 00 in one JupyterLab: a prediction locked and a self-test checked with their widgets; Kernel -> Restart
    (every old widget says it belongs to an earlier kernel and takes no input); Run All; a page reload (the widgets
    re-attach); a reset and a new prediction (the old input closes and says why); close and reopen (the saved
    widgets take no input). After each, the panel, status and the store agree; the saved file grades the same."""
    from grader.engine.question import get
    from grader.learner.stale import NOTE

    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / START, root / START)
    saved = root / START
    square = get("00.warmup-square").run()
    ARTIFACTS.mkdir(exist_ok=True)
    with lab_page(root, tmp_path / "jupyter", home, "browser-recovery-failed.png") as (lab, page):
        open_notebook(page, lab, START)
        flag_cell = cell_by_id(page, saved, "c011")
        square_cell = cell_by_id(page, saved, "c015")
        code_cell(page, 'reveal("00.warmup-add")').locator(".jp-InputPrompt").click()
        run_menu(page, "notebook:run-all-above")
        add = page.locator(".agl-q-00-warmup-add")
        add.wait_for(timeout=120_000)
        add.locator("input").first.click()
        page.keyboard.type("2, 3")
        add.locator("button.agl-lock").click()
        add.locator(".agl-result", has_text="prediction locked in").wait_for()
        run_cell(page, flag_cell)  # its input shown, nothing locked
        flag = page.locator(".agl-q-00-warmup-flag")
        flag.locator("button.agl-lock").wait_for(timeout=120_000)
        run_cell(page, square_cell)  # the self-test answered with its Check button only
        checker = page.locator(".agl-q-00-warmup-square")
        checker.locator("input").first.wait_for(timeout=120_000)
        checker.locator("input").first.click()
        page.keyboard.type(f"{square:g}")
        checker.locator("button.agl-check").click()
        checker.locator(".agl-result", has_text="correct").wait_for()
        _, before = unit_state("00")

        # Kernel -> Restart: every old widget says so and takes no input; nothing can be recorded
        restart_kernel(page)
        flag.locator(".agl-stale").wait_for(state="visible", timeout=120_000)
        page.get_by_text(IDLE).wait_for(timeout=120_000)
        assert NOTE in flag.inner_text() and NOTE in add.inner_text()
        assert flag.locator("button.widget-toggle-button").first.is_hidden()
        assert live_inputs(page) == 0
        page.screenshot(path=str(ARTIFACTS / "browser-restart-old-widget.png"))
        focusable = page.evaluate(
            "() => [...document.querySelectorAll('.agl-live-only input, .agl-live-only button')]"
            ".filter(e => { e.focus(); return document.activeElement === e; }).length"
        )
        assert focusable == 0  # no keyboard path into an old widget either
        assert unit_state("00")[1] == before

        # Restart and Run All (the kernel already restarted: Run All)
        run_menu(page, "runmenu:run-all")
        wait_until_done(page, page.locator(".agl-panel-00"))
        assert tracebacks(page) == []
        records = same_record(page, home, "00")
        assert records == {
            "00.warmup-add": "predicted, correct",
            "00.warmup-flag": "revealed without prediction",
            "00.warmup-square": "correct",
        }
        square_cell.scroll_into_view_if_needed()
        square_cell.get_by_text("Passed (correct").wait_for()  # the check cell run again: passed, closed

        # a reload of the page (saved first: a reload reads the file), the kernel running: the widgets re-attach
        _save_and_wait(page, saved, "c015", lambda r: r and r.get("locked"))
        page.reload()
        page.get_by_text(IDLE).wait_for(timeout=120_000)
        page.locator(".agl-panel-00 button", has_text="Refresh").wait_for(state="visible", timeout=120_000)
        assert page.locator(".agl-stale:visible").count() == 0
        assert same_record(page, home, "00") == records

        # a reset, then a new prediction: the old input closes and says why; the cell run again predicts
        flag_cell.locator(".jp-InputPrompt").click()
        page.keyboard.press("b")  # a cell below, in command mode
        page.keyboard.press("Enter")
        page.keyboard.type('reset("00.warmup-flag")')
        page.keyboard.press("Control+Enter")
        flag.locator(".agl-closed", has_text="was reset").wait_for()  # through the re-attached widget
        reset_cell = cell_by_id(page, saved, "c012")  # the new cell holds c012's place
        reset_cell.locator(".agl-result", has_text="run its predict cell").wait_for()  # the next step
        run_cell(page, flag_cell)
        fresh = page.locator(".agl-q-00-warmup-flag")
        fresh.locator("button.agl-lock:not([disabled])").wait_for(timeout=120_000)
        fresh.locator("button.widget-toggle-button", has_text="False").click()
        fresh.locator("button.agl-lock").click()
        fresh.locator(".agl-result", has_text="prediction locked in").wait_for()
        reveal_flag = cell_by_id(page, saved, "c013", added_above=1)  # below the reset cell
        run_cell(page, reveal_flag)
        reveal_flag.get_by_text("00.warmup-flag: correct").wait_for(timeout=120_000)
        records = same_record(page, home, "00")
        assert records["00.warmup-flag"] == "predicted after reveal, correct"
        reset_cell.locator(".jp-InputPrompt").click()
        page.keyboard.press("d")
        page.keyboard.press("d")  # the learner's reset cell, deleted before saving
        _save_and_wait(page, saved, "c015", lambda r: r and r.get("locked"))

        # closed and reopened with a new kernel: the saved widgets say so and take no input
        lab.delete_sessions()
        page.goto(lab.url(f"/lab/tree/{START}?reset&token={lab.token}"))
        page.get_by_text(IDLE).wait_for(timeout=120_000)
        page.locator(".agl-panel-00").first.wait_for(timeout=60_000)
        page.locator(".agl-stale:visible").first.wait_for(timeout=60_000)
        guarded = page.locator(".agl-live-only").count()
        assert guarded >= 4 and page.locator(".agl-stale:visible").count() == guarded
        assert live_inputs(page) == 0 and "model not found" not in page.locator(".jp-Notebook").inner_text()
        page.screenshot(path=str(ARTIFACTS / "browser-reopened-old-widgets.png"))
        assert same_record(page, home, "00") == records

    target = tmp_path / "graded" / START
    target.parent.mkdir()
    shutil.copy(saved, target)
    row = _grade(target, tmp_path / "grades.csv")
    assert row["run"] == "ok", row
    assert row["00.warmup-add"] == records["00.warmup-add"] and row["00.warmup-square"] == records["00.warmup-square"]
    # a prediction locked after the reveal is carried as one (grading replays the reveal and reset before it):
    # the gradebook says what the panel says, and it earns nothing
    assert row["00.warmup-flag"] == records["00.warmup-flag"], row
