"""Claims: the general rules the course states, each checked by torch on a family of generated programs.

A question checks one program; a sentence such as "freezing a layer whose input needs a gradient saves
nothing" is about every program of a kind. A claim declares such a sentence once, like a question::

    @claim(
        "05.freeze-saves-nothing-when-kept",
        sentence="Freezing a layer saves nothing when another node keeps its input anyway.",
        holds_when="the layer's input is kept by the node before it (a ReLU); not after a GELU",
    )
    def freeze_saves_nothing_when_kept():
        for seed in range(6):
            ...
            yield Trial(label, condition=kept_anyway, holds=bill_frozen == bill_plain)

The body is the check: a generator (or a function returning a list) of :class:`Trial`, one per
generated program (seeded with ``random.Random(seed)``, small enough for the whole check to take
about two seconds on a CPU). A trial says whether the claim's condition is met on that program and
whether the rule held there. The body never decides the verdict; :func:`check_claim` does:

* the rule must hold on every program where the condition is met, and be tried on at least one;
* a claim with ``holds_when`` must also show a counter-example (a program outside the condition where
  the rule does not hold), so that the condition is not mere caution;
* a claim without ``holds_when`` may not report a program outside its (absent) condition.

A claim about what an operation records, saves, counts or versions is also checked on torch's own
operator database (``op_db``, every operation on its own sample inputs): a second function, declared with
:func:`sweeps`, turns one such program (a ``grader.probes.opdb.OpSample``) into trials, each naming its
operation::

    @sweeps("01.one-pair-per-input")
    def one_pair_per_input_on(sample):
        run = sample.run()  # fresh leaves that require grad; None if the operation refused the sample
        ...
        yield Trial(sample.label, condition=..., holds=..., op=sample.op)

:func:`check_claim` judges those trials with the generated ones (``programs``: the op_db samples to run;
``grader.probes.sweep`` chooses them). A claim about something else (an optimizer, the order hooks run in)
states why in ``not_swept``; every claim either has a sweep or says why not.

``torch`` names a version range (``">=2.13,<2.15"``, ``"==2.13.*"``: clauses joined by commas) for a
claim that only some versions keep. On a torch outside it the check still runs, for information, and
the result is ``OUT_OF_RANGE``, not a failure; the notebook's sentence must then say which torch it
describes.

Each unit's claims live in ``grader.units.unitNN.claims`` (optional), found by name like its questions.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from grader.engine import torch_state
from grader.engine.course import UNITS, unit_id

CONTENT_PACKAGE = "grader.units"
_ID = re.compile(r"^(\d\d[a-z]?)\.[a-z0-9][a-z0-9-]*$")
_Body = Callable[[], Iterable["Trial"]]
_Sweep = Callable[[Any], "Iterable[Trial] | Trial | None"]


@dataclass(frozen=True)
class Trial:
    """One generated program: is the claim's condition met there, and did the rule hold?"""

    label: str  # names the program in a report: "seed 3: Linear-GELU-Linear, middle frozen"
    condition: bool  # the claim's holds_when is met on this program (always True for an unconditional claim)
    holds: bool  # the rule, as the sentence states it, is true on this program
    op: str = ""  # the torch operation of op_db the program ran (a sweep's trial); "" for a generated program


@dataclass
class Claim:
    cid: str
    unit: str
    sentence: str  # as the notebook states it (whitespace-normalised)
    holds_when: str  # the condition, in words; "" when the rule is unconditional
    check: _Body
    torch_range: str = ""  # a version specifier such as ">=2.13,<2.15"; "" for every torch
    order: int = 0
    not_swept: str = ""  # why the rule is not about what an operation records, saves, counts or versions
    sweep: _Sweep | None = None  # its check on one op_db program (see sweeps)
    sweep_ops: tuple[str, ...] = ()  # the op_db operations the sweep runs on; () for every one
    sweep_batch: bool = False  # the sweep takes the whole list of programs at once (see sweeps)
    sweep_per_op: int | None = None  # samples per operation and dtype, where the sweep's default is too costly
    sweep_sample: tuple[str, ...] = ()  # operations the fixed sample (make test) adds for this claim

    @property
    def swept(self) -> bool:
        return self.sweep is not None

    @property
    def conditional(self) -> bool:
        return bool(self.holds_when)


