"""What the notebooks show a learner: no answer before its question, closed-book self-tests that are
closed, and no grader message that sends a learner to a name the notebook has not imported.

These read the stored outputs of solutions/ (what a learner sees after running the cells) and the
questions' live experiments.
"""

from __future__ import annotations

import ast
import functools
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


@functools.cache
def _names_in_messages() -> frozenset[str]:
    """Learner functions that the grader's messages tell a learner to call."""
    api = set(grader.__all__)
    found = set()
    for path in (ROOT / "grader").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found |= {m for m in re.findall(r"\b([a-z_]+)\(['\"]", node.value) if m in api}
    return frozenset(found)


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
    needed = set(_names_in_messages())
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
    "06.which-grads-recorded": (
        r"gradient (that depends on the input|its backward computes from a value that requires grad) gets a graph"
        r"|linear in `?x`? is a constant"
    ),
    # issue 30's second reader, units 07-13 and 09b
    "07.version-count": r"any operation that writes into `?t`?'s memory adds one",
    "07.pow-broken-node": r"the power (node )?(kept|saved|keeps) `?u\b",
    "07.gan-step": r"g_loss`?'s graph (kept|saved) `?D\.weight",
    "07.reciprocal-write": r"makes `?s`? the reciprocal's own\s+result|that result is s itself|the reciprocal kept its own "
    r"result",
    "07.data-write": r"counter of its own|counter never hears",
    "07.hooks-grad": r"skips? the check|taken over the check|nothing compares",
    "08.retain-mul-runs": r"walks the whole graph under step n'?s loss",
    "08.detach-which-sum": r"starts from a constant|turned the state it received into a constant",
    "09.offload-write-grad": r"`?save_on_cpu\(\)`? keeps the very tensor it is handed",
    "09b.checkpoint-side-effect-count": r"each backward over the retained graph\s+reruns",
    "10.worked-reached": r"neither feeds the loss|no cut on a path to the loss",
    "10.worked-carrier": r"state = 0\.5 \* state \+ h`? (carries|reads)",
    "10.worked-detach-placement": r"reaches the loss as a constant",
    "10.trap-loss-falls": r"loss falls in all three runs|w_head alone can lower the loss|never by .the loss went down",
    "11.saved-write": r"with the version it had|gives your node the check|keeps x with its version",
    "11.once-diff": r"runs?\s+backward\s+with grad mode off|ran under no_grad",
    "12.masked-loss-nan": r"NaN \* 0`? is NaN|so is `NaN \* 0`",
    "12.anomaly-nan-to-num": r"clean(s|ed) the forward value only",
    "13.item-graphs": r"where Python must see a real value|a tensor graph cannot hold",
    "13.hook-side-effects": r"depends on\s+what it does|a hook with a side effect[^.]*breaks the graph",
    # the second reader of issue 29 (units 00-06 and 04b)
    "01.mul-edges": r"the second is `?\(None, 0\)`?|`w \* 3` and `w \+ 1` have two|`w \+ 1`\s+has such a pair",
    "02.nonscalar-backward": r"needs a seed you choose|only for scalar outputs|can seed only an output holding a single",
    "02.zero-grad-none": r"with `?p\.grad = None`? or an optimizer's `?zero_grad|drops the gradient tensors",
    "03.hooks-pile-up": r"stays on its tensor|same tensor at every step",
    "03.autograd-grad-stores": r"asking without storing|write nothing themselves|writes no leaf's",
    "03.optimizer-non-leaf": r"catch the slip earlier|refuses a non-leaf|can't optimize a non-leaf",
    "04.never-entered": r"no node for `?backward\(\)`? to start from",
    "04.detach-write": r"views the same memory|a write through `?d`? is a write into|why `?detach\(\)`? shares memory",
    "04.item-new-start": r"starts afresh|brand-new leaf",
    "04.unused-input": r"graph (simply )?does not contain the parameter|no path from this loss to `?w1",
    "04b.which-layers-learn": r"a Python list or dict is neither|not registered",
    "04b.freeze-three-ways": r"plain (Python )?attribute",
    "04b.unfreeze-later": r"holds the tensors it was given",
    "04b.write-to-weight": r"takes only an `?nn\.Parameter|raises a TypeError",
    "04b.to-order": r"keeps the same `?nn\.Parameter`? objects|converts each parameter in place",
    "04b.legacy-hook-sees": r"`?grad_input`? of the last node",
    "05.owed-at-forward": r"set too late|too late for `?m|the record was already made",
    "06.second-backward": r"a second backward pass cannot|cannot run the power node's rule|the first pass released",
    "06.nothing-saved": r"error is about freed values",
    "06.shared-intermediate": r"`?retain_graph=True`? is right|keeping the values is right",
    "06.which-flag": r"`?retain_graph`? is not `?create_graph|it records nothing new",
    "06.cycle-survives": r"reference cycle between the parameter and its gradient|never visits it",
    # the four expert reviews of issue 46 (units 00-03, 04-06, 07-09b, 10-13)
    "01.x-is-leaf": r"\*?not\*? produced by a recorded operation",
    "01.argmax-silent": r"plain constant to autograd",
    "01.exp-saves": r"exp's slope is its (own )?output|slope of exp is exp itself",
    "02.chain-arrivals": r"each node multiplies what it received by its own local\s+derivative|dy/dw = 18w = 36",
    "02.ones-seed": r"`?z\.backward\(s\)`? puts `?s · J",
    "02.one-hot-seed": r"`?z\.backward\(s\)`? puts `?s · J",
    "03.retain-grad-kept": r"to keep it, ask before backward|gave the value a place to stay",
    "03.hook-sees": r"with the gradient with respect to (`?t`?|that tensor)",
    "03.autograd-grad": r"(returns|hands back) the gradients with respect to (`?inputs`?|the inputs)",
    "03.hidden-leaf-grad": r"passed it on to the tensor that \*?was\*? made|went on through the multiplication by 2",
    "04.detach-one-operand": r"nothing downstream of (it|a detached tensor) can lead\s+back|no path through a detached"
    r"\s+tensor leads\s+back",
    "04b.four-offs": r"act on a\s+region of code, `?p\.requires_grad_\(False\)`? on one tensor",
    "04b.nested-modes": r"switches recording back on, and `?torch\.set_grad_enabled\(flag\)`? sets it",
    "09b.reentrant-grads": r"whose output requires grad only if (a|one of its) tensor \*?inputs?\*?",
    "12.where-log-nan": r"read from the input, not|reads its input x, not",
    "13.func-grad-no-grad": r"`?\.backward\(\)`? writes into `?\.grad",
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


