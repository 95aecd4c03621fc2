"""The names of what a learner did (actions) and of what was decided (verdicts): one closed list of each.

They are Literal types, so mypy checks every place in the engine that writes one, and they are the plain
strings the progress store has always held (a 0.1 file reads as it is). Control flow compares these
names, never a message's text. A stored text outside the lists (a newer course wrote it, or someone
edited the file) reads as ``"unknown"``, which no step of the replay takes.
"""

from __future__ import annotations

from typing import Literal, get_args

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

ACTIONS: tuple[Action, ...] = get_args(Action)
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

# the verdicts of a graded answer: only these count as an attempt
GRADED: tuple[Verdict, ...] = ("correct", "incorrect")


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