class Status(enum.Enum):
    HOLDS = "holds"  # held on every program under its condition (and, if conditional, a counter-example exists)
    FAILS = "fails"  # a program under the condition broke it, or the condition is not shown to matter
    ERROR = "error"  # the check itself raised
    OUT_OF_RANGE = "out of range"  # this torch is outside the claim's version range: checked for information only


@dataclass(frozen=True)
class ClaimResult:
    cid: str
    status: Status
    torch: str
    programs: int = 0  # trials run
    held: int = 0  # trials under the condition where the rule held
    counterexamples: int = 0  # trials outside the condition where the rule did not hold
    broken: tuple[str, ...] = ()  # labels of trials under the condition where the rule did not hold
    problem: str = ""  # why it fails, or what raised; for OUT_OF_RANGE, what the check found anyway
    examples: tuple[str, ...] = ()  # a counter-example's label or two, for the report
    ops: int = 0  # distinct op_db operations its sweep ran (0: not swept this time)
    counterexample_ops: tuple[str, ...] = ()  # the operations of the sweep's counter-examples, sorted
    broken_ops: tuple[str, ...] = ()  # the operations of the sweep's programs that broke it, sorted

    @property
    def ok(self) -> bool:
        return self.status in (Status.HOLDS, Status.OUT_OF_RANGE)

    def report(self) -> dict:
        """What ``grader claims --json`` and ``grader verify --json`` say of the check: its status, the distinct
        op_db operations swept (``ops``), the programs run, and the counter-examples (outside the condition) and
        broken programs (under it), each with its operations and a few labels."""
        return {
            "status": self.status.value,
            "ok": self.ok,
            "result": self.summary(),
            "ops": self.ops,
            "programs": self.programs,
            "held": self.held,
            "counterexamples": {
                "count": self.counterexamples,
                "ops": list(self.counterexample_ops),
                "examples": list(self.examples),
            },
            "broken": {"count": len(self.broken), "ops": list(self.broken_ops), "examples": list(self.broken[:5])},
            "problem": self.problem,
        }

    def summary(self) -> str:
        """'holds on 12 programs; 4 counter-examples outside its condition', or why it fails."""
        if self.status is Status.ERROR:
            return f"ERROR {self.problem}"
        text = f"held on {self.held} of {self.programs} programs"
        if self.ops:
            text += f" ({self.ops} torch operations swept)"
        if self.counterexamples:
            text += f"; {self.counterexamples} counter-example(s) outside its condition"
        if self.status is Status.FAILS:
            text = f"FAILS: {self.problem} ({text})"
        elif self.status is Status.OUT_OF_RANGE:
            text = f"out of its torch range ({self.problem}; {text})"
        return text


REGISTRY: dict[str, Claim] = {}
_loaded = False


def claim(
    cid: str,
    *,
    sentence: str,
    holds_when: str = "",
    torch: str = "",
    unit: str | None = None,
    not_swept: str = "",
) -> Callable[[_Body], _Body]:
    """Declare a claim: its id (``NN.short-name``), the sentence the notebook states, its condition in
    words (``holds_when``, "" for an unconditional rule), optionally the torch versions it is about, and,
    for a rule that is not about what an operation records, saves, counts or versions, why it has no
    sweep over op_db (``not_swept``; a claim about operations declares its sweep with :func:`sweeps`)."""
    match = _ID.match(cid)
    if not match:
        raise ValueError(f"claim id {cid!r} must look like '05.short-name'")
    uid = match.group(1)
    if uid not in UNITS:
        raise ValueError(f"claim {cid!r} names unit {uid}, which the course does not have")
    if unit is not None and unit_id(unit) != uid:
        raise ValueError(f"claim {cid!r} is declared for unit {unit}, but its id names unit {uid}")
    if not sentence.strip():
        raise ValueError(f"{cid}: a claim needs the sentence the notebook states")
    if torch:
        _clauses(torch)  # refused now, not at check time

    def register(body: _Body) -> _Body:
        if cid in REGISTRY and REGISTRY[cid].check.__module__ != body.__module__:
            raise ValueError(f"claim id {cid!r} is declared twice")
        REGISTRY[cid] = Claim(
            cid,
            uid,
            " ".join(sentence.split()),
            " ".join(holds_when.split()),
            body,
            torch_range=torch.strip(),
            order=len(REGISTRY),
            not_swept=" ".join(not_swept.split()),
        )
        return body

    return register


