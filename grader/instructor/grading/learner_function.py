"""Run a learner's exercise functions on the generated cases and send back what they returned, nothing more.

Started by the grader in a contained process (``python -m
grader.instructor.grading.learner_function``), never in the learner's kernel. The request
comes on stdin as JSON: for each exercise, its id, the recovered source (the
definitions and imports of the learner's notebook, never its other
statements), the course's own definitions it stands on (the prelude, from ``notebooks/``), the
grader modules the course's cells import, and the names of the function(s): see
:mod:`grader.instructor.grading.exercise_sources`. Each case's result goes back
through the result pipe as one JSON line ``{"qid", "i", "value"}`` (or
``"problem"`` / ``"not_written"``). No truth is computed here: torch's answers
are computed by the grading process, which compares. A function that walks
up the stack finds cases and the runner, never an answer.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
import types
from typing import TYPE_CHECKING, Any

from grader.instructor.grading import answer_tools, containment, runner_state

if TYPE_CHECKING:  # imported where they are used: the runner imports torch only once it is guarded (main)
    from grader.engine.kinds import Function
    from grader.engine.question import Question

LEARNER_MODULE = "__learner__"  # the module name the learner's definitions run under
NOTEBOOK = "<your notebook>"  # the file name the learner's code is compiled under
# the cold path's command line (python -I -c BOOT ROOT): no folder the job can write on its module path
BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from grader.instructor.grading.learner_function import main; sys.exit(main())"
)

REQUEST_CAP = 4 * 2**20


def _line(fd, item: dict) -> None:
    containment.send(fd, (json.dumps(item, default=str) + "\n").encode())


def _result(fd, qid: str, i: int, case: str, label: str, **result) -> None:
    """One case's result, naming the case it was computed on (its fingerprint, and its label for a message)."""
    _line(fd, {"qid": qid, "i": i, "case": case, "label": label[:200], **result})


def _gone(*args, **kwargs):
    raise RuntimeError("the grader's experiments are not available here")


def _function_of(q: Question) -> Function:
    """An exercise's kind (the grading process asks only exercises of this runner)."""
    from grader.engine.kinds import Function

    if not isinstance(q.kind, Function):
        raise ValueError(f"{q.qid} is not an exercise: it has no function to run")
    return q.kind


def _kinds_only(request: list) -> tuple[dict[str, Function], dict]:
    """Each exercise's kind and cases, and the course's own tools its experiment computes the answer with
    (:mod:`.answer_tools`, switched off while the learner's code runs); then every experiment is sealed, out of
    reach of the learner's code."""
    from grader.engine import question

    registry = question.load()
    wanted = {item["qid"]: _function_of(registry[item["qid"]]) for item in request}
    tools = {item["qid"]: _refusals(registry[item["qid"]], wanted[item["qid"]], item) for item in request}
    for kind in wanted.values():
        kind.cases()  # made now, cached in the kind
    question.seal()
    question.run_experiment = _gone
    return wanted, tools


def _refusals(q: Question, kind: Function, item: dict) -> answer_tools.Refusals:
    """The course's tools for one exercise's answer: off while the learner's code runs, or, those the exercise's
    own call needs, guarded (they run for the runner and refuse the learner)."""
    allowed, whole = {str(a) for a in item.get("allowed", ())}, {str(a) for a in item.get("whole", ())}
    return answer_tools.Refusals(
        answer_tools.tools_of(q.experiment, allowed, call=kind.call, whole=whole),
        answer_tools.guarded_of(q.experiment, allowed, call=kind.call, whole=whole),
    )


LAZY = (map, filter, zip, enumerate, reversed, types.GeneratorType, range)
# each walked through its own unbound __iter__ (a subclass's cannot run): the four are typed alike as Any for that
CONTAINERS: tuple[Any, ...] = (list, tuple, set, frozenset)


def _notebook_code(obj) -> bool:
    """Whether ``obj`` is (or wraps) a function whose code the notebook wrote."""
    for inner in (obj, getattr(obj, "__func__", None), getattr(obj, "fget", None), getattr(obj, "__wrapped__", None)):
        code = getattr(inner, "__code__", None)
        if isinstance(code, types.CodeType) and code.co_filename == NOTEBOOK:
            return True
    return False


