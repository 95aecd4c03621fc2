"""Claims: the course's general rules, each checked by torch on generated programs and cited by a notebook."""

import json

import pytest
import torch

from grader.engine import claims
from grader.engine.claims import Claim, Status, Trial, check_claim
from grader.engine.course import UNITS
from grader.instructor.citations import citations, cites_sentence, problems

ALL = claims.all_claims()


def _claim(body, holds_when="", torch_range=""):
    return Claim("01.test-claim", "01", "a sentence", holds_when, body, torch_range=torch_range)


def test_a_rule_broken_under_its_condition_fails():
    result = check_claim(_claim(lambda: [Trial("a", True, True), Trial("b", True, False)]))
    assert result.status is Status.FAILS and result.broken == ("b",) and not result.ok


def test_a_condition_without_a_counter_example_fails():
    # every program outside the condition still obeys the rule: the condition is mere caution
    result = check_claim(_claim(lambda: [Trial("a", True, True), Trial("b", False, True)], holds_when="when a"))
    assert result.status is Status.FAILS and "counter-example" in result.problem


def test_both_sides_shown_holds():
    result = check_claim(_claim(lambda: [Trial("a", True, True), Trial("b", False, False)], holds_when="when a"))
    assert result.status is Status.HOLDS and result.ok
    assert (result.held, result.counterexamples, result.programs) == (1, 1, 2)


def test_no_program_under_the_condition_fails():
    assert check_claim(_claim(lambda: [])).status is Status.FAILS
    assert check_claim(_claim(lambda: [Trial("b", False, False)], holds_when="x")).status is Status.FAILS


def test_an_unconditional_claim_may_not_report_programs_outside_a_condition():
    assert check_claim(_claim(lambda: [Trial("a", True, True), Trial("b", False, False)])).status is Status.FAILS


def test_a_check_that_raises_or_yields_something_else_is_an_error_not_a_traceback():
    def boom():
        raise RuntimeError("torch said no")

    assert check_claim(_claim(boom)).status is Status.ERROR
    assert check_claim(_claim(lambda: [True, True])).status is Status.ERROR


def test_outside_its_torch_range_a_claim_is_reported_not_failed():
    result = check_claim(_claim(lambda: [Trial("a", True, False)], torch_range="<1.0"))
    assert result.status is Status.OUT_OF_RANGE and result.ok and "broken" in result.problem
    inside = check_claim(_claim(lambda: [Trial("a", True, False)], torch_range=">=1.0"))
    assert inside.status is Status.FAILS


def test_declarations_are_refused_when_malformed():
    with pytest.raises(ValueError):
        claims.claim("bad id", sentence="s")
    with pytest.raises(ValueError):
        claims.claim("99.no-such-unit", sentence="s")
    with pytest.raises(ValueError):
        claims.claim("01.no-sentence", sentence="  ")
    with pytest.raises(ValueError):
        claims.claim("01.wrong-unit", sentence="s", unit="02")
    with pytest.raises(ValueError):
        claims.claim("01.bad-range", sentence="s", torch="about 2.13")


def test_claims_are_found_by_unit_module():
    assert ALL and all(c.unit in UNITS for c in ALL)
    assert {c.unit for c in ALL} >= {"01", "03", "04", "05", "06", "09", "13"}


def test_every_cited_claim_exists_states_its_sentence_and_every_claim_is_cited():
    assert problems() == []


def _notebook(root, name, *sources):
    (root / "solutions").mkdir(exist_ok=True)
    cells = [{"cell_type": "markdown", "id": f"c{i}", "metadata": {}, "source": s} for i, s in enumerate(sources)]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "solutions" / name).write_text(json.dumps(nb))


def test_a_missing_claim_a_changed_sentence_and_an_uncited_claim_are_each_found(tmp_path):
    c = ALL[0]
    _notebook(
        tmp_path,
        f"{c.unit}_x.ipynb",
        "Something else entirely. <!-- claim: " + c.cid + " -->",
        "A rule nobody declared. <!-- claim: 01.no-such-claim -->",
    )
    found = problems(tmp_path)
    assert any("01.no-such-claim, which no claims.py declares" in p for p in found)
    assert any(f"cites {c.cid} but does not state its sentence" in p for p in found)
    assert any(f"{ALL[1].cid} is cited nowhere" in p for p in found)
    assert not any(f"{c.cid} is cited nowhere" in p for p in found)


def test_the_sentence_check_reads_the_prose_without_comments_and_whitespace(tmp_path):
    _notebook(tmp_path, "01_x.ipynb", "Another\n  rule. <!-- claim: 01.x -->")
    [where] = citations(tmp_path)["01.x"]
    assert not cites_sentence(where, "a rule")
    assert cites_sentence(where, "Another rule.")


@pytest.mark.parametrize("c", ALL, ids=lambda c: c.cid)
def test_every_claim_holds_on_this_torch(c):
    result = check_claim(c)
    assert result.ok, result.summary()
    assert c.conditional == bool(result.counterexamples), "a conditional claim proves both sides"


@pytest.mark.parametrize(
    "spec, version, inside",
    [
        (">=2.13,<2.15", "2.13.0+cpu", True),
        (">=2.13,<2.15", "2.15.0", False),
        ("<2.15", "2.14.1", True),
        ("==2.13.*", "2.13.2", True),
        ("==2.13.*", "2.14.0", False),
        ("!=2.14.0", "2.14.0", False),
        (">2.13", "2.13.0", False),
        (">=2.15", "2.15.0rc1", True),
    ],
)
def test_a_torch_range_admits_the_versions_it_names(spec, version, inside):
    assert claims.in_range(_claim(lambda: [], torch_range=spec), version) is inside


# --- the sweep over torch's operator database ---------------------------------------------------------------------

