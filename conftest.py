"""pytest set-up shared by the unit tests and the nbval runs over solutions/ and notebooks/.

For nbval, each notebook gets:

* its own throwaway progress store (AUTOGRAD_LAB_HOME), made before its kernel starts;
* the course's identity (AUTOGRAD_LAB_LEARNER=course), so every generated self-test asks the same program on
  every run;
* strict mode (AUTOGRAD_LAB_STRICT=1) for solutions/, so a solution whose own
  check fails raises instead of printing a quiet "incorrect";
* one more test after its last cell that reads the store the notebook wrote:
  a solution must have passed every question of its unit and marked the unit
  passed; an untouched learner notebook must have passed nothing;
* its mode by its folder: under `--nbval`, solutions/ are compared output by
  output (strict) and notebooks/ only run (as `--nbval-lax` would: a learner
  notebook has no stored outputs), so one pytest run can take the unit tests,
  solutions/ and notebooks/ together (`make test` does).

The order in which xdist hands out modules (``--dist loadscope --no-loadscope-reorder``): the
modules that take longest first (see ``LONGEST_FIRST``), then the notebooks, then the rest in
collection order, so that no long module starts last and runs alone at the end. The browser modules
are one scope (``BROWSER``): one worker walks them one after another.

SVG (Graphviz writes its version into it) and widget views are not compared.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

# One intra-op thread in every process of the suite (its workers, their kernels, grading runs): several test
# processes share the machine's cores, and torch's default of one OpenMP thread per core makes each process's
# threads wait for one another. Measured on 2 busy cores: a tanh-matmul chain's step took 10x the CPU time and up
# to 12x the wall time with 2 threads. A learner's kernel keeps torch's default.
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent
_HOMES = Path(tempfile.mkdtemp(prefix="agl-nbval-"))
SKIP_COMPARE = (
    "image/svg+xml",
    "application/vnd.jupyter.widget-view+json",
    "application/vnd.jupyter.widget-state+json",
    # the records a notebook carries for batch grading (a self-test's programs and answers, a reveal's order):
    # data for the gradebook, whose own tests read them; their text/plain beside them is compared
    "application/vnd.autograd-lab.variant+json",
    "application/vnd.autograd-lab.reveal+json",
)


def _nbfile_of(node):
    while node is not None:
        if type(node).__name__ == "IPyNbFile":
            return node
        node = node.parent
    return None


def _home_for(nbfile) -> Path:
    return _HOMES / Path(str(nbfile.fspath)).parent.name / Path(str(nbfile.fspath)).stem


def pytest_collectstart(collector):
    if type(collector).__name__ == "IPyNbFile":
        collector.skip_compare = tuple(collector.skip_compare) + SKIP_COMPARE
        if Path(str(collector.fspath)).parent.name == "notebooks":
            collector.compare_outputs = False  # a learner notebook is run, not compared: --nbval-lax's rule


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    nbfile = _nbfile_of(item.parent)
    if nbfile is None:
        return
    home = _home_for(nbfile)
    home.mkdir(parents=True, exist_ok=True)
    os.environ["AUTOGRAD_LAB_HOME"] = str(home)
    # the course's own run asks the course identity's programs (grader.engine.identity): the stored outputs of a
    # self-test's program are the same on every run
    os.environ["AUTOGRAD_LAB_LEARNER"] = "course"
    os.environ.pop("AUTOGRAD_LAB_MASTERY", None)
    if Path(str(nbfile.fspath)).parent.name == "solutions":
        os.environ["AUTOGRAD_LAB_STRICT"] = "1"
    else:
        os.environ.pop("AUTOGRAD_LAB_STRICT", None)


class StoreVerdict(pytest.Item):
    """Reads the progress store a notebook run left behind and asserts on it."""

    def __init__(self, *, nbfile, solution: bool, **kwargs):
        super().__init__(**kwargs)
        self.nbfile, self.solution = nbfile, solution

    def runtest(self):
        from grader.engine import progress
        from grader.engine.course import unit_id
        from grader.engine.store import FILENAME, Store

        path = Path(str(self.nbfile.fspath))
        uid = unit_id(path.stem)
        store = Store(_home_for(self.nbfile) / FILENAME)
        events = store.events()
        state = progress.unit_state(uid, events)
        if self.solution:
            missing = state.missing()
            assert not missing, f"{path.name} leaves questions of unit {uid} undone: {missing}"
            assert state.passed, f"{path.name} never marked unit {uid} passed"
            assert state.questions, f"unit {uid} has no questions"
        else:
            # untouched, run top to bottom as Run All runs it: no prediction was locked in, no check passed, nothing
            # marked passed, and no reveal either: each reveal waits while its question's input, just shown above,
            # has nothing locked in (grader.learner.api.reveal), so Run All never turns a question into "revealed
            # without prediction" before the learner could predict it (issue 44)
            wrong = [e for e in events if e.action in ("predict", "reveal") or e.verdict in ("correct", "passed")]
            assert not wrong, f"untouched {path.name} recorded: " + ", ".join(
                f"{e.qid or e.unit} {e.action}={e.verdict}" for e in wrong
            )
            assert not state.passed and not any(q.passed or q.predicted for q in state.questions.values())

    def reportinfo(self):
        return self.path, None, f"{self.nbfile.name}: {self.name}"


_UNIT_OF = re.compile(r"\[(\d\d[a-z]?)\.|test_unit(\d\d[a-z]?)|(?:solutions|notebooks)/(\d\d[a-z]?)_|unit(\d\d[a-z]?)")


def _select_by_unit(items) -> None:
    """`pytest -k unit02` picks every test of unit 02: its questions (ids '02.x'), its test module,
    its notebooks and their store checks."""
    for item in items:
        for match in _UNIT_OF.finditer(item.nodeid):
            uid = next(g for g in match.groups() if g)
            item.extra_keyword_matches.add(f"unit{uid}")


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_HOMES, ignore_errors=True)  # the throwaway stores of this run's notebooks


# Modules measured as the longest (`pytest --durations=0`, 2 cores): each starts a JupyterLab and a
# browser, a hub, or grades a whole class. xdist gives each worker a module at a time; started last,
# one of these would be the suite's tail.
LONGEST_FIRST = (
    # the browser walks, one after another in one worker (see BROWSER): beside them, the grading modules
    "tests/test_browser_restart.py",
    "tests/test_hub.py",
    "tests/test_browser.py",
    "tests/test_browser_widgets.py",
    "tests/test_browser_a11y.py",
    # the modules that grade a class (mostly computing)
    "tests/test_grade_all_units.py",
    "tests/test_gradebook.py",
    "tests/test_scale.py",
    "tests/test_grade_attacks.py",
    "tests/test_grade_truth.py",
    "tests/test_grade.py",
    "tests/test_grade_sandbox.py",
    "tests/test_regrade_outputs.py",
    "tests/test_gradebook_outputs.py",
    "tests/test_error_answers.py",
    "tests/test_locks.py",
    "tests/test_browser_pages.py",
)
# Each of these starts a JupyterLab (or a hub) and a Chromium and mostly waits on them. On a loaded 2-core
# machine two at once starve each other past their timeouts, so xdist hands them out as one scope: one
# worker walks them in order while the others take the rest. (tests/test_browser_pages.py opens static pages
# in a Chromium, with no JupyterLab or kernel: it runs beside them.)
BROWSER = (
    "tests/test_browser.py",
    "tests/test_browser_restart.py",
    "tests/test_browser_widgets.py",
    "tests/test_browser_a11y.py",
    "tests/test_hub.py",
    "tests/test_browser_term44b.py",
)


@pytest.hookimpl(optionalhook=True)  # a run with -p no:xdist knows no such hook
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadscope``: xdist's own scheduling, with every browser module in one scope."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BrowsersTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "browser" if nodeid.startswith(BROWSER) else super()._split_scope(nodeid)

    return BrowsersTogether(config, log)


def _rank(scope: str) -> tuple[int, int]:
    if scope in LONGEST_FIRST:
        return (0, LONGEST_FIRST.index(scope))
    if scope.endswith(".ipynb"):
        return (1, 0)
    return (2, 0)


def _longest_first(items) -> None:
    """Reorder whole modules (a notebook with its store check is one), never the tests inside one."""
    scopes: dict[str, list] = {}
    for item in items:
        scopes.setdefault(item.nodeid.split("::")[0], []).append(item)
    order = sorted(scopes, key=_rank)  # stable: equal ranks keep collection order
    items[:] = [item for scope in order for item in scopes[scope]]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    try:
        _add_store_checks(config, items)
    finally:
        _select_by_unit(items)
        _longest_first(items)


def _add_store_checks(config, items) -> None:
    if not (config.getoption("nbval", False) or config.getoption("nbval_lax", False)):
        return
    out, last_of = [], {}
    for index, item in enumerate(items):
        nbfile = _nbfile_of(item.parent)
        if nbfile is not None:
            last_of[nbfile] = index
    extra = {}
    for nbfile, index in last_of.items():
        folder = Path(str(nbfile.fspath)).parent.name
        if folder not in ("solutions", "notebooks"):
            continue
        solution = folder == "solutions"
        name = "store: passes every question and marks the unit" if solution else "store: untouched, passes nothing"
        extra[index] = StoreVerdict.from_parent(nbfile, name=name, nbfile=nbfile, solution=solution)
    for index, item in enumerate(items):
        out.append(item)
        if index in extra:
            out.append(extra[index])
    items[:] = out