def _graders_record(cls: type) -> bool:
    """Whether ``cls`` is a named tuple a grader module defines (the very class its module holds under that name:
    a class made elsewhere that only claims the module's name is not one)."""
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    return (
        issubclass(cls, tuple)
        and hasattr(cls, "_fields")
        and module is not None
        and module.__name__.startswith("grader.")
        and getattr(module, cls.__qualname__, None) is cls
    )


def _runs_notebook_code(cls: type) -> bool:
    """Whether an object of ``cls`` can run the notebook's code when the runner reads it: its class, or its class's
    class, defines a method the notebook wrote (whatever ``__module__`` it claims)."""
    meta: type = type(cls)
    for c in (*cls.__mro__, *meta.__mro__):
        for value in list(vars(c).values()):
            if _notebook_code(value):
                return True
    return False


def _plain(value, depth: int = 0):
    """What the learner's function returned, made plain while its code may still run (the course's tools are
    off): lazy iterables are walked now, containers rebuilt as the built-in ones, and an object that could run the
    notebook's code later, while the runner reads it with the tools on, is refused."""
    if depth > 8:
        raise TypeError("it returned values nested too deeply")
    cls = type(value)
    if _notebook_code(value) or _runs_notebook_code(cls):
        raise TypeError(
            f"it returned an object whose class your notebook defines ({cls.__name__}): return plain values"
        )
    if isinstance(value, LAZY) or cls.__module__ == "itertools":
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in dict.items(value)}
    if _graders_record(cls):  # a runner's own record (unit 03's Watched), its fields made plain
        return cls._make(_plain(v, depth + 1) for v in tuple.__iter__(value))
    for base in CONTAINERS:
        if isinstance(value, base) and not (cls is not base and base is tuple and cls.__module__.startswith("torch")):
            return base(_plain(v, depth + 1) for v in base.__iter__(value))
    return value


# what `from grader import ...` gives a notebook: in the runner, each refuses (nothing records or reveals there)
API: tuple[str, ...] = ("predict", "reveal", "check", "mark_passed", "reset", "hint", "status", "draw", "stepper")
API += ("trace_backward", "unit_panel", "course_map", "neuron_lab", "memory_bill_lab", "depth_lab")


def _as_given(name: str, given: set[str], entire: set[str] | None) -> types.ModuleType:
    """The module ``name`` as the course's cells give it: whole (``entire``: the modules imported whole; None, every
    one), or a view holding the names they import from it (``given``'s ``name.attr`` entries)."""
    import importlib

    module = importlib.import_module(name)
    if entire is None or name in entire or any(name.startswith(w + ".") for w in entire):
        return module
    names = {g[len(name) + 1 :] for g in given if g.startswith(name + ".") and "." not in g[len(name) + 1 :]}
    view = types.ModuleType(name, f"{name}, as the course's cells give it: {', '.join(sorted(names))}")
    for attr in names:
        if hasattr(module, attr):
            setattr(view, attr, getattr(module, attr))
    return view


