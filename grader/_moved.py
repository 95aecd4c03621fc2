"""Module paths from before the layered layout (0.1), still importable.

A learner's own copy of a notebook (in ``my-work/``) keeps the import lines it was made with, such as
``from grader.audit import cases`` or ``from grader.questions.unit05 import MLPSpec``; ``make lab``
never overwrites a notebook the learner changed. Each old path is served by the module that now holds
its names (a unit's old module by every module of that unit's package), so those copies still run.
New code imports the new paths; ``tests/test_layout.py`` checks every old import line still resolves.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types

_UNITS = [f"{n:02d}" for n in range(14)]

# old dotted path (after "grader.") -> the modules that now hold its names, searched in order
MOVED: dict[str, tuple[str, ...]] = {
    "course": ("engine.course",),
    "question": ("engine.question",),
    "kinds": ("engine.kinds",),
    "results": ("engine.results",),
    "store": ("engine.store",),
    "progress": ("engine.progress",),
    "exercises": ("engine.exercises",),
    "sandbox": ("engine.limits",),
    "isolation": ("engine.torch_state",),
    "traces": ("probes.traces",),
    "programs": ("units.programs",),
    "widgets": ("learner.widgets", "learner.panels", "learner.display"),
    "drawing": ("learner.drawing",),
    "stepping": ("learner.stepper",),
    "labs": ("learner.labs",),
    "workspace": ("learner.workspace",),
    "cli": ("instructor.cli",),
    "notebooks": ("instructor.build",),
    "manifest": ("instructor.manifest",),
    "audit": ("units.unit10.capstone", "units.unit10.cases"),
    "questions": ("units",),
    **{
        f"questions.unit{u}": (
            f"units.unit{u}.questions",
            f"units.unit{u}.cases",
            f"units.unit{u}.kinds",
            f"units.unit{u}.support",
        )
        for u in _UNITS
    },
    **{f"questions.unit{u}_support": (f"units.unit{u}.support", f"units.unit{u}.cases") for u in ("11", "12", "13")},
}


# names a release retired, old path -> {old name: the name that now does its job}: 0.6 replaced 08.tbptt by
# 08.sliding-window, and an old copy's "try it by hand" cell imports tbptt_cases to print the smallest case
RENAMED: dict[str, dict[str, str]] = {"questions.unit08": {"tbptt_cases": "window_cases"}}


def _import_first(names: tuple[str, ...]) -> list[types.ModuleType]:
    found = []
    for name in names:
        try:
            found.append(importlib.import_module(f"grader.{name}"))
        except ModuleNotFoundError as exc:
            if exc.name != f"grader.{name}":
                raise
    return found


class _Forward(types.ModuleType):
    """An old module path whose attributes are read from the modules that hold them now."""

    def __init__(self, name: str, targets: tuple[str, ...]):
        super().__init__(name, f"moved: {name} is now {', '.join('grader.' + t for t in targets)}")
        self.__path__: list[str] = []  # so that old submodules (grader.questions.unit05) import too
        self._targets = targets

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        attr = RENAMED.get(self.__name__[len("grader.") :], {}).get(attr, attr)
        for module in _import_first(self._targets):
            if hasattr(module, attr):
                return getattr(module, attr)
        old = f"{self.__name__[len('grader.') :]}.{attr}"
        if old in MOVED:
            return importlib.import_module(f"grader.{old}")
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r} ({self.__doc__})")


class _Finder:
    """A meta path finder and its loader (the import system needs only these three methods; importlib.abc's base
    classes would cost ``import grader`` about 10 ms)."""

    def find_spec(self, fullname, path=None, target=None):
        old = fullname[len("grader.") :] if fullname.startswith("grader.") else None
        if old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _Forward(spec.name, MOVED[spec.name[len("grader.") :]])

    def exec_module(self, module):
        pass


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
