"""The student bundle: what learners get, and nothing they should not.

``python -m grader release OUT/`` writes the learner notebooks (generated from solutions/, outputs
cleared), the grader package without the instructor's tools (``grader/instructor/``: grading, collect, the class
view, build; ``python -m grader`` there offers the learner's commands alone, :mod:`grader.learner.commands`), the
install files, LICENSE and a short README, and never solutions/ (with the manifest of every live answer), the tests
(with their reference implementations) or the instructors' tools. ``--zip`` also packs it. It is also what a hub
installs for its learners (README, "Deploy on an existing hub"; ``hub/Dockerfile``): a learner's account can read
all of it, and nothing in it gives an answer away.

The bundle's Makefile is the repository's without the targets that need what the bundle leaves out
(``test``, ``lint``, ``hub``, ``drift``, ``build``...: :func:`learner_makefile`), so ``make lab`` there
installs the course alone, as it does here.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from grader.instructor.build import BEGIN, ROOT, dumps, learner_copy

# What a learner needs to run the notebooks, relative to the repository root.
FILES = ("pyproject.toml", "environment.yml", "LICENSE", "jupyter/overrides.json")
# The Makefile's targets a bundle can run: the course's install, its system packages, JupyterLab, clean.
# Every other target (the tests, lint, the hub, drift, build) needs solutions/, tests/ or tools/.
LEARNER_TARGETS = ("install", "system-deps", "lab", "clean")
FORBIDDEN = ("solutions", "tests", "bench", ".ci", ".github", "docs", "grader/instructor", "hub", "tools")

README = """# autograd-lab: your copy of the course

Two commands, on a machine with Python 3.10+ and `make`:

```
make lab                              # installs the course (CPU build of torch, about 1.5 GB), opens JupyterLab
.venv/bin/python -m grader status     # where you are: each unit passed, in progress or not started
```

In JupyterLab's own terminal, `grader status` does the same.

Conda users: `conda env create -f environment.yml`, `conda activate autograd-lab`,
`python -m grader workspace` (your own copies of the notebooks, in `my-work/`), then
`jupyter lab my-work/00_start_here.ipynb`. Work in `my-work/`: `notebooks/` is the course as shipped.

Work through the units in order. In each you predict what torch will do, run it, and see your
prediction beside torch's live answer; `unit_panel` at the end of a unit marks it passed. Your
progress is kept in your user data folder (`python -m grader status` shows it).

Each self-test draws a program for you: from your identity (`python -m grader identity` shows it; one is made
for you the first time), the question and your attempt. You need not set one: the notebooks you hand in carry the
identity their programs were drawn for, and you are graded on those programs. Work on one machine, or run
`python -m grader identity NAME` with the same name on each (your instructor may ask for your roster id): two
learners handing in work drawn for one identity are both named to the instructor.

Hand in the notebooks as your instructor asks (a folder, a zip, the LMS or the hub): the instructor
re-runs them and recomputes every verdict with live torch. A notebook edited in Colab, or saved by an older tool
that drops the cells' ids, is still graded: its cells are matched by their source.
"""


_RULE = re.compile(r"^([^\s#=:][^=:\n]*?)[ \t]*:(?!=)", re.M)  # a rule's targets, at a line's start


def learner_makefile(text: str) -> str:
    """The repository's Makefile for the bundle: its paragraphs (blank-line separated) that define a rule
    for a target outside :data:`LEARNER_TARGETS` (or for a file other than the install stamp) are left
    out, with their comments and variables, and ``.PHONY`` names what is left."""
    kept = []
    for paragraph in text.split("\n\n"):
        targets = {t for m in _RULE.finditer(paragraph) for t in m.group(1).split()}
        targets.discard(".PHONY")
        if targets - {*LEARNER_TARGETS, "$(STAMP)"}:
            continue
        kept.append(paragraph)
    body = "\n\n".join(kept)
    body = re.sub(r"^\.PHONY:.*$", ".PHONY: " + " ".join(LEARNER_TARGETS), body, count=1, flags=re.M)
    lines = body.split("\n")
    if lines[0].startswith("#"):  # the repository's own first line names make test
        lines[0] = "# autograd-lab, your copy: `make lab` installs the course and opens it in JupyterLab."
    return "\n".join(lines).rstrip("\n") + "\n"


class ReleaseError(Exception):
    """The bundle cannot be written; the text says why."""


def release(out: Path, root: Path = ROOT, make_zip: bool = False) -> list[str]:
    """Write the student bundle into ``out`` (which must not exist or be empty). Returns what was written."""
    import nbformat

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out} exists and is not an empty folder; choose a new one")
    inside = [root / name for name in ("solutions", "notebooks", "grader")]
    if out.resolve() == root.resolve() or any(
        p.resolve() in out.resolve().parents or p.resolve() == out.resolve() for p in inside
    ):
        raise ReleaseError(f"{out} is inside the course's own folders; choose a folder outside them")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted((root / "solutions").glob("*.ipynb")):
        nb = learner_copy(nbformat.read(path, as_version=4), path.name)
        target = out / "notebooks" / path.name
        target.parent.mkdir(exist_ok=True)
        target.write_text(dumps(nb), encoding="utf-8")
        written.append(f"notebooks/{path.name}")
    instructor = (root / "grader" / "instructor").resolve()

    def left_out(folder: str, names: list[str]) -> list[str]:
        """What of ``folder`` is not copied: caches, and the instructor's tools (grader/instructor/)."""
        skipped = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")(folder, names)
        return [*skipped, *(n for n in names if (Path(folder) / n).resolve() == instructor)]

    shutil.copytree(root / "grader", out / "grader", ignore=left_out)
    written.append("grader/")
    (out / "Makefile").write_text(learner_makefile((root / "Makefile").read_text(encoding="utf-8")), encoding="utf-8")
    written.append("Makefile")
    for name in FILES:
        if (root / name).exists():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, out / name)
            written.append(name)
    (out / "README.md").write_text(README, encoding="utf-8")
    written.append("README.md")
    problems = check_bundle(out)
    if problems:
        shutil.rmtree(out, ignore_errors=True)
        raise ReleaseError("the bundle would give away solutions: " + "; ".join(problems))
    if make_zip:
        archive = shutil.make_archive(str(out), "zip", root_dir=out.parent, base_dir=out.name)
        written.append(Path(archive).name)
    return written


BUILDER = Path("grader/instructor/build.py")  # names the markers it strips


def check_bundle(out: Path) -> list[str]:
    """What in a bundle should not be there: solution folders, or a solution region anywhere."""
    problems = [f"{name}/ is in the bundle" for name in FORBIDDEN if (out / name).exists()]
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".ipynb", ".py", ".md", ".json"):
            if BEGIN in path.read_text(encoding="utf-8", errors="replace") and path.relative_to(out) != BUILDER:
                problems.append(f"{path.relative_to(out)} holds a solution region")
    return problems
