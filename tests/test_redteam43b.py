"""Red team 43b: boundary 4 of docs/threat-model.md ("an exercise's answer"), attacked by notebooks graded as an
instructor grades them.

Each learner hands in a copy whose exercise function does not do the exercise's work; the gradebook must not mark it
"correct". Every attack below earned "correct" on every case when it was written (xfail, strict: a fix turns it into
a pass, and the xfail marker must then go). One class, graded once (``-j 1``, learners in name order):

* ``a-planted`` (01.graph-walk): the function returns ``t`` and plants the course's walker in the runner's ``kind``
  (``kind.returns.read = probes.node_names``, ``kind.convert`` = the kinds module's own pass-through): the runner reads
  the result with the tools back on, and no code of the notebook runs then, so the profile sees nothing;
* ``b-refusals`` (01.graph-walk): a class body, run while the definitions run (a decorator is not kept), sets each
  entry of the runner's ``Refusals.refusals`` to the tool's ``saved`` code (a dict item, not a ``__code__``): every later switch-off puts
  the real code in by the runner's own hand; the exercise's switch on ``grader.probes.nodes`` holds the walker it
  replaced in its closure, so the function puts it back for one call of ``node_names``;
* ``c-control`` (01.graph-walk): the same function without that class body: refused, naming ``node_names`` (holds);
* ``d-facts`` (09b.checkpoint-by-hand): no checkpoint at all; the function replaces ``facts`` in the call's module's
  globals (read by ``call_checkpoint`` after the function has run) with one that says all three facts hold;
* ``e-stub`` (09b.checkpoint-by-hand): torch's own checkpoint, taken from the closures of the stubs the exercise's
  switch put in its place, put back for the call;
* ``f-truth`` (09.half-guard): ``pack_half`` reads torch's answer from ``run_guard``'s locals (``truth``, on the
  stack while pack runs) and replaces ``memory_run`` and ``leak_run`` in its module's globals; ``unpack_half``
  raises exactly when torch's check does. No float16, no version check;
* ``g-kindcall`` (13.per-sample-grads): a class body sets the runner's ``kind.call`` to 13.per-sample-by-hooks's
  call (torch.func off, backward on, the model's calls not counted) and the function is the course's own
  ``loop_grads``, the way the exercise switches off;
* ``h-record`` (01.graph-walk): a named tuple made by the notebook (``collections.namedtuple(..., module=
  "grader.probes")``) and put in ``grader.probes`` under its name, so ``_plain`` keeps its class: its field is
  ``functools.partial(probes.node_names, t)`` (not a container, kept as it is) and its ``__iter__`` a property of
  ``operator`` getters, no code of the notebook's: the runner iterates it while reading, the tools on;
* ``i-firstbad`` (03.nonfinite-watch): ``run_watch`` runs the loop unwatched first and holds torch's answer
  (``first_bad``) in its locals when it calls ``report()``, which returns it from there; the hook checks nothing;
* ``j-given07`` (07.predict-inplace, 07.version-guard): unit 07's cells import ``write_program`` from
  ``grader.units.unit07.cases``, so the runner's import gives the whole module, and answer_tools never switches off
  a function of a given module: ``predict_inplace`` returns ``write_outcome(case)`` (the experiment's own body), and
  the pair raises exactly when ``guard_outcome_cached(case)`` (torch's answer) says torch's check does;
* ``k-given08`` (08.sliding-window): unit 08's cells import ``grader.units.unit08.support`` (for ``Recurrence``); its
  ``window_grads`` is the experiment's own tool, and the copy's answer cell is one import of it;
* ``l-opsmode`` (05.predict-bill, 05.saved-parameters): "torch's tensor operations are switched off" by a
  ``TorchDispatchMode`` (units/switches.py ``_RefuseOps``) whose ``ops`` attribute the function empties while
  it asks the case (a local of the runner's call) for the course's own bill of its model.

Tried and held (no test): the experiments' original functions are gone once sealed (no object in ``gc`` is one);
a result line sent twice, or naming another case, is refused by the grading process (verify.judge_exercise).

CPU: one grading run of 12 notebooks (units 01, 03, 05, 07, 08, 09, 09b, 13): about 21 CPU-seconds for the whole
module, every process it starts counted (a cpuacct cgroup), 34 to 80 s wall on this shared machine.
"""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest

