"""What the notebooks show a learner: no answer before its question, closed-book self-tests that are
closed, and no grader message that sends a learner to a name the notebook has not imported.

These read the stored outputs of solutions/ (what a learner sees after running the cells) and the
questions' live experiments.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import nbformat
import pytest

import grader
from grader.engine.course import UNITS
from grader.engine.kinds import Name, Names, Number
from grader.engine.question import all_questions, of_unit
from tests.truths import truth_of

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = {uid: ROOT / "solutions" / unit.notebook for uid, unit in UNITS.items()}
# Names a learner meets in every unit from 01 on: seeing them earlier gives nothing away.
NOT_DISTINCTIVE = {"AccumulateGrad", "None", "_saved_self", "_saved_other", "_saved_result"}
# Set-up lines too common to identify a program: making a leaf, calling backward on a sum.
GENERIC = re.compile(
    r"^\w+=torch\.(tensor|ones|zeros|randn|rand|arange|full|linspace)\(|"
    r"^\w+(\.sum\(\))?\.backward\(\)$|^torch\.manual_seed\(|"
    r"^\(?\w+,?\)?=torch\.autograd\.grad\("
)


def _notebook(uid):
    return nbformat.read(SOLUTIONS[uid], as_version=4)


def _output_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        data = out.get("data", {})
        for mime in ("text/plain", "text/html"):
            if mime in data:
                parts.append(data[mime] if isinstance(data[mime], str) else "".join(data[mime]))
        if out.get("output_type") == "error":
            parts.append(" ".join(out.get("evalue", "").split()))
    return "\n".join(parts)


def _asked_at(cells, qid) -> int:
    """Index of the first code cell that names the question."""
    pattern = re.compile(r"""["']""" + re.escape(qid) + r"""["']""")
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and pattern.search(cell.source):
            return i
    raise AssertionError(f"{qid} is never asked in its notebook")


def _number_forms(x: float) -> list[str]:
    """Three ways a number is printed ('' where that way is not distinctive: fewer than 3 digits)."""
    if x != x or x in (float("inf"), float("-inf")):
        return ["", "", ""]
    if x == int(x):
        n = int(x)
        return [str(n), f"{n:,}", ""] if abs(n) >= 100 else ["", "", ""]
    forms = [f"{x:.4f}", f"{x:.3f}", ""]
    return [f if len(re.sub(r"\D", "", f.rstrip("0")).lstrip("0")) >= 3 else "" for f in forms]


def _torch_name(name: str) -> bool:
    """A name torch chose (a node class, a saved attribute), not a name from the program or a label."""
    return name not in NOT_DISTINCTIVE and re.fullmatch(r"\w+Backward\d+|_saved_\w+", name) is not None


def _distinctive(q, truth) -> list[set[str]]:
    """Groups of strings; an earlier output that holds every string of one group gives the answer away."""
    if isinstance(q.kind, Name):
        return [{truth}] if _torch_name(truth) else []
    if isinstance(q.kind, Names):
        names = {n for n in truth if _torch_name(n)}
        return [names] if names else []
    if isinstance(q.kind, Number):  # the whole answer, in one way of writing it, gives it away
        values = truth if isinstance(truth, tuple) else (truth,)
        groups = []
        for style in range(3):
            group = {_number_forms(x)[style] for x in values if _number_forms(x)[style]}
            if group:
                groups.append(group)
        return groups
    return []


def _shows(text: str, token: str) -> bool:
    if re.fullmatch(r"[-\d.,]+", token):  # a number: not as part of a longer number
        return re.search(r"(?<![\d.,])" + re.escape(token) + r"(?![\d]|\.\d|,\d)", text) is not None
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(token) + r"(?![A-Za-z0-9_])", text) is not None


PREDICTS = [q for q in all_questions() if q.role == "predict"]