def _learner_builtins(allowed: list | tuple = (), whole: list | tuple | None = None) -> dict:
    """Builtins whose import gives the learner's code the public names of ``grader`` and the grader modules
    the course's own cells import (``allowed``), no other internals: a module the cells import whole (``whole``)
    as it is, one they import names from as a view holding those names only (``whole`` None: every one whole)."""
    import builtins
    import importlib
    import types

    real = builtins.__import__
    given = {str(a) for a in allowed}
    public = types.ModuleType("grader")
    for name in API:
        setattr(public, name, _gone)
    for module in sorted(given):
        parent, _, child = module.rpartition(".")
        if parent == "grader" and module in sys.modules:  # `from grader import probes`, as the course writes it
            setattr(public, child, sys.modules[module])

    def reachable(name: str) -> bool:
        return not (name == "grader" or name.startswith("grader.")) or name in given

    entire = None if whole is None else {str(w) for w in whole}

    def as_given(name: str):
        return _as_given(name, given, entire)

    class Modules(dict):
        """sys.modules as the learner's code sees it: the grader's modules it was not given are not there."""

    class SysView(types.ModuleType):
        def __getattr__(self, attr):
            if attr == "modules":
                return Modules(
                    (k, as_given(k) if k.startswith("grader.") else v)
                    for k, v in list(sys.modules.items())
                    if reachable(k)
                )
            return getattr(sys, attr)

    class ImportlibView(types.ModuleType):
        def __getattr__(self, attr):
            if attr == "import_module":
                return lambda name, package=None: guarded(name, fromlist=("*",))
            if attr in ("reload", "__import__", "util", "machinery", "_bootstrap"):
                raise AttributeError(f"importlib.{attr} is not available to an exercise function")
            return getattr(importlib, attr)

    views = {"sys": SysView("sys"), "importlib": ImportlibView("importlib")}

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        root = name.split(".")[0]
        if level == 0 and root in views and (name == root or not fromlist):
            return views[root]  # `import importlib.util` binds importlib: the view
        if level == 0 and (name == "grader" or name.startswith("grader.")):
            if name == "grader":
                return public
            if not reachable(name):
                raise ImportError(f"{name} is not available to an exercise function")
            return as_given(name) if fromlist else public
        return real(name, globals, locals, fromlist, level)

    return dict(vars(builtins), __import__=guarded)


def _notebook_code_ran(ran: list, frame, event: str, arg) -> None:
    """The profile while the runner reads a result (the course's tools on): notes the notebook's code running."""
    if event == "call" and frame.f_code.co_filename == NOTEBOOK and not ran:
        ran.append(frame.f_code.co_name)


def _learner_threads() -> bool:
    """Whether a thread other than the runner's runs the notebook's code (the course's tools are about to go on)."""
    main = threading.main_thread().ident
    for ident, frame in sys._current_frames().items():
        f = frame if ident != main else None
        while f is not None:
            if f.f_code.co_filename == NOTEBOOK:
                return True
            f = f.f_back
    return False


def main() -> int:
    fd = containment.result_pipe()
    answer_tools.guard()  # before any learner code: see answer_tools
    request = json.loads(sys.stdin.buffer.read(REQUEST_CAP))
    from grader.engine.cases import fingerprint

    kinds, tools = _kinds_only(request.get("exercises", []))
    before = runner_state.Snapshot(kinds, tools)  # nothing of the learner's has run yet
    for item in request.get("exercises", []):
        qid, kind, off = item["qid"], kinds[item["qid"]], tools[item["qid"]]
        fn = _learner_function(item, kind, off, fd)
        if fn is None:
            continue
        started = time.monotonic()
        for i, case in enumerate(kind.cases()):
            send = functools.partial(_result, fd, qid, i, fingerprint(case), str(case.label))
            if time.monotonic() - started > kind.budget_s:
                send(problem=f"only {i} cases ran within {kind.budget_s:g} s")
                break
            if not _run_case(kind, fn, case, off, send, before):
                break
    return 0


