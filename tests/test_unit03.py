"""Unit 03's own cases: the planted faults are what torch sees, and odd learner code gets a clear verdict."""

import math

import pytest
import torch

from grader import check
from grader.engine.question import get
from grader.units.unit03 import cases as unit03_cases
from grader.units.unit03.kinds import WAYS_TO_READ
from tests.reference.unit03 import make_watch, three_ways

# --- the watch exercise's loops ---------------------------------------------------------------

LOOPS = unit03_cases.loop_cases()


@pytest.mark.parametrize("case", LOOPS, ids=lambda c: c.label)
def test_planted_faults_are_exactly_the_non_finite_steps(case):
    truth = get("03.nonfinite-watch").run(case)
    assert truth.bad == tuple(sorted(case.faults)), "a fault did not show, or a decoy did"
    assert truth.reported == (min(case.faults) if case.faults else None)


def test_the_loops_cover_what_the_bugs_need():
    values = [[v for _, v in c.faults.values()] for c in LOOPS]
    assert any(not c.faults for c in LOOPS), "a loop without a fault"
    assert any(vs and all(math.isinf(v) for v in vs) for vs in values), "a loop with infinities only"
    assert any(len(c.faults) >= 2 for c in LOOPS), "a loop with two faults (first, not last)"
    assert any(0 in c.faults for c in LOOPS) and any(c.faults and min(c.faults) > 0 for c in LOOPS)
    assert sum(bool(c.decoys) for c in LOOPS) >= 4, "large but finite targets"
    assert [c.size for c in LOOPS] == sorted(c.size for c in LOOPS), "smallest first"


def test_a_watch_that_hands_back_the_same_gradient_is_refused():
    """Issue 45: the prompt says the hook returns None; one that returns g (unchanged) passed every case."""

    def make():
        hook, report = make_watch()

        def passing_on(g):
            hook(g)
            return g

        return passing_on, report

    result = check("03.nonfinite-watch", make)
    assert result.verdict == "incorrect" and "the hook returned" in str(result) and "returns None" in str(result)


def test_some_loops_have_a_finite_gradient_whose_sum_overflows():
    """Issue 45: a watch testing g.sum() passed every case; a step with every target near the float32 limit
    gives h a finite gradient whose entries sum past it, in loops with and without a fault."""
    huge = [c for c in LOOPS if c.huge]
    assert len(huge) >= 6 and any(not c.faults for c in huge) and any(c.faults for c in huge)
    case = huge[0]
    seen = []
    unit03_cases.run_loop(
        case.fresh(), lambda g: seen.append((bool(torch.isfinite(g).all()), bool(torch.isfinite(g.sum()))))
    )
    assert seen[min(case.huge)] == (True, False)


def _endless():
    def hook(g):
        while True:
            pass

    return hook, lambda: None


def _raises_at_the_fault():
    def hook(g):
        if not torch.isfinite(g).all():
            raise FloatingPointError("non-finite gradient")

    return hook, lambda: None


def _reports_a_tensor():
    state = {"step": 0, "first": None}

    def hook(g):
        if state["first"] is None and not torch.isfinite(g).all():
            state["first"] = torch.tensor(state["step"])
        state["step"] += 1

    return hook, lambda: state["first"]


def _not_a_pair():
    return lambda g: None


def _switches_grad_off():
    torch.set_grad_enabled(False)
    return make_watch()


@pytest.mark.parametrize(
    "fn, words",
    [
        (_endless, "was stopped"),
        (_raises_at_the_fault, "the hook raised FloatingPointError"),
        (_reports_a_tensor, "report() returned a tensor"),
        (_not_a_pair, "must return a pair (hook, report)"),
        (_switches_grad_off, "grad mode"),
        (lambda: 42, "must return a pair"),
    ],
)
def test_odd_watches_get_a_clear_verdict(fn, words):
    before = torch.is_grad_enabled()
    result = check("03.nonfinite-watch", fn)
    assert result.verdict == "incorrect"
    assert words in str(result)
    assert "Traceback" not in str(result)
    assert torch.is_grad_enabled() == before


def test_the_watch_reference_passes_on_a_loaded_machine(busy_machine):
    """Within its per-case limits with two CPU-bound processes beside it (the speed figure: bench/run.py)."""
    assert check("03.nonfinite-watch", make_watch).passed


# --- the three-ways exercise -----------------------------------------------------------------


