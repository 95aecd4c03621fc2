"""The grader's own functions that compute an exercise's answer, switched off while a learner's function runs.

An exercise's experiment (its declaration's body) computes torch's answer with the course's own tools: unit 01's
``graph_walk`` returns ``probes.node_names(t)``. The exercise runner holds those tools (its cases and their
conversions use them), and a learner's function can reach any object of its process whatever names it spells: by
frames (``getattr(sys, "_get" + "frame")``), by a function's ``__globals__``, by ``__subclasses__``, from another
thread. Sealing the experiment hides the declaration; it does not hide the tools.

So, for the time the learner's code runs, every function the experiment names from a grader module the unit does
not give the learner (a module the course's own cells do not import), and every function those call in turn from
such modules, has its code swapped for a refusal: the function object itself refuses, however it was reached, in
any thread. The refusal is noted, so the case that met it fails with a sentence that says why, and the gradebook
names it. The code is put back for the runner's own steps (reading the result, the next case's build).

A module the unit gives the learner (``allowed``) is the learner's to use: using it is not reaching past the API
(whether an exercise may be passed with the course's own tool is the exercise's business, not this module's).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator

DEPTH = 3  # callees followed from the experiment's own names


def _protected(module_name: str, allowed: set[str]) -> bool:
    """A grader module the learner was not given (the engine holds no answer: kinds, cases, limits)."""
    if not module_name.startswith("grader.") or module_name.startswith("grader.engine"):
        return False
    return module_name not in allowed and not any(module_name.startswith(a + ".") for a in allowed if a != "grader")


def _names(code: types.CodeType) -> set[str]:
    """Every global and attribute name ``code`` (and the code nested in it) loads."""
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _unwrapped(value):
    """A function behind its decorators (``functools.cache``, ``functools.wraps``): the code that runs."""
    seen = 0
    while hasattr(value, "__wrapped__") and seen < 8:
        value, seen = value.__wrapped__, seen + 1
    return value


def _functions_named(fn: types.FunctionType, allowed: set[str]) -> set[types.FunctionType]:
    """The functions of protected grader modules that ``fn`` names: globals, and attributes of grader modules."""
    names = _names(fn.__code__)
    found: set[types.FunctionType] = set()
    scope = fn.__globals__
    for name in names:
        value = scope.get(name)
        candidates = []
        if isinstance(value, types.ModuleType) and value.__name__.startswith("grader"):
            candidates = [getattr(value, other, None) for other in names]
        elif value is not None:
            candidates = [value]
        for c in map(_unwrapped, candidates):
            if isinstance(c, types.FunctionType) and _protected(getattr(c, "__module__", "") or "", allowed):
                found.add(c)
    return found


def _reached(fn, allowed: set[str], depth: int | None = DEPTH) -> set[types.FunctionType]:
    """The functions of protected modules ``fn`` names, and those they name, ``depth`` deep (None: all of them)."""
    start = _unwrapped(fn)
    if not isinstance(start, types.FunctionType):
        return set()
    found: set[types.FunctionType] = set()
    frontier = {start}
    while frontier and (depth is None or depth > 0):
        depth = None if depth is None else depth - 1
        frontier = {g for f in frontier for g in _functions_named(f, allowed)} - found
        found |= frontier
    return found


def tools_of(experiment, allowed: set[str], call=None) -> set[types.FunctionType]:
    """The functions an experiment computes its answer with, from grader modules the learner was not given: those it
    names, and those they name, DEPTH deep (a learner could rebuild ``node_names`` from ``nodes`` and
    ``node_name``). Those the exercise's own ``call`` reaches are left on: the runner needs them while the
    learner's function runs (unit 03's ``run_watch`` trains with the loop its experiment reads), however deep the
    runner reaches them (unit 03's loop wraps the learner's hook four calls down)."""
    needed = _reached(call, allowed, depth=None) | ({call} if call is not None else set())
    return _reached(experiment, allowed) - needed


HANDLER = "__autograd_lab_refused__"  # a builtin, so that swapped code finds it from any module's globals
NOTEBOOK = "<your notebook>"  # the file name the learner's code is compiled under (learner_function)


def _template(*args, **kwargs):
    return __autograd_lab_refused__("NAME")  # noqa: F821 - a builtin while tools are switched off


def learner_running() -> bool:
    """Whether the learner's code may be what runs now: a frame of the notebook's code on this thread's stack, or a
    thread other than the runner's own (the learner's threads have no other marks)."""
    if threading.current_thread() is not threading.main_thread():
        return True
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == NOTEBOOK:
            return True
        f = f.f_back
    return False


class Refusals:
    """The tools switched off (code swapped), and what learner code tried to call. Only the runner switches them
    back on: never from under the learner's code (:func:`learner_running`), and a function's code is never replaced
    by the learner's (:func:`guard`)."""

    def __init__(self, tools: set[types.FunctionType]):
        self.tools = {f for f in tools if not f.__code__.co_freevars}  # a closure's code cannot be swapped
        self.saved = {f: f.__code__ for f in self.tools}
        self.refusals = {f: self._refusal(f) for f in self.tools}
        self.tried: list[str] = []

    def _refusal(self, fn: types.FunctionType) -> types.CodeType:
        name = f"{fn.__module__}.{fn.__qualname__}"
        consts = tuple(name if c == "NAME" else c for c in _template.__code__.co_consts)
        return _template.__code__.replace(co_consts=consts, co_name=fn.__code__.co_name)

    def _refused(self, name: str):
        self.tried.append(name)
        raise RuntimeError(
            f"{name} is the course's own tool for this exercise's answer, reached past the API the notebook "
            "gives you; it is not available to an exercise function"
        )

    def off(self) -> None:
        import builtins

        setattr(builtins, HANDLER, self._refused)
        for fn in self.tools:
            fn.__code__ = self.refusals[fn]

    def on(self) -> None:
        if learner_running():
            self.tried.append("the runner's own switch")
            raise RuntimeError("the course's tools are switched back on by the runner only")
        for fn in self.tools:
            fn.__code__ = self.saved[fn]

    def are_off(self) -> bool:
        return all(fn.__code__ is self.refusals[fn] for fn in self.tools)

    @contextlib.contextmanager
    def switched_off(self) -> Iterator[None]:
        """The tools refuse while the block runs (learner code), whatever reaches them."""
        self.off()
        try:
            yield
        finally:
            self.on()


