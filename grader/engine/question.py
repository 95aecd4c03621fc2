"""Questions are declared once: an id, a kind, a prompt, the mechanism, and the live experiment.

A declaration reads like this::

    @predict_then_run("01.pow-node", Sequence(), prompt="...", explain="...")
    def pow_node():
        w = torch.tensor(2.0, requires_grad=True)
        y = (w * 3) ** 2
        return node_names(y)

The body is the experiment: torch answers at check time. Roles:

* ``predict_then_run``: predicted in the notebook, then revealed;
* ``self_test``: answered with ``check`` at the end of a unit; declared with ``program=`` (a generator,
  :mod:`grader.engine.variants`) its program is generated for each learner and attempt, and its experiment
  takes that :class:`~grader.engine.variants.Listing`;
* ``exercise``: a learner function, ``check``-ed on generated cases
  (its experiment takes one case and returns torch's answer for it).

An error question's experiment is a generator: it ``yield``s the name of
each place before running it, and the place it was in when torch raised is
the answer (see :func:`run_experiment`).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from collections.abc import Sequence as Seq
from dataclasses import dataclass
from typing import Any, TypeVar

from grader.engine import torch_state
from grader.engine.course import UNITS, unit_id
from grader.engine.kinds import NO_ERROR, Error, ErrorOutcome, Function, Kind
from grader.engine.moves import current_id
from grader.engine.variants import Draw, Generator, Listing
from grader.engine.verdicts import Role

# Where the units' declarations live: one package per unit, each with a questions module.
CONTENT_PACKAGE = "grader.units"

_ID = re.compile(r"^(\d\d[a-z]?)\.[a-z0-9][a-z0-9-]*$")
_Experiment = TypeVar("_Experiment", bound=Callable[..., Any])


@dataclass
class Question:
    qid: str
    unit: str
    role: Role
    kind: Kind
    prompt: str
    explain: str
    experiment: Callable
    order: int = 0
    hints: tuple[str, ...] = ()  # from a nudge to the mechanism, shown one at a time
    misconceptions: tuple[tuple[Any, str], ...] = ()  # (wrong answer, or a function of torch's answer; the note)
    program: Generator | None = None  # a self-test's generator: its program is drawn per learner and attempt

    def misconception(self, truth: Any, value: Any, program: Listing | None = None) -> str:
        """The note declared for a wrong answer learners actually give, when ``value`` is one; else ''. A wrong
        answer declared as a function of two arguments also gets the program asked (the canonical one if None)."""
        for wrong, note in self.misconceptions:
            try:
                answer = wrong_answer(self, wrong, truth, program)
                if answer is None:  # a generated program this misconception does not apply to
                    continue
                if self.kind.same_answer(self.kind.read_misconception(answer), value):
                    return note
            except Exception:  # a declared answer that no longer reads is not the learner's problem
                continue
        return ""

    def canonical(self) -> Listing | None:
        """The program a generated self-test asked before it had variants (every choice its first option)."""
        return self.program(Draw(None)) if self.program is not None else None

    def asked(self, program: Listing | None) -> Question:
        """This question as asked with ``program`` (its prompt that program's): what a front end shows."""
        if program is None:
            return self
        import dataclasses

        return dataclasses.replace(self, prompt=program.prompt)

    def run(self, *case: Any) -> Any:
        """Run the live experiment in a clean torch state and return torch's answer, normalised. A generated
        self-test's experiment takes the program (``q.run(program)``); without one, the canonical program."""
        if self.program is not None and not case:
            case = (self.canonical(),)
        with torch_state.clean_room():
            return (
                self.kind.truth(run_experiment(self.experiment, *case))
                if not isinstance(self.kind, Function)
                else self.kind.returns.truth(run_experiment(self.experiment, *case))
            )


def wrong_answer(q: Question, wrong: Any, truth: Any, program: Listing | None = None) -> Any:
    """A declared misconception's wrong answer: a literal, a function of torch's answer, or (a generated
    self-test's) a function of torch's answer and the program asked, which returns None for a program the
    misconception does not apply to (a trap that program does not set)."""
    if not callable(wrong):
        return wrong
    try:
        takes = len(inspect.signature(wrong).parameters)
    except (TypeError, ValueError):
        takes = 1
    if takes >= 2:
        return wrong(truth, program if program is not None else q.canonical())
    return wrong(truth)


def run_experiment(experiment: Callable, *args: Any) -> Any:
    if not inspect.isgeneratorfunction(experiment):
        return experiment(*args)
    place = NO_ERROR
    steps = experiment(*args)
    try:
        for place in steps:  # noqa: B007 - the last place reached is the answer: the except below reads it
            pass
    except Exception as exc:  # torch raised: that is the observation
        return ErrorOutcome(where=place, error=type(exc).__name__, message=str(exc))
    return ErrorOutcome(where=NO_ERROR)


REGISTRY: dict[str, Question] = {}
_loaded = False
SEALED = False  # set by seal(): the answer key is out of reach in this process (a grading sandbox)


class AnswerKeySealed(RuntimeError):
    """Raised by any question's experiment once the registry is sealed."""


def seal(on_call: Callable[[str], None] | None = None) -> None:
    """Put every question's experiment out of reach of the code this process runs next.

    Used where submitted code runs for the gradebook (the notebook's run, the exercise runner): torch's
    answers are computed by the grading process, never here. Every experiment, wherever a module holds
    it, and ``Question.run`` then raise :class:`AnswerKeySealed`; ``on_call(qid)`` hears each attempt.
    The learner's API records answers without computing a verdict while sealed."""
    global SEALED

    def refusal(qid: str) -> Callable[..., Any]:
        def sealed(*args: Any, **kwargs: Any) -> Any:
            if on_call is not None:
                on_call(qid)
            raise AnswerKeySealed(f"the answer key of {qid} is not available while grading")

        return sealed

    for q in load().values():
        gone = refusal(q.qid)
        module = importlib.import_module(getattr(q.experiment, "__module__", "") or "builtins")
        for name, value in list(vars(module).items()):
            if value is q.experiment:
                setattr(module, name, gone)
        q.experiment = gone

    def run(self: Question, *case: Any) -> Any:
        return self.experiment(*case)

    Question.run = run  # type: ignore[method-assign]
    SEALED = True


def _declare(
    role: Role,
    qid: str,
    kind: Kind,
    prompt: str,
    explain: str,
    hints: Seq[str] = (),
    misconceptions: Seq[tuple[Any, str]] = (),
    program: Generator | None = None,
) -> Callable[[_Experiment], _Experiment]:
    match = _ID.match(qid)
    if not match:
        raise ValueError(f"question id {qid!r} must look like '01.short-name'")
    unit = match.group(1)
    if unit not in UNITS:
        raise ValueError(f"question {qid!r} names unit {unit}, which the course does not have")
    if (role == "exercise") != isinstance(kind, Function):
        raise ValueError(f"{qid}: exercises, and only exercises, take a Function kind")
    if (role == "self-test") != (program is not None):
        raise ValueError(f"{qid}: a self-test, and only a self-test, takes a program generator (program=)")
    if program is not None:
        canonical = program(Draw(None))
        if not isinstance(canonical, Listing):
            raise ValueError(f"{qid}: its generator must return a Listing")
        prompt = prompt or canonical.prompt
    if not prompt.strip() or not explain.strip():
        raise ValueError(f"{qid}: a question needs a prompt and an explanation")
    hints = tuple(" ".join(h.split()) for h in hints)
    if any(not isinstance(h, str) or not h for h in hints):
        raise ValueError(f"{qid}: every hint is a non-empty string")
    misconceptions = tuple(misconceptions)
    for item in misconceptions:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], str) and item[1].strip()):
            raise ValueError(f"{qid}: a misconception is a pair (wrong answer or function of torch's answer, note)")
        if not callable(item[0]) and role != "exercise":
            kind.read_misconception(
                item[0]
            )  # a literal wrong answer must be readable as this kind (BadAnswer otherwise)

    def register(experiment: _Experiment) -> _Experiment:
        if qid in REGISTRY and REGISTRY[qid].experiment.__module__ != experiment.__module__:
            raise ValueError(f"question id {qid!r} is declared twice")
        if isinstance(kind, Error) and not inspect.isgeneratorfunction(experiment):
            raise ValueError(f"{qid}: an error question's experiment must yield the name of each place")
        REGISTRY[qid] = Question(
            qid,
            unit,
            role,
            kind,
            prompt.strip() if program is not None else " ".join(prompt.split()),
            " ".join(explain.split()),
            experiment,
            order=len(REGISTRY),
            hints=hints,
            misconceptions=tuple((m, " ".join(n.split())) for m, n in misconceptions),
            program=program,
        )
        return experiment

    return register


