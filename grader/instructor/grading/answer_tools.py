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

A module the unit's cells import whole (``from grader import probes``) is the learner's to use, and so is a name
they import from a module (``from grader.units.unit07.cases import write_program``: that function, and what it
calls); the module's other functions are not given by that import. Using what was given is not reaching past the
API (whether an exercise may be passed with the course's own tool is the exercise's business, not this module's).
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import types
from collections.abc import Iterator

DEPTH = 3  # callees followed from the experiment's own names

# The names by which code reaches the running program's own machinery rather than computing: frames, closures, the
# collector's objects, and torch's dispatch stack and autograd engine beneath the switches an exercise puts on. An
# exercise function never needs them; every way found round the runner (red team 43b, issue 45's corpus) spells one.
MACHINERY = re.compile(
    r"\b(f_back|f_locals|f_globals|tb_frame|gi_frame|__closure__|cell_contents|__globals__|_getframe|"
    r"_current_frames|get_objects|get_referrers|get_referents|_get_current_dispatch_mode\w*|_pop_mode_temporarily|"
    r"_pop_mode|_push_mode|_execution_engine|_ImperativeEngine|_EngineBase|_engine_run_backward|getargvalues|"
    r"getclosurevars|currentframe|getouterframes|getinnerframes|getframeinfo)\b"
    r"|\.\s*(sys)\b"  # a module's own sys (torch.sys, a given module's): the real one, past the runner's view of it
    r"|\b(inspect\s*\.\s*(?:stack|trace)|from\s+inspect\s+import[^\n]*\b(?:stack|trace))\b"  # the frames, by inspect
)


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


def _given(allowed: set[str]) -> set[types.FunctionType]:
    """The functions the course's cells import by name (``module.name`` entries of ``allowed``)."""
    found = set()
    for entry in allowed:
        module, _, name = entry.rpartition(".")
        value = _unwrapped(getattr(sys.modules.get(module), name, None)) if module in sys.modules else None
        if isinstance(value, types.FunctionType):
            found.add(value)
    return found


def tools_of(experiment, allowed: set[str], call=None, whole: set[str] | None = None) -> set[types.FunctionType]:
    """The functions an experiment computes its answer with, from grader modules the learner was not given: those it
    names, and those they name, DEPTH deep (a learner could rebuild ``node_names`` from ``nodes`` and
    ``node_name``). Those the exercise's own ``call`` reaches are left on: the runner needs them while the
    learner's function runs (unit 03's ``run_watch`` trains with the loop its experiment reads), however deep the
    runner reaches them (unit 03's loop wraps the learner's hook four calls down)."""
    whole = allowed if whole is None else whole  # None: every module the cells import, given whole
    return _reached(experiment, whole) - _by_call(call, whole) - _handed(allowed, whole)


def guarded_of(experiment, allowed: set[str], call=None, whole: set[str] | None = None) -> set[types.FunctionType]:
    """The experiment's tools the exercise's own ``call`` needs too (09's ``guard_truth``, 07's cached outcome):
    they run for the runner's code and refuse a call from the learner's (:meth:`Refusals.off`)."""
    whole = allowed if whole is None else whole
    return (_reached(experiment, whole) & _by_call(call, whole)) - _handed(allowed, whole) - {call}


def _by_call(call, whole: set[str]) -> set[types.FunctionType]:
    return _reached(call, whole, depth=None) | ({call} if call is not None else set())


def _handed(allowed: set[str], whole: set[str]) -> set[types.FunctionType]:
    """What the course's cells hand the learner by name, and what those call: it works as the cells use it."""
    given = _given(allowed)
    for fn in list(given):
        given |= _reached(fn, whole, depth=None)
    return given


HANDLER = "__autograd_lab_refused__"  # a builtin, so that swapped code finds it from any module's globals
NOTEBOOK = "<your notebook>"  # the file name the learner's code is compiled under (learner_function)


GUARD = "__autograd_lab_guarded__"  # the builtin a guarded tool's swapped code asks


def _template(*args, **kwargs):
    # a builtin while tools are switched off (Refusals sets HANDLER on builtins); mypy cannot see one made at run time
    return __autograd_lab_refused__("NAME")  # type: ignore[name-defined]  # noqa: F821


def _guarded_template(*args, **kwargs):
    return __autograd_lab_guarded__("NAME", args, kwargs)  # type: ignore[name-defined]  # noqa: F821 - a builtin while switched off


def learner_running() -> bool:
    """Whether the learner's code may be what runs now: a frame of the notebook's code on this thread's stack, or a
    thread other than the runner's own (the learner's threads have no other marks)."""
    if threading.current_thread() is not threading.main_thread():
        return True
    f: types.FrameType | None = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == NOTEBOOK:
            return True
        f = f.f_back
    return False


def _name(fn: types.FunctionType) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _copy(fn: types.FunctionType) -> types.FunctionType:
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    return copy


class Refusals:
    """The tools switched off (code swapped), and what learner code tried to call. Only the runner switches them
    back on: never from under the learner's code (:func:`learner_running`), and a function's code is never replaced
    by the learner's (:func:`guard`)."""

    def __init__(self, tools: set[types.FunctionType], guarded: frozenset | set[types.FunctionType] = frozenset()):
        swappable = {f for f in tools | guarded if not f.__code__.co_freevars}  # a closure's code cannot be swapped
        self.tools = swappable
        self.guarded = {f for f in swappable if f in guarded and f not in tools}
        self.saved = {f: f.__code__ for f in self.tools}
        self.refusals = {f: self._refusal(f, _guarded_template if f in self.guarded else _template) for f in self.tools}
        # what a guarded tool runs for the runner: the function as it was, in an object of its own
        self.copies = {_name(f): _copy(f) for f in self.guarded}
        self.tried: list[str] = []

    def _refusal(self, fn: types.FunctionType, template) -> types.CodeType:
        consts = tuple(_name(fn) if c == "NAME" else c for c in template.__code__.co_consts)
        return template.__code__.replace(co_consts=consts, co_name=fn.__code__.co_name)

    def _guarded(self, name: str, args: tuple, kwargs: dict):
        """A guarded tool called: run for the runner's code, refused from the learner's."""
        if learner_running():
            return self._refused(name)
        return self.copies[name](*args, **kwargs)

    def _refused(self, name: str):
        self.tried.append(name)
        raise RuntimeError(
            f"{name} is the course's own tool for this exercise's answer, reached past the API the notebook "
            "gives you; it is not available to an exercise function"
        )

    def off(self) -> None:
        import builtins

        setattr(builtins, HANDLER, self._refused)
        setattr(builtins, GUARD, self._guarded)
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
