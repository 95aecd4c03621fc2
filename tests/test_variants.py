"""A fresh variant for every learner and every retry (grader.engine.variants): the engine, and every generator.

The soundness of each generated self-test, on many seeds: its program runs and torch's answer is one its kind can
express and grade; the wrong answers it derives from the truth (its misconceptions) are refused with their note;
its variants are diverse (distinct answers, not only distinct numbers); no cell of its unit shows one of its
programs (the closed-book rule). Then the learner's side (two learners, two programs; a retry is a new program;
mastery; old records), identity, and review.
"""

from __future__ import annotations

import json
import re
import time

import nbformat
import pytest

from grader.engine import identity, progress, variants
from grader.engine import review as schedule
from grader.engine.course import UNITS
from grader.engine.question import all_questions, get, wrong_answer
from grader.engine.store import Store, current
from grader.learner.api import check, program, variant_of
from grader.learner.review import program_for, review
from tests.test_notebook_content import GENERIC

GENERATED = [q for q in all_questions() if q.program is not None]
DRAWS = [(f"learner-{i}", n) for i in range(8) for n in range(3)]  # 24 programs per self-test
MIN_ANSWERS = 3  # distinct answers among them: a generator whose answer never changes only changes numbers


def _draws(q):
    return [variants.make(q.program, q.qid, who, n) for who, n in DRAWS]


@pytest.fixture(scope="module")
def answered():
    """Every generated self-test's programs and torch's answers on them (each computed once per module)."""
    return {q.qid: [(v, q.run(v.program)) for v in _draws(q)] for q in GENERATED}


def test_every_self_test_is_generated():
    """Every self-test of every unit draws its program (issue 32); a self-test stated as one fixed program would
    give every learner, and every retry, the same one."""
    fixed = [q.qid for q in all_questions() if q.role == "self-test" and q.program is None]
    assert fixed == [], f"self-tests that state one program: {fixed}"
    assert all(q.role == "self-test" for q in GENERATED)
    assert {q.unit for q in GENERATED} == set(UNITS)


@pytest.mark.parametrize("q", GENERATED, ids=lambda q: q.qid)
def test_every_program_runs_and_its_answer_can_be_expressed_and_graded(q, answered):
    for v, truth in answered[q.qid]:
        encoded = json.loads(json.dumps(q.kind.encode(truth)))  # what the store keeps, read back
        value = q.kind.read_recorded(encoded)
        assert q.kind.agrees(truth, value), f"{q.qid} {v.name}: torch's own answer {encoded!r} is not graded right"
        assert v.program.prompt.startswith(v.program.source.strip()), q.qid
        assert v.program.ask.strip() and "\n" not in v.program.ask.strip(), q.qid


@pytest.mark.parametrize("q", GENERATED, ids=lambda q: q.qid)
def test_the_misconceptions_are_refused_on_every_program_with_their_note(q, answered):
    assert q.misconceptions, f"{q.qid} declares no wrong answer learners give"
    applies = [0] * len(q.misconceptions)
    for v, truth in answered[q.qid]:
        for i, (wrong, note) in enumerate(q.misconceptions):
            answer = wrong_answer(q, wrong, truth, v.program)
            if answer is None:  # a trap this program does not set
                continue
            applies[i] += 1
            value = q.kind.read_misconception(answer)
            assert not q.kind.agrees(truth, value), f"{q.qid} {v.name}: the misconception {value!r} is torch's answer"
            assert q.misconception(truth, value, v.program) == note, (q.qid, v.name, value)
    assert all(applies), f"{q.qid}: a misconception applies to none of {len(DRAWS)} programs"


@pytest.mark.parametrize("q", GENERATED, ids=lambda q: q.qid)
def test_variants_are_diverse_in_their_answers_not_only_their_numbers(q, answered):
    programs = {v.program.source for v, _ in answered[q.qid]}
    answers = {json.dumps(q.kind.encode(t), sort_keys=True, default=str) for _, t in answered[q.qid]}
    assert len(programs) >= 8, f"{q.qid}: only {len(programs)} distinct programs in {len(DRAWS)} draws"
    assert len(answers) >= MIN_ANSWERS, f"{q.qid}: only {len(answers)} distinct answers: {sorted(answers)}"


