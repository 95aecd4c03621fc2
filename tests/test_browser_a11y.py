"""Every course widget from the keyboard, in JupyterLab in Chromium, and axe-core on what they render (issue 27).

One notebook shows one of each input the course offers, a refusal with its button, the panel, the course map,
the stepper, a drawing and two labs. They are driven from the keyboard only (Tab to a field, type, Tab to Lock
in, Enter; arrows along toggle buttons and palettes, Space or Enter to choose), with no pause between typing
and pressing (a Lock in pressed at once records what was typed: grader.learner.synced); the focus then stands
on the verdict. axe-core (npm, installed into .axe/ by ``make browser-deps``) then checks every output area
and the test fails on a "serious" or "critical" violation. JupyterLab and the page come from
tests/test_browser.py's shared server (the ``course`` fixture); without Chromium, Playwright or axe-core the test is
skipped and says why.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
import pytest

from tests import test_browser as tb

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / ".axe" / "node_modules" / "axe-core" / "axe.min.js"
WIDGETS = "widgets.ipynb"
SHOWN = [  # one of each input the course offers, every tool, and a refusal with its button
    'predict("00.warmup-add")',  # a number
    'predict("00.warmup-flag")',  # True / False
    'predict("02.zero-not-none")',  # a choice
    'predict("02.nonscalar-backward")',  # where torch raises, and why
    'predict("01.pow-node")',  # a name
    'predict("01.which-recorded")',  # names to tick, all named in the prompt
    'predict("01.exp-saves")',  # names to tick, and others
    'predict("01.mul-edges")',  # a sequence built from a palette
    'check("00.warmup-square")',  # a self-test
    'reveal("01.x-is-leaf")\npredict("01.x-is-leaf", True)',  # a refusal that offers a button
    'unit_panel("00")',
    "course_map()",
    'w = torch.tensor(2.0, requires_grad=True)\ny = (w * 3) ** 2\nstepper(y, names={"w": w})',
    'draw(y, names={"w": w, "y": y})',
    "neuron_lab()",
    "depth_lab(steps=20)",
]

pytestmark = [
    tb.pytestmark,
    pytest.mark.skipif(not AXE.exists(), reason="axe-core is not in .axe/: `make browser-deps` installs it with npm"),
]


def widgets_notebook(target: Path) -> None:
    head = "import torch\nfrom grader import check, course_map, depth_lab, draw, neuron_lab, predict, reveal, stepper"
    cells = [head + ", unit_panel", *SHOWN]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, target)


def focused(page) -> str:
    """The focused element, as its tag, classes and text (what a screen reader is on)."""
    return page.evaluate(
        "() => { const e = document.activeElement; return e ? `${e.tagName} ${e.className} ${e.innerText || ''}` : '' }"
    )


def focus_in(page, selector: str) -> bool:
    return page.evaluate("s => !!document.activeElement && !!document.activeElement.closest(s)", selector)


def axe(page) -> dict:
    page.add_script_tag(content=AXE.read_text())
    return page.evaluate(
        """async () => {
            const r = await axe.run({include: [['.jp-OutputArea-output']]}, {resultTypes: ['violations', 'passes']});
            return {
                passes: r.passes.reduce((n, v) => n + v.nodes.length, 0),
                violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.map(n => n.target.join(' ') + ' | ' + n.html.slice(0, 160))})),
            };
        }"""
    )


def test_every_widget_from_the_keyboard_and_axe_finds_nothing_serious(course, tmp_path):
    """See the module's text. A course notebook built on another Python also opens in the learner's workspace
    without being marked unsaved."""
    from grader.learner import workspace

    built_course = tmp_path / "course-root"
    (built_course / "notebooks").mkdir(parents=True)
    built = json.loads((ROOT / "notebooks" / tb.START).read_text())
    built["metadata"]["language_info"]["version"] = "3.0.1"  # built on another Python than the learner's
    text = json.dumps(built, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    (built_course / "notebooks" / tb.START).write_text(text)
    root = course.folder
    workspace.sync(root, built_course)
    widgets_notebook(root / WIDGETS)
    with course.page("browser-a11y-failed.png") as page:
        _opened_and_run_all(page, course)
        _a_number_and_a_name(page)
        _true_or_false(page)
        _a_palette(page)
        _a_self_test_and_mark_passed(page)
        _choices_and_a_slider(page)
        _axe_finds_nothing_serious(page)


def _opened_and_run_all(page, course) -> None:
    """The course notebook opens without being marked unsaved; the widgets notebook runs without a traceback."""
    lab = course.lab
    # opened, nothing done: not marked unsaved
    tb.open_notebook(page, lab, course.at(tb.START))
    time.sleep(3)
    assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0, "opened marked unsaved"
    lab.delete_sessions()

    tb.open_notebook(page, lab, course.at(WIDGETS))
    tb.run_menu(page, "runmenu:run-all")
    tb.wait_until_done(page, page.locator(".agl-lab").last)
    assert tb.tracebacks(page) == []


def _a_number_and_a_name(page) -> None:
    # a number: Tab to the field, type, Tab to Lock in, Enter at once; the focus moves to the verdict
    number = page.locator(".agl-q-00-warmup-add")
    number.locator("input").first.focus()  # where Tab through the notebook arrives
    page.keyboard.type("2, 3")
    page.keyboard.press("Tab")
    assert focus_in(page, ".agl-q-00-warmup-add .agl-lock"), focused(page)
    page.keyboard.press("Enter")
    number.locator(".agl-said", has_text="prediction locked in").wait_for()
    page.wait_for_function("() => !!document.activeElement.closest('.agl-q-00-warmup-add .agl-said')")
    said = number.locator(".agl-said .widget-html-content")
    assert said.get_attribute("role") == "status" and said.get_attribute("aria-live") == "polite"

    # a name typed and Lock in clicked at once: what was typed is recorded (issue 27's typing race)
    name = page.locator(".agl-q-01-pow-node")
    name.locator("input").first.click()
    page.keyboard.type("PowBackward0")
    name.locator("button.agl-lock").click()
    name.locator(".agl-said", has_text="prediction locked in").wait_for()


def _true_or_false(page) -> None:
    # True / False: arrows along the toggles, Space to choose, Tab to Lock in, Space
    flag = page.locator(".agl-q-00-warmup-flag")
    flag.locator("button.widget-toggle-button").first.focus()
    page.keyboard.press("ArrowRight")
    assert focused(page).split()[-1] == "False", focused(page)
    page.keyboard.press("Space")
    assert flag.locator("button.widget-toggle-button", has_text="False").get_attribute("aria-pressed") == "true"
    group = flag.locator(".agl-palette")
    assert group.get_attribute("role") == "group" and group.get_attribute("aria-label")
    page.keyboard.press("Tab")
    assert focus_in(page, ".agl-q-00-warmup-flag .agl-lock"), focused(page)
    page.keyboard.press("Space")
    flag.locator(".agl-said", has_text="prediction locked in").wait_for()
    page.wait_for_function("() => !!document.activeElement.closest('.agl-q-00-warmup-flag .agl-said')")
    recorded = [(e.qid, e.action, e.verdict, e.answer) for uid in ("00", "01") for e in tb.unit_state(uid)[1]]
    assert [r for r in recorded if r[1] == "predict"] == [
        ("00.warmup-add", "predict", "recorded", [2.0, 3.0]),
        ("00.warmup-flag", "predict", "recorded", False),
        ("01.pow-node", "predict", "recorded", "PowBackward0"),
    ], recorded


def _a_palette(page) -> None:
    # a palette: arrows move along the names, Enter adds the one in focus, in order
    walk = page.locator(".agl-q-01-mul-edges")
    names = walk.locator(".agl-palette button")
    first, third = names.nth(0).inner_text().strip(), names.nth(2).inner_text().strip()
    names.nth(0).focus()
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    walk.locator("ol li", has_text=third).wait_for()
    assert walk.locator("ol li").all_inner_texts() == [first, third]
    page.keyboard.press("End")
    assert focused(page).split()[-1] == names.last.inner_text().strip()


def _a_self_test_and_mark_passed(page) -> None:
    # a self-test's Check and the panel's Mark passed: the focus moves to what they said
    square = page.locator(".agl-q-00-warmup-square")
    square.locator("input").first.focus()
    page.keyboard.type("123456")  # wrong on every program the self-test draws ("1" was right on one of them)
    page.keyboard.press("Tab")
    assert focus_in(page, ".agl-q-00-warmup-square .agl-check"), focused(page)
    page.keyboard.press("Enter")
    square.locator(".agl-said .agl-result").first.wait_for(timeout=120_000)
    page.wait_for_function("() => !!document.activeElement.closest('.agl-q-00-warmup-square .agl-said')")
    verdict = square.locator(".agl-said .agl-result").first.inner_text()
    assert verdict.split()[0] == "✗" and "incorrect" in verdict, verdict
    page.locator(".agl-panel-00 .agl-mark").focus()
    page.keyboard.press("Enter")
    page.locator(".agl-panel-00 .agl-said", has_text="not yet").wait_for()
    page.wait_for_function("() => !!document.activeElement.closest('.agl-panel-00 .agl-said')")


def _choices_and_a_slider(page) -> None:
    # the closed choice offers no field for other names; the open one does
    assert page.locator(".agl-q-01-which-recorded input[type=text]:visible").count() == 0
    assert page.locator(".agl-q-01-exp-saves input[type=text]:visible").count() == 1

    # a lab's slider has a name, and the arrow keys move it
    handle = page.locator(".agl-lab [role=slider]").first
    assert "x" in (handle.get_attribute("aria-label") or "")
    before = handle.get_attribute("aria-valuenow")
    handle.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "v => document.querySelector('.agl-lab [role=slider]').getAttribute('aria-valuenow') !== v", arg=before
    )


def _axe_finds_nothing_serious(page) -> None:
    """What axe-core finds in every output area: many passes, no serious or critical violation."""
    page.screenshot(path=str(tb.ARTIFACTS / "browser-keyboard.png"), full_page=False)
    found = axe(page)
    (tb.ARTIFACTS / "axe-violations.json").write_text(json.dumps(found["violations"], indent=1))
    bad = [v for v in found["violations"] if v["impact"] in ("serious", "critical")]
    assert found["passes"] > 50, found  # axe did look at the widgets
    assert bad == [], json.dumps(bad, indent=1)
