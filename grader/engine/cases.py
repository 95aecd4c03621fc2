"""What an exercise's generated case is: the protocol every case class implements.

An exercise's kind is ``Function(returns=..., cases=make_cases)``; ``make_cases()`` returns a list of
cases, smallest first. The engine builds each case anew, calls the learner's function on it in the
clean room, asks torch for the answer, and on a failure shows the smallest failing case's ``source``
and ``drawing()``. The gradebook and the exercise runner find a case again by its index in that list,
so ``make_cases`` must be deterministic (seeded).
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Case(Protocol):
    """One generated input of an exercise.

    ``label`` names it in a verdict ("case 3: a shared leaf"); ``source`` is the code the learner is
    shown; ``size`` orders the cases (smallest first); ``output`` names the entry of ``fresh()``'s
    namespace that a ``Function`` passes to the learner's function unless the exercise declares its own
    ``call``; ``drawing_label`` heads ``drawing()``'s text in a verdict ("its graph" where it is None).
    """

    label: str
    source: str
    size: int
    output: str | None
    drawing_label: str | None

    def fresh(self) -> dict[str, Any]:
        """Build the case anew (seeded, so always the same) and return its namespace."""
        ...

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        """Text that shows the case in a failing verdict: its graph, its steps, its model."""
        ...


def problems(case: object) -> list[str]:
    """How ``case`` falls short of :class:`Case` (attributes missing or of the wrong type); [] if it does not."""
    found = []
    for name, types in (
        ("label", str),
        ("source", str),
        ("size", int),
        ("output", (str, type(None))),
        ("drawing_label", (str, type(None))),
    ):
        if not hasattr(case, name):
            found.append(f"no {name}")
        elif not isinstance(getattr(case, name), types) or isinstance(getattr(case, name), bool):
            found.append(f"{name} is {type(getattr(case, name)).__name__}")
    for name in ("fresh", "drawing"):
        if not callable(getattr(case, name, None)):
            found.append(f"no {name}()")
    return found


def fingerprint(case: Case) -> str:
    """A short digest of what the case is (its label and source): two processes that made the same case list
    agree on every case's fingerprint, so a result can be matched with the case it was computed on."""
    return hashlib.sha256(f"{case.label}\n{case.source}".encode()).hexdigest()[:16]
