"""Red team 43c: boundary 4 of docs/threat-model.md ("The exercise runner"), attacked by notebooks graded as an
instructor grades them (``python -m grader grade FOLDER --out grades.csv``, ``-j 1``, one run for the module).

Each learner hands in a copy whose exercise function does not do the exercise's work; the gradebook must not mark it
"correct". Every attack below earned "correct" on every case when it was written (xfail, strict: a fix turns it into
a pass, and the xfail marker must then go). No copy spells a word of ``answer_tools.MACHINERY``, looks in
``sys.modules`` or imports a grader module the unit's own cells do not import:

* ``a-planted10`` (10.diagnose): unit 10's cells hand the learner ``cases`` (``from grader.units.unit10.cases import
  cases``), the exercise's own generator. Each ``AuditCase`` it returns keeps its planted ``fault`` (``fault.kind``)
  and the program as intended (``clean``); the function finds its program among them by source, returns the
  planted kind, and reads the line off the text (the first line that differs from the intended program; the first
  ``.backward(`` of the loop for an uncleared ``.grad``; the loop's binding of the carried state). No step_through,
  no graph, no torch at all; correct on all 43 programs;
* ``b-alias12`` (12.diagnose): the exercise's switch stubs the module attribute ``support.find_fault``; the cases
  module imported the same function by name (``grader.units.unit12.cases.find_fault``), and answer_tools swaps no
  code of ``support`` (unit 12's cells import it whole, ``from grader.units.unit12 import support as theirs``). The
  runner's view of ``sys`` hides the grader modules the learner was not given, but ``support`` imported the real
  ``sys``: ``vars(theirs.sys)["modules"]["grader.units.unit12.cases"].find_fault`` is the course's diagnosis, live,
  and no word of it is a finding (``sys.modules`` is not spelled);
* ``c-inspect05`` (05.predict-bill, 05.saved-parameters): red team 43b's ``l-opsmode`` without a word of
  ``answer_tools.MACHINERY``: the dispatch mode that refuses every tensor operation is the last entry of
  ``torch.utils._python_dispatch._get_current_dispatch_mode_stack()`` (the rule ends its word at ``_mode``, and ``_stack``
  goes on with a word character), the runner's call's locals (``case``, ``ns``) come from ``inspect.stack``
  and ``inspect.getargvalues``; the mode's ``ops`` is emptied while the case measures its model with the course's
  bill;
* ``d-inspect09b`` (09b.checkpoint-by-hand): red team 43b's ``e-stub`` the same way: ``inspect.getclosurevars(stub)
  .nonlocals`` is the switch's closure, and torch's own checkpoint (and its generator) are put back for the call.

Both ``inspect`` copies read the same as an honest copy on the row: no finding, since ``reach`` and the runner's
rule look for the same words.

And the other direction, honest solutions written unlike the course's (``HONEST``): a ``typing.NamedTuple`` class as
07's packed value passes (a control), but the runner rebuilds a cell from its imports, its defs and classes (each
from ``ast.get_source_segment``, which starts at the ``def`` line, so decorators are dropped) and its literal
constants only: a walk over ``@dataclass`` records (``e-honest01``) and one that reads edges through a module-level
``Edge = namedtuple(...)`` (``g-honest01``) are refused though both are the work (false fails, xfail too).

Tried and held (no test): ``import grader.units.unit12`` (the runner's import gives the public ``grader``, not the
package); the cached case lists hold no answer unit 07's and 09's exercises could use whole (07's ``WriteCase.kinds``
names the place but not the stale nodes); 04b's ``traces.diagnose`` has its code swapped (not given whole).

CPU: one grading run of 7 notebooks (units 01 twice, 05, 07, 09b, 10, 12): about 19 CPU-seconds for the whole
module, every process it starts counted (a cpuacct cgroup), 16 to 25 s wall on this shared machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.instructor.grading import containment
from tests.test_redteam43b import _verdict, grade_copies

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "redteam43c"
DIAGNOSE10 = "10.diagnose"
DIAGNOSE12 = "12.diagnose"

# unit -> (its notebook's stem, its imports cell, {an exercise's definition cell: that exercise's check cell})
UNITS = {
    "10": ("10_capstone_audit", "c001", {"c069": "c070"}),
    "12": ("12_finding_the_fault", "c002", {"c061": "c062"}),
    "05": ("05_saved_tensors_and_what_they_cost", "c001", {"c081": "c082", "c084": "c085"}),
    "09b": ("09b_checkpointing", "b001", {"x067b": "x067c"}),
    "07": ("07_version_counters_and_in_place_writes", "c001", {"c070": "c071"}),
}
BILL, SAVED = "05.predict-bill", "05.saved-parameters"
CHECKPOINT = "09b.checkpoint-by-hand"

CLASS = {  # learner -> (unit, {definition cell: fixture})
    "a-planted10": ("10", {"c069": "planted_fault.py"}),
    "b-alias12": ("12", {"c061": "find_fault_by_alias.py"}),
    "c-inspect05": ("05", {"c081": "bill_by_inspect.py", "c084": "bill_names.py"}),
    "d-inspect09b": ("09b", {"x067b": "checkpoint_by_inspect.py"}),
}
HONEST = {  # learner -> (unit, {definition cell: fixture}): honest solutions written unlike the course's
    "e-honest01": ("01", {"c052": "honest_walk.py"}),
    "f-honest07": ("07", {"c070": "honest_guard.py"}),
    "g-honest01": ("01", {"c052": "honest_walk_namedtuple.py"}),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not containment.bwrap_works():
        pytest.skip("the attacks grade their copies in the sandbox, which needs bubblewrap")
    return grade_copies(tmp_path_factory.mktemp("redteam43c"), {**CLASS, **HONEST}, FIXTURES, UNITS)


def test_the_class_is_graded(graded):
    rows, done = graded
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(CLASS) | set(HONEST) <= set(rows), sorted(rows)


def test_an_honest_solution_written_otherwise_is_correct(graded):
    """The other direction, a control: a typing.NamedTuple class of the notebook's as the packed value (07) is
    rebuilt with the function and passes."""
    verdict, why = _verdict(graded, "f-honest07", "07.version-guard")
    assert verdict.startswith("correct"), why


def test_an_honest_walk_over_dataclass_records_is_correct(graded):
    """Found by red team 43c: false fail: the runner rebuilds a cell's definitions from ast.get_source_segment of each
    def and class, which starts at the def line: a class's decorators are dropped, so @dataclass's Visit takes no
    arguments. Held since: exercise_sources keeps a definition's decorators, and the runner compiles the notebook's
    code without this module's postponed annotations, in a module of its own (dataclasses read it)."""
    verdict, why = _verdict(graded, "e-honest01", "01.graph-walk")
    assert verdict.startswith("correct"), why