def _lines(source: str) -> list[str]:
    """A program's distinctive lines: a class it defines (a custom autograd.Function) is a tool the unit may have
    shown, so only the statements outside classes count, less set-up too common to identify a program."""
    import ast

    tree = ast.parse(source)
    in_class = {n for c in tree.body if isinstance(c, ast.ClassDef) for n in range(c.lineno, (c.end_lineno or 0) + 1)}
    out = []
    for number, line in enumerate(source.splitlines(), start=1):
        if number in in_class:
            continue
        norm = re.sub(r"\s+", "", line.split("#")[0])
        if len(norm) >= 6 and not GENERIC.search(norm) and not norm.startswith(("import", "from")):
            out.append(norm)
    return out


@pytest.mark.parametrize("q", GENERATED, ids=lambda q: q.qid)
def test_no_cell_of_the_unit_shows_one_of_its_programs(q, answered):
    nb = nbformat.read(f"solutions/{UNITS[q.unit].notebook}", as_version=4)
    shown = {re.sub(r"\s+", "", line) for c in nb.cells if c.cell_type == "code" for line in c.source.splitlines()}
    for v, _ in answered[q.qid]:
        lines = _lines(v.program.source)
        seen = [line for line in lines if line in shown]
        assert len(seen) < max(2, 0.6 * len(lines)), f"{q.qid} {v.name}: the unit's cells show {seen[:3]}"


@pytest.mark.parametrize("q", GENERATED, ids=lambda q: q.qid)
def test_two_learners_see_different_programs_and_the_canonical_one_is_the_old_question(q):
    sources = {variants.make(q.program, q.qid, f"learner-{i}", 0).program.source for i in range(8)}
    assert len(sources) >= 4, f"{q.qid}: eight learners share {len(sources)} programs"
    assert q.prompt == q.canonical().prompt  # what answers recorded before variants are judged on


# --- seeds and identity --------------------------------------------------------------------------------------


def test_a_seed_comes_from_the_identity_the_question_and_the_attempt():
    seeds = {variants.seed_of(who, qid, n) for who in ("ann", "bo") for qid in ("00.a", "00.b") for n in (0, 1)}
    assert len(seeds) == 8
    assert variants.seed_of(" Ann ", "00.a", 0) == variants.seed_of("ann", "00.a", 0)  # names compare without case
    assert variants.seed_of("ann", "00.a", 0, "review") != variants.seed_of("ann", "00.a", 0)


def test_the_identity_is_kept_beside_the_store_and_the_environment_comes_first(home, monkeypatch):
    made = identity.current()
    assert made.startswith("local-") and identity.current() == made  # made once, then kept
    assert (home / identity.FILENAME).read_text().strip() == made
    identity.set_identity("S1234567")
    assert identity.current() == "s1234567"
    monkeypatch.setenv(identity.HUB_ENV, "hubuser")
    assert identity.current() == "hubuser"  # on a hub, the hub's user, whatever the file says
    monkeypatch.setenv(identity.ENV, "course")
    assert identity.current() == "course"
    with pytest.raises(ValueError):
        identity.set_identity("  ")


def test_a_draw_without_a_seed_takes_every_first_option():
    d = variants.Draw(None)
    assert (d.one("abc"), d.some("abcd", 2), d.order([3, 1, 2]), d.integer(0, 9, 4), d.coin(True)) == (
        "a",
        ["a", "b"],
        [3, 1, 2],
        4,
        True,
    )
    seeded = [variants.Draw(s).one(range(100)) for s in range(20)]
    assert len(set(seeded)) > 10


# --- the learner's side --------------------------------------------------------------------------------------

SQUARE = "00.warmup-square"


def _truth_now(qid):
    q = get(qid)
    return q.run(variant_of(q).program)


def test_two_learners_get_different_programs_and_each_is_graded_on_their_own(monkeypatch, tmp_path):
    q = get(SQUARE)

    def be(name):  # each learner has their own store and identity
        monkeypatch.setenv("AUTOGRAD_LAB_HOME", str(tmp_path / name))
        identity.set_identity(name)

    be("alice")
    alice = program(SQUARE).source, _truth_now(SQUARE)
    be("bob")
    bob = program(SQUARE).source, _truth_now(SQUARE)
    assert alice[0] != bob[0] and alice[1] != bob[1]
    assert not check(SQUARE, alice[1]).passed  # alice's answer, pasted by bob: wrong on bob's program
    be("alice")
    right = check(SQUARE, q.kind.encode(_truth_now(SQUARE)))
    assert right.passed and all(line in str(right) for line in alice[0].splitlines())


@pytest.mark.parametrize("q", GENERATED, ids=lambda q: q.qid)
def test_each_program_differs_from_the_one_before_it(q):
    """A retry (or mastery's next right answer) always asks a new program, for every learner: program n + 1 is
    redrawn where its seed gives program n again (CI's identity once drew the same 00.warmup-square twice)."""
    for i in range(24):
        sources = [variants.make(q.program, q.qid, f"learner-{i}", n).program.source for n in range(4)]
        assert all(a != b for a, b in zip(sources, sources[1:])), (i, sources)


