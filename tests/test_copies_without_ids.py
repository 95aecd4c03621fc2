"""A copy saved without cell ids (nbformat 4.4 and older, Colab, an editor that drops them) is restored by the
source of the course's own cells, for every unit: before, it read "could not be restored", 0 points.

Nothing runs a kernel: restore is the step under test (every grader-owned cell put back, every learner cell found
where it was), on each unit's worked solution saved as such tools save it."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grader.engine.course import UNITS
from grader.instructor.grading import pipeline
from grader.instructor.grading.copies import ADDED, match_by_source

ROOT = Path(__file__).resolve().parent.parent


def _without_ids(unit: str, minor: int = 4, change=None) -> tuple[dict, list]:
    nb = json.loads((ROOT / "solutions" / UNITS[unit].notebook).read_text(encoding="utf-8"))
    ids = [c.get("id") for c in nb["cells"]]
    nb["nbformat_minor"] = minor
    for cell in nb["cells"]:
        cell.pop("id", None)
    if change:
        change(nb)
    return nb, ids


def _restore(tmp_path: Path, unit: str, nb: dict) -> pipeline.Restored:
    path = tmp_path / "ann" / UNITS[unit].notebook
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return pipeline.restore(pipeline.Submission("ann", path))


@pytest.mark.parametrize("unit", list(UNITS))
def test_every_units_solution_saved_without_ids_is_restored_cell_for_cell(tmp_path, unit):
    nb, ids = _without_ids(unit)
    restored = _restore(tmp_path, unit, nb)
    assert restored.status == "ok" and restored.notebook is not None, restored.problems
    assert [c.get("id") for c in restored.notebook.cells if c.get("cell_type") == "code"] == [
        cid for cid, c in zip(ids, nb["cells"]) if c["cell_type"] == "code"
    ], "every code cell found where it was"
    assert not restored.copy.missing and any("found by their source" in f for f in restored.findings)


def test_a_colab_copy_with_answers_added_cells_and_made_up_ids_is_matched(tmp_path):
    """Answers typed in (the learner's cells differ from the handed-out ones), a cell of the learner's own, and
    an nbformat 4.5 file whose missing ids the reader makes up: the course's cells are still found."""

    def work(nb):
        for cell in nb["cells"]:
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = text.replace('predict("01.pow-node"', '# my guess\npredict("01.pow-node"')
        nb["cells"].insert(3, nbformat.v4.new_code_cell("print('scratch')"))

    nb, ids = _without_ids("01", minor=5, change=work)
    restored = _restore(tmp_path, "01", nb)
    assert restored.status == "ok", restored.problems
    by_source = {c.get("source"): c.get("id") for c in restored.notebook.cells}
    assert by_source["print('scratch')"].startswith(ADDED)
    pow_node = next(c for c in restored.notebook.cells if 'predict("01.pow-node"' in c.get("source", ""))
    assert pow_node["id"] in ids and "# my guess" in pow_node["source"], "the learner's own cell, found by its lines"


def test_a_foreign_notebook_without_ids_is_still_not_restored(tmp_path):
    cell = {"cell_type": "code", "source": "print(1)", "metadata": {}, "outputs": [], "execution_count": None}
    assert match_by_source([dict(cell)], [{"id": "c1", "cell_type": "code", "source": "x = 1"}]) == 0
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    restored = _restore(tmp_path, "01", nb)
    assert restored.status == pipeline.NOT_RESTORED and "by its source either" in restored.problems[0]
