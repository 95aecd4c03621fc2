"""Unit 00 in JupyterLab: a prediction locked with the widget is saved, graded, and survives Restart and Run All.

Split from tests/test_browser.py (whose helpers it uses) so that xdist runs the browser modules side by side.
"""

from __future__ import annotations

import shutil
import time

import pytest

from tests.test_browser import (
    ARTIFACTS,
    ROOT,
    START,
    _grade,
    _requirements,
    _save_and_wait,
    _saved_record,
    code_cell,
    lab_page,
    open_notebook,
    run_menu,
    tracebacks,
    unit_state,
    wait_until_done,
)

pytestmark = pytest.mark.skipif(bool(_requirements()), reason=_requirements() or "ready")


def test_a_prediction_locked_with_the_widget_is_saved_graded_and_survives_restart_and_run_all(tmp_path, home):
    """Unit 00: lock 00.warmup-add in with the widget, run the rest, save, grade the saved file: the prediction
    is graded. Then Restart Kernel and Run All: the predict cell shows the locked prediction (no refusal, no
    reset button), the record is unchanged, and the saved file still grades it."""
    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / START, root / START)
    saved = root / START
    with lab_page(root, tmp_path / "jupyter", home, "browser-widget-failed.png") as (lab, page):
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
        assert page.locator(".agl-action-reset").count() == 0 and page.locator(".agl-again:visible").count() == 0
        assert tracebacks(page) == []
        state, events = unit_state("00")
        assert {qid: s.record for qid, s in state.questions.items()} == records
        assert not [e for e in events if e.action in ("predict", "reset") and e.qid == "00.warmup-add"][1:]
        _save_and_wait(page, saved, "c006", lambda r: r and r.get("locked"))
        assert _saved_record(saved, "c006") == record

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