def test_a_late_program_is_walked_from_the_one_before_it_without_deep_recursion():
    q = get(SQUARE)
    late = [variants.make(q.program, SQUARE, "learner-0", n) for n in (127, 128, 129, 5000)]
    assert [v.number for v in late] == [127, 128, 129, 5000]
    assert late[0].program.source != late[1].program.source != late[2].program.source


def test_a_retry_after_a_wrong_answer_is_a_new_program_and_the_record_says_which():
    q = get(SQUARE)
    first = program(SQUARE)
    truth = _truth_now(SQUARE)
    wrong = check(SQUARE, truth + 1000)
    assert wrong.verdict == "incorrect"
    second = program(SQUARE)
    assert second.source != first.source or variant_of(q).number == 1
    shown = " ".join(str(wrong).split())
    assert all(line in shown for line in second.source.splitlines())  # the wrong answer's result shows the next one
    assert not check(SQUARE, truth).passed or _truth_now(SQUARE) == truth  # the old answer is not the new truth
    state = progress.unit_state("00", current().events("00")).questions[SQUARE]
    assert state.variant >= 1 and not state.passed
    right = check(SQUARE, _truth_now(SQUARE))
    assert right.passed
    state = progress.unit_state("00", current().events("00")).questions[SQUARE]
    assert state.record.startswith(f"correct on attempt {state.attempts} (variant {state.variant + 1})")
    again = program(SQUARE)
    assert again.source == program(SQUARE).source and "Passed" in again.message  # a re-run asks the same program
    assert check(SQUARE, _truth_now(SQUARE)).passed
    details = [e.detail for e in current().events("00") if e.action == "check"]
    assert all(isinstance(d.get("variant"), int) and isinstance(d.get("seed"), int) for d in details)


def test_mastery_asks_for_k_right_answers_in_a_row_each_on_a_fresh_program(monkeypatch):
    monkeypatch.setenv(variants.MASTERY_ENV, "2")
    first = program(SQUARE).source
    one = check(SQUARE, _truth_now(SQUARE))
    assert one.verdict == "correct" and "1 of the 2 in a row" in one.message
    state = progress.unit_state("00", current().events("00")).questions[SQUARE]
    assert not state.passed and program(SQUARE).source != first
    assert check(SQUARE, _truth_now(SQUARE) + 1000).verdict == "incorrect"  # the row starts again
    assert check(SQUARE, _truth_now(SQUARE)).verdict == "correct"
    assert not progress.unit_state("00", current().events("00")).questions[SQUARE].passed
    assert check(SQUARE, _truth_now(SQUARE)).passed
    assert progress.unit_state("00", current().events("00")).questions[SQUARE].passed


def test_an_answer_recorded_before_variants_keeps_its_record(home):
    store = Store(home / "progress.sqlite3")
    store.append("00", SQUARE, "check", "incorrect", 3.0)  # 0.4.0's events: no program number
    store.append("00", SQUARE, "check", "correct", 6.0)
    state = progress.unit_state("00", store.events("00")).questions[SQUARE]
    assert state.passed and state.record == "correct on attempt 2"
    assert get(SQUARE).run() == 6.0  # the canonical program is the one it asked then


def test_the_check_cell_carries_its_program_for_batch_grading():
    wrong = check(SQUARE, _truth_now(SQUARE) + 1000)
    carried = variants.read_record({"data": wrong._repr_mimebundle_()})
    assert carried is not None and carried.qid == SQUARE and carried.number == 1
    assert carried.answers[0][0] == 0 and carried.fingerprint == identity.fingerprint(identity.current())
    assert variants.read_record({"data": {variants.RECORD_MIME: {"qid": SQUARE, "variant": -3}}}) is None


# --- review ---------------------------------------------------------------------------------------------------


def _pass_unit_00():
    from grader.learner.api import mark_passed, predict, reveal

    for qid in ("00.warmup-add", "00.warmup-flag"):
        q = get(qid)
        predict(qid, q.kind.encode(q.run()))
        reveal(qid)
    check(SQUARE, _truth_now(SQUARE))
    assert mark_passed("00").verdict == "passed"


REAL_TIME = time.time


def _later(monkeypatch, days):
    """The clock ``days`` ahead, for the store's timestamps and the schedule alike."""
    monkeypatch.setattr(time, "time", lambda: REAL_TIME() + days * schedule.DAY)


