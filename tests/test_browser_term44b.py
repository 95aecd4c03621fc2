"""Issue 44, tried again by an independent tester (term44b): the two breaks found in the browser, one test each.
They share the browser worker's Chromium and JupyterLab (conftest.py's BROWSER); what they grade is graded in a
process of its own (a grading run in this process adopts and reaps the processes it finds, the browser's among them).
"""

from __future__ import annotations

import contextlib
import csv
import subprocess
import sys
from pathlib import Path

import pytest


def _rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def _grade(folder: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out)], check=False, timeout=600)


def _browser_skip():
    from tests import test_browser as tb

    return tb.pytestmark


@_browser_skip()
@pytest.mark.xfail(
    strict=True,
    reason="a lock after a page reload reaches the saved notebook only through the widget state JupyterLab saves "
    "with the widget manager's saveState on: make lab and (since) `python -m grader workspace` turn it on for the "
    "environment, but a learner's own setting that turns it off (as here) still leaves the lock out of the handed-in "
    "copy, graded 'not answered' while the store holds it (the class view names such work)",
)
def test_a_lock_after_a_reload_is_graded_without_the_saved_widget_state_setting(tmp_path, home, monkeypatch, chromium):
    import json
    import shutil
    import time

    from tests import test_browser as tb

    root, state = tmp_path / "root", tmp_path / "jupyter"
    root.mkdir()
    plain = state / "settings" / "@jupyter-widgets" / "jupyterlab-manager" / "plugin.jupyterlab-settings"
    plain.parent.mkdir(parents=True)
    plain.write_text(json.dumps({"saveState": False}))  # the widget manager's own default: no overrides.json
    saved = root / tb.START
    shutil.copy(tb.ROOT / "notebooks" / tb.START, saved)
    with (
        tb.lab_server(root, state, home) as lab,
        contextlib.nullcontext(chromium) as browser,  # the session's (Playwright's sync API: one per thread)
        tb.new_page(browser, "term44b-nosavestate-failed.png", 1400, 900, lab) as page,
    ):
        tb.open_notebook(page, lab, tb.START)
        for cid in ("c002", "c006"):
            tb.run_cell(page, tb.cell_by_id(page, saved, cid))
            tb.kernel_idle(lab)
        page.locator(".agl-q-00-warmup-add").wait_for()
        page.keyboard.press("Control+s")
        page.reload()  # the kernel still running
        page.get_by_text(tb.IDLE).wait_for(timeout=120_000)
        add = page.locator(".agl-q-00-warmup-add")
        add.locator("button.agl-lock:not([disabled])").wait_for(timeout=120_000)
        add.locator("input").first.click()
        page.keyboard.type("2, 3")
        add.locator("button.agl-lock").click()
        add.locator(".agl-result", has_text="prediction locked in").wait_for()
        page.keyboard.press("Control+s")
        deadline = time.time() + 30
        while page.locator(".lm-TabBar-tab.jp-mod-dirty").count() and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(1)
    assert [e.action for e in tb.unit_state("00")[1]] == ["predict"]  # the store holds the lock
    monkeypatch.chdir(tmp_path)
    (tmp_path / "class" / "maya").mkdir(parents=True)
    shutil.copy(saved, tmp_path / "class" / "maya" / tb.START)
    _grade(tmp_path / "class", tmp_path / "g.csv")
    assert _rows(tmp_path / "g.csv")[0]["00.warmup-add"] == "predicted, correct"


SAVE_FIELDS = {  # a text field of each kind the course's widgets draw
    "a number's answer field": ".agl-q-00-warmup-add input[type=text]",
    "an error's 'your own words' field": ".agl-q-07-gan-step input[type=text]",
    "a sequence's word field": ".agl-q-04b-write-to-weight input[type=text]",
    "the names' 'other names' field": ".agl-q-01-exp-saves input[type=text]",
}


@_browser_skip()
def test_ctrl_s_with_the_caret_in_a_widgets_text_field_saves(course):
    """Found by term44b: the ipywidgets text view stops the keydown's propagation, so JupyterLab never saw Ctrl+S
    from a widget's text field; a11y.py now sends the keystroke again from the notebook around it."""
    import time

    import nbformat

    from tests import test_browser as tb

    cells = ["from grader import predict"] + [
        f'predict("{q}")' for q in ("00.warmup-add", "07.gan-step", "04b.write-to-weight", "01.exp-saves")
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    saved = course.folder / "fields.ipynb"
    nbformat.write(nb, saved)
    unsaved = []
    with course.page("term44b-ctrl-s-failed.png", 1400, 900) as page:
        tb.open_notebook(page, course.lab, course.at("fields.ipynb"))
        tb.run_menu(page, "runmenu:run-all")
        tb.wait_until_done(page, page.locator(".agl-q-01-exp-saves"))
        dirty = page.locator(".lm-TabBar-tab.jp-mod-dirty")
        for what, field in {
            "(control) a toggle button": ".agl-q-07-gan-step .agl-palette button",
            **SAVE_FIELDS,
        }.items():
            tb.run_cell(page, page.locator(".jp-CodeCell").first)  # a change to save: the first cell run again
            dirty.wait_for()
            page.locator(field).first.click()
            if "control" not in what:
                page.keyboard.type("x")
            before = saved.stat().st_mtime_ns
            page.keyboard.press("Control+s")
            deadline = time.time() + 10
            while saved.stat().st_mtime_ns == before and time.time() < deadline:
                time.sleep(0.3)
            if saved.stat().st_mtime_ns == before:  # the file on disk was not written
                unsaved.append(what)
    assert "(control) a toggle button" not in unsaved  # Ctrl+S from a button saves: the walk can see a save
    assert unsaved == []
