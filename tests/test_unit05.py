"""Unit 05's own machinery: the generated-model cases and the reasoning rule behind its exercises.

The exercises are graded against grader.probes.bill on real models; these tests check that the rule a
learner is asked to find really is torch's behaviour on many more models than the 40 graded ones, that
the cases are reproducible, and that every case can be drawn for a failure message.
"""
import random



from grader import probes
from grader.kinds import Error, ErrorOutcome
from grader.questions import unit05
from tests.reference.unit05 import predict_bill, saved_parameters


def test_the_rule_matches_the_live_bill_beyond_the_graded_cases():
    rng = random.Random(2024)
    for seed in range(80):
        spec = unit05._spec(rng)
        case = unit05.ModelCase(seed=seed, spec=spec)
        ns = case.fresh()
        bill = case.bill(ns)
        params = {n for n, _ in ns["model"].named_parameters()}
        assert tuple(predict_bill(spec)) == (bill.count, bill.total), case.source
        assert saved_parameters(spec) == bill.names() & params, case.source


def test_the_syllabus_network_as_a_spec_agrees_with_the_measured_bill():
    model, x = unit05.syllabus_mlp()
    measured = probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})
    spec = unit05.MLPSpec.from_widths([512, 512, 512, 1], batch=256)
    assert tuple(predict_bill(spec)) == (measured.count, measured.total)
    frozen = unit05.MLPSpec.from_widths([512, 512, 512, 1], batch=256, frozen=[0])
    model[0].requires_grad_(False)
    measured = probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})
    assert tuple(predict_bill(frozen)) == (measured.count, measured.total)


def test_cases_are_reproducible_distinct_and_smallest_first():
    first, again = unit05.model_cases(), unit05.model_cases()
    assert [c.source for c in first] == [c.source for c in again]
    assert len({c.spec for c in first}) == len(first) == 40
    sizes = [c.size for c in first]
    assert sizes == sorted(sizes) and sizes[0] == 1
    mix = {(c.spec.input_requires_grad, any(l.frozen for l in c.spec.layers), c.spec.dtype) for c in first}
    assert len(mix) >= 6   # input flag, frozen layers and dtype all vary


def test_every_case_draws_its_graph_and_bill():
    empty = 0
    for case in unit05.model_cases():
        text = case.drawing()
        assert "storages" in text
        empty += "SumBackward0" not in text
    assert 1 <= empty <= 3   # a model where nothing asks for a gradient saves nothing: shown, but rarely


def test_the_learner_gets_only_the_spec_which_cannot_be_changed():
    case = unit05.model_cases()[0]
    got = []
    unit05._call_with_spec(got.append, case, case.fresh())
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
    assert kind.read(kind.encode(outcome)) == ("at backward", None)
    assert kind.encode(("no error", None)) == "no error"
