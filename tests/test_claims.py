"""Claims: the course's general rules, each checked by torch on generated programs and cited by a notebook."""

import json

import pytest

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
