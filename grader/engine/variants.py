"""A self-test's program, generated for this learner on this attempt, and graded by running it.

A self-test declared with a generator (``@self_test(qid, kind, program=make, ...)``) has no one program: ``make``
builds one from a :class:`Draw` (the choices, drawn from a seed) and returns a :class:`Listing`: the code the
learner is shown, which is exactly the code the experiment runs, and the question asked about it. The
declaration's body is still the live experiment; it takes the program::

    def make(d: Draw) -> Listing:
        s = d.one([3.0, -2.0, 0.5])
        power = d.one([2, 3])
        return Listing(f"s = torch.tensor({s}, requires_grad=True)\\n(s ** {power}).backward()", "What is s.grad?")

    @self_test("00.warmup-square", Number(), program=make, explain=..., hints=..., misconceptions=...)
    def warmup_square(p):
        return p.run()["s"].grad.item()

The first option of every choice makes the *canonical* program (the seed ``None``): the one the question asked
before it had variants, which answers recorded then are still read against. Everyone else's seed comes from
:func:`seed_of`: the learner's identity (:mod:`grader.engine.identity`), the question and the attempt's number,
so two learners see different programs, a retry after a wrong answer is a new program, and the gradebook, which
knows whom it grades, regenerates the same program without trusting anything the notebook says.

The number of the program in force (:class:`grader.engine.progress.QuestionState`'s ``variant``) moves on after
every graded answer until the question is passed: after a wrong answer, and after a right one while the
instructor asks for more than one in a row (:func:`mastery`). Once passed it stays, so running the cell again
asks the same program. A review (:mod:`grader.engine.review`) draws from a seed of its own purpose.

A program after the first is never one that an answer the learner already gave is right on (``avoid`` in
:func:`make`, where another draw gives one): repeating an answer, or cycling through a few, never passes by
luck, and an honest learner's right answer is never one they gave before. So the gradebook can refuse points for
a pass reached with an answer given before (:data:`REPEATED`), and never refuses an honest one.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import math
import os
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from grader.engine import env_vars, torch_state

MASTERY_ENV = env_vars.MASTERY
MAX_MASTERY = 5
MAX_NUMBER = 10_000  # a program's number read from a record is trusted no further than this
RECORD_MIME = "application/vnd.autograd-lab.variant+json"
CARRIED_ANSWERS = 64  # graded answers a self-test's record carries, the latest last
AVOID_DRAWS = 32  # draws tried for a program no earlier answer is right on
REPEATED = "passed with an answer given before"  # a pass that repetition, not the program, may have made
_T = TypeVar("_T")


class Draw:
    """The choices a generator makes. With a seed, each is drawn from it; without one (canonical), each is the
    first option given, which is how a generator writes its canonical program down once."""

    def __init__(self, seed: int | None):
        self.seed = seed
        self._rng = random.Random(seed) if seed is not None else None

    @property
    def canonical(self) -> bool:
        return self._rng is None

    def one(self, options: Iterable[_T]) -> _T:
        """One of ``options``: the first for the canonical program."""
        items = list(options)
        if not items:
            raise ValueError("a choice needs at least one option")
        return items[0] if self._rng is None else self._rng.choice(items)

    def other(self, first: _T, rest: Iterable[_T]) -> _T:
        """``first`` for the canonical program, else one of ``rest``: where the canonical program's choice (a name,
        a constant) is one the unit's own cells show, and a drawn program must not repeat them."""
        return first if self._rng is None else self._rng.choice(list(rest))

    def some(self, options: Iterable[_T], k: int) -> list[_T]:
        """``k`` different ones of ``options``, in the order drawn: the first ``k`` for the canonical program."""
        items = list(options)
        return items[:k] if self._rng is None else self._rng.sample(items, k)

    def order(self, items: Iterable[_T]) -> list[_T]:
        """``items`` shuffled: as given for the canonical program."""
        out = list(items)
        if self._rng is not None:
            self._rng.shuffle(out)
        return out

    def integer(self, low: int, high: int, first: int) -> int:
        """An integer in [low, high]: ``first`` for the canonical program."""
        return first if self._rng is None else self._rng.randint(low, high)

    def coin(self, first: bool = False, p: float = 0.5) -> bool:
        """True with probability ``p``: ``first`` for the canonical program."""
        return first if self._rng is None else self._rng.random() < p


