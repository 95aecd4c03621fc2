"""Questions and units that moved: an old id still names what it named, in the store, the API and old copies.

When a unit is split in two (04 became 04 and 04b, 09 became 09 and 09b), some of its questions move to the
new unit and take a new id. A learner's progress file and the notebooks in ``my-work/`` keep the old ids; this
table is how they are read:

* ``QUESTIONS``: old question id -> new question id (each step of a chain is followed: a -> b -> c reads as c).
* ``SPLITS``: old unit -> the unit made from part of it. A unit-wide event written before the split (a
  ``mark`` or a unit ``reset``) is read for both units: a learner who had passed 04 before it was split has
  passed the 04b its questions went to.
* ``SPLIT_IN``: old unit -> the course version that first had both halves. A unit-wide event carries the
  course version that wrote it (``detail["course"]``); one written by that version or a later one names only
  the unit it says (marking 04 passed today passes 04, not 04b). An event without a version was written
  before any split was known, so before this one.

The store is migrated as it is read (:func:`moved_event`), never rewritten: an older version of the course
opening the same file still reads its own ids, and two kernels of different versions can share it. The
learner's API resolves an old id on entry (:func:`grader.engine.question.get`), so every new event is
written with today's id. Entries are never removed: a copy made from any earlier release must keep reading.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, ClassVar, Protocol, TypeVar


class _Entry(Protocol):
    """What an entry of the log must have to be moved (``grader.engine.store.Event`` has it; this module is
    below the store, which reads through it, so it names no store type)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    qid: Any
    unit: Any


Event = TypeVar("Event", bound=_Entry)

# 0.5.0 split two units in two; these questions went to the new half, under the same names:
# 04 (where the path stops) -> 04b (the path through modules and optimizers)
_TO_04B = (
    "four-offs",
    "nested-modes",
    "patched-loss-facts",
    "fake-fix-grads",
    "why-grad-none",
    "closed-book-frozen-grad",
    "closed-book-modes",
)
# 09 (saved-tensor hooks) -> 09b (checkpointing)
_TO_09B = (
    "checkpoint-recompute-reached",
    "checkpoint-held-fraction",
    "reentrant-grads",
    "checkpoint-side-effect-count",
    "self-checkpoint-plan",
    "self-checkpoint-input-write",
)

QUESTIONS: dict[str, str] = {
    **{f"04.{name}": f"04b.{name}" for name in _TO_04B},
    **{f"09.{name}": f"09b.{name}" for name in _TO_09B},
}

SPLITS: dict[str, str] = {"04": "04b", "09": "09b"}

SPLIT_IN: dict[str, str] = {"04": "0.5.0", "09": "0.5.0"}  # the course version that split each unit


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in str(text).split("."))
    except ValueError:
        return ()


def _written_before_split(e: _Entry, unit: str) -> bool:
    """Whether the unit-wide event ``e`` was written before ``unit`` was split (no version: before any split)."""
    detail = getattr(e, "detail", None)
    written = detail.get("course") if isinstance(detail, dict) else None
    split = SPLIT_IN.get(unit)
    if written is None or split is None:
        return True
    return _version(written) < _version(split)


def current_id(qid: str) -> str:
    """Today's id of a question once called ``qid`` (``qid`` itself if it never moved)."""
    seen = {qid}
    while qid in QUESTIONS:
        qid = QUESTIONS[qid]
        if qid in seen:  # a cycle in the table is a bug in the course; stop rather than loop
            raise ValueError(f"the moves table has a cycle through {qid}")
        seen.add(qid)
    return qid


def unit_of(qid: str) -> str:
    return qid.split(".", 1)[0]


def sources(unit: str) -> set[str]:
    """The units whose stored events may now belong to ``unit``: itself, the units it was split from, and the
    units of every old id that moved into it."""
    found = {unit}
    found |= {old for old, new in SPLITS.items() if new == unit}
    found |= {unit_of(old) for old in QUESTIONS if unit_of(current_id(old)) == unit}
    return found


def moved_event(e: Event) -> Iterator[Event]:
    """``e`` as today's course reads it: its question's id and unit as they are now, and a unit-wide event of a
    split unit, written before the split, once for each unit it now covers."""
    if e.qid is not None:
        qid = current_id(e.qid)
        yield e if qid == e.qid else replace(e, qid=qid, unit=unit_of(qid))
        return
    yield e
    unit = e.unit
    while unit in SPLITS and _written_before_split(e, unit):
        unit = SPLITS[unit]
        yield replace(e, unit=unit)


def moved_events(events: Iterable[Event], unit: str | None = None) -> list[Event]:
    """Every event read as today's course reads it; only ``unit``'s when one is named."""
    out = [m for e in events for m in moved_event(e)]
    return out if unit is None else [e for e in out if e.unit == unit]
