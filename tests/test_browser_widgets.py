"""Every cause picker and palette of every unit by mouse at 1400 x 900, and the course in Notebook 7 (issue 44).

The JupyterLab and Chromium every browser test shares (the ``course`` fixture), each test a folder and a page of its
own:

1. One notebook shows, one cell per unit, every question of every unit whose input is a palette: True/False and
   choice toggles, an error's places and its candidate causes, the names to tick, a sequence's names or words (each
   input in a box of the prediction widget's size; the rest of the widget is walked by test_browser_restart.py).
   In a 1400 x 900 window each option is legible (its text whole, inside the window), no option lies over another
   (nor the "your own words" field over a cause), and every option takes a click where it is drawn: the page's hit
   test at the centre of its text finds the option itself, and the click does what it says (the toggle pressed, the
   cause chosen, the name ticked, the word added to the list, in order). Playwright's mouse clicks every cause (the
   issue's case); the other options get the click dispatched in the page to what the hit test found (one call a
   unit: about 40 CPU-s in all, measured). The sequence of 04b.write-to-weight offers a button for each word its
   prompt allows.
2. Unit 00 in Notebook 7 (the ``notebook`` package, served by the same server): Run All holds each reveal back;
   Enter in the number field locks it; a prediction locked after a page reload, in the widget drawn again, is in
   the saved file's widget state, where grading reads it; Ctrl+S inside a widget saves.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import nbformat

from tests import test_browser as tb

ROOT = Path(__file__).resolve().parent.parent
PICKERS = "pickers.ipynb"
HEAD = """import ipywidgets as W
from IPython.display import display
from grader.engine import kinds as K
from grader.engine import variants
from grader.engine.question import of_unit
from grader.learner import inputs
from grader.learner.display import css_name
from grader.learner.widgets import BOX  # the prediction widget's own box


