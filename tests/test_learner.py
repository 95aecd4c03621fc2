"""The learner's loop: predict -> reveal, check, mark_passed, strict mode, and the progress they leave."""

import pytest
import torch

from grader import check, hint, mark_passed, predict, reset, reveal, status
from grader.engine import progress
from grader.engine.question import of_unit
from grader.engine.results import GraderCheckFailed
from grader.engine.store import current
from tests.truths import asked_now


def unit_state(uid):
    return progress.unit_state(uid, current().events(uid))


def test_predict_then_reveal_correct():
    r = predict("01.pow-node", "PowBackward0")
    assert r.verdict == "recorded" and not r.passed
    r = reveal("01.pow-node")
    assert r.verdict == "correct" and r.passed
    assert r.expected == "PowBackward0" and r.got == "PowBackward0"
    assert "✓" in str(r) and "agl-correct" in r._repr_html_()


def test_a_prediction_may_change_until_the_reveal_then_locks():
    predict("01.pow-node", "MulBackward0")
    predict("01.pow-node", "PowBackward0")
    assert reveal("01.pow-node").verdict == "correct"
    r = predict("01.pow-node", "MulBackward0")
    assert r.verdict == "locked" and "reset('01.pow-node')" in r.message
    assert reveal("01.pow-node").verdict == "correct"


def test_wrong_prediction_is_incorrect_but_counts_as_predicted():
    predict("01.x-is-leaf", True)
    r = reveal("01.x-is-leaf")
    assert r.verdict == "incorrect" and r.expected is False
    assert unit_state("01").questions["01.x-is-leaf"].done


def test_reveal_without_prediction_counts_as_attempted_and_says_so():
    r = reveal("01.walk-shared")
    assert r.verdict == "revealed" and r.expected == ("SubBackward0", "MulBackward0", "MulBackward0", "AccumulateGrad")
    qs = unit_state("01").questions["01.walk-shared"]
    assert qs.done and qs.record == "revealed without prediction"
    locked = predict("01.walk-shared", ["PowBackward0"])
    assert locked.verdict == "locked" and locked.actions == [("reset", "01.walk-shared")]
    assert not any("01.walk-shared" in line for line in mark_passed("01").message.splitlines())


def test_a_prediction_after_reset_that_followed_a_reveal_is_never_recorded_as_a_prediction():
    reveal("01.walk-shared")
    reset("01.walk-shared")
    assert (
        predict("01.walk-shared", ["SubBackward0", "MulBackward0", "MulBackward0", "AccumulateGrad"]).verdict
        == "recorded"
    )
    r = reveal("01.walk-shared")
    assert r.verdict == "correct" and "you predicted after a reveal" in dict(r.rows)
    assert unit_state("01").questions["01.walk-shared"].record == "predicted after reveal, correct"
    reset("01")  # a unit reset does not launder it either
    predict("01.walk-shared", ["SubBackward0", "MulBackward0", "MulBackward0", "AccumulateGrad"])
    reveal("01.walk-shared")
    assert unit_state("01").questions["01.walk-shared"].record == "predicted after reveal, correct"


def test_self_test_attempts_and_hints_are_on_the_record_across_resets(monkeypatch):
    from grader.engine.question import get

    q = "01.closed-book-walk"
    monkeypatch.setattr(get(q), "hints", ("a nudge", "the mechanism"))
    assert check(q, ["AddBackward0"]).verdict == "incorrect"
    assert "hint(" in check(q, ["MulBackward0"]).message
    h = hint(q)
    assert h.verdict == "info" and h.rows and h.rows[0][0].startswith("hint 1 of")
    reset(q)
    assert check(q, list(asked_now(get(q)))).verdict == "correct"  # the third program this learner was asked
    qs = unit_state("01").questions[q]
    assert qs.attempts == 3 and qs.hints == 1 and qs.record == "correct on attempt 3 (variant 3), 1 hint"


def test_a_refused_mark_does_not_start_a_unit():
    assert mark_passed("02").verdict == "refused"
    assert unit_state("02").status == "not started"


