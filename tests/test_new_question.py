"""`python -m grader new-question`: a new question's working skeleton in its declaration and its solution
notebook, the notebook changed only by the inserted cells, the build refusing the skeleton's placeholders
until the author has filled them in; and `build --execute`'s kernels no longer announce a TCP connection."""

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.instructor.build import placeholders
from grader.instructor.new_question import PLACEHOLDER, NewQuestionError, insert

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "05_saved_tensors_and_what_they_cost.ipynb"


@pytest.fixture
def course(tmp_path):
    """A copy of the grader and of unit 05's solution, for the command to write into."""
    root = tmp_path / "course"
    shutil.copytree(ROOT / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "solutions").mkdir()
    shutil.copy2(ROOT / "solutions" / NOTEBOOK, root / "solutions" / NOTEBOOK)
    return root


def _run(root: Path, *args: str, code: str | None = None, home: str = "home") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root), AUTOGRAD_LAB_HOME=str(root / home))
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "grader", *args, "--root", str(root)]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=root, timeout=600)


def _fill_in(root: Path) -> None:
    """What the author does: every placeholder replaced by their own words."""
    for path in [root / "solutions" / NOTEBOOK, root / "grader" / "units" / "unit05" / "questions.py"]:
        path.write_text(path.read_text(encoding="utf-8").replace(PLACEHOLDER, "Written:"), encoding="utf-8")


def test_a_predict_then_run_skeleton_works_and_the_build_refuses_it_until_filled_in(course):
    before = (course / "solutions" / NOTEBOOK).read_text(encoding="utf-8")
    done = _run(course, "new-question", "05", "what-mul-records", "--kind", "name")
    assert done.returncode == 0, done.stderr
    after = (course / "solutions" / NOTEBOOK).read_text(encoding="utf-8")
    # the repository's own format: the diff is the inserted cells, no line of the notebook rewritten
    changed = [l for l in difflib.ndiff(before.splitlines(), after.splitlines()) if l[:1] in "+-?"]
    assert changed and all(l.startswith("+ ") for l in changed), changed[:5]
    cells = json.loads(after)["cells"]
    ids = [c["id"] for c in cells]
    mine = [c for c in cells if "05.what-mul-records" in c["source"]]
    at = ids.index(mine[0]["id"])
    assert len(set(ids)) == len(ids) and [c["id"] for c in cells[at : at + 4]] == [ids[at - 1] + x for x in "abcd"]
    assert cells[at + 4]["source"].startswith("## Completion criterion"), "placed before the completion criterion"
    assert [c["cell_type"] for c in cells[at : at + 4]] == ["markdown", "code", "code", "code"]
    assert (
        'predict("05.what-mul-records", answer)' in cells[at + 1]["source"]
        and "### BEGIN SOLUTION" in (cells[at + 1]["source"])
    )
    assert cells[at + 3]["source"] == 'reveal("05.what-mul-records")'
    # the declaration is a live experiment, merged into the module's own imports, and lint-clean
    module = (course / "grader" / "units" / "unit05" / "questions.py").read_text(encoding="utf-8")
    assert re.search(r"^from grader\.engine\.kinds import .*\bName\b.*\bnode_key\b", module, re.M)
    assert module.count("from grader.engine.kinds import") == 1
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if Path(ruff).exists():
        for args in (["check"], ["format", "--check"]):
            lint = subprocess.run(
                [ruff, *args, "--config", str(ROOT / "pyproject.toml"), str(course / "grader" / "units" / "unit05")],
                capture_output=True,
                text=True,
            )
            assert lint.returncode == 0, lint.stdout + lint.stderr
    # it works as it stands: the solution's answer is torch's, and a wrong prediction is refused
    live = _run(
        course,
        code="import grader\n"
        "grader.predict('05.what-mul-records', 'MulBackward0')\n"
        "print('VERDICT', grader.reveal('05.what-mul-records').verdict)\n",
    )
    assert "VERDICT correct" in live.stdout, live.stdout[-2000:] + live.stderr[-2000:]
    wrong = _run(
        course,
        code="import grader\n"
        "grader.predict('05.what-mul-records', 'AddBackward0')\n"
        "print('VERDICT', grader.reveal('05.what-mul-records').verdict)\n",
        home="another-learner",
    )
    assert "VERDICT correct" not in wrong.stdout and "VERDICT" in wrong.stdout, wrong.stdout[-2000:]
    # never a stub: the build refuses the placeholders, naming where they are, and writes nothing
    refused = _run(course, "build", "--unit", "05")
    assert refused.returncode == 2 and "not filled in" in refused.stderr and "questions.py, line" in refused.stderr
    assert f"solutions/{NOTEBOOK}, cell {at + 1}" in refused.stderr
    assert not (course / "notebooks").exists()
    executed = _run(course, "build", "--execute", "--unit", "05")
    assert executed.returncode == 2 and "not filled in" in executed.stderr
    _fill_in(course)
    built = _run(course, "build", "--unit", "05")
    assert built.returncode == 0, built.stderr
    learner = nbformat.read(course / "notebooks" / NOTEBOOK, as_version=4)
    assert any(
        'predict("05.what-mul-records", answer)' in c.source and "answer = ..." in c.source for c in learner.cells
    )