_GUARDED = ("function.__new__", "code.__new__", "marshal.loads", "sys.setprofile", "sys.settrace")


def _by_the_learner() -> bool:
    """Whether the frame that raised the audit event is the notebook's own code (its caller, through a builtin:
    ``types.FunctionType(...)``, ``exec(...)``); library code (torch compiling, importlib loading) is not."""
    f = sys._getframe(2)
    return f is not None and f.f_code.co_filename == NOTEBOOK


def _hook(event: str, args: tuple) -> None:
    if event == "object.__setattr__":
        if len(args) > 1 and args[1] == "__code__" and learner_running():
            raise RuntimeError("an exercise function may not replace a function's code")
    elif event == "compile":
        if len(args) > 1 and args[1] != NOTEBOOK and _by_the_learner():
            raise RuntimeError("an exercise function may not compile code under another name")
    elif event == "exec":
        code = args[0] if args else None
        if isinstance(code, types.CodeType) and code.co_filename != NOTEBOOK and _by_the_learner():
            raise RuntimeError("an exercise function may not run the grader's code objects")
    elif (event in _GUARDED or event.startswith("ctypes.")) and _by_the_learner():
        raise RuntimeError(f"{event} is not available to an exercise function")


_GUARDING = False


def guard() -> None:
    """In the exercise runner, once, before any learner code runs: an audit hook (it cannot be removed) that refuses,
    while the learner's code runs, what would let it switch a tool back on or make code that passes for the
    runner's: replacing a function's ``__code__``, making functions or code objects, compiling under another file
    name, running a code object that is not the notebook's, loading marshalled code, ctypes, and setting a profile
    or trace function."""
    global _GUARDING
    if not _GUARDING:
        sys.addaudithook(_hook)
        _GUARDING = True


def describe(tools: set[types.FunctionType]) -> str:
    """The tools' names, for a message."""
    return ", ".join(sorted(f"{f.__module__}.{f.__qualname__}" for f in tools)) or "none"