# Rules the notebooks once stated before asking (qid -> the sentence as it was): the rule check must find each.
STATED_EARLY = {
    "01.constant-is-leaf": "(a tensor you made, or one nothing tracks)",
    "01.neuron-grad-ratio": "By hand, `ds/dx = w·σ(z)·(1 − σ(z))`; ds/dw = x·σ(z)·(1 − σ(z))",
    "02.straight-through": 'the "straight-through" trick: the value of `round`, the gradient of `x`',
    "02.second-step": "over the rows a broadcast lined it up with, and over every backward call nobody cleared",
    "04.frozen-loop-facts": "## 8. A loop that trains with half its model frozen",
    "06.which-grads-recorded": (
        "With `create_graph=True`, the backward pass records its own operations, so a gradient that depends on the "
        "input gets a graph and can be differentiated again. (The gradient of a loss linear in `x` is a constant"
    ),
    # and the cells of units 07-13 as issue 30's second reader found them
    "07.version-count": "`t._version` starts at 0. Any operation that writes into `t`'s memory adds one",
    "07.data-write": "(Section 10 meets aliases whose writes the counter never hears about.)",
    "07.hooks-grad": "## 10. When nothing compares: `.data` and saved-tensor hooks",
    "08.retain-mul-runs": "Step n's backward walks the whole graph under step n's loss.",
    "08.detach-which-sum": "and drops the history: the next step\nstarts from a constant.",
    "09.offload-write-grad": (
        "so on a machine without a GPU the default\n`save_on_cpu()` keeps the very tensor it is handed"
    ),
    "10.worked-reached": "Neither feeds the loss: `loss` on\nline 15 has `requires_grad` True",
    "10.worked-carrier": "state = 0.5 * state + h carries the previous state with its graph",
    "11.saved-write": (
        "keeps it the way a\nbuilt-in node keeps its `_saved_*` tensors (unit 05), with the version it had"
    ),
    "11.once-diff": "`@once_differentiable` marks a backward that is not: it runs\nbackward with grad mode off.",
    "13.item-graphs": "where Python must see a real value it stops, runs that line in\nPython",
    "13.hook-side-effects": "what Dynamo does with one depends on\nwhat it does:",
    # and what the second reader of issue 29 found in units 00-06 before it was moved or reworded
    "01.mul-edges": "`w * 3` and `w + 1` have two pairs (the second is `(None, 0)`)",
    "02.nonscalar-backward": "## 2. An output with several numbers needs a seed you choose",
    "03.hooks-pile-up": "The hook stays on its tensor until `handle.remove()` takes it off",
    "03.autograd-grad-stores": "## 3. Asking without storing: `torch.autograd.grad`",
    "03.optimizer-non-leaf": "An optimizer would catch the slip earlier, if you let it.",
    "04.never-entered": "a loss built that way has no node for `backward()` to start from",
    "04.detach-write": "`t.detach()` gives a new tensor object that views the same memory as `t`",
    "04.item-new-start": ("Numbers carry no history, so whatever you build from them starts afresh, flag or no flag."),
    "04.unused-input": "All these cuts look the same from the loss: its graph does not contain the parameter.",
    "05.owed-at-forward": "a product in which only one operand requires grad, and a flag set too late",
    "06.second-backward": "but a second backward pass cannot run the power node's rule any more",
    "06.nothing-saved": "The error is about freed values, not about the graph.",
    "06.shared-intermediate": "## 2. When `retain_graph=True` is right: two losses that share work",
    "06.which-flag": "**Trap: `retain_graph` is not `create_graph`.**",
    "06.cycle-survives": (
        "torch warned: Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient"
    ),
    # and what the four expert reviews of issue 46 found, as the notebooks of release 0.5.0 had it
    "01.x-is-leaf": ("`is_leaf`: was it *not* produced by a recorded operation? (a tensor you made yourself is one)"),
    "01.argmax-silent": (
        "An index (`argmax`), a comparison\n(a bool mask) or an integer cast is a plain constant to autograd"
    ),
    "02.chain-arrivals": (
        "On paper `y = 9w²`, so `dy/dw = 18w = 36`. ... each node multiplies what it received by its own local "
        "derivative and hands the result on"
    ),
    "02.ones-seed": "`z.backward(s)` puts `s · J` into `v.grad`",
    "02.one-hot-seed": "`z.backward(s)` puts `s · J` into `v.grad`",
    "03.retain-grad-kept": "To keep it, ask before backward runs: `x.retain_grad()`.",
    "03.hook-sees": "`t.register_hook(fn)` asks backward to call `fn(g)` with the gradient with respect to `t`",
    "03.autograd-grad": "runs backward from `outputs` and returns the gradients with respect to `inputs`",
    "03.hidden-leaf-grad": (
        "the\nmultiplication passed it on to the tensor that *was* made with `requires_grad=True`."
    ),
    "04.detach-one-operand": (
        "`t.detach()` gives a tensor with no `grad_fn`: nothing downstream of it can lead back to what produced"
    ),
    "04b.four-offs": (
        "`torch.no_grad()` and `torch.inference_mode()` act on a\nregion of code, `p.requires_grad_(False)` on one tensor"
    ),
    "04b.nested-modes": (
        "Regions nest: `torch.enable_grad()` switches recording back on, and `torch.set_grad_enabled(flag)` sets\nit"
    ),
    "13.func-grad-no-grad": (
        "Compare it with what you know: `.backward()`\nwrites into `.grad` and adds to what is there"
    ),
}
# more of them as (qid, text) pairs: a question may have been given away by two sentences
STATED_EARLY_ELSEWHERE = [
    ("04.detach-write", "**You will be able to:** ... explain why `detach()` shares memory; list the leaves"),
    ("10.trap-loss-falls", 'prove the repair by the quantity it restores, never by "the loss went down"'),
    ("07.reciprocal-write", "the reciprocal kept its own result, another tensor. No node kept `s`"),
]


