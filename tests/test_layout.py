"""The package's layout: layers without cycles, unit packages that hold declarations, and the paths
and progress files of 0.1 still working for a learner who started before the layout changed."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from grader.engine import progress, store
from grader.engine.course import UNITS

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or a module importing itself."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.find_modules_directly_imported_by(v):
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for m in sorted(graph.modules):
        if m not in index:
            visit(m)
    return out


def test_no_module_of_the_grader_takes_part_in_an_import_cycle():
    graph = grimp.build_graph("grader", cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "loopy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from loopy import b\n")
    (pkg / "b.py").write_text("def f():\n    from loopy import a\n")
    (pkg / "c.py").write_text("from loopy import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("loopy", cache_dir=None)) == [["loopy.a", "loopy.b"]]


@pytest.mark.skipif(
    shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None, reason="import-linter is not installed"
)
def test_the_layer_contracts_hold():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.parametrize("uid", list(UNITS))
def test_a_units_questions_module_holds_declarations(uid):
    """No class in questions.py (cases, kinds and models sit beside it), and every public function in it
    is a declaration that the registry knows."""
    from grader.engine.question import of_unit

    path = ROOT / "grader" / "units" / f"unit{uid}" / "questions.py"
    tree = ast.parse(path.read_text())
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert not classes, f"{path.relative_to(ROOT)} defines classes {classes}: they belong in cases, kinds or support"
    declared = {q.experiment.__name__ for q in of_unit(uid)}
    public = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    stray = [name for name in public if name not in declared]
    assert not stray, f"{path.relative_to(ROOT)}: {stray} are not declarations (move them to support.py)"


OLD_IMPORTS = [
    line for line in (DATA / "imports-0.1.txt").read_text().splitlines() if line and not line.startswith("#")
]


@pytest.mark.parametrize("line", OLD_IMPORTS)
def test_an_import_line_of_a_0_1_notebook_still_runs(line):
    ns: dict = {}
    exec(line, ns)
    names = [a.asname or a.name for node in ast.parse(line).body for a in node.names]
    assert all(ns.get(name) is not None for name in names)


def test_old_module_paths_lead_to_the_same_objects():
    from grader.engine.kinds import stable_part
    from grader.units.unit10 import cases as capstone_cases

    ns: dict = {}
    exec(
        "from grader.kinds import stable_part\nfrom grader.audit import cases\n"
        "from grader.questions import unit12_support as theirs",
        ns,
    )
    assert ns["stable_part"] is stable_part and ns["cases"] is capstone_cases.cases
    assert ns["theirs"].Encoder.__name__ == "Encoder" and callable(ns["theirs"].their_setup)
    with pytest.raises(ImportError):
        exec("from grader.audit import no_such_name", {})


def test_a_progress_file_written_by_0_1_still_reads(tmp_path):
    """tests/data/progress-0.1.sqlite3 was written by 0.1 (unit 00 passed: one prediction, one reveal
    without prediction, a self-test correct on attempt 2; a prediction in unit 01)."""
    copy = tmp_path / "progress.sqlite3"
    copy.write_bytes((DATA / "progress-0.1.sqlite3").read_bytes())
    log = store.Store(copy)
    u00 = progress.unit_state("00", log.events("00"))
    assert u00.passed
    assert u00.questions["00.warmup-add"].record.startswith("predicted")
    assert u00.questions["00.warmup-flag"].record == "revealed without prediction"
    assert u00.questions["00.warmup-square"].record == "correct on attempt 2"
    assert progress.unit_state("01", log.events("01")).questions["01.pow-node"].predicted


def test_the_modules_handed_out_first_exist():
    """conftest.py's LONGEST_FIRST names modules by path: a renamed module would silently lose its place."""
    import conftest

    missing = [m for m in conftest.LONGEST_FIRST if not (ROOT / m).is_file()]
    assert not missing, missing
