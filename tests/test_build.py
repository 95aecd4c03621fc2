"""One source: notebooks/ is generated from solutions/, and build --check notices drift."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.instructor.build import BuildError, build, learner_copy, strip_solutions
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent


def test_top_level_regions_become_placeholders():
    src = "### BEGIN SOLUTION\nanswer = [1, 2]\nother: int = 3\n### END SOLUTION\npredict('q', answer)"
    assert strip_solutions(src) == (
        "answer = ...  # YOUR ANSWER HERE\nother = ...  # YOUR ANSWER HERE\npredict('q', answer)"
    )


def test_regions_in_a_body_raise_not_implemented():
    src = "def f(t):\n    '''doc'''\n    ### BEGIN SOLUTION\n    return t\n    ### END SOLUTION\n"
    out = strip_solutions(src)
    assert "return t" not in out and "    raise NotImplementedError()" in out
    namespace = {}
    exec(out, namespace)
    with pytest.raises(NotImplementedError):
        namespace["f"](1)


@pytest.mark.parametrize(
    "src, words",
    [
        ("### BEGIN SOLUTION\nprint(1)\n### END SOLUTION", "may only assign names"),
        ("### BEGIN SOLUTION\na = 1", "has no"),
        ("a = 1\n### END SOLUTION", "without"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside another"),
        ("### BEGIN SOLUTION\na[0] = 1\n### END SOLUTION", "may only assign names"),
    ],
)
def test_malformed_regions_are_refused_with_the_place(src, words):
    with pytest.raises(BuildError, match=words):
        strip_solutions(src, "x.ipynb, cell 3")


def test_learner_copy_clears_outputs():
    nb = nbformat.read(ROOT / "solutions" / "01_what_the_forward_pass_records.ipynb", 4)
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "solutions keep their outputs"
    out = learner_copy(nb)
    for cell in out.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
            assert "### BEGIN SOLUTION" not in cell.source


def test_committed_notebooks_match_solutions():
    assert build(ROOT, check=True) == []


def test_check_fails_on_drift_and_build_repairs_it(tmp_path):
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    target = tmp_path / "notebooks" / "00_start_here.ipynb"
    nb = json.loads(target.read_text())
    nb["cells"][0]["source"] = "edited by hand"
    target.write_text(json.dumps(nb))
    (tmp_path / "notebooks" / "99_orphan.ipynb").write_text("{}")
    result = cli("build", "--check", "--root", tmp_path)
    assert result.returncode == 1
    assert "00_start_here.ipynb differs" in result.stdout and "99_orphan.ipynb has no solution" in result.stdout
    build(tmp_path)
    assert build(tmp_path, check=True) == ["notebooks/99_orphan.ipynb has no solution in solutions/"]


def test_every_unit_with_questions_has_a_solution_and_a_learner_notebook():
    from grader.engine.course import UNITS
    from grader.engine.question import all_questions

    units = {q.unit for q in all_questions()}
    for uid in units:
        name = UNITS[uid].notebook
        assert (ROOT / "solutions" / name).exists(), name
        assert (ROOT / "notebooks" / name).exists(), name
    for path in (ROOT / "solutions").glob("*.ipynb"):
        uid = path.name.split("_")[0]
        assert uid in units, f"{path.name} has no questions declared"
        text = path.read_text()
        for q in (q for q in all_questions() if q.unit == uid):
            assert f'\\"{q.qid}\\"' in text, f"{path.name} never uses {q.qid}"
        assert f'mark_passed(\\"{uid}\\")' in text, f"{path.name} never marks its unit"


def test_stored_outputs_are_normalised_so_a_diff_is_the_change():
    from grader.instructor.build import BuildError, normalise_outputs

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1); print(2)")])
    cell = nb.cells[0]
    cell.execution_count = 7
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="1\n"),
        nbformat.v4.new_output("stream", name="stdout", text="2\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "3"}, execution_count=7),
    ]
    normalise_outputs(nb)
    assert cell.execution_count == 1 and cell.outputs[1]["execution_count"] == 1
    assert [o["output_type"] for o in cell.outputs] == ["stream", "execute_result"]
    assert cell.outputs[0]["text"] == "1\n2\n"
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=f"{sys.prefix}/lib/x.py:3: FutureWarning")]
    with pytest.raises(BuildError, match="path of this machine"):
        normalise_outputs(nb)


def test_one_keyword_selects_all_of_a_units_tests():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:xdist",
            "tests/test_questions.py",
            "tests/test_unit02.py",
            "-k",
            "unit02",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-2000:]  # an INTERNALERROR still prints the ids
    ids = [line for line in out.stdout.splitlines() if "::" in line]
    assert ids and all("02." in i or "test_unit02" in i for i in ids)
    assert any("test_questions.py" in i for i in ids) and any("test_unit02.py" in i for i in ids)


def test_a_solutions_own_working_leaves_no_placeholder():
    """A self-test's solution works on the learner's program before it assigns the answer: names, expressions and
    functions that start with _ are its scratch; the learner's cell keeps only ``answer = ...``."""
    from grader.instructor.build import strip_solutions

    source = (
        "### BEGIN SOLUTION\n_mine = program('x').run()\n_mine['y'].backward()\n"
        "def _seen(name):\n    return _mine[name].grad is not None\n\nanswer = {n for n in 'ab' if _seen(n)}\n"
        "### END SOLUTION\ncheck('x', answer)"
    )
    assert strip_solutions(source) == "answer = ...  # YOUR ANSWER HERE\ncheck('x', answer)"
