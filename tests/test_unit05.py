"""Unit 05's own machinery: the generated-model cases and the reasoning rule behind its exercises.

The exercises are graded against grader.probes.bill on real models; these tests check that the rule a
learner is asked to find really is torch's behaviour on many more models than the 40 graded ones, that
the cases are reproducible, and that every case can be drawn for a failure message.
"""

import inspect
import random

import pytest
import torch

from grader import draw, probes
from grader.engine import torch_state
from grader.engine.kinds import Error, ErrorAnswer, ErrorOutcome
from grader.engine.question import all_questions, get
from grader.units.unit05 import cases, support
from tests.reference.unit05 import predict_bill, saved_parameters


def test_the_rule_matches_the_live_bill_beyond_the_graded_cases():
    rng = random.Random(2024)
    for seed in range(80):
        spec = cases._spec(rng)
        case = cases.MLPCase(seed=seed, spec=spec)
        ns = case.fresh()
        bill = case.bill(ns)
        params = {n for n, _ in ns["model"].named_parameters()}
        assert tuple(predict_bill(spec)) == (bill.count, bill.total), case.source
        assert saved_parameters(spec) == bill.names() & params, case.source


def test_the_syllabus_network_as_a_spec_agrees_with_the_measured_bill():
    model, x = support.syllabus_mlp()
    measured = probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})
    spec = cases.MLPSpec.from_widths([512, 512, 512, 1], batch=256)
    assert tuple(predict_bill(spec)) == (measured.count, measured.total)
    frozen = cases.MLPSpec.from_widths([512, 512, 512, 1], batch=256, frozen=[0])
    model[0].requires_grad_(False)
    measured = probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})
    assert tuple(predict_bill(frozen)) == (measured.count, measured.total)


def test_cases_are_reproducible_distinct_and_smallest_first():
    first, again = cases.mlp_cases(), cases.mlp_cases()
    assert [c.source for c in first] == [c.source for c in again]
    assert len({c.spec for c in first}) == len(first) == 40
    sizes = [c.size for c in first]
    assert sizes == sorted(sizes) and sizes[0] == 1
    mix = {(c.spec.input_requires_grad, any(l.frozen for l in c.spec.layers), c.spec.dtype) for c in first}
    assert len(mix) >= 6  # input flag, frozen layers and dtype all vary


def test_every_case_draws_its_graph_and_bill():
    empty = 0
    for case in cases.mlp_cases():
        text = case.drawing()
        assert "storages" in text
        empty += "SumBackward0" not in text
    assert 1 <= empty <= 3  # a model where nothing asks for a gradient saves nothing: shown, but rarely


def test_the_learner_gets_only_the_spec_which_cannot_be_changed():
    case = cases.mlp_cases()[0]
    got = []
    cases.call_with_spec(got.append, case, case.fresh())
    assert got == [case.spec]
    try:
        case.spec.batch = 1
    except Exception as exc:
        assert type(exc).__name__ == "FrozenInstanceError"
    else:
        raise AssertionError("the spec should be immutable")


def test_error_questions_encode_torchs_own_outcome():
    kind = Error("at the write", "at backward")
    outcome = ErrorOutcome(where="at backward", error="RuntimeError", message="one of the variables needed")
    assert kind.read(kind.encode(outcome)) == ErrorAnswer("at backward")
    assert kind.encode(ErrorAnswer("no error")) == "no error"


# --- one definition of "what backward keeps": draw's totals are the grader's bill -------------------


def _draw_of(bill, names):
    return draw(bill.output, names=names)


def _agree(bill, names=None):
    d = _draw_of(bill, names)
    assert (len(d.storages), d.total_bytes) == (bill.count, bill.total), d.text()
    return d


def _uses_a_bill(q) -> bool:
    """The experiment's body (after its def line) calls a bill: probes.bill, a program's .bill(), _plain_bill()."""
    source = inspect.getsource(q.experiment)
    body = source[source.index("def " + q.experiment.__name__) :].split("\n", 1)[1]
    return "bill(" in body


def test_every_unit05_bill_question_is_a_registered_program():
    billed = {q.qid for q in all_questions() if q.unit == "05" and q.role != "exercise" and _uses_a_bill(q)}
    missing = billed - set(support.BILL_PROGRAMS)
    assert billed and not missing, (
        f"register each bill question's program with @bill_program(qid) in support.py: {missing}"
    )


