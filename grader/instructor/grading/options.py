"""What one grading run was asked to do: every option of `grade`, built once by the command line and passed once.

The pipeline's steps read what they need from a :class:`GradeOptions`; the journal (``--resume``) keeps the parts
that change what a row holds (:meth:`GradeOptions.journal_key`), so a change of weights, roster or times redoes
the rows it would change.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from grader.instructor.grading import scores


@dataclass
class GradeOptions:
    jobs: int = 1
    cell_timeout: int = 60
    notebook_timeout: int = 600
    memory_mb: int = 3072
    html_dir: Path | None = None
    progress_to: TextIO | None = field(default_factory=lambda: sys.stderr)
    weights: scores.Weights | None = None
    ids: dict | None = None  # the roster: learner -> student ID
    times: dict | None = None  # notebook -> submission time (collect's, the LMS's, --times)
    wide: Path | None = None
    merge_into: Path | None = None
    shard: tuple[int, int] | None = None
    resume: bool = False
    report_to: Path | None = None
    handed_out: str | None = None  # the course version the class was handed (versions.py)
    name_pattern: Any = None  # a compiled --name-pattern (lms_names)
    keep: str = "latest"  # which of two copies of one unit (duplicates.py)
    lms: str | None = None
    lms_out: Path | None = None
    lms_columns: dict | None = None
    overrides: Any = None  # overrides.Overrides
    late_rule: Any = None  # late.LateRule
    identity_from: str = "learner"  # "learner" or "student-id": the identity a copy without records is judged on
    mastery: int | None = None  # right answers in a row that pass a generated self-test

    def journal_key(self) -> dict:
        """The options a journal's rows depend on: grading them again where any differs."""
        return {
            "cell_timeout": self.cell_timeout,
            "notebook_timeout": self.notebook_timeout,
            "memory_mb": self.memory_mb,
            "shard": list(self.shard) if self.shard else None,
            "handed_out": self.handed_out,
            "name_pattern": self.name_pattern.pattern if self.name_pattern is not None else None,
            "identity_from": self.identity_from,
            "mastery": self.mastery,
            # rows in the journal carry points and student ids: a change of weights, roster or times redoes them
            "rows": repr(
                (
                    vars(self.weights) if self.weights is not None else None,
                    sorted((self.ids or {}).items()),
                    sorted((self.times or {}).items()),
                    bool(self.html_dir),
                    self.overrides.fingerprint() if self.overrides else None,
                    self.late_rule.fingerprint() if self.late_rule else None,
                )
            ),
        }

    def say(self, text: str, **print_options: Any) -> None:
        """A line on the progress stream (nothing where there is none)."""
        if self.progress_to is not None:
            print(text, file=self.progress_to, **print_options)