def sweeps(
    cid: str,
    *,
    ops: Iterable[str] = (),
    batch: bool = False,
    per_op: int | None = None,
    sample: Iterable[str] = (),
) -> Callable[[_Sweep], _Sweep]:
    """Declare the sweep of a claim declared above it: a function of one op_db program (an
    ``OpSample``) that returns or yields its Trials (None or nothing where the program says nothing about
    the rule), each with ``op=sample.op``. ``ops`` names the operations a rule about particular operations
    is swept on (``("split", "split_with_sizes")``); by default every operation of op_db. ``batch=True``:
    the function takes the whole list of programs and yields every trial (for a check that must run once
    for all of them, such as one ``gc.collect()``). ``per_op`` caps the samples per operation and dtype for
    a sweep whose program is costly (one compilation each). ``sample`` names operations the fixed sample of
    ``make test`` adds for this claim, where none of its usual ones meets the rule's subject (an operation
    that keeps a wrapped number)."""
    names = tuple(ops)

    def register(fn: _Sweep) -> _Sweep:
        c = REGISTRY.get(cid)
        if c is None:
            raise ValueError(f"sweeps({cid!r}): declare the claim with @claim first")
        if c.not_swept:
            raise ValueError(f"{cid} says it is not swept ({c.not_swept}) but declares a sweep")
        c.sweep, c.sweep_ops, c.sweep_batch, c.sweep_per_op = fn, names, batch, per_op
        c.sweep_sample = tuple(sample)
        return fn

    return register


_CLAUSE = re.compile(r"^(==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?$")


def _clauses(text: str) -> list[tuple[str, tuple[int, ...], bool]]:
    """'>=2.13,<2.15' -> [('>=', (2, 13), False), ('<', (2, 15), False)]; ValueError for anything else."""
    out = []
    for clause in (c.strip() for c in text.split(",")):
        m = _CLAUSE.match(clause)
        if not m or (m.group(3) and m.group(1) not in ("==", "!=")):
            raise ValueError(f"{clause!r} is not a torch version clause such as '>=2.13', '<2.15' or '==2.13.*'")
        out.append((m.group(1), tuple(int(n) for n in m.group(2).split(".")), bool(m.group(3))))
    return out


def _version(text: str) -> tuple[int, ...]:
    """'2.13.0+cpu' -> (2, 13, 0); a local label or pre-release tail is dropped."""
    return tuple(int(n) for n in re.findall(r"\d+", text.split("+")[0].split("a")[0].split("rc")[0])[:3])


def in_range(c: Claim, version: str | None = None) -> bool:
    """Whether the installed torch (or ``version``) is one the claim is about."""
    if not c.torch_range:
        return True
    import torch

    v = _version(version or torch.__version__)
    for op, target, wildcard in _clauses(c.torch_range):
        if wildcard:
            same = v[: len(target)] == target
            ok = same if op == "==" else not same
        else:
            width = max(len(v), len(target))
            a, b = v + (0,) * (width - len(v)), target + (0,) * (width - len(target))
            ok = {"==": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b, "<": a < b, ">": a > b}[op]
        if not ok:
            return False
    return True


def _as_list(out: Any) -> list | None:
    """A body's answer as a list (None when it is not an iterable)."""
    return list(out) if isinstance(out, Iterable) and not isinstance(out, str) else None


