"""``python -m grader new-question UNIT SLUG --kind KIND``: a new question's skeleton, in both its places.

It appends a declaration to ``grader/units/unitNN/questions.py`` (its imports merged into the module's own
import lines) and inserts the question's cells into ``solutions/NN_*.ipynb``: a markdown cell naming it, then
for a predict-then-run question the ``predict`` cell, a plain torch cell and the ``reveal`` cell; for a
self-test, which draws its program per learner and attempt (a generator beside the declaration), the cell that
shows the learner's program and the ``check`` cell. New cells take the id of the cell before them plus a letter
(``c087a``), as the notebooks' inserted cells do, and the notebook is written by
:func:`grader.instructor.build.dumps`, the repository's own format, so its diff is the inserted cells and nothing
else.

The skeleton works: its experiment is a small live torch program and its solution region answers that
program, so the question runs, checks and reveals as it stands. What only the author can write (the prompt,
the explanation, the prose, the hints of a self-test, the program itself) is marked :data:`PLACEHOLDER`, and
``build`` (and ``build --execute``) refuses a solution notebook or a questions module that still holds the
mark (:func:`grader.instructor.build.placeholders`), so a skeleton never reaches learners.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from grader.engine import syntax
from grader.instructor.build import BEGIN, END, PLACEHOLDER, dumps

ROLES = {"predict": "predict_then_run", "self-test": "self_test"}
SLUG = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


class NewQuestionError(Exception):
    """The skeleton cannot be inserted; the text says why."""


@dataclass(frozen=True)
class Skeleton:
    kind: str  # the kind's expression in the declaration
    imports: dict  # module -> names the declaration needs
    program: str  # the program, as the prompt states it
    experiment: str  # the declaration's body: the live experiment
    shown: str  # the notebook's torch cell for a predict-then-run question
    answer: str  # the solution region's answer to that program
    draw: str = ""  # a self-test's generator body: a Draw ``d`` in, a Listing out (its first options: the program)
    on_program: str = ""  # a self-test's experiment on the drawn program ``p``
    answer_on: str = ""  # the solution region's answer on the learner's program, ``{mine}`` standing for it
    wrong: str = "lambda truth: truth * 2"  # a misconception's wrong answer, from torch's (and a self-test's program)


SKELETONS = {
    "number": Skeleton(
        "Number()",
        {"grader.engine.kinds": ["Number"]},
        "w = torch.tensor(2.0, requires_grad=True); (w * w).backward(). What is w.grad?",
        "w = torch.tensor(2.0, requires_grad=True)\n(w * w).backward()\nreturn w.grad.item()",
        'w = torch.tensor(2.0, requires_grad=True)\n(w * w).backward()\nprint("w.grad:", w.grad.item())',
        "4.0",
        "w = d.one([2.0, -1.5, 3.0])\npower = d.one([2, 3])\n"
        'return Listing(f"w = torch.tensor({w}, requires_grad=True)\\n(w ** {power}).backward()", "What is w.grad?")',
        'return p.run()["w"].grad.item()',
        '{mine}.run()["w"].grad.item()',
    ),
    "boolean": Skeleton(
        "Boolean()",
        {"grader.engine.kinds": ["Boolean"]},
        "x = torch.ones(2, requires_grad=True); y = x * 2. Does y require grad (y.requires_grad)?",
        "x = torch.ones(2, requires_grad=True)\ny = x * 2\nreturn y.requires_grad",
        'x = torch.ones(2, requires_grad=True)\ny = x * 2\nprint("y.requires_grad:", y.requires_grad)',
        "True",
        wrong="lambda truth: not truth",
    ),
    "name": Skeleton(
        "Name(key=node_key)",
        {"grader.engine.kinds": ["Name", "node_key"]},
        "x = torch.ones(2, requires_grad=True); y = x * 2. What is type(y.grad_fn).__name__?",
        "x = torch.ones(2, requires_grad=True)\ny = x * 2\nreturn type(y.grad_fn).__name__",
        'x = torch.ones(2, requires_grad=True)\ny = x * 2\nprint("y.grad_fn:", type(y.grad_fn).__name__)',
        '"MulBackward0"',
        'op = d.one(["x * 2", "x + 2", "x.exp()", "x.sin()"])\n'
        'return Listing(f"x = torch.ones(2, requires_grad=True)\\ny = {op}", "What is type(y.grad_fn).__name__?")',
        'return type(p.run()["y"].grad_fn).__name__',
        'type({mine}.run()["y"].grad_fn).__name__',
        wrong='lambda truth: "AccumulateGrad"',
    ),
}


def _merge_imports(source: str, needed: dict) -> str:
    """``source`` with each needed name imported from its module: added to the module's own ``from M import``
    statement (names sorted as ruff sorts them), or a new statement after the last ``from grader`` import."""
    tree = syntax.parse(source)
    lines = source.split("\n")
    for module, names in needed.items():
        node = next((n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == module), None)
        if node is None:
            after = max(
                (n.end_lineno for n in tree.body if isinstance(n, ast.ImportFrom) and (n.module or "") < module),
                default=0,
            )
            lines[after:after] = [f"from {module} import {', '.join(sorted(names, key=_import_order))}"]
        else:
            have = [a.name + (f" as {a.asname}" if a.asname else "") for a in node.names]
            new = sorted(set(have) | set(names), key=_import_order)
            if new == have:
                continue
            one = f"from {module} import {', '.join(new)}"
            text = [one] if len(one) <= 120 else [f"from {module} import (", *[f"    {n}," for n in new], ")"]
            lines[node.lineno - 1 : node.end_lineno] = text
        tree = syntax.parse("\n".join(lines))
    return "\n".join(lines)


def _import_order(name: str) -> tuple:
    """ruff's isort order inside one statement: CONSTANTS, then Classes, then functions."""
    base = name.split(" ")[0]
    return (0 if base.isupper() else 1 if base[:1].isupper() else 2, base)