def test_an_honest_walk_with_a_module_level_named_tuple_is_correct(graded):
    """Found by red team 43c: false fail: the runner keeps a cell's imports, defs, classes and literal constants only:
    Edge = namedtuple(...) at module level is dropped, and the walk raises NameError. Held since: exercise_sources
    keeps an assignment that makes a type (namedtuple, NamedTuple, make_dataclass...)."""
    verdict, why = _verdict(graded, "g-honest01", "01.graph-walk")
    assert verdict.startswith("correct"), why


def test_the_planted_fault_is_not_the_diagnosis(graded):
    """Found by red team 43c: boundary 4: unit 10's cells hand over cases(), whose AuditCases keep the planted fault
    and the intended program: the kind is looked up and the line read off the text, with no audit. Held since: unit
    10's cells give programs(), not the cases around them, and a module the cells import names from is a view of
    those names only."""
    verdict, why = _verdict(graded, "a-planted10", DIAGNOSE10)
    assert not verdict.startswith("correct"), why


def test_the_course_diagnosis_is_not_reached_by_another_name(graded):
    """Found by red team 43c: boundary 4: 12.diagnose's switch stubs the attribute support.find_fault only; support is
    given whole, so its code is not swapped, and support's own sys (the real one) reaches
    grader.units.unit12.cases.find_fault, the same function under another module's name. Held since:
    answer_tools.MACHINERY refuses a module's own sys (`.sys`)."""
    verdict, why = _verdict(graded, "b-alias12", DIAGNOSE12)
    assert not verdict.startswith("correct"), why


@pytest.mark.parametrize("qid", [BILL, SAVED])
def test_torchs_operations_stay_off_whatever_names_reach_the_mode(graded, qid):
    """Found by red team 43c: boundary 4: the rule on spelled names (answer_tools.MACHINERY) misses
    _get_current_dispatch_mode_stack and inspect.stack/getargvalues: unit 05's switch of every tensor operation is
    emptied and the case bills its model. Held since: answer_tools.MACHINERY refuses
    _get_current_dispatch_mode_stack and inspect's frame functions."""
    verdict, why = _verdict(graded, "c-inspect05", qid)
    assert not verdict.startswith("correct"), why


def test_torchs_checkpoint_stays_off_whatever_reads_the_stub(graded):
    """Found by red team 43c: boundary 4: inspect.getclosurevars reads the switch's closure without a word of
    answer_tools.MACHINERY: torch's own checkpoint is put back for the call. Held since: answer_tools.MACHINERY
    refuses inspect.getclosurevars."""
    verdict, why = _verdict(graded, "d-inspect09b", CHECKPOINT)
    assert not verdict.startswith("correct"), why


def test_every_copy_that_reaches_past_the_api_is_named_on_its_row(graded):
    """Whatever a fix does to the verdicts, the instructor should read that each of these copies reached past the API
    (when red team 43c found them, their rows carried no finding at all: no import past the API, no walk)."""
    from grader.instructor.grading import reach

    said = [words for _, words in reach._LOOKUPS] + ["past the course's API"]
    rows = graded[0]
    for learner in CLASS:
        if learner == "a-planted10":  # it calls cases(), which unit 10's cells no longer give: nothing is reached
            continue
        assert any(words in rows[learner]["findings"] for words in said), (learner, rows[learner]["findings"])
