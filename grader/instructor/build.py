"""One source: learner notebooks are generated from solutions/.

In a solution's code cell, an answer sits between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (nbgrader's markers). ``build`` writes the learner copy:

* a region inside a function body becomes ``raise NotImplementedError()``
  (the cell still runs; checking the function says "not answered yet");
* a region at the top level may only assign names, and each assignment
  becomes ``name = ...`` (a placeholder every question reads as unanswered);
* every output and execution count is cleared.

``build(check=True)`` writes nothing and lists the notebooks that differ. Both, and ``execute_solutions``,
refuse a solution notebook or questions module that still holds a ``new-question`` skeleton's placeholder
(:mod:`grader.instructor.new_question`).

Solutions run in a fresh kernel that talks to us over IPC sockets in a temporary folder where the system has
them (not TCP on localhost, which made every kernel print "Kernel is running over TCP without encryption").
"""

from __future__ import annotations

import ast
import copy
import json
import os
import tempfile
from pathlib import Path

import nbformat

from grader.engine import env_vars, syntax

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
PLACEHOLDER = "NEW-QUESTION: fill in"  # what a new-question skeleton leaves for its author (new_question.py)
ROOT = Path(__file__).resolve().parents[2]


class BuildError(Exception):
    """A solution notebook cannot be turned into a learner notebook; the text says where."""


def _placeholder_for(region: list[str], indent: str, where: str) -> list[str]:
    if indent:
        return [f"{indent}# YOUR CODE HERE", f"{indent}raise NotImplementedError()"]
    source = "\n".join(region)
    try:
        tree = syntax.parse(source)
    except SyntaxError as exc:
        raise BuildError(f"{where}: the solution region does not parse ({exc.msg})") from None
    out = []
    for node in tree.body:
        if _scratch(node):  # the solution's own working: the learner writes theirs
            continue
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else None
        )
        if not targets or not all(isinstance(t, ast.Name) for t in targets):
            raise BuildError(
                f"{where}: a top-level solution region may only assign names "
                f"(line {node.lineno}: {ast.get_source_segment(source, node)!r})"
            )
        for t in targets:
            out.append(f"{t.id} = ...  # YOUR ANSWER HERE")
    return out


def _scratch(node: ast.stmt) -> bool:
    """The solution's scratch, which gets no placeholder (a self-test's solution that works on the learner's program
    before it assigns ``answer``): an assignment to names that all start with ``_``, or an expression that reads
    only such names (``_mine["y"].backward()``), or a function named so (``def _breaks(name): ...``)."""
    if isinstance(node, ast.FunctionDef):
        return node.name.startswith("_")
    if isinstance(node, ast.Assign):
        return all(isinstance(t, ast.Name) and t.id.startswith("_") for t in node.targets)
    if isinstance(node, ast.Expr):
        names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
        return bool(names) and all(name.startswith("_") for name in names)
    return False


def strip_solutions(source: str, where: str = "cell") -> str:
    lines = source.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == BEGIN:
            indent = line[: len(line) - len(line.lstrip())]
            j = i + 1
            while j < len(lines) and lines[j].strip() != END:
                if lines[j].strip() == BEGIN:
                    raise BuildError(f"{where}: a solution region opens inside another")
                j += 1
            if j == len(lines):
                raise BuildError(f"{where}: {BEGIN} at line {i + 1} has no {END}")
            region = [l[len(indent) :] if l.startswith(indent) else l for l in lines[i + 1 : j]]
            out.extend(_placeholder_for(region, indent, f"{where}, line {i + 1}"))
            i = j + 1
            continue
        if line.strip() == END:
            raise BuildError(f"{where}: {END} at line {i + 1} without {BEGIN}")
        out.append(line)
        i += 1
    return "\n".join(out)


def has_solution(source: str) -> bool:
    return any(line.strip() == BEGIN for line in source.split("\n"))