def test_placeholders_are_never_a_pass_and_never_raise():
    for answer in (..., None):
        assert predict("01.pow-node", answer).verdict == "unanswered"
        assert check("01.closed-book-walk", answer).verdict == "unanswered"

    def graph_nodes(t):
        raise NotImplementedError()

    assert check("01.graph-walk", graph_nodes).verdict == "unanswered"
    assert reveal("01.pow-node").verdict == "revealed"


def test_unknown_ids_and_wrong_roles_get_messages():
    r = predict("01.pow-nod", "x")
    assert r.verdict == "invalid" and "01.pow-node" in r.message
    assert predict(42, "x").verdict == "invalid"
    assert check("01.pow-node", "PowBackward0").verdict == "invalid"
    assert predict("01.closed-book-walk", []).verdict == "invalid"
    assert reveal("01.graph-walk").verdict == "invalid"
    assert mark_passed("99").verdict == "invalid"
    assert mark_passed(3.5).verdict == "invalid"


def test_check_grades_against_live_torch():
    from grader.engine.question import get

    q = get("01.who-keeps-grad")
    truth = asked_now(q)  # torch's answer on the program this learner is asked
    good = check(q.qid, set(truth))
    assert good.passed and good.expected == truth
    extra = next((name for name in "puqs" if name not in truth), None)
    bad = check(q.qid, set(truth) | {extra} if extra else set(truth) - {"p"})
    assert bad.verdict == "incorrect" and bad.message  # a misconception's note, or the kind's "not in torch's answer"
    assert bad.expected is None  # a failed check does not give the answer away
    assert check("01.who-keeps-grad", "p").verdict == "invalid"


def solve_unit(uid):
    """Answer every question of a unit with torch's own answer (what a perfect learner does)."""
    for q in of_unit(uid):
        if q.role == "predict":
            truth = q.run()
            predict(q.qid, q.kind.encode(truth))
            assert reveal(q.qid).passed
        elif q.role == "exercise":
            from tests.reference import REFERENCE

            assert check(q.qid, REFERENCE[q.qid]).passed, q.qid
        else:
            assert check(q.qid, q.kind.encode(asked_now(q))).passed, q.qid


@pytest.mark.parametrize("uid", ["00", "01"])
def test_mark_passed_only_when_everything_is_done(uid):
    assert mark_passed(uid).verdict == "refused"
    solve_unit(uid)
    r = mark_passed(uid)
    assert r.passed, r.message
    assert unit_state(uid).status == "passed"


def test_mark_passed_lists_exactly_what_is_missing():
    solve_unit("00")
    reset("00.warmup-square")
    r = mark_passed("00")
    assert r.verdict == "refused"
    assert [l.strip() for l in r.message.splitlines()[1:]] == ["- 00.warmup-square: not answered yet (self-test)"]


def test_reset_unit_starts_again_but_keeps_history():
    solve_unit("00")
    mark_passed("00")
    reset("00")
    assert unit_state("00").status == "not started"
    assert len(current().events("00")) > 5


def test_strict_mode_raises_on_anything_short_of_success(monkeypatch):
    monkeypatch.setenv("AUTOGRAD_LAB_STRICT", "1")
    with pytest.raises(GraderCheckFailed):
        check("01.who-keeps-grad", {"x"})
    with pytest.raises(GraderCheckFailed):
        check("01.who-keeps-grad", ...)
    with pytest.raises(GraderCheckFailed):
        mark_passed("01")
    with pytest.raises(GraderCheckFailed):
        reveal("01.pow-node")  # without a prediction
    assert predict("01.x-is-leaf", False).verdict == "recorded"
    assert reveal("01.x-is-leaf").passed


def test_reveal_uses_its_own_experiment_not_the_learners_variables():
    # a learner who rebinds names or changes global state cannot move the verdict
    predict("01.x-is-leaf", False)
    torch.set_grad_enabled(False)
    try:
        assert reveal("01.x-is-leaf").passed
        assert torch.is_grad_enabled() is False
    finally:
        torch.set_grad_enabled(True)


def test_status_course_map_reports_prerequisites():
    solve_unit("00")
    mark_passed("00")
    rows = dict(status().rows)
    assert rows["00 Start here: how the course works"] == "passed, 3/3 done"
    assert rows["02 Backward, and why gradients add"].endswith("recommended after 01: not passed yet")