def show(unit):
    boxes = [inputs.style_html()]
    for q in of_unit(unit):
        if q.role in ("predict", "self-test") and isinstance(q.kind, (K.Boolean, K.Choice, K.Error, K.Names, K.Sequence)):
            prompt = q.prompt if q.program is None else variants.make(q.program, q.qid, "x", 0).program.prompt
            box = W.VBox([W.HTML(f"<b>{q.qid}</b>"), inputs.make_input(q.kind, prompt).box], layout=W.Layout(**BOX))
            box.add_class("agl-predict")
            box.add_class("agl-q-" + css_name(q.qid))
            boxes.append(box)
    display(W.VBox(boxes))"""
pytestmark = tb.pytestmark

# what each group of options is in the page, inside one question's widget (.agl-q-<qid>)
GROUPS = {
    "toggles": ".agl-palette .widget-toggle-button",
    "causes": ".widget-radio-box label",
    "boxes": ".agl-palette .widget-checkbox label",
    "words": ".agl-palette button:not(.widget-toggle-button)",
}

PROBE = """([sel, options]) => {
    const w = document.querySelector(sel);
    // only the widget under test is laid out (the others hidden), so that each click does not lay the page out again
    if (!window.__aglHidden) {
        window.__aglHidden = true;
        for (const other of document.querySelectorAll('.agl-predict')) other.style.display = 'none';
    }
    if (window.__aglShown) window.__aglShown.style.display = 'none';
    w.style.display = '';
    window.__aglShown = w;
    const opts = [...w.querySelectorAll(options)].filter(e => e.offsetParent !== null);
    if (!opts.length) return {texts: [], points: [], problems: ['no option drawn']};
    opts[0].closest('.agl-palette, .widget-radio-box').scrollIntoView({block: 'center'});
    const text = e => e.textContent.replace(/\\s+/g, ' ').trim();
    const what = e => e ? `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} "${text(e).slice(0, 40)}"` : 'nothing';
    const problems = [];
    const ink = e => {  // where the option's text is drawn (it may run out of the option's own box), and its box
        const range = document.createRange();
        range.selectNodeContents(e);
        const t = range.getBoundingClientRect(), b = e.getBoundingClientRect();
        return t.width && t.height ? {left: Math.min(t.left, b.left), right: Math.max(t.right, b.right),
            top: Math.min(t.top, b.top), bottom: Math.max(t.bottom, b.bottom)} : b;
    };
    const rects = opts.map(ink);
    const points = opts.map((e, i) => {
        const r = rects[i], x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
        const hit = document.elementFromPoint(x, y);
        if (!hit || !e.contains(hit)) problems.push(`${text(e)}: a click on it lands on ${what(hit)}`);
        if (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)
            problems.push(`${text(e)}: its text is cut (${e.scrollWidth}x${e.scrollHeight} in ${e.clientWidth}x${e.clientHeight})`);
        if (r.left < 0 || r.right > innerWidth || r.bottom - r.top < 12)
            problems.push(`${text(e)}: drawn at ${JSON.stringify(r)}`);
        return [x, y];
    });
    const over = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
        && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
    for (let i = 0; i < rects.length; i++)
        for (let j = i + 1; j < rects.length; j++)
            if (over(rects[i], rects[j])) problems.push(`${text(opts[i])} and ${text(opts[j])} overlap`);
    for (const field of w.querySelectorAll('.widget-text:not(.agl-enter-add)'))
        if (field.offsetParent !== null)
            rects.forEach((r, i) => { if (over(r, field.getBoundingClientRect()))
                problems.push(`the field "${field.querySelector('input').placeholder}" lies over ${text(opts[i])}`); });
    w.__aglLog = [];  // what each click did: the cause chosen, the name ticked, the toggle pressed
    if (!w.__aglLogging) {
        w.__aglLogging = true;
        w.addEventListener('change', e => { const l = e.target.closest('label'); if (l) w.__aglLog.push(text(l)); }, true);
        w.addEventListener('click', e => {
            const group = e.target.closest && e.target.closest('.widget-toggle-buttons');
            const on = group && group.querySelector('.widget-toggle-button.mod-active');
            if (on) w.__aglLog.push(text(on));
        });
    }
    return {texts: opts.map(text), points, problems};
}"""

# One unit's widgets in one call: each group of options probed (PROBE), then clicked where its hit test says (all
# but a cause picker's, which Playwright's mouse clicks), what each click did read back (words: through the kernel,
# read once the unit's lists have them).
UNIT = (
    """async (widgets) => {
    const probe = """
    + PROBE
    + """;
    const out = [];
    for (const [sel, groups] of widgets)
        for (const [group, options] of groups) {
            const found = probe([sel, options]);
            if (group !== 'causes' && group !== 'words') {
                found.points.forEach(([x, y]) => document.elementFromPoint(x, y).click());
                found.done = [...document.querySelector(sel).__aglLog];
            } else if (group === 'words') {
                found.points.forEach(([x, y]) => document.elementFromPoint(x, y).click());
            }
            out.push(found);
        }
    return out;
}"""
)


def palettes():
    """(unit, qid, [(group, the options' texts in order)]) for every palette input of every unit, as the inputs offer
    them (grader.learner.inputs)."""
    from grader.engine import kinds as K
    from grader.engine import variants
    from grader.engine.course import UNITS
    from grader.engine.question import of_unit
    from grader.learner import inputs

    out = []
    for unit in UNITS:
        for q in of_unit(unit):
            k = q.kind
            if q.role not in ("predict", "self-test"):
                continue
            prompt = q.prompt if q.program is None else variants.make(q.program, q.qid, "x", 0).program.prompt
            if isinstance(k, K.Boolean):
                groups = [("toggles", ["True", "False"])]
            elif isinstance(k, K.Choice):
                groups = [("toggles", [str(o) for o in k.options])]
            elif isinstance(k, K.Error):
                groups = [("toggles", list(k.places))] + ([("causes", [f"{c.label}: {c.text}" for c in k.causes])])
                groups = [g for g in groups if g[1]]
            elif isinstance(k, K.Sequence):
                groups = [("words", inputs.sequence_words(k, prompt))]
            elif isinstance(k, K.Names):
                groups = [("boxes", inputs.offered_names(k))]
            else:
                continue
            out.append((unit, q.qid, groups))
    return out


def pickers_notebook(target: Path) -> None:
    """One cell a unit: every palette input of that unit (see the module's text)."""
    from grader.engine.course import UNITS

    cells = [HEAD] + [f"show({u!r})" for u in UNITS]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, target)


def test_every_cause_picker_and_palette_of_every_unit_takes_every_click_at_1400_by_900(course):
    """See the module's text (1)."""
    pickers_notebook(course.folder / PICKERS)
    asked = palettes()
    assert {u for u, _, _ in asked} >= {"01", "04b", "09b"}  # the units the issue named, among every unit
    words = {qid: groups for _, qid, groups in asked}["04b.write-to-weight"]
    assert words == [("words", ["raises", "opt loses it", "opt keeps it"])], words
    started = time.time()
    with course.page("browser-pickers-failed.png", 1400, 900) as page:
        tb.open_notebook(page, course.lab, course.at(PICKERS))
        tb.run_menu(page, "runmenu:run-all")
        page.wait_for_function(
            "n => document.querySelectorAll('.agl-predict').length >= n", arg=len(asked), polling=250, timeout=400_000
        )
        problems, clicks = [], 0
        for unit in dict.fromkeys(u for u, _, _ in asked):
            mine = [(f".agl-q-{qid.replace('.', '-')}", qid, groups) for u, qid, groups in asked if u == unit]
            batch = [[sel, [[g, GROUPS[g]] for g, _ in groups]] for sel, _, groups in mine]
            found = iter(page.evaluate(UNIT, batch))
            words = []
            for sel, qid, groups in mine:
                for group, expected in groups:
                    got = next(found)
                    if got["texts"] != expected:
                        problems.append(f"{qid} {group}: offers {got['texts']}, not {expected}")
                        continue
                    problems += [f"{qid}: {p}" for p in got["problems"]]
                    clicks += len(got["points"])
                    if group == "causes":  # the case: Playwright's mouse, pressed and released where drawn
                        again = page.evaluate(PROBE, [sel, GROUPS[group]])  # its widget back in view
                        for x, y in again["points"]:
                            page.mouse.click(x, y)
                        got["done"] = page.evaluate("sel => document.querySelector(sel).__aglLog", sel)
                    if group == "words":
                        words.append((sel, qid, expected))
                    elif got["done"] != expected:
                        problems.append(f"{qid} {group}: the clicks did {got['done']}, not {expected}")
            for sel, qid, expected in words:  # each click added its word to the list, in order (through the kernel)
                done = page.wait_for_function(
                    """([sel, n]) => { const l = [...document.querySelectorAll(sel + ' ol li')];
                        return l.length >= n && l.map(e => e.textContent.trim()); }""",
                    arg=[sel, len(expected)],
                    polling=100,
                    timeout=60_000,
                ).json_value()
                if done != expected:
                    problems.append(f"{qid} words: the clicks did {done}, not {expected}")
        page.screenshot(path=str(tb.ARTIFACTS / "browser-pickers.png"))
        assert problems == [], "\n".join(problems)
        assert clicks == sum(len(e) for _, _, groups in asked for _, e in groups)
    print(f"{len(asked)} widgets, {clicks} clicks in {time.time() - started:.0f} s")


def test_unit_00_in_notebook_7(course):
    """See the module's text (2)."""
    from grader.engine import locked
    from grader.instructor.grading.locks import apply_locks

    lab = course.lab
    shutil.copy(ROOT / "notebooks" / tb.START, course.folder / tb.START)
    saved = course.folder / tb.START
    template = nbformat.read(ROOT / "notebooks" / tb.START, as_version=4).cells
    with course.page("browser-notebook7-failed.png", 1400, 900) as page:
        page.goto(lab.url(f"/tree/{course.at(tb.START)}?token={lab.token}"))  # the URL make lab prints
        page.wait_for_url("**/notebooks/**")  # Notebook 7's own page for a notebook
        page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(timeout=120_000)
        tb.kernel_idle(lab)
        tb.run_menu(page, "runmenu:run-all")
        page.locator(".agl-panel-00").wait_for(timeout=180_000)
        tb.kernel_idle(lab)
        # Run All held every reveal back: nothing revealed, nothing recorded, a button to reveal anyway
        held = tb.cell_by_id(page, saved, "c009")
        held.locator(".agl-result", has_text="Not revealed").wait_for()
        assert held.locator(".agl-action-reveal").count() == 1
        assert [e for e in tb.unit_state("00")[1] if e.action == "reveal"] == []

        # Enter in the number field locks the prediction, as Lock in does
        add = page.locator(".agl-q-00-warmup-add")
        add.locator("input").first.click()
        page.keyboard.type("2, 3")
        page.keyboard.press("Enter")
        add.locator(".agl-result", has_text="prediction locked in").wait_for()
        page.keyboard.press("Control+s")  # the focus still in the widget: Notebook 7 saves (a reload reads the file)
        tb.wait_for_saved(saved, lambda nb: tb.record_in(nb, "c006", lambda r: r.get("locked")))

        # reloaded, the kernel running: a lock in the widget drawn again reaches the widget's record line
        page.reload()
        flag = page.locator(".agl-q-00-warmup-flag")
        flag.locator("button.agl-lock:not([disabled])").wait_for(timeout=180_000)
        flag.locator("button.widget-toggle-button", has_text="False").click()
        flag.locator("button.agl-lock").click()
        flag.locator(".agl-result", has_text="prediction locked in").wait_for()
        flag.locator(".agl-record", has_text="00.warmup-flag: locked in").wait_for()
        flag.locator("button.widget-toggle-button", has_text="False").focus()
        page.keyboard.press("Control+s")  # inside the widget: Notebook 7 saves
        record = tb.wait_for_saved(saved, lambda nb: tb.record_in(nb, "c011", lambda r: r.get("locked"), widgets=True))
        page.screenshot(path=str(tb.ARTIFACTS / "browser-notebook7.png"))
    assert record == {"qid": "00.warmup-flag", "locked": True, "answer": False, "before_reveal": True}
    cells = json.loads(saved.read_text())
    output = next(o for c in cells["cells"] if c.get("id") == "c011" for o in c["outputs"] if locked.MIME in o["data"])
    assert output["data"][locked.MIME]["locked"] is False  # the output the reload cut off still says not locked
    notes = apply_locks(cells["cells"], template, widgets=cells["metadata"].get("widgets"))
    flag_cell = next(c for c in cells["cells"] if c.get("id") == "c011")
    assert "answer = False" in "".join(flag_cell["source"]), (notes, flag_cell["source"])  # what grading runs
