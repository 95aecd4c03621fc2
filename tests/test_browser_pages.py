"""The grader's own pages in Chromium, opened from disk with the network refused: a feedback page, the class report.

Split from tests/test_browser.py (whose helpers they use) so that xdist runs the browser modules side by side.
"""

from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest

from tests.test_browser import (
    ARTIFACTS,
    ROOT,
    _requirements,
    new_page,
)

pytestmark = pytest.mark.skipif(bool(_requirements()), reason=_requirements() or "ready")


def test_a_feedback_page_opens_offline_with_answers_explanation_and_failing_case(tmp_path, chromium):
    """The grader's feedback page (``grade --html``), opened from disk with every network request refused."""
    from grader.engine.question import get
    from tests.test_gradebook import feedback_page

    path = feedback_page(tmp_path)
    remote = []
    ARTIFACTS.mkdir(exist_ok=True)
    with new_page(chromium, "browser-pages-failed.png", 1200, 1000) as page:

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


def test_the_class_report_renders_offline_and_its_figures_match_the_csv(tmp_path, chromium):
    """A small class graded with --report; the page opened from disk with every network request refused."""
    import csv

    solution = ROOT / "solutions" / "00_start_here.ipynb"
    klass = tmp_path / "class"
    for name, old, new in (
        ("ann", "", ""),
        ("ben", "answer = [2.0, 3.0]", "answer = [1.0, 2.0]"),
        ("cat", "answer = [2.0, 3.0]", "answer = [1.0, 2.0]"),
        ("dan", 'answer = program("00.warmup-square").run()["s"].grad.item()', "answer = 123456.0"),
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
    with new_page(chromium, "browser-pages-failed.png", 1200, 1000) as page:
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


# --- a prediction locked with the widget, saved by JupyterLab, graded ------------------------------