@dataclass(frozen=True)
class Listing:
    """One generated program of a self-test: ``source`` is the code the learner is shown and the code torch runs
    (:meth:`run`); ``ask`` is the question about it; ``facts`` are what the experiment or a misconception needs
    beyond the namespace (names, shapes; never an answer torch could give)."""

    source: str
    ask: str
    facts: Mapping[str, Any] = field(default_factory=dict)
    steps: tuple[tuple[str, str], ...] = ()  # an error question's program: (place, code) pairs, see in_steps

    @classmethod
    def in_steps(cls, steps: Sequence[tuple[str, str]], ask: str, facts: Mapping[str, Any] | None = None) -> Listing:
        """A program cut where it may raise: each step is (the place's name, its code); '' names no place (set-up).
        The source shown is the steps' code in order; :meth:`stepped` is the error experiment's body."""
        steps = tuple((place, code.strip("\n")) for place, code in steps)
        return cls("\n".join(code for _, code in steps), ask, dict(facts or {}), steps)

    @property
    def prompt(self) -> str:
        """The question as the learner reads it: the program, then what is asked about it."""
        return f"{self.source.strip()}\n{' '.join(self.ask.split())}"

    def run(self, until: str | None = None) -> dict[str, Any]:
        """Run the program in a fresh namespace, in torch's clean state (the state every experiment runs in:
        the same random numbers, grad mode on, no hooks), and return its names. ``until`` (a program made in
        steps) stops before the first step of that name: an experiment that looks at the graph before backward."""
        import torch

        ns: dict[str, Any] = {"torch": torch, "__builtins__": builtins}
        if until is not None and until not in {place for place, _ in self.steps}:
            raise ValueError(f"this program has no step {until!r}")
        with torch_state.clean_room():
            for place, code in self.steps if until is not None else (("", self.source),):
                if place == until:
                    break
                exec(compile(code, "<your program>", "exec"), ns)
        return ns

    def stepped(self) -> Iterator[str]:
        """An error question's experiment (``yield from p.stepped()``): each step's place named, then its code
        run, all in one namespace; the place it was in when torch raised is the answer."""
        import torch

        if not self.steps:
            raise ValueError("this program was not made in steps (Listing.in_steps)")
        ns: dict[str, Any] = {"torch": torch, "__builtins__": builtins}
        for place, code in self.steps:
            if place:
                yield place
            exec(compile(code, "<your program>", "exec"), ns)


Generator = Callable[[Draw], Listing]


def seed_of(identity: str, qid: str, number: int, purpose: str = "self-test", draw: int = 0) -> int:
    """The seed of ``identity``'s program number ``number`` of ``qid`` (``purpose``: "self-test" or "review");
    ``draw`` > 0 names a redraw (:func:`fresh`)."""
    from grader.engine.identity import key

    text = f"autograd-lab\n{purpose}\n{key(identity)}\n{qid}\n{int(number)}" + (f"\n{int(draw)}" if draw else "")
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "big")


def label(seed: int | None) -> str:
    """A short name of a program for the record: six hex digits of its seed, 'canonical' without one."""
    return "canonical" if seed is None else f"{seed:012x}"[:6]


@dataclass(frozen=True)
class Variant:
    """The program one learner is asked on one attempt (``number``) of ``qid``; ``purpose`` 'review' for a
    review's program. ``seed`` None is the canonical program."""

    qid: str
    number: int | None
    seed: int | None
    program: Listing
    purpose: str = "self-test"

    @property
    def name(self) -> str:
        """How the record names it: 'variant 2, 3fa2c1', 'review 1, …', 'the canonical program'."""
        if self.seed is None:
            return "the canonical program"
        word = "review" if self.purpose == "review" else "variant"
        return f"{word} {(self.number or 0) + 1}, {label(self.seed)}"

    def detail(self, fingerprint: str = "") -> dict[str, Any]:
        """What a check's event records of the program it graded (read back as data, never trusted)."""
        out: dict[str, Any] = {"variant": self.number, "seed": self.seed}
        if self.purpose != "self-test":
            out["purpose"] = self.purpose
        if fingerprint:
            out["identity"] = fingerprint
        return out


