"""The answer kind only unit 12 uses: a fault and the module it sits in, read from a training setup."""

from __future__ import annotations

from torch import nn

from grader.engine.kinds import BadAnswer, Kind, reject_common, short, type_words
from grader.units.unit12.support import FAULTS, NO_FAULT, VERDICTS, Finding


class FaultInModule(Kind):
    """A fault and the module it sits in, or 'no fault'. Any module the grader's record points at is accepted."""

    label = "a fault and a module name"

    def describe(self):
        return "a pair (fault, module name), the fault one of " + ", ".join(repr(k) for k in FAULTS) + "; or 'no fault'"

    def _kind(self, text):
        if not isinstance(text, str):
            raise BadAnswer(
                f"the fault must be a string, one of {', '.join(map(repr, VERDICTS))}; got {type_words(text)}"
            )
        for k in VERDICTS:
            if text.strip().lower() == k:
                return k
        raise BadAnswer(f"{short(text)} is not a fault here; use one of {', '.join(map(repr, VERDICTS))}")

    def read(self, answer):
        if isinstance(answer, Finding):
            return (answer.kind, None if answer.kind == NO_FAULT else sorted(answer.where)[0])
        reject_common(answer, self.describe())
        if isinstance(answer, str):
            kind = self._kind(answer)
            if kind != NO_FAULT:
                raise BadAnswer(f"also give the module: ({kind!r}, module name as in model.named_modules())")
            return (NO_FAULT, None)
        if isinstance(answer, (tuple, list)) and len(answer) == 2:
            kind = self._kind(answer[0])
            if kind == NO_FAULT:
                if answer[1] not in (None, ""):
                    raise BadAnswer("'no fault' has no module; answer just 'no fault'")
                return (NO_FAULT, None)
            where = answer[1]
            if isinstance(where, nn.Module):
                raise BadAnswer("give the module's name (from model.named_modules()), not the module itself")
            if not isinstance(where, str):
                raise BadAnswer(f"the module must be its name, a string; got {type_words(where)}")
            return (kind, where.strip())
        raise BadAnswer(f"expected {self.describe()}; got {type_words(answer)}")

    def truth(self, value):
        if isinstance(value, Finding):
            return (value.kind, frozenset(value.where))
        raise ValueError(f"a diagnosis experiment returns a Finding, got {value!r}")

    def agrees(self, truth, value):
        if truth[0] != value[0]:
            return False
        return truth[0] == NO_FAULT or value[1] in truth[1]

    def show(self, value):
        if value[0] == NO_FAULT:
            return NO_FAULT
        where = value[1]
        if isinstance(where, frozenset):
            return f"{value[0]}, in {' or '.join(repr(w) for w in sorted(where))}"
        return f"{value[0]}, in {where!r}"

    def encode(self, value):
        if value[0] == NO_FAULT:
            return NO_FAULT
        where = value[1]
        return [value[0], sorted(where)[0] if isinstance(where, frozenset) else where]

    def verdict_note(self, truth, value):
        if truth[0] == value[0] != NO_FAULT:
            return "the fault is right; the module is not one torch's record points at"
        return ""

    def wrong_answers(self, truth):
        some = sorted(truth[1])[0] if truth[1] else "enc"
        out = [(k, some) for k in FAULTS if k != truth[0]]
        if truth[0] != NO_FAULT:
            out += [NO_FAULT, (truth[0], "not a module")]
        return out