def learner_copy(nb: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    out = copy.deepcopy(nb)
    for index, cell in enumerate(out.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source, f"{name}, cell {index + 1}")
            cell.outputs = []
            cell.execution_count = None
    out.metadata.pop("widgets", None)
    return out


def dumps(nb: nbformat.NotebookNode) -> str:
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def placeholders(root: Path, only: list[str] | None = None) -> list[str]:
    """Where a skeleton's :data:`PLACEHOLDER` is still in a solution notebook or a unit's questions module."""
    found = []
    for path in sorted((root / "solutions").glob("*.ipynb")):
        if only and path.name.split("_")[0] not in {u.zfill(2) for u in only}:
            continue
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if PLACEHOLDER in cell.source:
                found.append(f"solutions/{path.name}, cell {index + 1} (id {cell.get('id', '?')})")
    for path in sorted((root / "grader" / "units").glob("unit*/questions.py")):
        if only and not any(path.parent.name == f"unit{u.zfill(2)}" for u in only):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if PLACEHOLDER in line:
                found.append(f"{path.relative_to(root)}, line {number}")
    return found


def _refuse_placeholders(root: Path, only: list[str] | None) -> None:
    left = placeholders(root, only)
    if left:
        raise BuildError(
            f"a new question's skeleton is not filled in yet ('{PLACEHOLDER}' in " + "; ".join(left) + "): "
            "write its prompt, explanation, prose and experiment, then build again"
        )


def build(root: Path = ROOT, check: bool = False, only: list[str] | None = None) -> list[str]:
    """Write notebooks/ from solutions/ (or, with check, list what differs). Returns the differences.

    ``only`` (unit ids such as '03') limits the work to those units' notebooks.
    """
    _refuse_placeholders(root, only)
    solutions, notebooks = root / "solutions", root / "notebooks"
    differences = []
    expected = {}
    for path in sorted(solutions.glob("*.ipynb")):
        if only and path.name.split("_")[0] not in {u.zfill(2) for u in only}:
            continue
        nb = nbformat.read(path, as_version=4)
        expected[path.name] = dumps(learner_copy(nb, path.name))
    for name, text in expected.items():
        target = notebooks / name
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current != text:
            differences.append(
                f"notebooks/{name} " + ("is missing" if current is None else "differs from what solutions/ generates")
            )
            if not check:
                notebooks.mkdir(exist_ok=True)
                target.write_text(text, encoding="utf-8")
    for path in sorted(notebooks.glob("*.ipynb")) if notebooks.exists() and not only else []:
        if path.name not in expected:
            differences.append(f"notebooks/{path.name} has no solution in solutions/")
    return differences


def execute(path: Path, strict: bool = True, timeout: int = 300, home: str | None = None) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel (throwaway progress store) and return it."""
    from nbclient import NotebookClient
    from traitlets.config import Config

    from grader.engine import identity, variants

    nb = nbformat.read(path, as_version=4)
    saved = {k: os.environ.get(k) for k in (env_vars.STRICT, env_vars.HOME, identity.ENV, variants.MASTERY_ENV)}
    with tempfile.TemporaryDirectory(prefix="agl-run-") as tmp:
        # IPC where there are Unix sockets: no TCP port, and no warning from the kernel about one
        sockets = (
            {"KernelManager": {"transport": "ipc", "ip": os.path.join(tmp, "kernel")}} if os.name == "posix" else {}
        )
        os.environ[env_vars.HOME] = home or tmp
        # the course's own run: every self-test asks the course identity's programs, so stored outputs are stable
        os.environ[identity.ENV] = identity.COURSE
        os.environ.pop(variants.MASTERY_ENV, None)
        if strict:
            os.environ[env_vars.STRICT] = "1"
        else:
            os.environ.pop(env_vars.STRICT, None)
        try:
            client = NotebookClient(
                nb,
                timeout=timeout,
                kernel_name="python3",
                record_timing=False,
                store_widget_state=False,
                resources={"metadata": {"path": str(path.parent)}},
                config=Config(sockets),
            )
            client.execute()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return nb


def normalise_outputs(nb: nbformat.NotebookNode, where: str = "notebook", root: Path = ROOT) -> None:
    """Store only what a change changes: one stream output per name and cell (kernels chunk streams
    differently from run to run), the same execution count (1) on every cell that has outputs (nbval
    needs one; numbering them would renumber every later cell when one is added), no widget state or
    views (models get new random ids on every run). A machine path in an output (this checkout, the
    Python environment) is refused: it would differ on every other machine."""
    import sys

    nb.metadata.pop("widgets", None)
    machine = {p for p in (str(root), sys.prefix, os.path.expanduser("~")) if len(p) > 1}
    for index, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        merged = []
        for out in cell.get("outputs", []):
            out.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
            if out.get("output_type") == "execute_result":
                out["execution_count"] = 1
            if (
                out.get("output_type") == "stream"
                and merged
                and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == out.get("name")
            ):
                merged[-1]["text"] = merged[-1]["text"] + out["text"]
                continue
            merged.append(out)
        cell.outputs = merged
        cell.execution_count = 1 if merged else None
        text = json.dumps(merged)
        for path in machine:
            if path in text:
                raise BuildError(
                    f"{where}, cell {index + 1}: an output shows a path of this machine ({path}); "
                    "print something that is the same everywhere (filter warnings by category)"
                )


def execute_solutions(root: Path = ROOT, only: list[str] | None = None) -> list[str]:
    """Re-run solution notebooks in place (strict mode), storing their normalised outputs."""
    _refuse_placeholders(root, only)
    done = []
    for path in sorted((root / "solutions").glob("*.ipynb")):
        if only and path.name.split("_")[0] not in {u.zfill(2) for u in only}:
            continue
        nb = execute(path, strict=True)
        normalise_outputs(nb, f"solutions/{path.name}", root)
        path.write_text(dumps(nb), encoding="utf-8")
        done.append(path.name)
    return done