def make(
    generator: Generator,
    qid: str,
    identity: str | None,
    number: int | None,
    purpose: str = "self-test",
    avoid: Callable[[Variant], bool] | None = None,
) -> Variant:
    """The :class:`Variant` of ``qid`` numbered ``number`` for ``identity``; the canonical one where either is None.

    A self-test's program number n > 0 is never the program number n - 1 (while the generator has another): the
    program after a wrong answer, or after a right one while mastery asks for more, is a new one. It is drawn from
    its own seed and redrawn (:func:`fresh`) only where that seed gives the program before it again.

    ``avoid`` (a self-test's program after the first): True for a program that an answer already given is right on
    (the caller runs it: the kernel and the gradebook alike). The first of AVOID_DRAWS draws it does not refuse is
    taken; where it refuses them all, the program drawn as above. Deterministic for the same answers."""
    if identity is None or number is None:
        return Variant(qid, None, None, generator(Draw(None)), purpose)
    if purpose != "self-test" or number == 0:
        seed = seed_of(identity, qid, number, purpose)
        return Variant(qid, number, seed, generator(Draw(seed)), purpose)
    first = _chained(generator, qid, identity, int(number))
    if avoid is None or not avoid(first):
        return first
    for draw in range(1, AVOID_DRAWS):
        seed = seed_of(identity, qid, number, "self-test, new answer", draw)
        v = Variant(qid, number, seed, generator(Draw(seed)), purpose)
        if not avoid(v):
            return v
    return first


@functools.lru_cache(maxsize=1024)
def _chained(generator: Generator, qid: str, identity: str, number: int) -> Variant:
    """Program ``number`` (> 0) of a self-test: drawn from its seed, redrawn where it repeats program ``number - 1``
    (walked from the nearest multiple of 64 below it, so a large number costs no deep recursion)."""
    base = number - (number % 64 or 64)
    v = make(generator, qid, identity, base)
    for n in range(base + 1, number + 1):
        v = fresh(generator, qid, identity, n, "self-test", [v.program.source])
    return v


def fresh(
    generator: Generator,
    qid: str,
    identity: str,
    number: int,
    purpose: str,
    seen: Iterable[str],
    draws: int = 32,
) -> Variant:
    """Like :func:`make`, but a program whose source is none of ``seen`` (the programs this learner was already
    asked) where one of ``draws`` redraws gives one; the first draw where none does (a generator with few
    programs, all of them seen). Deterministic: the same ``seen`` gives the same program."""
    old = {" ".join(s.split()) for s in seen}
    first: Variant | None = None
    for draw in range(draws):
        seed = seed_of(identity, qid, number, purpose, draw)
        v = Variant(qid, number, seed, generator(Draw(seed)), purpose)
        if " ".join(v.program.source.split()) not in old:
            return v
        first = first or v
    assert first is not None
    return first


def answered_before(kind: Any, earlier: Iterable[Any], truth: Callable[[Variant], Any]) -> Callable[[Variant], bool]:
    """``avoid`` for :func:`make`: True for a program that one of the answers ``earlier`` given (recorded forms, read
    by ``kind``) is right on, by torch's answer ``truth(variant)`` (the caller's: the kernel runs the experiment, the
    gradebook its own). An answer that cannot be read, or an experiment that raises, avoids nothing."""
    values = []
    for answer in earlier:
        try:
            values.append(kind.read_recorded(answer))
        except Exception:  # noqa: BLE001 - data from a record: what cannot be read is no answer
            continue
    truths: dict[Any, Any] = {}

    def avoid(v: Variant) -> bool:
        if not values:
            return False
        if v.seed not in truths:
            try:
                truths[v.seed] = truth(v)
            except Exception:  # noqa: BLE001 - an experiment that raises gives no reason to redraw
                return False
        return any(_agrees(kind, truths[v.seed], value) for value in values)

    return avoid