@pytest.mark.parametrize("qid", sorted(support.BILL_PROGRAMS))
def test_draw_totals_equal_the_bill_the_grader_uses(qid):
    with torch_state.clean_room():
        program = support.BILL_PROGRAMS[qid]()
        bill = program.bill()
        _agree(bill, [n for n in (program.names, program.inputs) if n is not None])
    truth = next(q for q in all_questions() if q.qid == qid).run()
    if isinstance(truth, frozenset):  # a set of names: names of the bill's own storages
        assert truth <= bill.names()
    else:  # bytes, or [storages, bytes]
        assert tuple(truth if isinstance(truth, tuple) else (truth,)) in {(bill.total,), (bill.count, bill.total)}


def test_draw_totals_equal_the_bill_on_every_generated_model():
    for case in cases.mlp_cases():
        ns = case.fresh()
        bill = case.bill(ns)
        _agree(bill, [ns["model"], {"input": ns["x"]}])


def test_draw_and_the_bill_agree_on_unit09s_bill_questions():
    from grader.units.unit09 import questions as unit09

    billed = {q.qid for q in all_questions() if q.unit in ("09", "10") and _uses_a_bill(q)}
    # 09.self-bill-half-offloaded asks what bill reports when another hook pair is in force for part of the
    # forward (it runs instead of bill's own there): a question about hook nesting, not about what backward keeps.
    assert billed == {"09.self-bill-half-offloaded", "09.self-saved-three-times"}, billed
    a = torch.randn(1000, requires_grad=True)

    def forward():
        h = a.exp()
        return (h * h).sum()

    bill = probes.bill(forward)
    _agree(bill)
    assert bill.total == next(q for q in all_questions() if q.qid == "09.self-saved-three-times").run()[0]
    # 09.held-vs-bill quotes the plain MLP's bill in its prompt: it must be the bill draw shows too
    held = next(q for q in all_questions() if q.qid == "09.held-vs-bill")
    plain = support.BILL_PROGRAMS["05.mlp-bill"]().bill()
    _agree(plain)
    assert f"{plain.count} storages, {plain.total:,} bytes" in held.prompt
    assert unit09.syllabus_mlp is support.syllabus_mlp


def test_a_wrapped_number_is_kept_but_reaches_no_pack_hook():
    x = torch.randn(3, requires_grad=True)
    calls = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: calls.append(t) or t, lambda t: t):
        by_number = x * 3
    kept = by_number.grad_fn._saved_other
    assert calls == [] and kept.dtype == torch.int64 and kept.dim() == 0 and probes.is_wrapped_number(kept)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: calls.append(t) or t, lambda t: t):
        by_tensor = x * torch.tensor(3)
    assert len(calls) == 1 and not probes.is_wrapped_number(by_tensor.grad_fn._saved_other)
    d = draw(by_number)
    assert d.storages == [] and d.total_bytes == 0 and len(d.wrapped) == 1 and d.wrapped[0].bytes == 8
    assert draw(by_tensor).total_bytes == 8


def test_the_hand_written_sigmoid_keeps_two_storages_and_one_wrapped_number():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    bill = probes.bill(lambda: 1 / ((-a).exp() + 1))
    d = _agree(bill)
    assert (bill.count, bill.total) == (2, 2 * 3 * 4)
    assert [(w.node, w.attribute, w.value) for w in d.wrapped] == [("MulBackward0", "_saved_other", 1)]


def test_a_custom_function_that_saves_more_than_it_needs():
    class KeepsBoth(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a

    x, c = torch.randn(3, requires_grad=True), torch.randn(3)
    builtin = probes.bill(lambda: x * c)
    custom = probes.bill(lambda: KeepsBoth.apply(x, c))
    assert (builtin.count, custom.count) == (1, 2)
    _agree(custom, {"x": x, "c": c})


def test_what_a_product_saves_and_which_edges_it_has_are_decided_when_it_runs():
    """Issue 29: 05.mul-constant-saves asked 01.closed-book-saves again; its replacement asks what the record,
    made at forward time, does with a flag set afterwards."""
    q = get("05.owed-at-forward")
    assert q.run() == "None"
    assert "no edge to c" in q.misconception(q.run(), q.kind.read("a tensor equal to x"))
    x, c = torch.randn(3, requires_grad=True), torch.randn(3)
    c.requires_grad_()
    (x * c).sum().backward()
    assert torch.equal(c.grad, x), "with the flag set before the product, c gets its gradient"
    assert get("05.mul-constant-saves") is None
