"""What passes between the grading pipeline's steps: a submission found, restored, executed and graded.

:func:`find` is the first step (every notebook under the paths given becomes a :class:`Submission`); the later
steps (:mod:`.restore`, :mod:`.pipeline`'s execute and recompute) each hand the next one of the values below.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from grader.instructor.grading import lms_names


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
    notebook: dict | None = None  # the notebook with grader-owned cells put back
    unit: str = "?"
    status: str = "ok"
    problems: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    exercises: dict = field(default_factory=dict)  # qid -> exercise_sources.ExerciseSource
    copy: object = None  # copies.CopyContents: what the copy holds
    runs: list = field(default_factory=list)  # per cell: whether the grading run executes it (slicing.needed)
    handed_out: str | None = None  # the course version the class was handed (grade --handed-out)
    variants: dict = field(default_factory=dict)  # qid -> variants.Carried: what the copy's records say was asked
    revealed_first: dict = field(default_factory=dict)  # qid -> why the copy shows torch's answer before its prediction


@dataclass
class Execution:
    status: str = "ok"
    problems: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    events: list = field(default_factory=list)
    isolation: str = ""
    seconds: float = 0.0


@dataclass
class GradedSubmission:
    submission: Submission
    status: str = "ok"
    problems: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    units: list = field(default_factory=list)  # Recomputed, one per unit
    isolation: str = ""
    seconds: float = 0.0
    unit: str = "?"
    copy: object = None  # copies.CopyContents, from restore
    facts: list = field(
        default_factory=list
    )  # for the class report (grader.instructor.grading.report.facts_of), one per unit
    halves: list = field(default_factory=list)  # the same copy graded as the units split from its own (grade_one)
    identity: str = ""  # whose programs its self-tests were judged on (judged_identity)

    def graded(self) -> list[GradedSubmission]:
        """This grading and each half's: what the gradebook writes rows for."""
        return [self, *self.halves]


# --- step 1: find ---------------------------------------------------------------------------


def find(paths: list[str], pattern=None) -> list[Submission]:
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
