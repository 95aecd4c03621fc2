"""Error questions are graded on what a machine can judge honestly: the place, plus a cause chosen from
candidates whose right one torch's live outcome picks. Free words are a note that never flips a verdict.
Answers on the record in 0.2.0's form (place, words) read without a traceback and are never a pass of
today's question; a class handed 0.2.0 keeps what such an answer earned then, its place.
"""

import csv
import json

import nbformat
import pytest

from grader import predict, reveal
from grader.engine import locked
from grader.engine import question as registry
from grader.engine.kinds import BadAnswer, ErrorAnswer
from grader.engine.progress import unit_state
from grader.engine.store import current
from grader.instructor.grading import verify

NONSCALAR, NEVER, ZERO = "02.nonscalar-backward", "04.never-entered", "02.zero-grad-none"


def verdict(qid, answer):
    """The verdict torch's live answer gives ``answer``: True, False, or 'refused' (nothing would be recorded)."""
    q = registry.get(qid)
    try:
        value = q.kind.read(answer)
    except BadAnswer:
        return "refused"
    return q.kind.agrees(q.run(), value)


# --- the issue's sentences get the verdicts they deserve ------------------------------------------


def test_the_issues_sentences_are_judged_on_the_place_and_the_cause_never_on_words():
    # 04.never-entered: the right paraphrase is no longer refused, the contradiction no longer accepted
    assert verdict(NEVER, ("at backward", "no history", "nothing on the way to the loss is requiring grad")) is True
    assert verdict(NEVER, ("at backward", "the loss already has a grad_fn, so all is fine")) == "refused"
    assert verdict(NEVER, ("at backward", "not scalar", "nothing on the way to the loss is requiring grad")) is False
    # 02.nonscalar-backward: "the output is a scalar" is not a cause; the right reason with a note passes
    assert verdict(NONSCALAR, ("at backward", "the output is a scalar")) == "refused"
    assert verdict(NONSCALAR, ("at backward", "no history", "the output is a scalar")) is False
    z_note = "z has three elements, so you must pass a gradient argument"
    assert verdict(NONSCALAR, ("at backward", "not scalar", z_note)) is True
    # 02.zero-grad-none: the type the reveal itself shows, as a note, never turns a right place into a miss
    assert verdict(ZERO, ("at the manual clear", "AttributeError")) is True
    assert verdict(ZERO, "at the manual clear") is True
    assert verdict(ZERO, ("at zero_grad", "AttributeError")) is False


def test_a_note_never_flips_a_verdict_whatever_it_says():
    for note in ("", "nonsense", "the loss has a grad_fn", "no history", "AttributeError: x"):
        assert verdict(NEVER, ("at backward", "no history", note)) is True
        assert verdict(NEVER, ("at backward", "input without grad", note)) is False


def test_the_prompt_names_no_key_terms_and_the_candidates_come_with_the_form():
    q = registry.get(NEVER)
    assert "grad_fn" not in q.prompt and "requiring grad" not in q.prompt
    assert all(c.label in q.kind.describe() for c in q.kind.causes)


# --- answers on the record in 0.2.0's form --------------------------------------------------------

OLD = ["at backward", "the output is not a scalar"]  # 0.2.0's form, as its store kept it (JSON)


def test_an_old_answer_reads_from_the_record_but_is_never_accepted_as_a_new_answer():
    kind = registry.get(NONSCALAR).kind
    with pytest.raises(BadAnswer):
        kind.read(OLD)
    value = kind.read_recorded(OLD)
    assert value == ErrorAnswer("at backward", None, "the output is not a scalar", legacy=True)
    truth = registry.get(NONSCALAR).run()
    assert not kind.agrees(truth, value)  # never a pass of today's question
    assert kind.agrees_as_answered(truth, value)  # what it earned then: the place
    assert "needs one" in kind.verdict_note(truth, value)
    assert "0.2.0" in kind.show(value)
    assert kind.read_recorded(kind.encode(value)) == value
    assert not kind.agrees_as_answered(truth, kind.read_recorded(["at the square", "not a scalar"]))


def _old_store():
    store = current()
    store.append("02", NONSCALAR, "predict", "recorded", OLD)
    store.append("02", NONSCALAR, "reveal", "correct", OLD)  # what 0.2.0's kernel judged
    return store.events("02")


def test_a_store_written_in_the_old_form_keeps_its_record_and_the_gradebook_never_passes_it_as_new():
    events = _old_store()
    assert unit_state("02", events).questions[NONSCALAR].record == "predicted, correct"  # the panel, status
    today = verify.recompute("02", events, {})
    assert today.state.questions[NONSCALAR].reveal_verdict == "incorrect"
    assert not any("differs" in f for f in today.findings)  # an older form is no sign of tampering
    then = verify.recompute("02", events, {}, legacy_ok=True)  # grade --handed-out 0.2.0
    assert then.state.questions[NONSCALAR].reveal_verdict == "correct"


