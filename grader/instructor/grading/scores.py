"""Points: each question's weight by its role, and what a graded question earns.

The course's defaults are below; an instructor overrides them in a small TOML
file (``python -m grader grade ... --weights weights.toml``)::

    participation = 1      # a prediction made (locked in, and not shown to have come after torch's answer)
    correctness = 0        # ... and torch agreed with it: the learner's own record, honour-system (see below)
    self-test = 2          # a self-test passed (on any attempt)
    self-test-attempts = 0 # > 0: a self-test pays only when passed within that many graded attempts
    exercise = 4           # an exercise passed (every generated case)
    count-absent = false   # true: a question not in an older copy counts (0 points) in the maximum

    [questions]            # one question's own weight
    "01.graph-walk" = 6
    "01.pow-node" = { participation = 0, correctness = 2 }

A prediction earns its participation points when it was made (not left as the placeholder) and nothing the copy
shows puts it after torch's answer (a reveal recorded first, a lock after the reveal, a prediction cell that never
ran: :mod:`.prediction_order`). Whether it was really made before the reveal cannot be verified from a notebook:
the learner can always type an answer in after seeing torch's. So its correctness is reported (the question's
column says "predicted, correct") but earns nothing by default; an instructor who wants to pay it sets
``correctness`` and pays an honour-system record. A self-test or exercise earns its points when it passed (a
self-test not with an answer given before: its programs after the first avoid the answers already given). Some
self-tests have only a few possible answers, and cycling through them passes within as many attempts as there are
answers; ``self-test-attempts`` pays a self-test only when passed within that many (1: the first answer only).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader.engine.progress import QuestionState
from grader.engine.variants import REPEATED
from grader.engine.verdicts import Role

DEFAULTS = {"participation": 1.0, "correctness": 0.0, "self-test": 2.0, "exercise": 4.0}
PARTS: dict[Role, tuple[str, ...]] = {
    "predict": ("participation", "correctness"),
    "self-test": ("self-test",),
    "exercise": ("exercise",),
}


class WeightsError(ValueError):
    pass


@dataclass
class Weights:
    role: dict = field(default_factory=lambda: dict(DEFAULTS))
    questions: dict = field(default_factory=dict)  # qid -> {part: weight}
    count_absent: bool = False
    self_test_attempts: int = 0  # > 0: a self-test pays only when passed within that many graded attempts

    def of(self, qid: str, role: Role) -> dict:
        """{part: weight} for one question, such as {'participation': 1, 'correctness': 1}."""
        own = self.questions.get(qid, {})
        return {part: float(own.get(part, self.role[part])) for part in PARTS[role]}


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise WeightsError(f"{where} must be a number of points, 0 or more, not {value!r}")
    return float(value)


def load(path: Path | None) -> Weights:
    """The course's weights, with the instructor's file (if any) on top; WeightsError says what is wrong."""
    weights = Weights()
    if path is None:
        return weights
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10 has no tomllib: the same parser is the package tomli (a dependency there)
        import tomli as tomllib

    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise WeightsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise WeightsError(f"{path} is not TOML: {exc}") from None
    from grader.engine.question import load as questions

    known = questions()
    for key, value in data.items():
        if key in DEFAULTS:
            weights.role[key] = _number(value, key)
        elif key == "count-absent":
            if not isinstance(value, bool):
                raise WeightsError("count-absent is true or false")
            weights.count_absent = value
        elif key == "self-test-attempts":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise WeightsError("self-test-attempts is a whole number of attempts, 0 (no limit) or more")
            weights.self_test_attempts = value
        elif key == "questions" and isinstance(value, dict):
            for qid, own in value.items():
                q = known.get(qid)
                if q is None:
                    raise WeightsError(f"[questions] names {qid!r}, which is not a question of the course")
                parts = PARTS[q.role]
                if isinstance(own, dict):
                    wrong = [p for p in own if p not in parts]
                    if wrong:
                        raise WeightsError(
                            f"{qid} is a {q.role} question; its weights are {', '.join(parts)}, not {', '.join(wrong)}"
                        )
                    weights.questions[qid] = {p: _number(v, f"{qid}.{p}") for p, v in own.items()}
                elif len(parts) == 1:
                    weights.questions[qid] = {parts[0]: _number(own, qid)}
                else:
                    raise WeightsError(f"{qid} is a prediction: give {{ participation = .., correctness = .. }}")
        else:
            raise WeightsError(
                f"unknown setting {key!r}; the settings are "
                f"{', '.join([*DEFAULTS, 'self-test-attempts', 'count-absent', '[questions]'])}"
            )
    return weights


def honest(state: QuestionState, flag: str) -> bool:
    """A prediction locked in before torch's answer was shown (never after a reset that followed a reveal)."""
    return (
        state.predicted
        and flag not in ("predicted after reveal", "revealed without prediction")
        and not state.predicted_after_reveal
        and (state.predicted_before_reveal or not state.revealed)
    )


def correct(role: Role, state: QuestionState, flag: str) -> bool:
    """Torch agreed: an honest prediction revealed correct, or a self-test or exercise passed (a self-test not
    with an answer given before, :data:`grader.engine.variants.REPEATED`)."""
    if role == "predict":
        return honest(state, flag) and state.revealed and state.reveal_verdict == "correct"
    return state.passed and REPEATED not in flag


def earned(role: Role, state: QuestionState, flag: str, weights: dict, attempts_limit: int = 0) -> dict:
    """{part: points earned} for one recomputed question (``state`` is its progress.QuestionState); a self-test
    passed after more than ``attempts_limit`` graded attempts (where > 0) earns nothing."""
    if role == "predict":
        return {
            "participation": weights["participation"] if honest(state, flag) else 0.0,
            "correctness": weights["correctness"] if correct(role, state, flag) else 0.0,
        }
    part = PARTS[role][0]
    late = role == "self-test" and attempts_limit > 0 and state.attempts > attempts_limit
    return {part: weights[part] if correct(role, state, flag) and not late else 0.0}


def number(x: float):
    """A number as a spreadsheet reads it: 3 rather than 3.0, 66.7 rather than 66.66666."""
    x = round(float(x), 1)
    return int(x) if x == int(x) else x


def percent(points: float, maximum: float):
    return number(100 * points / maximum) if maximum else 0