def _agrees(kind: Any, truth: Any, value: Any) -> bool:
    try:
        return bool(kind.agrees(truth, value))
    except Exception:  # noqa: BLE001
        return False


def number_in(detail: Any) -> int | None:
    """The program number an event's detail (data from a learner's kernel) names, or None: an int in range only."""
    value = detail.get("variant") if isinstance(detail, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_NUMBER:
        return value
    return None


def mastery(value: Any = None) -> int:
    """How many right answers in a row, each on a fresh program, pass a self-test: ``value``, else
    AUTOGRAD_LAB_MASTERY (an instructor's setting), else 1; at least 1, at most :data:`MAX_MASTERY`."""
    raw = value if value is not None else os.environ.get(MASTERY_ENV, "")
    try:
        k = int(str(raw).strip()) if str(raw).strip() else 1
    except ValueError:
        k = 1
    return max(1, min(MAX_MASTERY, k))


# --- what a notebook carries of the programs it was asked ------------------------------------------------------


def record(
    qid: str, number: int, answers: Sequence[tuple[int | None, Any]], fingerprint: str, drawn_for: str = ""
) -> dict[str, Any]:
    """The record a self-test's cells carry: the number of the program in force, the graded answers given so far
    (``[number, encoded answer]``, the latest last), the identity's fingerprint and the identity itself
    (``drawn_for``: whose programs they were). Batch grading reads it as data: it regenerates each program from
    that identity, numbers the answers itself in order, and recomputes every one."""
    kept = [[n, a] for n, a in list(answers)[-CARRIED_ANSWERS:]]
    out = {"qid": qid, "variant": number, "answers": kept, "identity": fingerprint}
    return {**out, "drawn_for": drawn_for} if drawn_for else out


def bundle(payload: dict[str, Any]) -> dict[str, Any]:
    return {RECORD_MIME: payload}


@dataclass
class Carried:
    """A self-test's record read back from a saved notebook: the program in force and the answers given."""

    qid: str
    number: int
    answers: list[tuple[int, Any]]
    fingerprint: str
    drawn_for: str = ""  # the identity the programs were drawn for, as the record says (data: never trusted)


def _plain(value: Any, depth: int = 0) -> bool:
    if depth > 6:
        return False
    if value is None or isinstance(value, (bool, str)):
        return not isinstance(value, str) or len(value) <= 2_000
    if isinstance(value, int):
        return abs(value) <= 10**18
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return len(value) <= 1_000 and all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return len(value) <= 1_000 and all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


def read_record(output: Any) -> Carried | None:
    """The record a saved cell output carries (see :func:`record`), or None where it carries none or one that is
    not well formed (a record is data from the learner's machine: only its plain form is read)."""
    data = output.get("data") if isinstance(output, dict) else None
    payload = data.get(RECORD_MIME) if isinstance(data, dict) else None
    if not isinstance(payload, dict):
        return None
    qid, number = payload.get("qid"), number_in(payload)
    if not isinstance(qid, str) or len(qid) > 100 or number is None:
        return None
    answers = []
    raw = payload.get("answers")
    for item in raw[:CARRIED_ANSWERS] if isinstance(raw, list) else []:
        if isinstance(item, list) and len(item) == 2 and number_in({"variant": item[0]}) is not None:
            if _plain(item[1]):
                answers.append((int(item[0]), item[1]))
    fingerprint = payload.get("identity")
    drawn_for = payload.get("drawn_for")
    drawn_for = drawn_for if isinstance(drawn_for, str) and 0 < len(drawn_for) <= 200 else ""
    return Carried(qid, number, answers, fingerprint if isinstance(fingerprint, str) else "", drawn_for)