def test_the_rule_check_finds_a_rule_stated_early():
    """The check is not vacuous: the notebooks as they were before issue 29 stated these rules before asking."""
    for qid, text in [*STATED_EARLY.items(), *STATED_EARLY_ELSEWHERE]:
        assert re.search(RULE_STATEMENTS[qid], " ".join(text.split()), re.I), qid


# What hands a question its answer without being a rule that a later cell restates: the heading the question sits
# under, a hint in the markdown before it (its own prompt included), a line of code that computes the answer another
# way, or what an earlier unit printed. qid -> (where, pattern): "heading" reads the nearest heading above the
# question, "markdown" the markdown cells before it, "code" the code cells' sources before it, "earlier units" every
# markdown cell and output of the units before the question's (in course order).
GIVEAWAYS = {
    "02.where-nan": ("heading", r"NaN"),
    "03.hook-returns": ("markdown", r"Trap: .a hook only looks"),
    "04.no-grad-region": ("heading", r"`?no_grad`? on a region"),
    "06.cycle-survives": ("heading", r"reference cycle"),
    "06.saved-after-backward": ("earlier units", r"freed the saved tensors as it used them"),
    "06.second-backward": ("earlier units", r"backward through the graph a second time"),
    "07.consumer-pow-message": ("markdown", r"operation named is not always the node that failed"),
    "07.pow-broken-node": ("heading", r"the consumer decides"),
    "08.detach-which-sum": ("code", r"received\.detach\(\)"),
    "09.innermost-pair": ("heading", r"one pair at a time"),
    "10.trap-loss-falls": ("heading", r"judging a repair by the loss"),
    "12.anomaly-inf": ("markdown", r"divides the incoming gradient by `?2 \* sqrt\(x\)"),
    # what the independent reader of issue 46 found on the branch that fixed the ones above
    "03.retain-grad-kept": ("markdown", r"unless\s+`?retain_grad\(\)`?\s+asks for more"),
    "07.hooks-grad": ("markdown", r"saved-tensor hooks let a wrong gradient through"),
    "08.second-backward": ("earlier units", r"fails on its second backward"),
    "09b.reentrant-grads": ("markdown", r"not the parameters\s+inside the block"),
    "12.anomaly-cost": ("markdown", r"carried the forward line that made that node"),
    "13.compile-version": ("markdown", r"version checks survive\s+compiling"),
    # its second reading: a cycle unit 06 ran and answered, and the rule of thumb that answered the rest
    "12.cycle-seen": ("earlier units", r"cycle that passes through a Python object|tensor that names itself"),
}
_HEADING = re.compile(r"^#+\s+(.*)$", re.M)