def _indented(code: str) -> str:
    return "\n".join("    " + line for line in code.split("\n"))


MISCONCEPTION = f"{PLACEHOLDER} what a learner who gives this wrong answer believes, and why torch disagrees."


def declaration(qid: str, role: str, skeleton: Skeleton) -> str:
    function = qid.split(".", 1)[1].replace("-", "_")
    if role == "self-test":
        return generated_declaration(qid, function, skeleton)
    body = _indented(skeleton.experiment)
    return (
        f"@{ROLES[role]}(\n"
        f'    "{qid}",\n'
        f"    {skeleton.kind},\n"
        f'    prompt="{PLACEHOLDER} the program, stated completely. Skeleton: {skeleton.program}",\n'
        f'    explain="{PLACEHOLDER} the mechanism, in one or two sentences.",\n'
        f'    hints=("{PLACEHOLDER} a nudge, never the answer", "{PLACEHOLDER} the mechanism"),\n'
        f"    misconceptions=[\n"
        f"        (\n"
        f"            {skeleton.wrong},\n"
        f'            "{MISCONCEPTION}",\n'
        f"        )\n"
        f"    ],\n"
        f")\n"
        f"def {function}():\n"
        f"    # {PLACEHOLDER} the live experiment: run the program and return what torch shows\n"
        f"{body}\n"
    )


def generator(function: str, skeleton: Skeleton) -> str:
    """A self-test's generator: every self-test draws a program per learner and per attempt (grader/engine/variants.py)."""
    return (
        f"def {function}_program(d: Draw) -> Listing:\n"
        f'    """{PLACEHOLDER} the mechanism every program of this self-test shares."""\n'
        f"    # {PLACEHOLDER} draw programs of that mechanism whose answers differ (the first option of every\n"
        f"    # choice is the canonical program; no cell of the unit may show any of them)\n"
        f"{_indented(skeleton.draw)}\n"
    )