@pytest.mark.parametrize("q", PREDICTS, ids=lambda q: q.qid)
def test_no_earlier_output_gives_the_answer_away(q):
    groups = _distinctive(q, truth_of(q))
    if not groups:
        return
    cells = _notebook(q.unit).cells
    asked = _asked_at(cells, q.qid)
    # the same figure as an earlier question's answer is not a spoiler: whether it changes is the question
    earlier = set()
    for other in of_unit(q.unit):
        if other.role == "predict" and other.qid != q.qid and _asked_at(cells, other.qid) < asked:
            earlier |= {t for g in _distinctive(other, truth_of(other)) for t in g}
    groups = [g for g in groups if not g <= earlier]
    for i, cell in enumerate(cells[:asked]):
        text = _output_text(cell)
        for group in groups:
            assert not all(_shows(text, token) for token in group), (
                f"{q.qid}: cell {i} ({cell.get('id')}) shows {sorted(group)} before the question is asked"
            )


def _program_lines(fn) -> list[str]:
    """The statements of an experiment, normalised, without set-up too common to identify a program."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return []
    body = ast.parse(source).body[0].body
    lines = []
    for node in body:
        if isinstance(node, (ast.Return, ast.Expr)) and not isinstance(getattr(node, "value", None), ast.Call):
            continue
        for line in ast.get_source_segment(source, node).splitlines():
            norm = re.sub(r"\s+", "", line)
            if len(norm) >= 6 and not norm.startswith(("#", "yield", "return")) and not GENERIC.search(norm):
                lines.append(norm)
    return lines


# a generated self-test's programs are checked on many seeds in tests/test_variants.py
SELF_TESTS = [q for q in all_questions() if q.role == "self-test" and q.program is None]


@pytest.mark.parametrize("q", SELF_TESTS, ids=lambda q: q.qid)
def test_a_closed_book_program_is_not_among_the_units_own_cells(q):
    lines = _program_lines(q.experiment)
    if len(lines) < 2:
        return
    shown = {
        re.sub(r"\s+", "", line)
        for cell in _notebook(q.unit).cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
    }
    seen = [line for line in lines if line in shown]
    assert len(seen) < max(2, 0.6 * len(lines)), (
        f"{q.qid}: {len(seen)} of its {len(lines)} program lines appear in the unit's cells: {seen[:3]}"
    )


def _names_in_messages() -> set[str]:
    """Learner functions that the grader's messages tell a learner to call."""
    api = set(grader.__all__)
    found = set()
    for path in (ROOT / "grader").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found |= {m for m in re.findall(r"\b([a-z_]+)\(['\"]", node.value) if m in api}
    return found


def _imported(nb) -> set[str]:
    names = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "grader":
                names |= {a.asname or a.name for a in node.names}
    return names


@pytest.mark.parametrize("uid", list(UNITS))
def test_every_function_a_message_names_is_imported(uid):
    needed = _names_in_messages()
    assert {"reset", "hint", "check", "reveal", "predict"} <= needed
    if not any(q.role != "predict" for q in of_unit(uid)):
        needed.discard("hint")
    missing = needed - _imported(_notebook(uid))
    assert not missing, f"unit {uid}'s notebook never imports {sorted(missing)}, which grader messages name"


@pytest.mark.parametrize("uid", list(UNITS))
def test_the_title_cell_agrees_with_the_course(uid):
    """The stated time, "Comes after" and "Leads to" match grader/engine/course.py."""
    from grader.engine.course import leads_to

    title = _notebook(uid).cells[0].source
    time = re.search(r"Time:\*\*\s*about (\d+) minutes", title)
    assert time and int(time.group(1)) == UNITS[uid].minutes, f"unit {uid}: the time differs from course.py"
    after = re.search(r"Comes after:\*\*(.*?)(?:\*\*Leads to|$)", title, re.S)
    later = re.search(r"Leads to:\*\*(.*)", title, re.S)
    linked = lambda m: sorted(set(re.findall(r"\]\((\d\d[a-z]?)_", m.group(1)))) if m else []
    assert linked(after) == sorted(UNITS[uid].needs), f"unit {uid}: 'Comes after' differs from course.py"
    order = list(UNITS)
    assert set(leads_to(uid)) <= set(linked(later)), f"unit {uid}: 'Leads to' misses a unit that needs it"
    assert all(order.index(u) > order.index(uid) for u in linked(later)), (
        f"unit {uid}: 'Leads to' names a unit that comes before it"
    )


# --- a question's rule, stated before the question ------------------------------------------------

