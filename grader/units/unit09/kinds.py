"""Unit 09's own answer kind: what a program did under a learner's pair (``09.half-guard``), one of
:data:`GUARD_LABELS` with a line of detail for people.
"""

from __future__ import annotations

from grader.engine.kinds import BadAnswer, Kind, short

# what a program can do under a pair (the exercise's answers)
RAISED = "raised at backward"
CLEAN = "no error"
WRONG = "no error, wrong gradients"
TOO_MUCH = "no error, holds too much memory"
LEAKS = "no error, memory outlives the graph"
EARLY = "raised before backward"
GUARD_LABELS = (RAISED, CLEAN, WRONG, TOO_MUCH, LEAKS, EARLY)


class GuardVerdict(Kind):
    """What a program did under a pair: one of GUARD_LABELS, with a line of detail for people."""

    label = "what the program did"

    def describe(self):
        return "one of " + ", ".join(repr(x) for x in GUARD_LABELS)

    def read(self, answer):
        if isinstance(answer, tuple) and len(answer) == 2:
            label, detail = answer
        else:
            label, detail = answer, ""
        if label not in GUARD_LABELS:
            raise BadAnswer(f"{short(label)} is not {self.describe()}")
        return label, str(detail)

    def agrees(self, truth, value):
        return truth[0] == value[0]

    def show(self, value):
        label, detail = value
        return f"{label} ({detail})" if detail else label

    def encode(self, value):
        return value[0]

    def wrong_answers(self, truth):
        return [x for x in GUARD_LABELS if x != truth[0]]
