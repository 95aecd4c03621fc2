"""The exercise runner's own objects, as they were before any learner code ran, and whether they still are.

A learner's definitions and function run in the runner's process (:mod:`.learner_function`), where the runner keeps
what decides a verdict: each exercise's kind (its ``call``, its reading steps), the table of refusals that switches
the course's tools off (:mod:`.answer_tools`), and the grader's modules, whose functions a ``call`` looks up after the
learner's function has returned (unit 09b's ``facts``). Python lets code that runs in a process rebind any of them.
So the runner takes a :class:`Snapshot` before the first learner line runs, and asks it after the definitions and
after every case, before anything the learner's code may have touched is used: a difference fails the exercise,
naming what was changed.

What is compared: every function, class and other callable a ``grader`` module binds (by identity; a name added since
is allowed only where it binds a module, a lazy import), every attribute of each kind and of the kinds it holds, and
the refusals' code tables. Data a module keeps (caches, counters) is not compared: the runner itself changes it.
"""

from __future__ import annotations

import sys
import types
from typing import Any


def _callables(namespace: dict) -> dict[str, Any]:
    return {name: value for name, value in list(namespace.items()) if callable(value)}


def _attributes(obj) -> dict[str, Any]:
    """An object's own attributes; a class's callables (its methods, descriptors aside from data it caches)."""
    return _callables(dict(vars(obj))) if isinstance(obj, type) else dict(vars(obj))


def _grader_modules() -> dict[str, types.ModuleType]:
    return {
        name: module
        for name, module in list(sys.modules.items())
        if (name == "grader" or name.startswith("grader.")) and isinstance(module, types.ModuleType)
    }


def _parts(kind) -> list[tuple[str, Any]]:
    """A kind and the grader objects it holds one level down (a Function kind's ``returns``), and the grader's
    classes they are made from (a method set on a class is seen by every object of it)."""
    found = [("its kind", kind)]
    for name, value in list(vars(kind).items()):
        if type(value).__module__.startswith("grader.") and hasattr(value, "__dict__"):
            found.append((f"its kind's {name}", value))
    classes = {c for _, obj in found for c in type(obj).__mro__ if c.__module__.startswith("grader.")}
    return found + [(f"the class {c.__qualname__}", c) for c in sorted(classes, key=lambda c: c.__qualname__)]


class Snapshot:
    """The runner's objects as first seen (call :meth:`changed` to compare)."""

    def __init__(self, kinds: dict, refusals: dict):
        self.modules = {name: (module, _callables(vars(module))) for name, module in _grader_modules().items()}
        self.objects = [
            (f"{qid}: {label}", obj, _attributes(obj)) for qid, kind in kinds.items() for label, obj in _parts(kind)
        ]
        self.tables = [
            (
                f"{qid}: the table of refusals",
                table,
                {**table.refusals, **table.copies},
                dict(table.saved),
                set(table.tools),
            )
            for qid, table in refusals.items()
        ]

    def changed(self) -> str:
        """What learner code changed of the runner's objects, in words ('' when nothing)."""
        for what in (self._module_changed(), self._object_changed(), self._table_changed()):
            if what:
                return what
        return ""

    def _module_changed(self) -> str:
        for name, (module, was) in self.modules.items():
            now = vars(module)
            for attr, value in was.items():
                if now.get(attr) is not value:
                    return f"{name}.{attr}"
            for attr in set(now) - set(was):
                value = now.get(attr)
                if callable(value) and not isinstance(value, types.ModuleType) and attr not in was:
                    return f"{name}.{attr} (added)"
        return ""

    def _object_changed(self) -> str:
        for label, obj, was in self.objects:
            now = _attributes(obj)
            if set(now) != set(was) or any(now[k] is not v for k, v in was.items()):
                return label
        return ""

    def _table_changed(self) -> str:
        for label, table, refusals, saved, tools in self.tables:
            now = {**table.refusals, **table.copies}
            same = (
                table.tools == tools
                and now.keys() == refusals.keys()
                and all(now[f] is c for f, c in refusals.items())
                and all(table.saved.get(f) is c for f, c in saved.items())
            )
            if not same:
                return label
        return ""


def message(what: str) -> str:
    return (
        f"your code changed the grader's own {what}: an exercise function computes its answer with what the "
        "notebook gives it, it does not rewrite the grader that checks it"
    )