from grader.instructor.grading import containment
from tests.cli import run as cli
from tests.test_grade_attacks import BLANK_01, exercise_only

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "redteam43b"
WALK = "01.graph-walk"
GUARD = "09.half-guard"
CHECKPOINT = "09b.checkpoint-by-hand"
PER_SAMPLE = "13.per-sample-grads"
WATCH = "03.nonfinite-watch"
PREDICT_WRITE = "07.predict-inplace"
VERSION_GUARD = "07.version-guard"
WINDOW = "08.sliding-window"
BILL, SAVED = "05.predict-bill", "05.saved-parameters"

# unit -> (its notebook's stem, its imports cell, {an exercise's definition cell: that exercise's check cell})
UNITS = {
    "03": ("03_observing_gradients", "c001", {"c065": "c066"}),
    "05": ("05_saved_tensors_and_what_they_cost", "c001", {"c081": "c082", "c084": "c085"}),
    "07": ("07_version_counters_and_in_place_writes", "c001", {"c058": "c059", "c070": "c071"}),
    "08": ("08_carried_state_and_truncated_bptt", "c001", {"c058": "c059"}),
    "09": ("09_saved_tensor_hooks_in_practice", "c001a", {"c076": "c077"}),
    "09b": ("09b_checkpointing", "b001", {"x067b": "x067c"}),
    "13": ("13_autograd_beyond_eager", "c001", {"c044": "c045"}),
}


def exercise_copy(unit: str, sources: dict[str, str], units: dict | None = None):
    """A copy of the unit's notebook holding only its imports, and for each exercise its definition cell (given
    ``sources``, by cell id) and its check (``units``: the table of such cells, UNITS by default)."""
    stem, imports, exercises = (units or UNITS)[unit]
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    keep = {imports} | set(sources) | {exercises[d] for d in sources}
    nb.cells = [c for c in nb.cells if c.get("id") in keep]
    for cell in nb.cells:
        cell.source = sources.get(cell.get("id"), cell.source)
    return nb


def _write(folder: Path, learner: str, stem: str, nb) -> None:
    (folder / learner).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / learner / f"{stem}.ipynb")