def predict_then_run(
    qid: str, kind: Kind, *, prompt: str, explain: str, hints: Seq[str] = (), misconceptions: Seq[tuple[Any, str]] = ()
) -> Callable[[_Experiment], _Experiment]:
    return _declare("predict", qid, kind, prompt, explain, hints, misconceptions)


def self_test(
    qid: str,
    kind: Kind,
    *,
    explain: str,
    program: Generator,
    prompt: str = "",
    hints: Seq[str] = (),
    misconceptions: Seq[tuple[Any, str]] = (),
) -> Callable[[_Experiment], _Experiment]:
    """A self-test: ``program`` (a generator: :mod:`grader.engine.variants`) gives each learner and attempt a program
    of its own, asked with that program's prompt (``prompt``, where given, stands for the canonical program's), and
    the experiment takes the program."""
    return _declare("self-test", qid, kind, prompt, explain, hints, misconceptions, program)


def exercise(
    qid: str, kind: Function, *, prompt: str, explain: str, hints: Seq[str] = ()
) -> Callable[[_Experiment], _Experiment]:
    return _declare("exercise", qid, kind, prompt, explain, hints)


def load() -> dict[str, Question]:
    """Import each unit's declarations (``grader.units.unitNN.questions``) once, in course order.

    The engine finds the content by name, never by a static import: content sits above the engine."""
    global _loaded
    if not _loaded:
        import random

        import torch

        # some unit modules build seeded examples when imported: the learner's random streams stay as they were
        torch_rng, python_rng = torch.get_rng_state(), random.getstate()
        try:
            for uid in UNITS:
                importlib.import_module(f"{CONTENT_PACKAGE}.unit{uid}.questions")
        finally:
            torch.set_rng_state(torch_rng)
            random.setstate(python_rng)
        _loaded = True
    return REGISTRY


def get(qid: str) -> Question | None:
    """The question ``qid`` names, by today's id or by an id it had before it moved (:mod:`.moves`)."""
    return load().get(current_id(qid)) if isinstance(qid, str) else None


def of_unit(unit: Any) -> list[Question]:
    u = unit_id(unit)
    return sorted((q for q in load().values() if q.unit == u), key=lambda q: q.order)


def all_questions() -> list[Question]:
    return sorted(load().values(), key=lambda q: (q.unit, q.order))