# The rule a prediction tests, as a pattern of the words that state it. A markdown cell or an output before the
# question that states it turns the prediction into reading. Each pattern must also match the question's own
# explanation or a cell after it, so that it is the rule's real wording, not a phrase nobody writes.
RULE_STATEMENTS = {
    "01.constant-is-leaf": r"one nothing tracks|does not require grad counts as a leaf",
    "01.walk-shared": r"reached twice|however many edges|used twice is one",
    "01.neuron-grad-ratio": r"the other operand|ds/dw = x",
    "02.straight-through": r"sen(t|ds) `?2q|borrows the identity's slope|the value of `?round`?, the gradient of `?x",
    "02.second-step": r"every backward call (adds|nobody cleared)|over every backward call|adds? (it )?into "
    r"(the )?`?\.grad`? (in place|already there)|each backward adds",
    "12.anomaly-inf": r"for NaN only|an inf passes|inf,? is not (a )?NaN|(lets?|let) (an )?inf through",
    "04.frozen-loop-facts": r"half (of )?its model frozen|returns a detached copy",
    "06.which-grads-recorded": r"gradient that depends on the input gets a graph|linear in `?x`? is a constant",
}
_COMMENTS = re.compile(r"<!--.*?-->", re.S)


def _said(cell) -> str:
    text = _COMMENTS.sub(" ", cell.source) if cell.cell_type == "markdown" else _output_text(cell)
    return " ".join(text.split())


@pytest.mark.parametrize("qid", sorted(RULE_STATEMENTS))
def test_no_earlier_cell_states_the_rule_a_question_tests(qid):
    from grader.engine.question import get

    q = get(qid)
    cells = _notebook(q.unit).cells
    asked = _asked_at(cells, qid)
    rule = re.compile(RULE_STATEMENTS[qid], re.I)
    for i, cell in enumerate(cells[:asked]):
        found = rule.search(_said(cell))
        assert not found, f"{qid}: cell {i} ({cell.get('id')}) states its rule before it is asked: {found.group(0)!r}"
    later = [q.explain] + [_said(c) for c in cells[asked:]]
    assert any(rule.search(" ".join(text.split())) for text in later), f"{qid}: its rule is stated nowhere"


def test_the_rule_check_finds_a_rule_stated_early():
    """The check is not vacuous: the notebooks as they were before issue 29 stated both rules before asking."""
    early = {"01.constant-is-leaf": "(a tensor you made, or one nothing tracks)"}
    early["01.neuron-grad-ratio"] = "By hand, `ds/dx = w·σ(z)·(1 − σ(z))`; ds/dw = x·σ(z)·(1 − σ(z))"
    early["02.straight-through"] = 'the "straight-through" trick: the value of `round`, the gradient of `x`'
    early["02.second-step"] = "over the rows a broadcast lined it up with, and over every backward call nobody cleared"
    early["04.frozen-loop-facts"] = "## 8. A loop that trains with half its model frozen"
    early["06.which-grads-recorded"] = (
        "With `create_graph=True`, the backward pass records its own operations, so a gradient that depends on the "
        "input gets a graph and can be differentiated again. (The gradient of a loss linear in `x` is a constant"
    )
    for qid, text in early.items():
        assert re.search(RULE_STATEMENTS[qid], text, re.I), qid


# How the notebooks once described an error question's answer: a place and words graded on their key idea.
# Error questions now grade the place and a cause chosen from candidates (engine.kinds.Error); words are a note.
_WORDS_GRADED = re.compile(
    r"your words[^.]{0,80}(graded|key idea)|words (graded )?on the (message's )?key idea|add words for the message",
    re.I,
)


@pytest.mark.parametrize("uid", sorted(UNITS))
def test_no_cell_says_an_error_questions_words_are_graded(uid):
    nb = nbformat.read(SOLUTIONS[uid], as_version=4)
    said = [c.id for c in nb.cells if c.cell_type == "markdown" and _WORDS_GRADED.search(c.source)]
    assert not said, f"unit {uid}: cells {said} say an error question grades free words; it grades (place, cause)"


def test_the_words_graded_check_finds_the_old_wording():
    old = "Answer `(place, your words)`: the place is graded exactly, your words on the key idea"
    assert _WORDS_GRADED.search(old) and not _WORDS_GRADED.search("words of your own may follow, never graded")
