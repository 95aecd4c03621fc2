"""Unit 00 in JupyterLab: a prediction locked with the widget is saved and graded, and the record survives a
restart, an old widget, Run All, a reload, a reset and a reopen; Enter locks, Ctrl+S inside a widget saves, a
self-test's next program comes where it is answered, Mark passed says what the saved file lacks (issue 44).

One walk (it used to be two, tests/test_browser_widget.py and this one, each starting its own JupyterLab and
Chromium for the same first steps); its helpers are in tests/test_browser.py.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.test_browser import (
    ARTIFACTS,
    IDLE,
    ROOT,
    START,
    _grade,
    _requirements,
    _save_and_wait,
    _saved_record,
    cell_by_id,
    code_cell,
    live_inputs,
    open_notebook,
    record_in,
    restart_kernel,
    run_cell,
    run_menu,
    same_record,
    tracebacks,
    unit_state,
    wait_for_saved,
    wait_until_done,
)

pytestmark = pytest.mark.skipif(bool(_requirements()), reason=_requirements() or "ready")


def test_the_record_survives_restart_an_old_widget_reload_reset_and_reopen(course, tmp_path, home):
    """Unit 00 in one JupyterLab at 1400 x 900.

    1. A prediction typed and locked with Enter (the predict cell's record updated in place); a self-test answered
       wrong with its Check button (the widget then shows the next program where it is answered, its input empty,
       and the program cell above shows it too), then right on that program.
    2. Kernel -> Restart: every old widget says it belongs to an earlier kernel and takes no input. Run All: the
       predict cell of the locked question shows its record beside torch's answer; the reveal of the question with
       nothing locked waits, says why and offers a button (issue 44: Run All never reveals what is not predicted).
    3. A page reload (saved first), the kernel running: the widgets re-attach; a prediction locked in the widget drawn
       again, then Ctrl+S pressed inside that widget, is in the saved file's widget state (its output record, cut off
       by the reload, still says not locked) and grading's restore writes it into the cell.
    4. A reset and a new prediction: the old input closes and says why; Mark passed says what the saved file lacks
       until it is saved.
    5. Close and reopen: the saved widgets take no input.
    After each, the panel, ``status`` and the store agree; the saved file grades as the panel reads."""
    from grader.engine import identity, variants
    from grader.engine.question import get
    from grader.instructor.grading.locks import apply_locks
    from grader.learner.stale import NOTE

    identity.set_identity("graded")  # the kernel's identity: the learner the saved file is graded as, below
    shutil.copy(ROOT / "notebooks" / START, course.folder / START)
    saved = course.folder / START
    q = get("00.warmup-square")
    programs = [variants.make(q.program, q.qid, "graded", n).program for n in (0, 1)]
    squares = [q.run(p) for p in programs]  # torch's answer on that learner's first and second programs
    with course.page("browser-recovery-failed.png", 1400, 900) as page:
        records = _walk(page, course, saved, home, squares, programs, NOTE, apply_locks)

    target = tmp_path / "graded" / START
    target.parent.mkdir()
    shutil.copy(saved, target)
    row = _grade(target, tmp_path / "grades.csv")
    assert row["run"] == "ok", row
    assert row["00.warmup-add"] == records["00.warmup-add"] and row["00.warmup-square"] == records["00.warmup-square"]
    # a prediction locked after the reveal is carried as one (grading replays the reveal and reset before it):
    # the gradebook says what the panel says, and it earns nothing
    assert row["00.warmup-flag"] == records["00.warmup-flag"], row


def _walk(page, course, saved, home, squares, programs, NOTE, apply_locks) -> dict:
    import nbformat

    lab = course.lab
    open_notebook(page, lab, course.at(START))
    flag_cell = cell_by_id(page, saved, "c011")
    program_cell = cell_by_id(page, saved, "c014a")
    square_cell = cell_by_id(page, saved, "c015")
    predict_cell = code_cell(page, 'predict("00.warmup-add", answer)')
    reveal_add = code_cell(page, 'reveal("00.warmup-add")')
    reveal_add.locator(".jp-InputPrompt").click()
    run_menu(page, "notebook:run-all-above")
    add = page.locator(".agl-q-00-warmup-add")
    add.wait_for(timeout=120_000)
    assert "00.warmup-add: not locked yet" in add.inner_text()  # the record line the widget carries
    add.locator("input").first.click()
    page.keyboard.type("2, 3")
    page.keyboard.press("Enter")  # Enter in the field locks, as the button does (issue 44)
    add.locator(".agl-result", has_text="prediction locked in").wait_for()
    add.locator(".agl-record", has_text="00.warmup-add: locked in").wait_for()  # the cell's record, updated in place
    run_cell(page, reveal_add)
    reveal_add.get_by_text("00.warmup-add: correct").wait_for(timeout=120_000)
    closed = " ".join(add.inner_text().split())
    assert "can no longer change" in closed and "You may change your prediction" not in closed, closed
    run_cell(page, flag_cell)  # its input shown, nothing locked
    flag = page.locator(".agl-q-00-warmup-flag")
    flag.locator("button.agl-lock").wait_for(timeout=120_000)

    # the self-test: a wrong answer brings the next program into the widget and into the program cell above it
    run_cell(page, program_cell)
    program_cell.locator(".agl-program", has_text="variant 1").wait_for(timeout=120_000)
    run_cell(page, square_cell)
    checker = page.locator(".agl-q-00-warmup-square")
    field = checker.locator("input").first
    field.wait_for(timeout=120_000)
    field.click()
    page.keyboard.type("123456")  # wrong on every program the self-test draws
    checker.locator("button.agl-check").click()
    checker.locator(".agl-said .agl-result", has_text="00.warmup-square: incorrect").wait_for()
    said = " ".join(checker.inner_text().split())
    second = " ".join(programs[1].source.split()[:6])
    assert second in said and field.input_value() == "", said  # the next program, where it is answered, input empty
    assert said.index(second) < said.index("incorrect") and "shown above" in said, said  # read top to bottom
    program_cell.locator(".agl-program", has_text="variant 2").wait_for()  # the program cell shows it too
    field.click()
    page.keyboard.type(f"{squares[1]:g}")
    page.keyboard.press("Enter")
    checker.locator(".agl-said .agl-result", has_text="00.warmup-square: correct").wait_for()
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

    # Restart and Run All (the kernel already restarted: Run All). The flag's reveal waits: nothing is locked for it
    run_menu(page, "runmenu:run-all")
    wait_until_done(page, page.locator(".agl-panel-00"))
    assert tracebacks(page) == []
    records = same_record(page, home, "00")
    assert records == {
        "00.warmup-add": "predicted, correct",
        "00.warmup-flag": "not attempted",
        "00.warmup-square": "correct on attempt 2 (variant 2)",
    }
    reveal_flag = cell_by_id(page, saved, "c013")
    reveal_flag.locator(".agl-result", has_text="Not revealed").wait_for()
    assert reveal_flag.locator(".agl-action-reveal").count() == 1  # the way to reveal anyway, on purpose
    square_cell.scroll_into_view_if_needed()
    square_cell.get_by_text("Passed (correct").wait_for()  # the check cell run again: passed, closed
    # the predict cell run again after its reveal shows the record as it stands and changes nothing
    text = " ".join(predict_cell.inner_text().split())
    assert "prediction refused" not in text and "your prediction [2, 3]" in text.replace(".0", ""), text
    assert "torch says" in text and "00.warmup-add: locked in" in text
    assert page.locator(".agl-action-reset").count() == 0 and page.locator(".agl-again:visible").count() == 0
    predict_cell.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "browser-locked-rerun.png"))
    _, events = unit_state("00")
    assert not [e for e in events if e.action in ("predict", "reset") and e.qid == "00.warmup-add"][1:]

    # a reload of the page (saved first: a reload reads the file), the kernel running: the widgets re-attach
    _save_and_wait(page, saved, "c015", lambda r: r and r.get("locked"))
    lock = {"qid": "00.warmup-add", "locked": True, "answer": [2.0, 3.0], "before_reveal": True}
    assert _saved_record(saved, "c006") == lock  # the lock's record, saved with the predict cell
    page.reload()
    page.get_by_text(IDLE).wait_for(timeout=120_000)
    page.locator(".agl-panel-00 button", has_text="Refresh").wait_for(state="visible", timeout=120_000)
    assert page.locator(".agl-stale:visible").count() == 0
    assert same_record(page, home, "00") == records
    # a lock in the widget drawn again (the reload cut its cell's output off), then Ctrl+S inside that widget
    flag.locator("button.agl-lock:not([disabled])").wait_for(timeout=120_000)
    flag.locator("button.widget-toggle-button", has_text="False").click()
    flag.locator("button.agl-lock").click()
    flag.locator(".agl-result", has_text="prediction locked in").wait_for()
    flag.locator(".agl-record", has_text="00.warmup-flag: locked in").wait_for()
    flag.locator("button.agl-lock").focus()
    page.keyboard.press("Control+s")  # the focus inside the widget: JupyterLab saves
    wait_for_saved(saved, lambda nb: record_in(nb, "c011", lambda r: r.get("locked"), widgets=True))
    assert _saved_record(saved, "c011")["locked"] is False  # the output record never heard of that lock
    as_saved = json.loads(saved.read_text())
    template = nbformat.read(ROOT / "notebooks" / START, as_version=4).cells
    apply_locks(as_saved["cells"], template, widgets=as_saved["metadata"].get("widgets"))
    assert "answer = False" in "".join(next(c for c in as_saved["cells"] if c["id"] == "c011")["source"])
    run_cell(page, reveal_flag)
    reveal_flag.get_by_text("00.warmup-flag: correct").wait_for(timeout=120_000)
    records = same_record(page, home, "00")
    assert records["00.warmup-flag"] == "predicted, correct"

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
    # Mark passed: recorded, and it says the saved file lacks the new prediction until the notebook is saved
    panel = page.locator(".agl-panel-00").last
    panel.locator("button.agl-mark").click()
    panel.locator(".agl-said", has_text="does not hold your answer to 00.warmup-flag").wait_for()
    _save_and_wait(page, saved, "c011", lambda r: r and r.get("locked"))
    panel.locator("button", has_text="Refresh").click()
    page.wait_for_function("() => !document.querySelector('.agl-panel-00 .agl-unsaved')")
    records = same_record(page, home, "00")

    # closed and reopened with a new kernel: the saved widgets say so and take no input
    lab.delete_sessions()
    page.goto(lab.url(f"/lab/tree/{course.at(START)}?reset&token={lab.token}"))
    page.get_by_text(IDLE).wait_for(timeout=120_000)
    # the saved widget views are drawn from the notebook's widget state: slow on a loaded machine
    page.locator(".agl-panel-00").first.wait_for(timeout=180_000)
    page.locator(".agl-stale:visible").first.wait_for(timeout=120_000)
    guarded = page.locator(".agl-live-only").count()
    assert guarded >= 4 and page.locator(".agl-stale:visible").count() == guarded
    assert live_inputs(page) == 0 and "model not found" not in page.locator(".jp-Notebook").inner_text()
    page.screenshot(path=str(ARTIFACTS / "browser-reopened-old-widgets.png"))
    assert same_record(page, home, "00") == records
    return records
