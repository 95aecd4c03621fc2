"""A fresh variant for every learner and every retry (grader.engine.variants): the engine, and every generator.

The soundness of each generated self-test, on many seeds: its program runs and torch's answer is one its kind can
express and grade; the wrong answers it derives from the truth (its misconceptions) are refused with their note;
its variants are diverse (distinct answers, not only distinct numbers); no cell of its unit shows one of its
programs (the closed-book rule). Then the learner's side (two learners, two programs; a retry is a new program;
mastery; old records), identity, and review.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import re
import time
import warnings

import nbformat
import pytest
import torch

from grader.engine import identity, progress, torch_state, variants
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
            said = q.misconception(truth, value, v.program)
            if said != note:
                others = [j for j, (w, _) in enumerate(q.misconceptions) if j != i and _same(q, w, truth, v, value)]
                clash = f"; it collides with misconception {others[0]} on this program (both give it)" if others else ""
                pytest.fail(
                    f"{q.qid} {v.name}: misconception {i}'s answer {value!r} gets another note: {said!r}{clash}"
                )
    assert all(applies), f"{q.qid}: a misconception applies to none of {len(DRAWS)} programs"


def _same(q, wrong, truth, v, value) -> bool:
    """Whether the misconception ``wrong`` gives ``value`` on ``v``'s program too."""
    try:
        answer = wrong_answer(q, wrong, truth, v.program)
        return answer is not None and q.kind.same_answer(q.kind.read_misconception(answer), value)
    except Exception:
        return False


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


# --- closed book: a self-test draws only on what the course showed by its unit --------------------------------------

# The tensor library a practitioner brings: arithmetic, element-wise functions, reductions, making, indexing and
# reshaping tensors, the common layers. A self-test's program may use these without any cell having shown them;
# every other torch name and keyword argument it uses must appear in a cell of its unit or of one before it (course
# order), in code or in the inline code of the prose, as the learner's copy shows it (solutions stripped).
PRELUDE = frozenset(
    {
        *("tensor", "ones", "zeros", "randn", "rand", "arange", "linspace", "full", "empty", "eye", "manual_seed"),
        *("ones_like", "zeros_like", "full_like", "randn_like", "rand_like", "stack", "cat", "where", "argsort"),
        *("sin", "cos", "tan", "tanh", "sigmoid", "exp", "log", "sqrt", "abs", "relu", "gelu", "pow", "square"),
        *("neg", "sign", "clamp", "floor", "round", "mean", "sum", "max", "min", "prod", "norm", "argmax", "matmul"),
        *("reshape", "view", "unsqueeze", "squeeze", "flatten", "t", "transpose", "dim", "size", "numel", "item"),
        *("tolist", "clone", "float", "double", "long", "to", "Linear", "ReLU", "Tanh", "GELU", "Sigmoid"),
        *("Sequential", "Module", "Parameter", "softmax", "log_softmax", "mse_loss", "cross_entropy", "sequential"),
        *("dim=", "keepdim=", "dtype=", "device=", "bias="),
    }
)
_TORCH_PLACES = (
    torch,
    torch.Tensor,
    torch.nn,
    torch.nn.Module,
    torch.nn.functional,
    torch.autograd,
    torch.autograd.graph,
    torch.autograd.forward_ad,
    torch.autograd.function,
    torch.optim,
    torch.func,
    torch.utils.checkpoint,
)
# autograd attributes read without a call
_READ = {"grad", "grad_fn", "data", "is_leaf", "requires_grad", "_version", "retains_grad", "next_functions", "_base"}
_SHAPE = {"shape", "ndim", "dim", "size"}
_CONVERSIONS = {"to", "float", "double", "half", "bfloat16", "as_tensor", "type"}
_IN_PLACE = "an in-place write (x.op_() or +=)"
_SHAPE_BRANCH = "an if on a tensor's shape in a compiled function"


def _is_torch_name(name: str) -> bool:
    return any(hasattr(place, name) for place in _TORCH_PLACES)


def _reads_shape(test: ast.AST) -> bool:
    names = {n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)}
    return bool(names & _SHAPE) or any(isinstance(n, ast.Name) and n.id == "len" for n in ast.walk(test))