def _learner_function(item: dict, kind, off, fd):
    """The learner's function, defined on the course's own definitions (the prelude, from notebooks/) with the
    import that refuses the grader's internals; None (and the reason sent) where it cannot be had."""
    from grader.engine import limits
    from grader.engine.kinds import BadAnswer, Unanswered

    qid = item["qid"]
    # a module of its own, as a kernel's __main__ is: what reads a class's module (dataclasses, pickle) finds it
    module = types.ModuleType(LEARNER_MODULE)
    sys.modules[LEARNER_MODULE] = module
    ns: dict = module.__dict__
    try:  # the course's own definitions, from notebooks/ (trusted), with the real import
        exec(compile(str(item.get("prelude", "")), "<the course's cells>", "exec", dont_inherit=True), ns)
    except BaseException as exc:  # noqa: BLE001 - a course cell that no longer runs here: the grader's fault
        _line(fd, {"qid": qid, "i": 0, "problem": f"the course's cells raised {limits.describe_exception(exc)}"})
        return None
    for name in list(ns):  # the course's API as the prelude imported it: nothing that records or reveals
        if getattr(ns[name], "__module__", "").startswith("grader.learner"):
            ns[name] = _gone
    machinery = answer_tools.MACHINERY.search(str(item["source"]))
    if machinery:  # what no exercise needs, and every way round the runner found so far spells
        word = machinery.group(1) or (f".{machinery.group(2)}" if machinery.group(2) else machinery.group(3))
        problem = (
            f"your definitions reach {word}, the running program's own machinery (frames, closures, "
            "the collector's objects, torch's dispatch and engine internals): an exercise is graded on what its "
            "function computes with the notebook's API, and this one was not run"
        )
        _line(fd, {"qid": qid, "i": 0, "problem": problem})
        return None
    ns["__builtins__"] = _learner_builtins(item.get("allowed", ()), item.get("whole"))
    try:
        with off.switched_off():
            # dont_inherit: the notebook's code is not this module's (whose annotations are postponed)
            exec(compile(str(item["source"]), NOTEBOOK, "exec", dont_inherit=True), ns)
    except BaseException as exc:  # noqa: BLE001 - the learner's code, whatever it raised
        problem = f"your notebook's definitions raised {limits.describe_exception(exc)}"
        _line(fd, {"qid": qid, "i": 0, "problem": problem})
        return None
    names = item["names"]
    fn = ns.get(names[0], ...) if len(names) == 1 else tuple(ns.get(n, ...) for n in names)
    try:
        return kind.read(fn)
    except Unanswered:
        _line(fd, {"qid": qid, "i": 0, "problem": f"{' and '.join(names)} is not defined in the notebook"})
    except BadAnswer as exc:
        _line(fd, {"qid": qid, "i": 0, "problem": str(exc)})
    return None


def _run_case(kind, fn, case, off, send, before: runner_state.Snapshot) -> bool:
    """One case: the learner's function called with the course's tools off, what it returned made plain, then read
    with the tools on (the notebook's code must not run then); whether to go on to the next case."""
    from grader.engine import limits, torch_state
    from grader.engine.kinds import BadAnswer, Unanswered

    changed = before.changed()  # by the definitions, or by an earlier case
    if changed:
        send(problem=runner_state.message(changed))
        return False
    with torch_state.clean_room():
        case_ns = case.fresh()
    raw = None
    with off.switched_off():
        outcome = limits.call(kind.call, fn, case, case_ns, seconds=kind.per_case_s)
        if not (outcome.not_written or outcome.problem):
            try:
                raw = _plain(outcome.value)
            except TypeError as exc:
                outcome.problem = str(exc)
    changed = before.changed()
    if changed:
        send(problem=runner_state.message(changed))
    elif off.tried:
        send(problem=f"it called {off.tried[0]}, the course's own tool for this answer, reached past the API")
    elif outcome.not_written:
        send(not_written=True)
    elif outcome.problem:
        send(problem=outcome.problem)
    elif _learner_threads():
        send(problem="it left a thread of its own running: return only when all your code has finished")
    else:
        try:
            value = _read_result(kind, raw, case, case_ns)
        except Unanswered:
            send(problem="it returned nothing (a missing return?)")
        except (BadAnswer, Exception) as exc:
            send(problem=f"its result could not be read ({str(exc)[:150]})")
        else:
            send(value=value)
            return True
    return False


def _read_result(kind, raw, case, case_ns):
    """What the learner's function returned, read by the kind with the course's tools on, while a profile notes
    any of the notebook's code running (it must not: it could ask the tools)."""
    from grader.engine.kinds import BadAnswer

    ran: list = []
    sys.setprofile(functools.partial(_notebook_code_ran, ran))
    try:
        value = kind.returns.encode(kind.returns.read(kind.convert(raw, case, case_ns)))
    finally:
        sys.setprofile(None)
    if ran:
        raise BadAnswer(f"your code ({ran[0]}) ran while its result was read")
    json.dumps(value)
    return value


if __name__ == "__main__":
    sys.exit(main())
