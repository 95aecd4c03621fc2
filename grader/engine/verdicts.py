"""The names of what a learner did (actions), of what was decided (verdicts) and of the part a question plays
(roles): one closed list of each; and the one conversion of a kind's reading of an answer into a verdict.

They are Literal types, so mypy checks every place that writes one or compares with one (``strict_equality``:
``q.role == "self_test"`` is an error), and they are the plain strings the progress store has always held (a 0.1
file reads as it is). Control flow compares these names, never a message's text. A stored text outside the lists
(a newer course wrote it, or someone edited the file) reads as ``"unknown"``, which no step of the replay takes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

Role = Literal[
    "predict",  # predict-then-run: a prediction locked in, then torch's answer revealed beside it
    "self-test",  # answered with check() at the end of a unit, on a program of the learner's own
    "exercise",  # a function the learner writes, checked on generated cases
]

Action = Literal[
    "predict",
    "reveal",
    "check",
    "hint",
    "reset",
    "mark",
    "status",
    "review",  # a fresh program of a passed self-test, answered when the spaced schedule says it is due
    "program",  # a generated self-test's program shown (never stored)
    "answer-key",  # a grading run: a cell called a question's sealed experiment (engine.question.seal)
    "unknown",
]

Verdict = Literal[
    "correct",  # torch agreed (a check, or a prediction at its reveal)
    "incorrect",  # torch disagreed
    "passed",  # a unit marked passed
    "recorded",  # a prediction, hint or reset written down
    "refused",  # Mark passed refused: something is missing
    "revealed",  # torch's answer shown without a prediction
    "unanswered",  # the placeholder was still there
    "invalid",  # the answer could not be read as the question's kind
    "locked",  # a prediction refused: the answer had been revealed
    "error",  # the grader could not run the experiment
    "info",  # a message with no verdict (status, hint, reset)
    "not recomputed",  # gradebook: an exercise whose function could not be re-run
    "unknown",  # a stored verdict this version does not know
]

Graded = Literal["correct", "incorrect"]  # the verdicts of a graded answer: only these count as an attempt
Unread = Literal["unanswered", "invalid"]  # why an answer has no value to grade

ROLES: tuple[Role, ...] = get_args(Role)
ACTIONS: tuple[Action, ...] = get_args(Action)
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
GRADED: tuple[Graded, ...] = get_args(Graded)


def action_of(text: object) -> Action:
    """A stored action's name as an Action; ``"unknown"`` for any other text."""
    for name in ACTIONS:
        if text == name:
            return name
    return "unknown"


def verdict_of(text: object) -> Verdict:
    """A stored verdict's name as a Verdict; ``"unknown"`` for any other text."""
    for name in VERDICTS:
        if text == name:
            return name
    return "unknown"


@dataclass(frozen=True)
class Reading:
    """A kind's reading of an answer: its value, or (``unread``) the verdict that it has none, with the kind's
    words for why (``why``: a BadAnswer's message; an Unanswered's, usually empty)."""

    value: Any = None
    unread: Unread | None = None
    why: str = ""


def read_answer(read: Callable[[], Any]) -> Reading:
    """An answer as ``read`` reads it (a kind's ``read`` or ``read_recorded`` of it): the placeholder is "unanswered",
    an answer the kind cannot read "invalid"; anything else the reading raises is the caller's to handle."""
    from grader.engine.kinds import BadAnswer, Unanswered  # here: the store reads these names without torch

    try:
        return Reading(read())
    except Unanswered as exc:
        return Reading(unread="unanswered", why=str(exc))
    except BadAnswer as exc:
        return Reading(unread="invalid", why=str(exc))


def graded(agrees: bool) -> Graded:
    """The verdict of an answer compared with torch's: "correct" where they agree, else "incorrect"."""
    return "correct" if agrees else "incorrect"
