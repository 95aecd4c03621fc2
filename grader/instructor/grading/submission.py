"""What passes between the grading pipeline's steps: a submission found, restored, executed and graded.

:func:`find` is the first step (every notebook under the paths given becomes a :class:`Submission`); the later
steps (:mod:`.restore`, :mod:`.pipeline`'s execute and recompute) each hand the next one of the values below.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.instructor.grading import lms_names

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from grader.engine.store import Event
    from grader.engine.variants import Carried
    from grader.instructor.grading.copies import CopyContents
    from grader.instructor.grading.exercise_sources import ExerciseSource
    from grader.instructor.grading.verify import Recomputed


@dataclass
class Submission:
    learner: str
    path: Path
    problem: str = ""  # set by find() for a path that cannot be a notebook (a broken link, say)
    named: lms_names.Named | None = None  # how find() named it: the file as handed in, the LMS's id, late
    identity: str = ""  # whose programs its generated self-tests are judged on (grade: the learner, or a roster id)
    mastery: int | None = None  # right answers in a row that pass a generated self-test (grade --mastery)

    def whose(self) -> str:
        return self.identity or self.learner


@dataclass
class Restored:
    submission: Submission
    notebook: NotebookNode | None = None  # the notebook with grader-owned cells put back (None: not restored)
    unit: str = "?"
    status: str = "ok"
    problems: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    exercises: dict[str, ExerciseSource] = field(default_factory=dict)  # qid -> the function rebuilt from the copy
    copy: CopyContents | None = None  # what the copy holds (None: not read that far)
    runs: list[bool] = field(default_factory=list)  # per cell: whether the grading run executes it (slicing.needed)
    handed_out: str | None = None  # the course version the class was handed (grade --handed-out)
    variants: dict[str, Carried] = field(default_factory=dict)  # qid -> what the copy's records say was asked
    revealed_first: dict[str, str] = field(default_factory=dict)  # qid -> why the copy shows torch's answer first


@dataclass
class Execution:
    status: str = "ok"
    problems: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    isolation: str = ""
    seconds: float = 0.0


@dataclass
class GradedSubmission:
    submission: Submission
    status: str = "ok"
    problems: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    units: list[Recomputed | None] = field(default_factory=list)  # one per unit; None where none was recomputed
    isolation: str = ""
    seconds: float = 0.0
    unit: str = "?"
    copy: CopyContents | None = None  # from restore
    facts: list[dict[str, Any]] = field(default_factory=list)  # for the class report (report.facts_of), one per unit
    halves: list[GradedSubmission] = field(default_factory=list)  # the copy graded as the units split from its own
    identity: str = ""  # whose programs its self-tests were judged on (judged_identity)

    def graded(self) -> list[GradedSubmission]:
        """This grading and each half's: what the gradebook writes rows for."""
        return [self, *self.halves]


# --- step 1: find ---------------------------------------------------------------------------


def find(paths: list[str], pattern: re.Pattern | None = None) -> list[Submission]:
    """Every notebook under ``paths``, named by :func:`lms_names.name_of` (``pattern``: a --name-pattern)."""
    subs = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir() and not p.is_symlink():
            for nb in sorted(p.rglob("*.ipynb")):
                if ".ipynb_checkpoints" in nb.parts:
                    continue
                named = lms_names.name_of(nb, p, pattern)
                subs.append(Submission(named.learner, nb, _path_problem(nb), named))
        else:
            named = lms_names.name_of(p, p, pattern)
            subs.append(Submission(named.learner, p, _path_problem(p), named))
    return subs


def _path_problem(path: Path) -> str:
    try:
        info = os.lstat(path)
    except OSError:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link (not followed)" if path.exists() else "a broken symbolic link"
    if not stat.S_ISREG(info.st_mode):
        return "not a plain file"
    return ""