SWEPT = [c for c in ALL if c.swept]


def test_every_claim_is_swept_over_op_db_or_says_why_not():
    # a claim about what an operation records, saves, counts or versions declares a sweep (@sweeps); any
    # other says why it has none (not_swept); never both, never neither
    undecided = [c.cid for c in ALL if c.swept == bool(c.not_swept)]
    assert not undecided, f"each claim needs exactly one of @sweeps or not_swept=: {undecided}"
    assert len(SWEPT) >= 40


@pytest.mark.parametrize("c", SWEPT, ids=lambda c: c.cid)
def test_every_swept_claim_holds_on_the_fixed_sample_of_op_db(c):
    from grader.probes import sweep

    result = sweep.check(c, "sample")
    assert result.ok, result.summary()
    assert result.ops >= 1, f"{c.cid}'s sweep ran no op_db program in the fixed sample: it was never swept"


def _sample(op, label="mul float64 sample 0"):
    class Sample:
        pass

    s = Sample()
    s.op, s.label = op, label
    return s


def test_a_sweep_adds_its_trials_and_counts_the_operations():
    c = _claim(lambda: [Trial("generated", True, True)])
    c.sweep = lambda s: Trial(s.label, True, True, op=s.op)
    result = check_claim(c, [_sample("mul"), _sample("mul", "mul float32 sample 0"), _sample("exp")])
    assert result.ok and (result.programs, result.ops) == (4, 2)
    assert check_claim(c).ops == 0  # programs=None: the generated programs alone


def test_a_sweep_that_breaks_the_rule_fails_and_names_the_operation():
    c = _claim(lambda: [Trial("generated", True, True)])
    c.sweep = lambda s: Trial(s.label, True, s.op != "where", op=s.op)
    result = check_claim(c, [_sample("mul"), _sample("where", "where float64 sample 3")])
    assert result.status is Status.FAILS and result.broken_ops == ("where",)
    assert "where float64 sample 3" in result.problem
    report = result.report()
    assert report["broken"] == {"count": 1, "ops": ["where"], "examples": ["where float64 sample 3"]}


def test_a_conditional_claims_counter_examples_are_reported_by_operation():
    c = _claim(lambda: [Trial("generated", True, True), Trial("gen-counter", False, False)], holds_when="when")
    c.sweep = lambda s: Trial(s.label, s.op == "mul", s.op == "mul", op=s.op)
    result = check_claim(c, [_sample("mul"), _sample("index_select", "index_select float32 sample 1")])
    assert result.ok and result.counterexample_ops == ("index_select",)
    assert result.report()["counterexamples"] == {
        "count": 2,
        "ops": ["index_select"],
        "examples": ["gen-counter", "index_select float32 sample 1"],
    }


def test_a_sweep_that_raises_is_an_error_naming_the_program():
    def boom(s):
        raise ValueError("no such thing")

    c = _claim(lambda: [Trial("generated", True, True)])
    c.sweep = boom
    result = check_claim(c, [_sample("mul")])
    assert result.status is Status.ERROR and "mul float64 sample 0" in result.problem and "ValueError" in result.problem


def test_a_batch_sweep_gets_every_program_at_once():
    c = _claim(lambda: [Trial("generated", True, True)])
    c.sweep, c.sweep_batch = (lambda ss: [Trial(f"{len(ss)} at once", True, True, op="mul")]), True
    result = check_claim(c, [_sample("mul"), _sample("exp")])
    assert result.ok and result.programs == 2 and result.ops == 1


def test_sweeps_is_refused_for_an_undeclared_claim_or_one_that_says_it_is_not_swept(monkeypatch):
    with pytest.raises(ValueError, match="declare the claim"):
        claims.sweeps("01.no-such-claim")(lambda s: None)
    not_swept = claims.Claim("01.x-not-swept", "01", "s", "", lambda: [], not_swept="about optimizers")
    monkeypatch.setitem(claims.REGISTRY, not_swept.cid, not_swept)
    with pytest.raises(ValueError, match="not swept"):
        claims.sweeps(not_swept.cid)(lambda s: None)


def test_without_op_db_a_swept_claim_is_an_error_that_says_how_to_get_it(monkeypatch):
    from grader.probes import opdb, sweep

    monkeypatch.setattr(opdb, "unavailable", lambda: "op_db needs the expecttest package (pip install expecttest)")
    result = sweep.check(SWEPT[0], "sample")
    assert result.status is Status.ERROR and "expecttest" in result.problem
    assert sweep.check(SWEPT[0], "none").ok  # the generated programs alone need nothing more


def test_an_op_db_program_runs_on_fresh_leaves_with_the_samples_strides():
    from grader.probes import opdb

    (sample,) = [s for s in opdb.samples(["mul"], per_op=1) if s.dtype == torch.float32]
    run = sample.run()
    assert run is not None and run.recorded and all(t.is_leaf and t.requires_grad for t in run.leaves)
    again = sample.run()
    assert all(a is not b for a, b in zip(run.tensors, again.tensors))  # every run its own tensors
    plain = sample.run(requires_grad=False)
    assert not any(t.requires_grad for t in plain.tensors) and plain.output.grad_fn is None


def test_claims_json_reports_ops_programs_and_counterexamples(capsys):
    from grader.instructor.cli import main

    capsys.readouterr()
    assert main(["claims", "--unit", "01", "--json", "--sweep", "sample"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    pairs = rows["01.one-pair-per-input"]
    assert pairs["swept"] and pairs["ops"] >= 5 and pairs["programs"] > pairs["ops"]
    assert pairs["counterexamples"]["count"] >= 1 and pairs["counterexamples"]["ops"]
    assert rows["01.graph-is-what-ran"]["not_swept"] and rows["01.graph-is-what-ran"]["ops"] == 0
