"""Authoring checks: a question's prompt, written twice (its declaration and its notebook's markdown), says the
same thing; `verify` ends with one summary line.

The prompt rule: the notebook has a markdown cell naming the question id, and every number in the
declaration's prompt appears in the notebook's cells for that question (from the code cells just before its
first markdown cell to its last cell naming it: the program the markdown points at). A number the
declaration states and the notebook does not (a changed ``w = 2``, a stale byte count) is the drift this
catches. A code cell that prints ``NAME.listing()`` of a program object the unit's question module defines
(unit 10's scripts) counts with that listing: the declaration's prompt is built from the same object
(``NAME.inline()``), so the program is written once. Every question follows the rule.
"""

import importlib
import pkgutil
import re
from pathlib import Path

import nbformat

from grader.engine.course import UNITS
from grader.engine.question import all_questions
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w])")

LISTING = re.compile(r"\b([A-Za-z_]\w*)\.listing\(\)")


def _numbers(text: str) -> set:
    return {float(x) for x in NUMBER.findall(text.replace("`", " "))}


def _printed_listings(source: str, unit: str) -> str:
    """The listings a code cell prints from program objects of the unit's package (its questions,
    cases or support modules)."""
    package = importlib.import_module(f"grader.units.unit{unit}")
    modules = [importlib.import_module(f"{package.__name__}.{m.name}") for m in pkgutil.iter_modules(package.__path__)]
    found = [next((getattr(m, name) for m in modules if hasattr(m, name)), None) for name in LISTING.findall(source)]
    return " ".join(program.listing() for program in found if callable(getattr(program, "listing", None)))


def prompt_disagreements(folder: Path = ROOT / "notebooks") -> dict[str, str]:
    """question id -> how its declaration's prompt and its notebook disagree."""
    found, cache = {}, {}
    for q in all_questions():
        if q.program is not None:  # a generated self-test: the grader renders each learner's program in the notebook
            continue
        name = UNITS[q.unit].notebook
        if name not in cache:
            cells = nbformat.read(folder / name, as_version=4).cells
            cache[name] = (
                [
                    c.source + (" " + _printed_listings(c.source, q.unit) if c.cell_type == "code" else "")
                    for c in cells
                ],
                [c.cell_type for c in cells],
            )
        sources, types = cache[name]
        naming = [i for i, s in enumerate(sources) if re.search(r"(?<![\w.-])" + re.escape(q.qid) + r"(?![\w-])", s)]
        prose = [i for i in naming if types[i] == "markdown"]
        if not prose:
            found[q.qid] = "no markdown cell names it"
            continue
        start = prose[0]
        while start > 0 and types[start - 1] == "code":
            start -= 1
        missing = _numbers(q.prompt) - _numbers(" ".join(sources[start : max(naming) + 1]))
        if missing:
            found[q.qid] = "numbers only in the declaration: " + ", ".join(f"{m:g}" for m in sorted(missing))
    return found


def test_the_prompt_in_the_notebook_agrees_with_the_declaration():
    found = prompt_disagreements()
    assert not found, "the notebook's prompt and the declaration disagree:\n" + "\n".join(
        f"  {qid}: {why}" for qid, why in sorted(found.items())
    )


def test_verify_ends_with_one_summary_line():
    out = cli("verify", "--unit", "00")
    last = out.stdout.strip().splitlines()[-1]
    assert re.fullmatch(
        r"\d+ answers and \d+ claims; (none changed|.+) since the manifest built with torch \S+", last
    ), out.stdout
    if out.returncode == 0:
        assert last.startswith("3 answers and 0 claims; none changed since the manifest built with torch ")


def test_the_summary_line_counts_changes():
    from grader.instructor.cli import summary_line

    report = {
        "rows": [1] * 189,
        "changed": [{"id": "x"}],
        "added": ["y", "z"],
        "removed": [],
        "errors": [],
        "built_with": "2.13.0",
    }
    assert (
        summary_line(report)
        == "189 answers and 0 claims; 1 changed, 2 added since the manifest built with torch 2.13.0"
    )
    report.update(changed=[], added=[], claims=[{}] * 9)
    assert summary_line(report) == "189 answers and 9 claims; none changed since the manifest built with torch 2.13.0"
    report.update(claims_failed=["05.x"])
    assert summary_line(report) == (
        "189 answers and 9 claims; 1 claim(s) failed since the manifest built with torch 2.13.0"
    )