def _tokens(source: str, compiled: bool) -> set[str]:
    """The torch names, keyword arguments and forms a piece of code uses. ``compiled``: an if on a shape counts as
    the form only where the code compiles (torch.compile) or is a program whose question compiles it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # inline code of the prose is not always Python ("2.weight")
            tree = ast.parse(source)
    except SyntaxError:
        return set()
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    defined |= {  # names imported from the course's own modules: its helpers, not torch
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and not (n.module or "").startswith("torch")
        for a in n.names
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in defined or (isinstance(f, ast.Name) and name in dir(builtins)):
                name = None
            if name and name.endswith("_") and not name.startswith("_") and hasattr(torch.Tensor, name):
                found.add(name if name in ("requires_grad_", "detach_", "retain_grad") else _IN_PLACE)
            elif name and _is_torch_name(name):
                found.add(name)
            found |= {f"{kw.arg}=" for kw in node.keywords if kw.arg}
        elif isinstance(node, ast.Attribute) and node.attr in _READ:
            found.add(node.attr)
        elif isinstance(node, ast.AugAssign):
            found.add(_IN_PLACE)
        elif isinstance(node, ast.If) and compiled and _reads_shape(node.test):
            found.add(_SHAPE_BRANCH)
    return found


def _returning_itself(source: str) -> set[str]:
    """Conversions shown to return the very tensor they were given: `b = a.to(...)` and then `b is a` in one cell."""
    found = set()
    for made, base, method in re.findall(r"(\w+)\s*=\s*([\w.]+)\.(\w+)\(", source):
        if method in _CONVERSIONS and re.search(rf"\b{made} is {re.escape(base)}\b", source):
            found.add(f"{method}() returning its own tensor")
    return found


def _inline_code(markdown: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", markdown)


@functools.cache
def _shown_by_unit() -> dict[str, frozenset[str]]:
    """Every unit's id -> what the cells of that unit and of every unit before it show."""
    shown: set[str] = set()
    out = {}
    for uid, unit in UNITS.items():
        nb = nbformat.read(f"notebooks/{unit.notebook}", as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
                shown |= _tokens(code, compiled="torch.compile" in code) | _returning_itself(code)
            else:
                for span in _inline_code(cell.source):
                    shown |= _tokens(span, compiled=False)
        out[uid] = frozenset(shown)
    return out


class _Conversions(torch.overrides.TorchFunctionMode):
    """Records each conversion that hands back the very tensor it was given."""

    def __init__(self):
        super().__init__()
        self.itself: set[str] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in _CONVERSIONS and args and isinstance(args[0], torch.Tensor) and out is args[0]:
            self.itself.add(f"{name}() returning its own tensor")
        return out


def _used(q, program) -> set[str]:
    """What a program uses: its torch names and forms, and the conversions that returned their own tensor when it
    ran (a program that raises on purpose is run up to its error)."""
    compiled = "torch.compile" in program.source or "torch.compile" in program.ask
    tokens = _tokens(program.source, compiled)
    used = tokens - PRELUDE
    if not tokens & _CONVERSIONS:
        return used
    mode = _Conversions()
    with torch_state.clean_room(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with mode:
                exec(compile(program.source, f"<{q.qid}>", "exec"), {"torch": torch, "__builtins__": builtins})
        except Exception:  # an error question's program raises where its answer says: what ran before counts
            pass
    return used | mode.itself


@pytest.mark.parametrize("q", GENERATED, ids=lambda q: q.qid)
def test_a_self_test_uses_only_what_its_unit_or_an_earlier_one_showed(q):
    shown = _shown_by_unit()[q.unit]
    unshown: dict[str, str] = {}
    for who, n in DRAWS:
        v = variants.make(q.program, q.qid, who, n)
        for name in sorted(_used(q, v.program) - shown):
            unshown.setdefault(name, v.name)
    assert not unshown, f"{q.qid}: its programs use what no cell of units up to {q.unit} shows: {unshown}"


def test_the_closed_book_check_finds_what_the_reviewers_found():
    """The check is not vacuous: the programs the four reviews of issue 46 found using what their unit never showed
    (as the generators of release 0.5.0 drew them), against what the cells of 0.5.0 showed."""
    old = {
        "01": "q = p * 3 + u\nq.retain_grad()\n(q * s).sum().backward()",
        "03": "(h ** 2).backward(retain_graph=True)\n(5 * h).backward()",
        "04": "d1 = torch.as_tensor(h.detach())\nd2 = h.data",
        "13": "def f(x):\n    h = x.cos()\n    if x.shape[0] > 2:\n        h = h * 3\n    return h.tanh()",
    }
    shown_then = {"01": {"backward", "requires_grad="}, "03": {"backward", "register_hook"}, "04": {"data"}}
    assert "retain_grad" in _tokens(old["01"], False) - shown_then["01"]
    assert "retain_graph=" in _tokens(old["03"], False) - shown_then["03"]
    assert "as_tensor" in _tokens(old["04"], False) - shown_then["04"]
    assert _SHAPE_BRANCH in _tokens(old["13"], compiled=True)
    h = torch.ones(2, requires_grad=True) * 2  # a same-dtype .float() hands back its own tensor: caught when it runs
    with _Conversions() as mode:
        h.float()
        h.double()
    assert mode.itself == {"float() returning its own tensor"}
    assert "to() returning its own tensor" in _returning_itself("same = leaf.to(torch.float32)\nprint(same is leaf)")


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