def test_review_offers_a_fresh_program_of_a_passed_self_test_when_it_is_due(monkeypatch):
    _pass_unit_00()
    assert "Nothing is due" in review().message and "in 3 days" in review().message  # right at the first try
    _later(monkeypatch, 4)
    listing = review()
    assert SQUARE in str(listing) and listing.rows
    shown = review(SQUARE)
    assert shown.verdict == "unanswered" and shown.rows[0][1] != program(SQUARE).source
    q = get(SQUARE)
    mine = program_for(SQUARE)
    assert mine.program.source != variants.make(q.program, SQUARE, identity.current(), 0).program.source  # not re-asked
    wrong = review(SQUARE, q.run(mine.program) + 1000)
    assert wrong.verdict == "incorrect" and "pass stands" in wrong.message
    states = progress.course_state(current())
    assert states["00"].passed and states["00"].questions[SQUARE].passed  # a review never takes a pass away
    assert states["00"].questions[SQUARE].reviews == 1 and "reviewed 1x (last incorrect)" in (
        states["00"].questions[SQUARE].record
    )
    assert "not due" in review(SQUARE, 1.0).message  # wrong: back tomorrow, not now
    _later(monkeypatch, 6)
    again = program_for(SQUARE)
    assert again.number == 1 and again.program.source != mine.program.source
    assert review(SQUARE, q.run(again.program)).verdict == "correct"
    events = [e for e in current().events("00") if e.action == "review"]
    assert [e.verdict for e in events] == ["incorrect", "correct"] and all("seed" in e.detail for e in events)


def test_a_review_never_asks_a_program_the_learner_already_answered(monkeypatch):
    """For many learners (the CI identity drew a review program equal to the one passed, once): each review of
    a small generator's self-test is a program not asked before, while one is left, and the same one on every call."""
    from grader.learner.review import _program

    q = get(SQUARE)
    repeats = 0
    for i in range(60):
        who = f"learner-{i}"
        monkeypatch.setenv(identity.ENV, who)
        state = progress.QuestionState(SQUARE, "self-test", passed=True, variant=1, answers=[[0, 1.0], [1, 2.0]])
        asked = {variants.make(q.program, SQUARE, identity.current(), n).program.source for n in (0, 1)}
        for reviews in range(3):
            state.reviews = reviews
            v = _program(q, state)
            assert v.purpose == "review" and v.number == reviews and _program(q, state).seed == v.seed
            repeats += v.program.source in asked
            asked.add(v.program.source)
    assert repeats == 0


def test_the_schedule_spaces_reviews_and_brings_wrong_ones_first():
    def unit(qid, seen, level, wrong):
        s = progress.QuestionState(qid, "self-test", passed=True, seen=seen, level=level, wrong=wrong)
        return progress.UnitState(qid[:2], {qid: s}, passed=True)

    now = 100 * schedule.DAY
    states = {"00": unit(SQUARE, now - 2 * schedule.DAY, 1, 0)}
    assert schedule.due(states, now) == []  # level 1: three days
    states = {"00": unit(SQUARE, now - 4 * schedule.DAY, 1, 0)}
    assert [d.qid for d in schedule.due(states, now)] == [SQUARE]
    earlier = now - 3.9 * schedule.DAY
    assert schedule.upcoming(states, earlier).when(earlier) == "in 3 days"


def test_the_panel_shows_what_is_due(monkeypatch):
    from grader.learner import panels

    _pass_unit_00()
    assert "review due" not in panels.course_map().text()
    _later(monkeypatch, 5)
    assert f"review due: {SQUARE}" in panels.course_map().text()
    assert f"review due: {SQUARE}" in panels.UnitPanel("00", interactive=False).text()


def test_the_command_line_keeps_an_identity_and_lists_reviews(capsys, monkeypatch):
    from grader.instructor.cli import main

    assert main(["identity", "S-42"]) == 0
    assert "'s-42'" in capsys.readouterr().out and identity.current() == "s-42"
    assert main(["identity"]) == 0
    assert capsys.readouterr().out.startswith("s-42")
    _pass_unit_00()
    assert main(["review"]) == 0
    assert "Nothing is due" in capsys.readouterr().out
    _later(monkeypatch, 4)
    assert main(["review"]) == 0
    assert SQUARE in capsys.readouterr().out
    q = get(SQUARE)
    mine = variants.make(q.program, SQUARE, identity.current(), 0, "review")
    assert main(["review", SQUARE, repr(q.run(mine.program))]) == 0
    assert "correct" in capsys.readouterr().out