def test_prerequisites_are_recommendations_and_say_so():
    """A unit's prerequisites never block its record (an instructor may hand out one unit alone): unit 01 is
    marked passed with 00 not started, and what the learner reads says "recommended after", never "needs"."""
    from grader.learner.panels import CourseMap

    solve_unit("01")
    assert mark_passed("01").passed
    rows = dict(status().rows)
    assert rows["00 Start here: how the course works"].startswith("not started")
    assert rows["01 What the forward pass records"].startswith("passed")
    assert "recommended" not in rows["02 Backward, and why gradients add"]  # 01 passed: nothing left to recommend
    assert next(v for k, v in rows.items() if k.startswith("03 ")).endswith("recommended after 02: not passed yet")
    text, page = CourseMap(interactive=False).text(), CourseMap(interactive=False).html()
    assert "recommended after" in page and "needs" not in page and "needs" not in text
    assert "after 00" in next(line for line in text.splitlines() if line.startswith("  01"))


def test_an_internal_failure_is_a_result_not_a_traceback(monkeypatch):
    from grader.learner import api as learner

    def broken_store():
        raise OSError("disk full")

    monkeypatch.setattr(learner, "store", broken_store)
    r = predict("01.pow-node", "PowBackward0")
    assert r.verdict == "error" and "disk full" in r.message and "not your mistake" in r.message
    monkeypatch.setenv("AUTOGRAD_LAB_STRICT", "1")
    with pytest.raises(GraderCheckFailed):
        reveal("01.pow-node")


def test_an_interrupt_during_a_check_is_reported(monkeypatch):
    from grader.learner import api as learner

    def interrupted(q, fn):
        raise KeyboardInterrupt()

    monkeypatch.setattr(learner, "run_exercise", interrupted)
    r = check("01.graph-walk", lambda t: [])
    assert r.verdict == "unanswered" and "interrupted" in r.message


def test_a_wrong_exercise_says_hint_in_a_sentence_of_its_own():
    """The message before "hint(...) gives a hint." ends in a full stop ("yours 0 hint(...)" ran together)."""
    r = check("01.graph-walk", lambda t: [])
    assert r.verdict == "incorrect" and r.message.endswith(" hint('01.graph-walk') gives a hint.")
    before = r.message[: -len(" hint('01.graph-walk') gives a hint.")]
    assert before.endswith("."), r.message


def _misconceived(qid):
    """Predict the wrong answer ``qid``'s misconception note is declared for, then reveal."""
    from grader.engine.question import get

    q = get(qid)
    wrong, note = q.misconceptions[0]
    answer = wrong(q.run()) if callable(wrong) else wrong
    assert predict(qid, answer).verdict == "recorded"
    return q, note, reveal(qid)


def test_a_misconception_note_that_repeats_the_why_line_is_shown_once():
    """Issue 27: the note said again what the why line under it says (03.where-grad-lands's first note is three
    quarters the why's words); a note that adds to it (05.mlp-bill's: saves, not storages) still shows."""
    q, note, shown = _misconceived("03.where-grad-lands")
    assert shown.verdict == "incorrect" and note not in shown.message and str(shown).count("why:") == 1
    assert q.explain in str(shown)
    q, note, shown = _misconceived("05.mlp-bill")
    assert shown.verdict == "incorrect" and note in shown.message and q.explain in str(shown)


def test_a_result_box_keeps_each_label_on_one_line():
    """Issue 27: "your / function / returned" wrapped one word a line beside a long answer."""
    from html.parser import HTMLParser

    from grader.engine.results import Result

    long = "x" * 400
    box = Result("check", "01.graph-walk", "incorrect", rows=[("your function returned", long), ("torch says", long)])

    class Labels(HTMLParser):
        def __init__(self):
            super().__init__()
            self.rows, self.column = [], 0

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.column = 0
            elif tag == "td":
                self.column += 1
                if self.column == 1:
                    self.rows.append(dict(attrs).get("style", "").replace(" ", ""))

    found = Labels()
    found.feed(box._repr_html_())
    assert len(found.rows) == 2 and all("white-space:nowrap" in style for style in found.rows), found.rows