def test_a_wrong_old_place_earns_nothing_even_for_a_class_handed_0_2_0():
    store = current()
    store.append("02", NONSCALAR, "predict", "recorded", ["at the square", "not a scalar"])
    store.append("02", NONSCALAR, "reveal", "incorrect", None)
    then = verify.recompute("02", store.events("02"), {}, legacy_ok=True)
    assert then.state.questions[NONSCALAR].reveal_verdict == "incorrect"


def test_an_old_prediction_not_yet_revealed_is_marked_as_needing_the_cause_and_can_be_predicted_again():
    current().append("02", NONSCALAR, "predict", "recorded", OLD)
    said = reveal(NONSCALAR)
    assert said.verdict == "invalid" and "cause" in said.message
    assert [e.action for e in current().events("02")] == ["predict"]  # nothing revealed, nothing recorded
    assert predict(NONSCALAR, ("at backward", "not scalar")).verdict == "recorded"
    assert reveal(NONSCALAR).verdict == "correct"
    assert unit_state("02", current().events("02")).questions[NONSCALAR].record == "predicted, correct"


def test_rerunning_an_old_revealed_prediction_cell_shows_it_without_a_traceback():
    _old_store()
    shown = predict(NONSCALAR, ...)
    assert shown.verdict == "info"
    assert any("0.2.0" in str(v) for _, v in shown.rows)


# --- the gradebook grades the notebook ------------------------------------------------------------

U02 = "02_backward_and_why_gradients_add.ipynb"


def _with_answer(nb, qid, source_answer=None, record=None):
    """Unit 02's learner copy with ``qid``'s predict cell answered in code, or locked with the widget."""
    for cell in nb.cells:
        if cell.cell_type == "code" and f'predict("{qid}", answer)' in cell.source:
            if source_answer is not None:
                cell.source = cell.source.replace("answer = ...", f"answer = {source_answer!r}", 1)
            if record is not None:
                data = locked.bundle(locked.record(qid, record, True), json.dumps(record))
                cell.outputs = [
                    nbformat.from_dict(
                        {"output_type": "display_data", "data": json.loads(json.dumps(data)), "metadata": {}}
                    )
                ]
                cell.execution_count = 1
            return nb
    raise AssertionError(f"no predict cell for {qid}")


def test_the_gradebook_grades_the_new_form_typed_locked_and_the_old_form_by_version(tmp_path):
    from grader.instructor.grading import pipeline

    root = registry.__file__.rsplit("/grader/", 1)[0]
    fresh = lambda: nbformat.read(f"{root}/notebooks/{U02}", as_version=4)  # noqa: E731
    torch_says = registry.get(NONSCALAR).kind.encode(registry.get(NONSCALAR).run())  # ['at backward', 'not scalar']
    copies = {
        "typed": _with_answer(fresh(), NONSCALAR, ("at backward", "not scalar", "z holds three numbers")),
        "locked": _with_answer(fresh(), NONSCALAR, record=torch_says + ["my own words"]),
        "wrongcause": _with_answer(fresh(), NONSCALAR, ("at backward", "no history")),
        "old": _with_answer(fresh(), NONSCALAR, ("at backward", "the output is not a scalar")),
    }
    for name, nb in copies.items():
        (tmp_path / "class" / name).mkdir(parents=True)
        nbformat.write(nb, tmp_path / "class" / name / U02)

    def grade(names, out, handed_out=None):
        pipeline.grade(
            [str(tmp_path / "class" / n) for n in names], out, jobs=1, progress_to=None, handed_out=handed_out
        )
        with open(out, newline="", encoding="utf-8") as f:
            return {r["learner"]: r for r in csv.DictReader(f)}

    rows = grade(list(copies), tmp_path / "today.csv")
    assert all(r["run"] == "ok" for r in rows.values()), rows
    assert rows["typed"][NONSCALAR] == "predicted, correct", rows["typed"]
    assert rows["locked"][NONSCALAR] == "predicted, correct", rows["locked"]
    assert rows["wrongcause"][NONSCALAR] == "predicted, incorrect", rows["wrongcause"]
    assert rows["old"][NONSCALAR] == "predicted, incorrect", rows["old"]  # never a pass of today's question
    assert "differs" not in rows["old"]["findings"]
    then = grade(["old"], tmp_path / "then.csv", handed_out="0.2.0")
    assert then["old"][NONSCALAR] == "predicted, correct", then["old"]  # what it earned in 0.2.0: the place


def test_a_self_test_in_the_old_form_is_refused_in_a_kernel_and_recorded_for_the_gradebook_in_a_sealed_run(
    monkeypatch,
):
    from grader import check

    qid, old = "06.closed-book-relu-twice", ("at the second backward", "its saved values were freed")
    said = check(qid, old)
    assert said.verdict == "invalid" and "cause" in said.message  # the learner can check again, with a cause
    monkeypatch.setattr(registry, "SEALED", True)
    assert check(qid, old).verdict == "recorded"
    assert current().events("06")[-1].answer == list(old)
    monkeypatch.setattr(registry, "SEALED", False)
    events = current().events("06")
    assert not verify.recompute("06", events, {}).state.questions[qid].passed
    assert verify.recompute("06", events, {}, legacy_ok=True).state.questions[qid].passed