def generated_declaration(qid: str, function: str, skeleton: Skeleton, beside: bool = True) -> str:
    """A self-test's declaration, with its generator before it (``beside``), or without where the unit keeps its
    generators in generators.py."""
    wrong = skeleton.wrong.replace("lambda truth:", "lambda truth, p:")
    return (
        (generator(function, skeleton) + "\n\n" if beside else "") + f"@self_test(\n"
        f'    "{qid}",\n'
        f"    {skeleton.kind},\n"
        f"    program={function}_program,\n"
        f'    explain="{PLACEHOLDER} the mechanism, in one or two sentences, true for every program drawn.",\n'
        f'    hints=("{PLACEHOLDER} a nudge, never the answer", "{PLACEHOLDER} the mechanism"),\n'
        f"    misconceptions=[\n"
        f"        (\n"
        f"            {wrong},\n"
        f'            "{MISCONCEPTION}",\n'
        f"        )\n"
        f"    ],\n"
        f")\n"
        f"def {function}(p):\n"
        f"    # {PLACEHOLDER} the live experiment: run the program and return what torch shows\n"
        f"{_indented(skeleton.on_program)}\n"
    )


def cells(qid: str, role: str, skeleton: Skeleton) -> list[tuple[str, str]]:
    """(cell type, source) of the question's cells, in notebook order."""
    region = f"{BEGIN}\nanswer = {skeleton.answer}  # {PLACEHOLDER} your answer\n{END}\n"
    prose = f"**Question `{qid}`.** {PLACEHOLDER} the question, as the declaration's prompt states it. "
    prose += f"Skeleton: `{skeleton.program}`"
    if role == "self-test":
        mine = f'program("{qid}")'
        region = f"{BEGIN}\nanswer = {skeleton.answer_on.format(mine=mine)}  # torch's answer on your program\n{END}\n"
        prose = (
            f"**Question `{qid}`.** {PLACEHOLDER} what every program of this self-test asks. The cell below "
            "shows your own program."
        )
        return [("markdown", prose), ("code", mine), ("code", region + f'check("{qid}", answer)')]
    return [
        ("markdown", prose),
        ("code", region + f'predict("{qid}", answer)'),
        ("code", skeleton.shown),
        ("code", f'reveal("{qid}")'),
    ]


def _new_ids(anchor: str, taken: set, count: int) -> list[str]:
    out = []
    for letter in "abcdefghijklmnopqrstuvwxyz":
        if len(out) == count:
            break
        if anchor + letter not in taken:
            out.append(anchor + letter)
    if len(out) < count:
        raise NewQuestionError(f"no free cell ids after {anchor}; give --after another cell")
    return out


