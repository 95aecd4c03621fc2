"""Hostile notebooks drawn by hypothesis, fed to restore and grading: only invariants are asserted.

Each notebook is unit 00's learner notebook with its cells mutated the ways a learner's editor (or a forger) can:
cell ids duplicated, dropped or invented, sources replaced, execution counts of any JSON type, and outputs carrying
the grader's own records (self-test records, lock records, reveal records) with any values, nested JSON, and sizes.
Whatever the notebook, restore and the recomputation raise nothing, give one row per learner and unit with points
between 0 and the maximum, and, since nothing ran and no record's answer can be right (they are not numbers),
earn nothing: a record is data, never a verdict. A few drawn notebooks are then graded for real in one run, which
must finish with a row for each.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.engine import locked, order, variants
from grader.instructor.grading import gradebook, pipeline
from tests.test_grade_attacks import BLANK_00

TEMPLATE = json.loads(Path(BLANK_00).read_text(encoding="utf-8"))
QIDS = ["00.warmup-add", "00.warmup-flag", "00.warmup-square", "01.pow-node", "zz.nothing"]

leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
value = st.recursive(
    leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
not_a_number = st.one_of(st.text(max_size=20), st.lists(st.text(max_size=5), max_size=3), st.none())


@st.composite
def record(draw) -> dict:
    which = draw(st.sampled_from(["variant", "lock", "reveal", "junk"]))
    qid = draw(st.sampled_from(QIDS) | st.text(max_size=12))
    if which == "variant":
        answers = draw(st.lists(st.tuples(st.integers(-5, 10**6), not_a_number).map(list), max_size=70))
        payload = {
            "qid": qid,
            "variant": draw(st.integers(-5, 10**6) | value),
            "answers": draw(st.just(answers) | value),
            "identity": draw(st.text(max_size=12)),
            "drawn_for": draw(st.text(max_size=300) | value),
        }
        return {variants.RECORD_MIME: payload}
    if which == "lock":
        payload = {"qid": qid, "locked": draw(value), "answer": draw(not_a_number), "before_reveal": draw(value)}
        return {locked.MIME: payload}
    if which == "reveal":
        return {order.MIME: {"qid": qid, "predicted": draw(value)}}
    return {draw(st.sampled_from([variants.RECORD_MIME, locked.MIME, order.MIME])): draw(value)}


@st.composite
def hostile(draw) -> dict:
    nb = json.loads(json.dumps(TEMPLATE))
    ids = [c.get("id") for c in nb["cells"]]
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        change = draw(st.sampled_from(["keep", "id", "source", "outputs", "count", "all"]))
        if change in ("id", "all"):
            cell["id"] = draw(st.sampled_from(ids) | st.text(alphabet="abc0123456789-", min_size=1, max_size=12))
        if change in ("source", "all"):
            cell["source"] = draw(st.sampled_from(["answer = 'x'", "pass", "reveal('00.warmup-add')", "answer = ..."]))
        if change in ("outputs", "all"):
            outputs = draw(st.lists(record(), max_size=3))
            cell["outputs"] = [
                {"output_type": "display_data", "data": {**data, "text/plain": "x"}, "metadata": {}} for data in outputs
            ]
        if change in ("count", "all"):
            cell["execution_count"] = draw(st.integers(0, 10**6) | st.none())
    if draw(st.booleans()):
        nb["cells"] = draw(st.permutations(nb["cells"]))
    return nb


def _write(nb: dict, folder: Path, learner: str) -> pipeline.Submission:
    (folder / learner).mkdir(parents=True, exist_ok=True)
    path = folder / learner / "00_start_here.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return pipeline.find([str(folder / learner)])[0]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(nb=hostile())
def test_a_hostile_notebook_earns_nothing_and_breaks_nothing(tmp_path_factory, nb):
    folder = tmp_path_factory.mktemp("hostile")
    sub = _write(nb, folder, "mallory")
    restored = pipeline.restore(sub)
    execution = pipeline.Execution(isolation="none: nothing ran")  # no event: only the copy's records are read
    graded = pipeline.recompute(restored, execution) if restored.notebook is not None else None
    rows = gradebook.rows_of(graded) if graded is not None and graded.units else []
    assert len(rows) <= 1
    for row in rows:
        assert 0 <= float(row["points"]) <= float(row["max"]), row
        assert float(row["points"]) == 0, {k: row[k] for k in ("points", "findings", "00.warmup-square")}
        assert row["marked passed"] == "no"


def test_drawn_hostile_notebooks_are_graded_to_the_end(tmp_path):
    notebooks = [hostile().example() for _ in range(3)]
    for i, nb in enumerate(notebooks):
        _write(nb, tmp_path / "class", f"h{i}")
    _write(nbformat.read(BLANK_00, as_version=4), tmp_path / "class", "plain")
    out = tmp_path / "grades.csv"
    pipeline.grade([str(tmp_path / "class")], out, jobs=2, progress_to=None)
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["learner"] for r in rows) == ["h0", "h1", "h2", "plain"]
    assert all(float(r["points"]) <= float(r["max"]) for r in rows)


pytestmark = [
    pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning"),
    pytest.mark.filterwarnings("ignore::nbformat.warnings.DuplicateCellId"),
]