def _giveaway_texts(q, where: str) -> list[tuple[str, str]]:
    """(a label, a text) for each place a GIVEAWAYS pattern of the kind ``where`` is searched for ``q``."""
    cells = _notebook(q.unit).cells
    before = cells[: _asked_at(cells, q.qid)]
    if where == "heading":
        headings = [(c.get("id"), h) for c in before if c.cell_type == "markdown" for h in _HEADING.findall(c.source)]
        return headings[-1:]
    if where == "markdown":
        return [(c.get("id"), _said(c)) for c in before if c.cell_type == "markdown"]
    if where == "code":
        return [(c.get("id"), c.source) for c in before if c.cell_type == "code"]
    order = list(UNITS)
    return [
        (f"{uid} {c.get('id')}", _said(c))
        for uid in order[: order.index(q.unit)]
        for c in _notebook(uid).cells
        if c.cell_type == "markdown" or c.get("outputs")
    ]


@pytest.mark.parametrize("qid", sorted(GIVEAWAYS))
def test_nothing_before_a_question_hands_it_the_answer(qid):
    from grader.engine.question import get

    where, pattern = GIVEAWAYS[qid]
    for label, text in _giveaway_texts(get(qid), where):
        found = re.search(pattern, text, re.I)
        assert not found, f"{qid}: {where} {label} gives it away before it is asked: {found.group(0)!r}"


def test_the_giveaway_check_finds_what_the_reviewers_found():
    """The check is not vacuous: what the four reviews of issue 46 quoted from the notebooks of release 0.5.0, and
    what its independent reader quoted from the branch that fixed them."""
    found = {
        "02.where-nan": "9. Zeros and NaNs that arrive without a warning",
        "03.hook-returns": '**Trap: "a hook only looks".** Here is a hook someone wrote',
        "04.no-grad-region": "3. `detach` acts on a tensor, `no_grad` on a region",
        "06.cycle-survives": "7. `backward(create_graph=True)` and a reference cycle",
        "06.saved-after-backward": "Backward freed the saved tensors as it used them; reading one now raises:",
        "06.second-backward": "Trying to backward through the graph a second time (or directly access saved tensors",
        "07.consumer-pow-message": "The next section shows that the operation named is not always the node that failed.",
        "07.pow-broken-node": "4. The consumer decides",
        "08.detach-which-sum": "(own_step,) = torch.autograd.grad((received.detach() * w + 0.1) ** 2, w)",
        "09.innermost-pair": "1. Measuring under hooks: one pair at a time",
        "10.trap-loss-falls": "3. Trap: judging a repair by the loss",
        "12.anomaly-inf": "sqrt's backward divides the incoming gradient by `2 * sqrt(x)`, and `sqrt(0) = 0`",
        "03.retain-grad-kept": "and, unless `retain_grad()` asks for more, stores only the leaves' ones",
        "07.hooks-grad": "why `.data` and saved-tensor hooks let a wrong gradient through",
        "08.second-backward": "A recurrent loop that carries its hidden state `h` from step to step fails on its second backward",
        "09b.reentrant-grads": "whose inputs are the tensors passed to `checkpoint`, here `xc`, not the parameters inside the block",
        "12.anomaly-cost": "the warning anomaly mode printed with it carried the forward line that made that node",
        "13.compile-version": "and what a graph break does to `retain_grad` and `.item()`, and that version checks survive compiling",
        "12.cycle-seen": "(A cycle that passes through a Python object, such as a hook's closure, is one `gc.collect()` "
        "finds and frees.)",
    }
    assert set(found) == set(GIVEAWAYS)
    for qid, text in found.items():
        assert re.search(GIVEAWAYS[qid][1], text, re.I), qid


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