def insert(root: Path, unit: str, slug: str, kind: str, role: str = "predict", after: str | None = None) -> list[str]:
    """Insert the skeleton; returns what was written, one line each."""
    import nbformat

    unit = unit.zfill(2)
    qid = f"{unit}.{slug}"
    if not SLUG.fullmatch(slug):
        raise NewQuestionError(f"{slug!r}: a slug is lower case letters, digits and hyphens, starting with a letter")
    if kind not in SKELETONS:
        raise NewQuestionError(f"--kind {kind}: choose one of {', '.join(SKELETONS)}")
    if role not in ROLES:
        raise NewQuestionError(f"--role {role}: choose one of {', '.join(ROLES)}")
    if role == "self-test" and kind == "boolean":
        raise NewQuestionError("a self-test cannot be a Boolean (a retry would pass it); choose another kind")
    module = root / "grader" / "units" / f"unit{unit}" / "questions.py"
    notebooks = sorted((root / "solutions").glob(f"{unit}_*.ipynb"))
    if not module.exists() or len(notebooks) != 1:
        raise NewQuestionError(
            f"unit {unit}: needs grader/units/unit{unit}/questions.py and one solutions/{unit}_*.ipynb"
        )
    source = module.read_text(encoding="utf-8")
    function = slug.replace("-", "_")
    if f'"{qid}"' in source or re.search(rf"^def {function}\(", source, re.M):
        raise NewQuestionError(f"{qid} (or a function {function}) is already declared in {module.relative_to(root)}")
    path = notebooks[0]
    nb = nbformat.read(path, as_version=4)
    if any(f'"{qid}"' in c.source or f"`{qid}`" in c.source for c in nb.cells):
        raise NewQuestionError(f"{path.relative_to(root)} already names {qid}")
    ids = [c.get("id", "") for c in nb.cells]
    if after is not None:
        if after not in ids:
            raise NewQuestionError(f"--after {after}: no cell with that id in {path.relative_to(root)}")
        at = ids.index(after) + 1
    else:  # before the completion criterion, or before mark_passed
        at = next(
            (i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "Completion criterion" in c.source),
            next((i for i, c in enumerate(nb.cells) if "mark_passed(" in c.source), len(nb.cells)),
        )
    skeleton = SKELETONS[kind]
    new = cells(qid, role, skeleton)
    anchor = ids[at - 1] if at > 0 else "c000"
    made = []
    for cell_id, (cell_type, text) in zip(_new_ids(anchor, set(ids), len(new)), new):
        maker = nbformat.v4.new_markdown_cell if cell_type == "markdown" else nbformat.v4.new_code_cell
        made.append(maker(text, id=cell_id))
    nb.cells[at:at] = made
    needed = {"grader.engine.question": [ROLES[role]], **skeleton.imports}
    generators = module.with_name("generators.py")
    kept_apart = role == "self-test" and generators.exists()
    if role == "self-test" and not kept_apart:
        needed["grader.engine.variants"] = ["Draw", "Listing"]
    if kept_apart:
        needed[f"grader.units.unit{unit}.generators"] = [f"{function}_program"]
        apart = _merge_imports(generators.read_text(encoding="utf-8"), {"grader.engine.variants": ["Draw", "Listing"]})
        generators.write_text(apart.rstrip("\n") + "\n\n\n" + generator(function, skeleton), encoding="utf-8")
    if not re.search(r"^import torch$", source, re.M):  # a third-party block of its own, before grader's
        first = next(
            n for n in syntax.parse(source).body if isinstance(n, ast.ImportFrom) and n.module.startswith("grader")
        )
        lines = source.split("\n")
        lines[first.lineno - 1 : first.lineno - 1] = ["import torch", ""]
        source = "\n".join(lines)
    merged = _merge_imports(source, needed)
    text = (
        generated_declaration(qid, function, skeleton, beside=False) if kept_apart else declaration(qid, role, skeleton)
    )
    module.write_text(_placed(merged, text, _asked_before(nb.cells[:at])), encoding="utf-8")
    path.write_text(dumps(nb), encoding="utf-8")
    where = f"{module.relative_to(root)}" + (f" and {generators.relative_to(root)}" if kept_apart else "")
    return [
        f"{where}: declared {qid} ({ROLES[role]}, {skeleton.kind}), in notebook order",
        f"{path.relative_to(root)}: cells {', '.join(c.id for c in made)} after cell {anchor}",
        f"fill in every '{PLACEHOLDER}' in both (build refuses them until then), then "
        f"`python -m grader build --execute --unit {unit}` (stores its outputs) and `python -m grader build` "
        "(the learner notebooks and the manifest of live answers); a new question makes a new course version: "
        f"`python -m grader release-version X.Y.Z`; then `make test-unit U={unit}`",
    ]


QID_IN_CELL = re.compile(r"""(?:predict|reveal|check|program)\(\s*["'](\d\d[a-z]?\.[a-z0-9-]+)["']""")


def _asked_before(cells: list) -> list[str]:
    """The question ids the cells before the new ones ask, in notebook order."""
    return [m for c in cells if c.get("cell_type") == "code" for m in QID_IN_CELL.findall(c.get("source", ""))]


def _placed(source: str, declaration_text: str, before: list[str]) -> str:
    """``declaration_text`` in ``source`` right after the declaration of the last question of ``before`` that the
    module declares (declaration order is the panel's and the gradebook's order, and follows the notebook's), else
    at the end."""
    ends: dict[str, int] = {}
    for node in syntax.parse(source).body:
        for deco in getattr(node, "decorator_list", []):
            first = deco.args[0] if isinstance(deco, ast.Call) and deco.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                ends[first.value] = node.end_lineno or node.lineno
    after = next((ends[qid] for qid in reversed(before) if qid in ends), None)
    if after is None:
        return source.rstrip("\n") + "\n\n\n" + declaration_text
    lines = source.split("\n")
    return "\n".join([*lines[:after], "", "", *declaration_text.rstrip("\n").split("\n"), *lines[after:]]) + (
        "" if source.endswith("\n") else "\n"
    )