def test_every_case_observes_an_intermediate_on_the_path():
    q = get("03.three-ways")
    for case in unit03_cases.three_ways_cases():
        out, t, named = case.build()
        assert not t.is_leaf and t.requires_grad and case.target in named
        hook_way, retain_way, grad_way = q.run(case)
        assert not grad_way.stored and case.target not in hook_way.stored
        assert retain_way.stored == hook_way.stored | {case.target}


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda build: None, "return"),
        (lambda build: {"hook": 1}, "no entry for 'retain_grad'"),
        (lambda build: {w: (None, set()) for w in WAYS_TO_READ}, "is None"),
        (lambda build: {w: (build()[1], "a") for w in WAYS_TO_READ}, "set of names"),
    ],
)
def test_odd_three_ways_answers_get_a_clear_verdict(answer, words):
    result = check("03.three-ways", answer)
    assert result.verdict == "incorrect" and words in str(result)
    assert "Traceback" not in str(result)


def test_the_three_ways_reference_passes_on_a_loaded_machine(busy_machine):
    """Within its per-case limits with two CPU-bound processes beside it (the speed figure: bench/run.py)."""
    assert check("03.three-ways", three_ways).passed


# --- the questions issue 29 replaced ------------------------------------------------------------


def _refused_with(qid, answer, words):
    from grader import predict, reset, reveal

    reset(qid)
    predict(qid, answer)
    result = reveal(qid)
    # the learner reads the note, or the why line where the note would only repeat it (api.repeats)
    assert result.verdict == "incorrect" and words in str(result), str(result)


def _cells():
    import nbformat

    return nbformat.read("solutions/03_observing_gradients.ipynb", as_version=4).cells


def _asked_at(cells, qid):
    return next(i for i, c in enumerate(cells) if c.cell_type == "code" and f'predict("{qid}"' in c.source)


def test_where_grad_lands_replaces_the_warning_unit_01_already_printed():
    """Issue 29: 03.read-x-grad repeated the non-leaf warning unit 01 printed (c034). Its replacement asks which
    tensors backward writes .grad into, with a detached copy made a leaf of its own beside the non-leaf."""
    assert get("03.read-x-grad") is None
    assert get("03.where-grad-lands").run() == {"w", "h"}
    _refused_with("03.where-grad-lands", {"w"}, "a leaf of its own")
    _refused_with("03.where-grad-lands", {"w", "h", "x"}, "not a leaf")


def test_ready_order_applies_the_stated_rules_to_a_graph_where_neither_the_walk_nor_the_inputs_give_it():
    """Issue 29: 03.node-order could only be guessed, since the priority rule came after it. The new question
    comes after the cell that states both rules, on a graph where the walk order and the input order are wrong."""
    from grader.units.unit03.support import ready_order_by_inputs, ready_order_walked

    assert get("03.node-order") is None
    truth = list(get("03.ready-order").run())
    assert truth != ready_order_by_inputs() and truth != ready_order_walked() and truth[-1] == "w"
    cells = _cells()
    rule = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and "highest *sequence number*" in c.source)
    assert rule < _asked_at(cells, "03.ready-order")
    _refused_with("03.ready-order", ready_order_by_inputs(), "the order of the product's inputs")


def test_hooks_registered_in_a_loop_pile_up_until_removed():
    """Issue 29's practitioner addition: hook handles, and hooks registered in a loop."""
    from grader.units.unit03.support import hooks_registered_in_a_loop

    assert hooks_registered_in_a_loop(3) == [0, 0, 1, 0, 1, 2]
    assert hooks_registered_in_a_loop(3, remove=True) == [0, 1, 2]
    assert get("03.hooks-pile-up").run() == 6.0
    _refused_with("03.hooks-pile-up", 3, "still on w")


def test_retain_grad_is_asked_on_a_chain_no_earlier_cell_ran():
    """Issue 29's second reader: 03.retain-grad asked for [12, 36] after c004 had printed w.grad 36 and h.grad 12 (h
    has x's value) and c006 had said dy/dx = 12. Its replacement runs the chain at w = 0.5, which no cell before it
    runs or prints."""
    assert get("03.retain-grad") is None
    truth = get("03.retain-grad-kept").run()
    assert truth == (3.0, 9.0)
    cells = _cells()
    asked = _asked_at(cells, "03.retain-grad-kept")
    before = " ".join(
        "".join(o.get("text", "")) for c in cells[:asked] if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "0.5, requires_grad" not in " ".join(c.source for c in cells[:asked] if c.cell_type == "code")
    assert "9.0" not in before and "x.grad: 3" not in before