def _swept(c: Claim, programs: Iterable[Any]) -> list:
    """The sweep's trials over ``programs``; RuntimeError naming the program where the sweep itself raised."""
    assert c.sweep is not None
    if c.sweep_batch:
        try:
            return list(c.sweep(list(programs)))  # type: ignore[arg-type]
        except Exception as exc:
            message = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
            raise RuntimeError(f"its sweep raised: {type(exc).__name__}: {message}") from exc
    trials: list = []
    for program in programs:
        try:
            out = c.sweep(program)
            trials += [] if out is None else [out] if isinstance(out, Trial) else list(out)
        except Exception as exc:
            label = getattr(program, "label", repr(program))
            message = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
            raise RuntimeError(f"its sweep raised on {label}: {type(exc).__name__}: {message}") from exc
    return trials


def _examples(counter: list) -> tuple[str, ...]:
    """A few counter-examples for the report: the first generated one, then one per swept operation."""
    generated = [t.label for t in counter if not t.op][:1]
    by_op: dict[str, str] = {}
    for t in counter:
        if t.op:
            by_op.setdefault(t.op, t.label)
    return tuple(generated + list(by_op.values())[: 5 - len(generated)])


def check_claim(c: Claim, programs: Iterable[Any] | None = None) -> ClaimResult:
    """Run the claim's check in a clean torch state and judge its trials (see the module's docstring).

    ``programs``: op_db programs for the claim's sweep (grader.probes.sweep chooses them); None runs the
    generated programs alone."""
    import torch

    version = torch.__version__
    try:
        with torch_state.clean_room():
            trials = _as_list(c.check())
            if trials is not None and c.sweep is not None and programs is not None:
                trials += _swept(c, programs)
    except Exception as exc:  # the check raised: reported, never a traceback
        return ClaimResult(c.cid, Status.ERROR, version, problem=f"{type(exc).__name__}: {exc}")
    if trials is None or not all(isinstance(t, Trial) for t in trials):
        return ClaimResult(c.cid, Status.ERROR, version, problem="the check must yield Trial objects")
    under = [t for t in trials if t.condition]
    outside = [t for t in trials if not t.condition]
    broken = tuple(t.label for t in under if not t.holds)
    counter = [t for t in outside if not t.holds]
    problem = ""
    if not under:
        problem = "no program met its condition"
    elif broken:
        problem = f"broken on {len(broken)} program(s) under its condition: {broken[0]}"
    elif c.conditional and not counter:
        problem = "no counter-example outside its condition: the condition is not shown to matter"
    elif not c.conditional and outside:
        problem = "an unconditional claim reported programs outside a condition"
    status = Status.FAILS if problem else Status.HOLDS
    if not in_range(c):
        problem = f"torch {version} is outside {c.torch_range}; " + (problem or "it holds here too")
        status = Status.OUT_OF_RANGE
    return ClaimResult(
        c.cid,
        status,
        version,
        programs=len(trials),
        held=sum(t.holds for t in under),
        counterexamples=len(counter),
        broken=broken,
        problem=problem,
        examples=_examples(counter),
        ops=len({t.op for t in trials if t.op}),
        counterexample_ops=tuple(sorted({t.op for t in counter if t.op})),
        broken_ops=tuple(sorted({t.op for t in under if t.op and not t.holds})),
    )


def load() -> dict[str, Claim]:
    """Import each unit's claims module (``grader.units.unitNN.claims``) where the unit has one."""
    global _loaded
    if not _loaded:
        import random

        import torch

        torch_rng, python_rng = torch.get_rng_state(), random.getstate()
        try:
            for uid in UNITS:
                name = f"{CONTENT_PACKAGE}.unit{uid}.claims"
                if importlib.util.find_spec(name) is not None:
                    importlib.import_module(name)
        finally:
            torch.set_rng_state(torch_rng)
            random.setstate(python_rng)
        _loaded = True
    return REGISTRY


def get(cid: str) -> Claim | None:
    return load().get(cid)


def all_claims(units: Iterable[str] | None = None) -> list[Claim]:
    wanted = {unit_id(u) for u in units} if units else None
    return sorted((c for c in load().values() if wanted is None or c.unit in wanted), key=lambda c: (c.unit, c.order))
