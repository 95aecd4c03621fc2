"""A problem names the cell as the learner sees it (its question, or its first line), and a file that cannot be
read is shown under the unit its name says, whichever way the name says it. No notebook runs here."""

import json
from pathlib import Path

import nbformat

from grader.instructor.grading import containment, pipeline, workers

ROOT = Path(__file__).resolve().parent.parent
SOLVED_00 = ROOT / "solutions" / "00_start_here.ipynb"


def restored_with(tmp_path, extra: str, source=SOLVED_00):
    nb = nbformat.read(source, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell(extra))
    nb.cells[1].metadata[containment.LABEL_KEY] = "forged label"  # a copy's own label is never used
    path = tmp_path / "alice" / source.name
    path.parent.mkdir()
    nbformat.write(nb, path)
    (sub,) = pipeline.find([str(tmp_path)])
    return pipeline.restore(sub)


def test_the_run_labels_each_code_cell_by_its_question_or_first_line(tmp_path):
    restored = restored_with(tmp_path, "\n# spin for a while\nwhile True:\n    pass")
    nb = pipeline._to_run(restored)
    assert containment.cell_name(1, nb.cells[1]) == 'cell 2 ("spin for a while")'
    reveal = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and 'reveal("00.warmup-flag"' in restored.notebook.cells[i].source
    )
    assert containment.cell_name(reveal, nb.cells[reveal]) == f"cell {reveal + 1} (00.warmup-flag)"


def test_a_cell_without_a_label_is_named_by_its_number():
    assert containment.cell_name(17, nbformat.v4.new_code_cell("x = 1")) == "cell 18"
    long = nbformat.v4.new_code_cell("")
    long.metadata[containment.LABEL_KEY] = "y" * 300
    assert len(containment.cell_name(0, long)) < 100


def test_the_warm_workers_report_uses_the_names():
    raw = (
        json.dumps({"cell": 17, "ename": "KeyboardInterrupt"})
        + "\n"
        + json.dumps({"cell": 3, "ename": "NameError", "evalue": "answer"})
        + "\n"
        + json.dumps({"done": True})
        + "\n"
    ).encode()
    report = workers._report(raw, 0, 20, 60, 0, {17: 'cell 18 ("x = slow()")', 3: "cell 4 (01.pow-node)"})
    assert report["problems"] == [
        'cell 18 ("x = slow()") ran past 60 s and was stopped',
        "cell 4 (01.pow-node) raised NameError: answer",
    ]


def test_a_broken_file_named_per_learner_is_shown_under_its_unit(tmp_path):
    for name in ("frank_02.ipynb", "frank-03_what.ipynb", "frank 04.ipynb"):
        (tmp_path / name).write_text("{ not json")
    (tmp_path / "scratch.ipynb").write_text("{ not json")
    units = {s.path.name: pipeline.restore(s).unit for s in pipeline.find([str(tmp_path)])}
    assert units == {"frank_02.ipynb": "02", "frank-03_what.ipynb": "03", "frank 04.ipynb": "04", "scratch.ipynb": "?"}
