"""The answer kinds only unit 10 uses: a fault at a line of a training program, and the facts a repair restored."""

from __future__ import annotations

import numbers

from grader.engine.kinds import BadAnswer, Kind, reject_common, short, type_words
from grader.units.unit10.capstone import KINDS, NO_FAULT, VERDICTS, AuditFinding


class FaultAtLine(Kind):
    """A fault kind and the line it sits on, or 'no fault'. A statement spanning several lines (a
    with-block) is matched by any of its lines."""

    label = "a fault kind and a line number"

    def describe(self):
        return (
            "a pair (fault kind, line number), the kind one of " + ", ".join(repr(k) for k in KINDS) + "; or 'no fault'"
        )

    def _kind(self, text):
        if not isinstance(text, str):
            raise BadAnswer(
                f"the fault kind must be a string, one of {', '.join(map(repr, VERDICTS))}; got {type_words(text)}"
            )
        for k in VERDICTS:
            if text.strip().lower() == k:
                return k
        raise BadAnswer(f"{short(text)} is not a fault kind here; use one of {', '.join(map(repr, VERDICTS))}")

    def _line(self, value):
        number = getattr(value, "number", value) if not isinstance(value, (numbers.Number, str)) else value
        if isinstance(number, bool) or not isinstance(number, numbers.Integral):
            raise BadAnswer(f"the line must be a line number (an int, as in the listing), got {type_words(value)}")
        number = int(number)
        if number < 1:
            raise BadAnswer(f"line numbers start at 1; got {number}")
        return number

    def read(self, answer):
        if isinstance(answer, AuditFinding):
            answer = (answer.kind, answer.line)
        reject_common(answer, self.describe())
        if isinstance(answer, str):
            kind = self._kind(answer)
            if kind != NO_FAULT:
                raise BadAnswer(f"also give the line: ({kind!r}, line number)")
            return (NO_FAULT, None)
        if isinstance(answer, (tuple, list)) and len(answer) == 2:
            kind = self._kind(answer[0])
            if kind == NO_FAULT:
                if answer[1] not in (None, ""):
                    raise BadAnswer("'no fault' has no line; answer just 'no fault'")
                return (NO_FAULT, None)
            return (kind, self._line(answer[1]))
        raise BadAnswer(f"expected {self.describe()}; got {type_words(answer)}")

    def truth(self, value):
        if isinstance(value, AuditFinding):
            return (value.kind, value.line, value.last)
        if isinstance(value, tuple) and len(value) == 3:
            return value
        raise ValueError(f"a diagnosis experiment returns an AuditFinding, got {value!r}")

    def agrees(self, truth, value):
        if truth[0] != value[0]:
            return False
        return truth[0] == NO_FAULT or truth[1] <= value[1] <= truth[2]

    def show(self, value):
        if value[0] == NO_FAULT:
            return NO_FAULT
        if len(value) == 3 and value[2] != value[1]:
            return f"{value[0]}, at lines {value[1]}-{value[2]} (one statement)"
        return f"{value[0]}, at line {value[1]}"

    def encode(self, value):
        return NO_FAULT if value[0] == NO_FAULT else [value[0], value[1]]

    def verdict_note(self, truth, value):
        if truth[0] == value[0] != NO_FAULT:
            return "the kind is right; the line is not where torch's record puts the fault"
        return ""

    def wrong_answers(self, truth):
        line = truth[1] or 1
        out = [(k, line) for k in KINDS if k != truth[0]]
        if truth[0] != NO_FAULT:
            out += [NO_FAULT, (truth[0], truth[2] + 1)]
            if truth[1] > 1:
                out.append((truth[0], truth[1] - 1))
        return out
