"""The answer kinds only unit 11 uses: a learner's ``torch.autograd.Function`` class, and the report that grades it."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd import Function as AutogradFunction
from torch.autograd.function import BackwardCFunction

from grader.engine.kinds import BadAnswer, Function, Kind, Unanswered, is_placeholder, type_words
from grader.units.switches import switched_off
from grader.units.unit11.cases import op_cases
from grader.units.unit11.support import function_report


class Report(Kind):
    """A Function's report on one case; it agrees with torch's when every fact does and it keeps no more."""

    label = "a report"

    def read(self, answer):
        answer = _tuples(answer)  # the encoded form (JSON lists) reads back as the report's tuples
        if not (
            isinstance(answer, tuple)
            and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in answer)
        ):
            raise BadAnswer(f"expected a report, got {type_words(answer)}")
        return answer

    def agrees(self, truth, value):
        mine = dict(value)
        for key, want in truth:
            got = mine.get(key)
            if key == "keeps":
                if got is None or got[0] > want[0] or got[1] > want[1] or got[3] > 0:
                    return False
            elif got != want:
                return False
        return True

    def _line(self, key, value, truth=None) -> str:
        if key == "keeps":
            saved, copies, stash_bytes, stash_count = value
            text = f"keeps {saved} bytes through save_for_backward"
            if copies:
                text += f" ({copies} of them a new tensor, neither an input nor an output)"
            if stash_count:
                text += f" and {stash_count} tensor(s) ({stash_bytes} bytes) on ctx, out of the version check"
            return text
        return f"{key}: {value}"

    def show(self, value):
        return "; ".join(self._line(k, v) for k, v in value)

    def verdict_note(self, truth, value):
        mine = dict(value)
        notes = []
        for key, want in truth:
            got = mine.get(key)
            if got is None:
                raised = [f"{k} {v}" for k, v in value if isinstance(v, str) and v.startswith("raised")]
                notes.append(raised[0] if raised else f"it stopped before {key}")
                break
            if key == "keeps":
                if got[3]:
                    notes.append(
                        "a tensor stashed on ctx escapes the version check: keep tensors with ctx.save_for_backward"
                    )
                elif got[1] > want[1]:
                    notes.append(
                        f"it keeps a new tensor of {got[1]} bytes for backward, where torch's op keeps "
                        "only its input or output"
                    )
                elif got[0] > want[0]:
                    notes.append(
                        f"it keeps {got[0]} bytes where torch's op keeps {want[0]}: save only what backward reads"
                    )
            elif got != want:
                notes.append(f"{key}: {got} (torch's op: {want})")
        return "; ".join(notes)

    def encode(self, value):
        return _lists(value)


def _tuples(value, depth: int = 0):
    if depth > 4:
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v, depth + 1) for v in value)
    return value


def _lists(value):
    return [_lists(v) for v in value] if isinstance(value, tuple) else value


class FunctionClass(Function):
    """A learner-written ``torch.autograd.Function`` subclass, passed as the class itself."""

    label = "a torch.autograd.Function subclass"

    def describe(self):
        return "a torch.autograd.Function subclass (the class itself, not Name.apply and not an instance)"

    def read(self, answer):
        if is_placeholder(answer):
            raise Unanswered()
        if isinstance(answer, type) and issubclass(answer, AutogradFunction):
            if answer is AutogradFunction:
                raise BadAnswer("that is torch.autograd.Function itself: pass your subclass of it")
            return answer
        owner = getattr(answer, "__self__", None)
        if isinstance(owner, type) and issubclass(owner, AutogradFunction):
            raise BadAnswer(f"pass the class {owner.__name__} itself, not {owner.__name__}.apply")
        raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")


# what a stable softplus would otherwise borrow: torch's own softplus (F.softplus, nn.Softplus) and the log-sum-exp
# family that computes it without overflow
REFERENCE_OPS = {
    "softplus": (
        torch.ops.aten.softplus,
        torch.ops.aten.logaddexp,
        torch.ops.aten.logaddexp2,
        torch.ops.aten.logsumexp,
    )
}
WITHOUT_REFERENCE = "write the stable formula from exp, log1p, abs, maximum or clamp"


def _own_node(cls: type, out):
    """``out`` itself, once its node is shown to be a node of ``cls`` (where it has one): a class whose ``apply`` was
    replaced by torch's op would hand back torch's node, and torch's gradient with it."""
    node = getattr(out, "grad_fn", None)
    if node is not None and not isinstance(node, BackwardCFunction):
        raise TypeError(
            f"the output's node is torch's {type(node).__name__}, not one of {cls.__name__}'s: run your own forward "
            "and backward through the Function's apply, without replacing apply"
        )
    return out


def learner_apply(op: str, cls: type) -> Callable:
    """``cls.apply``, refused where its output's node is not the class's own, and run with the op the exercise
    reproduces switched off (for its forward, inside gradcheck and vmap too); the grader's own runs of torch's op
    happen outside it."""
    refused = REFERENCE_OPS.get(op, ())

    def apply(*args):
        with switched_off(WITHOUT_REFERENCE, ops=refused):
            return _own_node(cls, cls.apply(*args))

    return apply


def exercise_kind(op: str) -> FunctionClass:
    return FunctionClass(
        returns=Report(),
        cases=lambda: op_cases(op),
        call=lambda cls, case, ns: function_report(op, learner_apply(op, cls), case),
        per_case_s=4.0,
        budget_s=40.0,
    )
