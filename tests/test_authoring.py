"""Authoring checks: a question's prompt, written twice (its declaration and its notebook's markdown), says the
same thing; `verify` ends with one summary line.

The prompt rule: the notebook has a markdown cell naming the question id, and every number in the
declaration's prompt appears in the notebook's cells for that question (from the code cells just before its
first markdown cell to its last cell naming it: the program the markdown points at). A number the
declaration states and the notebook does not (a changed ``w = 2``, a stale byte count) is the drift this
catches. KNOWN_TODAY lists the questions that do not follow the rule yet (measured when this test was
written, while units were being revised); the test fails when a question not on it disagrees.
"""
import re
import subprocess
import sys
from pathlib import Path

import nbformat

from grader.course import UNITS
from grader.question import all_questions

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w])")

KNOWN_TODAY = {
    "01.mul-edges", "01.walk-y", "01.graph-walk", "02.grad-timeline", "02.isolating-seed", "03.three-ways",
    "03.nonfinite-watch", "04.reachable-leaves", "04.first-broken-edge", "04.why-grad-none",
    "05.exp-saved-result", "05.mlp-bill", "05.adam-state-ratio", "05.closed-book-middle-frozen",
    "05.closed-book-kept-outputs", "05.predict-bill", "05.saved-parameters", "06.two-losses", "06.hvp",
    "08.sum-of-losses", "08.tbptt", "08.which-k", "08.chunk-depth", "08.retain-k1", "08.detach-early",
    "09.held-vs-bill", "09.offload-held", "09.half-held", "09.relu-twice", "09.checkpoint-calls",
    "09.checkpoint-held", "09.reentrant-grads", "09.self-bill-under-offload", "09.self-checkpoint-input-write",
    "10.worked-runs", "10.worked-stale", "10.worked-depths", "10.worked-moved", "10.worked-first-differs",
    "10.trap-loss-falls", "10.stale-where", "10.stale-retain-facts", "10.self-kind-a", "10.self-line-a",
    "10.self-kind-b", "10.self-broken-c", "10.self-kind-d", "10.diagnose", "10.repair",
}


def _numbers(text: str) -> set:
    return {float(x) for x in NUMBER.findall(text.replace("`", " "))}


def prompt_disagreements(folder: Path = ROOT / "notebooks") -> dict[str, str]:
    """question id -> how its declaration's prompt and its notebook disagree."""
    found, cache = {}, {}
    for q in all_questions():
        name = UNITS[q.unit].notebook
        if name not in cache:
            cells = nbformat.read(folder / name, as_version=4).cells
            cache[name] = [c.source for c in cells], [c.cell_type for c in cells]
        sources, types = cache[name]
        naming = [i for i, s in enumerate(sources) if re.search(r"(?<![\w.-])" + re.escape(q.qid) + r"(?![\w-])", s)]
        prose = [i for i in naming if types[i] == "markdown"]
        if not prose:
            found[q.qid] = "no markdown cell names it"
            continue
        start = prose[0]
        while start > 0 and types[start - 1] == "code":
            start -= 1
        missing = _numbers(q.prompt) - _numbers(" ".join(sources[start:max(naming) + 1]))
        if missing:
            found[q.qid] = "numbers only in the declaration: " + ", ".join(f"{m:g}" for m in sorted(missing))
    return found


def test_the_prompt_in_the_notebook_agrees_with_the_declaration():
    found = prompt_disagreements()
    new = {qid: why for qid, why in found.items() if qid not in KNOWN_TODAY}
    print(f"{len(found)} question(s) whose notebook and declaration disagree (known: {len(KNOWN_TODAY)})")
    for qid, why in sorted(found.items()):
        print(f"  {qid}: {why}")
    assert not new, "the notebook's prompt and the declaration disagree:\n" + \
        "\n".join(f"  {qid}: {why}" for qid, why in sorted(new.items()))


def test_verify_ends_with_one_summary_line():
    out = subprocess.run([sys.executable, "-m", "grader", "verify", "--unit", "00"], capture_output=True, text=True,
                         timeout=300)
    last = out.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ answers, (none changed|.+) since the manifest built with torch \S+", last), out.stdout
    if out.returncode == 0:
        assert last.startswith("3 answers, none changed since the manifest built with torch ")


def test_the_summary_line_counts_changes():
    from grader.cli import summary_line

    report = {"rows": [1] * 189, "changed": [{"id": "x"}], "added": ["y", "z"], "removed": [], "errors": [],
              "built_with": "2.13.0"}
    assert summary_line(report) == "189 answers, 1 changed, 2 added since the manifest built with torch 2.13.0"
    report.update(changed=[], added=[])
    assert summary_line(report) == "189 answers, none changed since the manifest built with torch 2.13.0"