UNIT01 = "01_what_the_forward_pass_records"
CLASS = {  # learner -> (unit, {definition cell: fixture}), unit 01's definition cell being c052 (exercise_only)
    "a-planted": ("01", {"c052": "planted_read.py"}),
    "b-refusals": ("01", {"c052": "refusals_swapped.py"}),
    "c-control": ("01", {"c052": "refusals_control.py"}),
    "d-facts": ("09b", {"x067b": "facts_patched.py"}),
    "e-stub": ("09b", {"x067b": "checkpoint_from_stub.py"}),
    "f-truth": ("09", {"c076": "truth_on_the_stack.py"}),
    "g-kindcall": ("13", {"c044": "call_swapped.py"}),
    "h-record": ("01", {"c052": "forged_record.py"}),
    "i-firstbad": ("03", {"c065": "first_bad_on_the_stack.py"}),
    "j-given07": ("07", {"c058": "write_outcome_imported.py", "c070": "guard_outcome_imported.py"}),
    "k-given08": ("08", {"c058": "window_grads_imported.py"}),
    "l-opsmode": ("05", {"c081": "bill_measured.py", "c084": "bill_names.py"}),
    # e-stub and l-opsmode with every name of the machinery built at run time (the lead's variants, after the fix)
    "m-stubbuilt": ("09b", {"x067b": "checkpoint_from_stub_built.py"}),
    "n-opsbuilt": ("05", {"c081": "bill_measured_built.py", "c084": "bill_names.py"}),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not containment.bwrap_works():
        pytest.skip("the attacks grade their copies in the sandbox, which needs bubblewrap")
    return grade_copies(tmp_path_factory.mktemp("redteam43b"), CLASS, FIXTURES, UNITS)


def grade_copies(base: Path, learners: dict, fixtures: Path, units: dict):
    """Each learner's copy (unit 01: exercise_only on its definition cell c052; another unit: exercise_copy) with
    its fixtures' sources, graded in one run (-j 1): (rows by learner, the command's outcome)."""
    folder = base / "class"
    for learner, (unit, files) in learners.items():
        sources = {cell: (fixtures / name).read_text() for cell, name in files.items()}
        if unit == "01":
            _write(folder, learner, UNIT01, exercise_only(BLANK_01, sources["c052"]))
        else:
            _write(folder, learner, units[unit][0], exercise_copy(unit, sources, units))
    out = base / "grades.csv"
    done = cli("grade", folder, "--out", out, "-j", "1")
    with open(out, newline="") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    return rows, done


def _verdict(graded, learner: str, qid: str) -> tuple[str, dict]:
    row = graded[0][learner]
    keys = ("learner", "notebook", "run", "problems", "findings", "points", "max", qid)
    return row.get(qid, ""), {k: row.get(k) for k in keys}


def test_the_class_is_graded(graded):
    rows, done = graded
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(CLASS) <= set(rows), sorted(rows)


def test_the_tools_stay_off_for_a_function_that_asks_them_control(graded):
    """Holds: without the class body, node_names refuses and the row names it (the attack is that class body)."""
    verdict, why = _verdict(graded, "c-control", WALK)
    assert verdict.startswith("incorrect"), why
    assert "grader.probes.node_names, the course's own tool for this answer" in why["findings"], why


def test_a_function_cannot_plant_the_tool_in_the_runners_read(graded):
    """The break: boundary 4: the runner reads a result with the tools on through callables held in its own mutable
    kind (kind.returns.read, kind.convert); the function plants probes.node_names there (no notebook code runs
    then). Held since: runner_state: the kind's attributes are compared before the result is read."""
    verdict, why = _verdict(graded, "a-planted", WALK)
    assert not verdict.startswith("correct"), why


def test_the_refusals_cannot_be_rewritten_into_the_tools(graded):
    """The break: boundary 4: Refusals.off() installs refusals[tool], a dict the notebook's code can write while its
    definitions run; made the saved code, every switch-off turns the tools on by the runner's own hand. Held since:
    runner_state: the table of refusals is compared before each case."""
    verdict, why = _verdict(graded, "b-refusals", WALK)
    assert not verdict.startswith("correct"), why


def test_the_call_cannot_be_rewritten_from_under_it(graded):
    """The break: boundary 4: call_checkpoint reads facts() from its module's globals after the learner's function ran;
    replaced by one that says all three facts hold, a function that checkpoints nothing is correct. Held since:
    runner_state: every grader module's callables are compared after the call."""
    verdict, why = _verdict(graded, "d-facts", CHECKPOINT)
    assert not verdict.startswith("correct"), why


def test_torchs_checkpoint_stays_off_while_the_function_runs(graded):
    """The break: the exercise's switch (units/switches.py) keeps each switched-off original in its stub's closure
    (refused.__closure__): torch.utils.checkpoint.checkpoint is taken back and called. Held since:
    answer_tools.MACHINERY: definitions that reach closures or the dispatch stack are not run."""
    verdict, why = _verdict(graded, "e-stub", CHECKPOINT)
    assert not verdict.startswith("correct"), why


def test_the_answer_is_not_on_the_stack_while_pack_runs(graded):
    """The break: boundary 4 says a frame walk finds no answer: run_guard holds torch's answer (truth) in its locals
    while the learner's pack runs, and reads memory_run and leak_run from its globals after it. Held since:
    run_guard asks torch's answer only after the pair ran; its globals are compared."""
    verdict, why = _verdict(graded, "f-truth", GUARD)
    assert not verdict.startswith("correct"), why


def test_the_exercises_own_call_cannot_be_swapped(graded):
    """The break: the runner calls kind.call, an attribute the notebook's definitions can set (through the runner's
    frame): 13.per-sample-grads's switch (no backward, model calls counted) is swapped for another exercise's. Held
    since: runner_state: the kind's attributes are compared before each case."""
    verdict, why = _verdict(graded, "g-kindcall", PER_SAMPLE)
    assert not verdict.startswith("correct"), why


def test_a_forged_grader_record_is_not_kept(graded):
    """The break: boundary 4: _graders_record trusts a class that a grader module holds under its name; the notebook
    makes one (collections.namedtuple, operator getters, functools.partial: no code of its own) and puts it there.
    Held since: runner_state: a callable added to a grader module fails the case."""
    verdict, why = _verdict(graded, "h-record", WALK)
    assert not verdict.startswith("correct"), why


def test_the_first_bad_step_is_not_on_the_stack_while_report_runs(graded):
    """The break: boundary 4 says a frame walk finds no answer: run_watch holds torch's answer (first_bad) in its
    locals while the learner's report() runs. Held since: run_watch runs the unwatched loop only after report()."""
    verdict, why = _verdict(graded, "i-firstbad", WATCH)
    assert not verdict.startswith("correct"), why


def test_a_given_modules_answer_tool_is_not_the_answer_predict_inplace(graded):
    """The break: a module the unit's cells import one name from (grader.units.unit07.cases, for write_program) is
    given whole, and answer_tools never switches off a given module's function: write_outcome is the experiment's
    body. Held since: answer_tools: a name imported from a module gives that name, not the module."""
    verdict, why = _verdict(graded, "j-given07", PREDICT_WRITE)
    assert not verdict.startswith("correct"), why


def test_a_given_modules_answer_tool_is_not_the_answer_version_guard(graded):
    """The break: grader.units.unit07.cases is given whole (for write_program): its guard_outcome_cached is torch's
    answer for the case the runner's call holds in its locals. Held since: answer_tools guards the tools a call
    needs: they refuse a call with the notebook's code on the stack."""
    verdict, why = _verdict(graded, "j-given07", VERSION_GUARD)
    assert not verdict.startswith("correct"), why


def test_a_given_modules_answer_tool_is_not_the_answer_sliding_window(graded):
    """The break: grader.units.unit08.support is given (for Recurrence) and holds window_grads, the experiment's own
    tool; 08.sliding-window's call switches nothing off: one import is the answer. Held since: answer_tools: a name
    imported from a module gives that name, not the module."""
    verdict, why = _verdict(graded, "k-given08", WINDOW)
    assert not verdict.startswith("correct"), why


@pytest.mark.parametrize("qid", [BILL, SAVED])
def test_torchs_operations_stay_off_while_the_bill_is_predicted(graded, qid):
    """The break: switches.py's _RefuseOps refuses what its ops attribute names; the function reaches the mode
    (_get_current_dispatch_mode), empties ops, and measures the case's model with case.bill (probes.bill). Held
    since: answer_tools.MACHINERY: definitions that reach closures or the dispatch stack are not run."""
    verdict, why = _verdict(graded, "l-opsmode", qid)
    assert not verdict.startswith("correct"), why


WALKS = "walks the running program's frames, closures or objects"


def test_every_copy_that_walks_the_runners_frames_is_named_on_its_row(graded):
    """Whatever a walk finds, the instructor reads that the copy walked: each attack above that reaches the runner's
    objects through frames, closures, the collector or the dispatch stack has the finding on its row (k-given08's
    one import walks nothing, and its row says nothing of it)."""
    rows = graded[0]
    for learner, (_, fixtures) in CLASS.items():
        walked = any(reach_pattern().search((FIXTURES / f).read_text()) for f in fixtures.values())
        assert (WALKS in rows[learner]["findings"]) == walked, (learner, rows[learner]["findings"])
    assert WALKS not in rows["k-given08"]["findings"]


def reach_pattern():
    from grader.instructor.grading import reach

    return next(pattern for pattern, words in reach._LOOKUPS if words.startswith("walks"))


@pytest.mark.xfail(
    raises=AssertionError,
    strict=True,
    reason="docs/threat-model.md, boundary 4, not protected: the rule on the machinery's spelled names is all that "
    "stops e-stub; with the names built at run time, torch's checkpoint is taken from its stub's closure again",
)
def test_a_switched_off_original_stays_off_when_its_names_are_built_at_run_time(graded):
    verdict, why = _verdict(graded, "m-stubbuilt", CHECKPOINT)
    assert not verdict.startswith("correct"), why


@pytest.mark.parametrize("qid", [BILL, SAVED])
def test_torchs_operations_stay_off_when_the_modes_names_are_built_at_run_time(graded, qid):
    """l-opsmode with its names built at run time passes the rule on spelled names and is still refused: the case's
    bill is a tool the call needs, guarded (refused with the notebook's code on the stack)."""
    verdict, why = _verdict(graded, "n-opsbuilt", qid)
    assert not verdict.startswith("correct"), why
