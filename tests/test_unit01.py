"""Unit 01 (and 00, 02) as a learner meets them: no answer printed before its question, closed-book
programs that the unit never ran, and every grader message's functions imported."""

import re

import nbformat
import pytest

from grader.engine.kinds import Name
from grader.engine.question import of_unit

NOTEBOOKS = {
    "00": "solutions/00_start_here.ipynb",
    "01": "solutions/01_what_the_forward_pass_records.ipynb",
    "02": "solutions/02_backward_and_why_gradients_add.ipynb",
}


def _cells(unit):
    return nbformat.read(NOTEBOOKS[unit], as_version=4).cells


def _output_text(cell):
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


@pytest.mark.parametrize("unit", sorted(NOTEBOOKS))
def test_no_node_name_is_printed_before_its_question(unit):
    cells = _cells(unit)
    for q in of_unit(unit):
        if q.role != "predict" or not isinstance(q.kind, Name):
            continue
        answer = q.run()
        asked = next(i for i, c in enumerate(cells) if c.cell_type == "code" and f'predict("{q.qid}"' in c.source)
        for cell in cells[:asked]:
            assert answer not in _output_text(cell), f"{q.qid}: {answer} is printed before it is asked"


def test_the_first_cells_of_01_do_not_answer_its_first_questions():
    cells = _cells("01")
    asked = next(i for i, c in enumerate(cells) if 'predict("01.x-is-leaf"' in c.source)
    before = "\n".join(_output_text(c) for c in cells[:asked])
    assert "is_leaf=False" not in before and "PowBackward0" not in before


@pytest.mark.parametrize("unit", sorted(NOTEBOOKS))
def test_closed_book_programs_are_not_run_in_the_unit(unit):
    code = "\n".join(c.source for c in _cells(unit) if c.cell_type == "code")
    lines = {" ".join(line.split()) for line in code.splitlines()}
    import inspect

    for q in of_unit(unit):
        if q.role != "self-test" or q.program is not None:  # a generated one: tests/test_variants.py, every program
            continue
        body = inspect.getsource(q.experiment).splitlines()[1:]
        for line in body:
            text = " ".join(line.split())
            if "torch." in text and "=" in text and not text.startswith(("return", "def", "@")):
                assert text not in lines, f"{q.qid}: {text!r} is already run in unit {unit}"


@pytest.mark.parametrize("unit", sorted(NOTEBOOKS))
def test_reset_and_hint_are_imported_where_messages_name_them(unit):
    first = next(c.source for c in _cells(unit) if c.cell_type == "code")
    imported = set(re.findall(r"\w+", first.split("from grader import", 1)[1]))
    assert {"reset", "hint", "predict", "reveal", "check", "mark_passed"} <= imported


def test_the_graded_walk_order_is_named_and_an_order_marked_when_pushed_is_told_why():
    """Issue 29: a depth-first stack that marks nodes when pushed failed on one case with no reason given."""
    from grader import check
    from grader.engine.question import get
    from tests.reference import unit01 as reference

    assert "a node is listed when it is first visited" in get("01.graph-walk").prompt
    result = check("01.graph-walk", reference.walk_marking_when_pushed)
    assert result.verdict == "incorrect" and "marks a node seen when it is pushed" in str(result), str(result)
    assert check("01.graph-walk", reference.walk_with_a_stack).passed
    assert check("01.graph-walk", reference.graph_nodes).passed


def test_the_shared_walk_is_answered_by_no_earlier_output_and_refuses_a_walk_per_edge():
    """Issue 29: 01.walk-y's three names were printed by c015 and c019 before it was asked. Its replacement walks
    a program the unit shows only after the question, and needs the rule that a tensor used twice is one node."""
    from grader import predict, reset, reveal
    from grader.engine.question import get
    from grader.units.unit01.support import shared_chain, walk_every_edge

    truth = list(get("01.walk-shared").run())
    cells = _cells("01")
    asked = next(i for i, c in enumerate(cells) if 'predict("01.walk-shared"' in c.source)
    before = "\n".join(_output_text(c) for c in cells[:asked])
    assert "SubBackward0" not in before and "u * u" not in "\n".join(
        c.source for c in cells[:asked] if c.cell_type == "code"
    )
    per_edge = walk_every_edge(shared_chain()[2])
    assert per_edge != truth and set(per_edge) == set(truth)
    for wrong, note in ((per_edge, "every edge"), ([*truth, "AccumulateGrad"], "one AccumulateGrad node")):
        reset("01.walk-shared")
        predict("01.walk-shared", wrong)
        result = reveal("01.walk-shared")
        assert result.verdict == "incorrect" and note in result.message, result.message
    reset("01.walk-shared")
    predict("01.walk-shared", truth)
    assert reveal("01.walk-shared").verdict == "correct"


def test_the_neuron_ratio_is_the_product_rule_not_arithmetic():
    """Issue 29: 01.neuron-slope asked for sigmoid(1.5) by hand with the formula printed above it. The ratio that
    replaces it is w / x at every point (the sigmoid's factor cancels), and the swapped ratio gets its note."""
    from grader import predict, reveal
    from grader.engine.question import get
    from grader.units.unit01.support import neuron

    for x_value, w_value in ((1.0, 2.0), (0.5, -3.0), (2.0, 0.25)):
        x, w, _, s = neuron(x_value, w_value)
        s.backward()
        assert abs(x.grad.item() / w.grad.item() - w_value / x_value) < 1e-5
    c054 = next(c.source for c in _cells("01") if c.get("id") == "c054")
    assert "σ(z)·(1 − σ(z))" not in c054, "the formula that answered the old question is back before the new one"
    truth = get("01.neuron-grad-ratio").run()
    predict("01.neuron-grad-ratio", 1 / truth)
    result = reveal("01.neuron-grad-ratio")
    assert result.verdict == "incorrect" and "w.grad / x.grad" in result.message, result.message


def test_integer_tensors_are_refused_requires_grad_in_the_cell_that_says_so():
    """Issue 29's practitioner addition: 'only floating point tensors can require gradients', shown live."""
    out = next(_output_text(c) for c in _cells("01") if c.get("id") == "c050k")
    assert "torch.int64    RuntimeError: Only Tensors of floating point" in out
    assert "torch.float32  requires_grad=True" in out