def test_a_self_test_skeleton_is_checked_with_hints(course):
    done = _run(course, "new-question", "05", "closed-book-square", "--kind", "number", "--role", "self-test")
    assert done.returncode == 0, done.stderr
    cells = nbformat.read(course / "solutions" / NOTEBOOK, as_version=4).cells
    mine = [c for c in cells if "05.closed-book-square" in c.source]
    assert [c.cell_type for c in mine] == ["markdown", "code", "code"]
    assert mine[1].source == 'program("05.closed-book-square")'
    assert 'check("05.closed-book-square", answer)' in mine[2].source
    module = (course / "grader" / "units" / "unit05" / "questions.py").read_text(encoding="utf-8")
    assert "@self_test(" in module.split('"05.closed-book-square"')[0].rsplit("\n\n\n", 1)[1]
    kept = (course / "grader" / "units" / "unit05" / "generators.py").read_text(encoding="utf-8")
    # unit 05 keeps its self-tests' generators in generators.py: the new one goes there, imported by questions.py
    assert "program=closed_book_square_program," in module and "def closed_book_square_program(d: Draw)" in kept
    assert "closed_book_square_program" in module.split("@")[0]  # imported at the top
    # a generator, as every self-test is: two learners' programs differ, and each is graded on their own
    live = _run(
        course,
        code="import os, grader\n"
        "from grader.engine import variants\n"
        "from grader.engine.question import get\n"
        "from grader.learner.api import variant_of\n"
        "q = get('05.closed-book-square')\n"
        "print('HINTS', len(q.hints))\n"
        "seen = {variants.make(q.program, q.qid, f'learner-{i}', 0).program.source for i in range(12)}\n"
        "print('PROGRAMS', len(seen))\n"
        "truth = q.run(variant_of(q).program)\n"
        "print('WRONG', grader.check('05.closed-book-square', truth + 1).verdict)\n"
        "truth = q.run(variant_of(q).program)\n"
        "print('RIGHT', grader.check('05.closed-book-square', truth).verdict)\n",
    )
    out = live.stdout[-2000:] + live.stderr[-2000:]
    assert "HINTS 2" in live.stdout and "RIGHT correct" in live.stdout and "WRONG incorrect" in live.stdout, out
    assert int(re.search(r"PROGRAMS (\d+)", live.stdout).group(1)) >= 3, out


def test_what_cannot_be_a_question_is_refused(course):
    for args, said in (
        (("Bad_Slug", "number"), "a slug is lower case"),
        (("ok-slug", "tensor"), "--kind tensor"),
    ):
        with pytest.raises(NewQuestionError, match=said):
            insert(course, "05", *args)
    with pytest.raises(NewQuestionError, match="cannot be a Boolean"):
        insert(course, "05", "retry-me", "boolean", role="self-test")
    with pytest.raises(NewQuestionError, match="no cell with that id"):
        insert(course, "05", "somewhere", "number", after="nope")
    existing = next(
        q for q in re.findall(r'"(05\.[a-z0-9-]+)"', (ROOT / "grader/units/unit05/questions.py").read_text())
    )
    with pytest.raises(NewQuestionError, match="already declared"):
        insert(course, "05", existing.split(".", 1)[1], "number")
    assert (course / "solutions" / NOTEBOOK).read_bytes() == (ROOT / "solutions" / NOTEBOOK).read_bytes()
    assert placeholders(course) == []


def test_the_repository_holds_no_unfilled_skeleton():
    assert placeholders(ROOT) == []


def test_build_execute_starts_its_kernel_without_a_tcp_warning(tmp_path, capfd):
    """Every `build --execute` printed ipykernel's "Kernel is running over TCP without encryption"."""
    from grader.instructor.build import execute

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    ran = execute(path, strict=False)
    assert ran.cells[0].outputs[0]["text"] == "42\n"
    captured = capfd.readouterr()
    assert "over TCP" not in captured.err + captured.out, captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.ipynb"], "no socket files left behind"


def test_the_declaration_goes_where_its_cells_are_and_the_closing_line_names_the_commands(course):
    """Declaration order is the panel's and the gradebook's: a question inserted after the first question's cells
    is declared right after the first question, not at the end of the module."""
    nb = nbformat.read(course / "solutions" / NOTEBOOK, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("reveal("))
    asked = first.source.split('"')[1]
    done = _run(course, "new-question", "05", "placed-early", "--kind", "number", "--after", first.id)
    assert done.returncode == 0, done.stderr
    module = (course / "grader" / "units" / "unit05" / "questions.py").read_text(encoding="utf-8")
    declared = [line.split('"')[1] for line in module.splitlines() if line.startswith('    "05.')]
    assert declared.index("05.placed-early") == declared.index(asked) + 1, declared[:5]
    assert "hints=(" in module.split('"05.placed-early"')[1].split("def placed_early")[0]
    assert "misconceptions=[" in module.split('"05.placed-early"')[1].split("def placed_early")[0]
    for command in ("build --execute --unit 05", "python -m grader build`", "release-version", "make test-unit U=05"):
        assert command in done.stdout + done.stderr, done.stdout


def test_release_version_writes_the_version_and_its_questions_together(tmp_path, monkeypatch):
    """One command for a new course version: course.py's VERSION (pyproject reads it) and versions.json's entry."""
    from grader.engine.course import VERSION
    from grader.instructor.grading import versions

    listed = tmp_path / "versions.json"
    listed.write_text(versions.FILE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(versions, "FILE", listed)
    course = tmp_path / "course.py"
    course.write_text(f'"""units"""\n\nVERSION = "{VERSION}"\nOTHER = 1\n', encoding="utf-8")
    major, minor, patch = (int(x) for x in VERSION.split("."))
    newer = f"{major}.{minor + 1}.0"
    said = versions.release(newer, course)
    assert f'VERSION = "{newer}"' in course.read_text() and "OTHER = 1" in course.read_text()
    assert versions.released()[newer] == versions.current_entry() and VERSION in versions.released()
    assert any(newer in line for line in said)
    for refused in (newer, VERSION, "1.0"):  # not newer, or not three numbers
        with pytest.raises(versions.ReleaseError):
            versions.release(refused, course)
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert 'attr = "grader.engine.course.VERSION"' in pyproject and '\nversion = "' not in pyproject
