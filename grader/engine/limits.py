"""Run a learner's function so that whatever it does, the kernel lives and the learner gets one clear line.

``call(fn, *args, seconds=2.0)`` returns an :class:`Outcome`: the value, or
what went wrong (it raised, it ran past its time, ``timed_out``; it recursed
without end, it printed too much, it left global torch state changed).
Nothing here lets a learner's exception escape as a traceback from grader code.

The time limit never interrupts clean-up. Every frame is owned by the learner
(a notebook cell, a test, exec'd text: any file outside the places below), by
the protected code (this package, torch, contextlib, any library ``__exit__``)
or by other library code (the stdlib, other installed packages). OutOfTime is
raised only in a learner frame: when the limit expires, SIGALRM's handler
raises at once if the interrupted frame is the learner's; otherwise the expiry
stays pending, every learner frame on the stack (and every new one, through
``sys.settrace``) raises at its next line, and the alarm looks again every
50 ms until the call returns. So a ``finally`` or ``__exit__`` of the grader or
of torch (the dispatch-mode stack's pop, ``saved_tensors_hooks``, ``no_grad``)
runs to completion: the OutOfTime passes through it, it is never raised in it.
A learner's ``except BaseException: pass`` loop is still stopped: each of its
lines raises again. The import of a module that is not the learner's is never
interrupted either (a half-run module would stay in sys.modules, broken): the
limit waits for it to end. Other library code is interrupted too once the
expiry is GRACE_S old, so a learner blocked in ``queue.get()`` or
``Event.wait()`` is stopped; a single long call inside torch (or C) cannot be, and runs to its
end. A learner function that swallows the OutOfTime and returns is still
reported as stopped. Whatever the learner itself leaves half done (its own
``__exit__`` interrupted, a mode entered by hand), ``torch_state.clean_room``
puts torch's global state back after every call.

The alarm is SIGALRM where the call runs in the main thread (the kernel's
case); elsewhere a watchdog thread raises into the running thread, by the same
rule (the thread's current frame is looked at first; a race remains between
that look and the raise, which the clean room covers), and cannot interrupt
a single long C call.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import signal
import site
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import torch

from grader.engine import torch_state

OUTPUT_KEEP = 2000  # characters of printed output kept for the message
OUTPUT_LIMIT = 1_000_000  # characters printed before the call is stopped


class OutOfTime(BaseException):
    """Raised inside a learner's function when it runs past its limit."""


class TooMuchOutput(BaseException):
    """Raised inside a learner's function when it prints past the limit."""


@dataclass
class Outcome:
    value: Any = None
    problem: str = ""  # empty when the call went well
    not_written: bool = False  # raised NotImplementedError: the placeholder
    printed: str = ""
    state_changes: list = field(default_factory=list)
    timed_out: bool = False  # stopped by the time limit (``problem`` words it)

    @property
    def ok(self) -> bool:
        return not self.problem and not self.not_written


class CappedWriter(io.TextIOBase):
    """Stands in for stdout/stderr: keeps the first OUTPUT_KEEP characters, stops the call past OUTPUT_LIMIT."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.count = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        if self.count < OUTPUT_KEEP:
            self.kept.append(text[: OUTPUT_KEEP - self.count])
        self.count += len(text)
        if self.count > OUTPUT_LIMIT:
            raise TooMuchOutput()
        return len(text)

    def text(self) -> str:
        return "".join(self.kept)


def _where_in_learner_code(exc: BaseException) -> str:
    """'line 4 of your function' from the innermost frame outside the grader, if any."""
    frames = traceback.extract_tb(exc.__traceback__)
    library = ("/grader/", "/site-packages/", "/dist-packages/", "/lib/python3")
    mine = [f for f in frames if not any(part in f.filename.replace("\\", "/") for part in library)]
    if not mine:
        return ""
    f = mine[-1]
    if f.filename.startswith("<ipython-input") or "ipykernel" in f.filename or f.filename.startswith("/tmp/ipykernel"):
        return f" (in {f.name}, line {f.lineno} of its cell)"
    return f" (in {f.name}, line {f.lineno})"


def describe_exception(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(text) > 200:
        text = text[:199] + "…"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def _library_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(protected, library): folders whose frames are never interrupted (this package, torch, the stdlib's
    contextlib), and folders of other library code (the stdlib, site-packages)."""
    grader_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    torch_root = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    import sysconfig  # here, not at import: `import grader` stays close to `import torch`

    paths = sysconfig.get_paths()
    library = {os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    library.update(os.path.abspath(p) + os.sep for p in site.getsitepackages() if p)
    return (grader_root, torch_root, contextlib.__file__), tuple(sorted(library))


_PROTECTED, _LIBRARY = _library_roots()
_CLEAN_UP_NAMES = frozenset({"__exit__", "__aexit__", "__del__"})
GRACE_S = 1.0  # after expiry, how long a call may stay in other library code before it is interrupted there too
TICK_S = 0.05  # how often the expiry is looked at again once it is pending


def _owner(code: CodeType) -> str:
    """'learner', 'protected' (grader, torch, contextlib, any library __exit__) or 'library' (stdlib, other
    installed packages). Code from a notebook cell, a test file or an exec'd string is the learner's."""
    name = code.co_filename
    if code is _ENTER_CODE:
        return "learner"
    if name.startswith("<frozen"):
        return "library"
    if name.startswith("<"):
        return "learner"
    if name.startswith(_PROTECTED):
        return "protected"
    if name.startswith(_LIBRARY):
        return "protected" if code.co_name in _CLEAN_UP_NAMES else "library"
    return "learner"


def _importing_a_library(frame: FrameType | None, home: FrameType | None) -> bool:
    """Whether ``frame`` runs inside the import of a module that is not the learner's: its top-level code is on
    the stack. Interrupted there, the module stays half made (found in sys.modules without what it had not yet
    defined: torch's first optimizer imports torch._dynamo and sympy, and a sympy cut short lost ``sympy.core``
    for every later torch.compile), so the limit waits for the import to end."""
    f = frame
    while f is not None and f is not home:
        if f.f_code.co_name == "<module>" and _owner(f.f_code) != "learner":
            return True
        f = f.f_back
    return False


def _enter_learner(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """The one frame of ours that counts as the learner's: it holds nothing to clean up, so a builtin the
    learner passed (``time.sleep``) can be interrupted while it runs here."""
    return fn(*args, **kwargs)


_ENTER_CODE = _enter_learner.__code__


@dataclass
class _Timer:
    """The time limit; see the module's docstring for when it raises. A timer the learner had armed
    (ITIMER_REAL) is put back afterwards with the time it had left."""

    seconds: float
    use_signal: bool = False
    watchdog: threading.Timer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    target: int = 0
    old_handler: Any = None
    old_timer: tuple = (0.0, 0.0)
    started: float = 0.0
    expired_at: float = 0.0  # monotonic time of expiry; 0 while the call is within its limit
    stopped: bool = False
    timed_out: bool = False  # an OutOfTime was raised
    home: Any = None

    def _may_raise(self, frame: FrameType) -> bool:
        if _importing_a_library(frame, self.home):
            return False
        owner = _owner(frame.f_code)
        if owner == "learner":
            return True
        return owner == "library" and time.monotonic() - self.expired_at >= GRACE_S

    def _tracer(self, frame: FrameType, event: str, arg: Any) -> Callable[[FrameType, str, Any], Any] | None:
        if self.stopped or _owner(frame.f_code) != "learner":
            return None  # library frames are never traced, so never interrupted from here
        if event == "line" and self.expired_at and not self.stopped and not _importing_a_library(frame, self.home):
            self.timed_out = True
            raise OutOfTime()
        return self._tracer

    def _trace_learner_frames(self, frame: FrameType | None) -> None:
        """Every learner frame between ``frame`` and the call raises at its next line; so does every new one."""
        f = frame
        while f is not None and f is not self.home:
            if _owner(f.f_code) == "learner":
                f.f_trace_lines = True
                f.f_trace = self._tracer
            f = f.f_back
        sys.settrace(self._tracer)

    def start(self) -> None:
        if self.seconds <= 0:
            return
        self.started = time.monotonic()
        if hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread():
            self.use_signal = True
            self.home = sys._getframe(1)

            def on_alarm(signum: int, frame: FrameType | None) -> None:
                if self.stopped:
                    return
                if not self.expired_at:
                    self.expired_at = time.monotonic()
                    self._trace_learner_frames(frame)
                signal.setitimer(signal.ITIMER_REAL, TICK_S)  # looked at again until the call has returned
                if frame is not None and self._may_raise(frame):
                    self.timed_out = True
                    raise OutOfTime()

            self.old_handler = signal.signal(signal.SIGALRM, on_alarm)
            self.old_timer = signal.setitimer(signal.ITIMER_REAL, self.seconds)
        else:
            self.target = threading.get_ident()
            self._schedule(self.seconds)

    def _schedule(self, delay: float) -> None:
        self.watchdog = threading.Timer(delay, self._watch)
        self.watchdog.daemon = True
        self.watchdog.start()

    def _watch(self) -> None:
        """The watchdog (calls outside the main thread): raise into the call's thread only while it runs
        learner code, looking again every TICK_S until the call returns."""
        with self.lock:
            if self.stopped:
                return
            if not self.expired_at:
                self.expired_at = time.monotonic()
            frame = sys._current_frames().get(self.target)
            if frame is not None and self._may_raise(frame):
                self.timed_out = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.target), ctypes.py_object(OutOfTime))
            self._schedule(TICK_S)

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
        if self.use_signal:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if self.expired_at:
                sys.settrace(None)
                f: FrameType | None = sys._getframe(1)
                while f is not None:
                    f.f_trace = None
                    f = f.f_back
            signal.signal(signal.SIGALRM, self.old_handler if self.old_handler is not None else signal.SIG_DFL)
            left, interval = self.old_timer
            if left > 0:  # the learner's own timer: re-armed with what it had left
                remaining = left - (time.monotonic() - self.started)
                signal.setitimer(signal.ITIMER_REAL, max(remaining, 0.001), interval)
        elif self.watchdog is not None:
            self.watchdog.cancel()
            if self.timed_out:  # one may still be pending: not to be raised in the grader after the call
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.target), None)


def stop_message(seconds: float, scale: float = 1.0) -> str:
    """'it ran for more than 6 s (the limit on this machine, 3x the quiet one) and was stopped ...'."""
    where = f" (the limit on this machine, {scale:.3g}x the quiet one)" if scale > 1 else ""
    return f"it ran for more than {seconds:.3g} s{where} and was stopped (an endless loop, or a sleep?)"


def call(fn: Callable, *args: Any, seconds: float = 2.0, scale: float = 1.0, **kwargs: Any) -> Outcome:
    """Call a learner's ``fn`` in a clean torch state with a time limit of ``seconds``; never raises.

    ``scale`` only words the message: how many times the quiet machine's limit ``seconds`` already is
    (see :mod:`grader.engine.pace`)."""
    out = Outcome()
    writer = CappedWriter()
    timer = _Timer(seconds)
    old_out, old_err = sys.stdout, sys.stderr
    with torch_state.clean_room():
        before = torch_state.snapshot()
        try:
            sys.stdout = sys.stderr = writer
            timer.start()
            try:
                out.value = _enter_learner(fn, args, kwargs)
            finally:
                timer.stop()
                sys.stdout, sys.stderr = old_out, old_err
            if timer.timed_out:  # stopped, and the learner's code swallowed the OutOfTime
                raise OutOfTime()
        except NotImplementedError:
            out.not_written = True
        except OutOfTime:
            out.value = None
            out.timed_out = True
            out.problem = stop_message(seconds, scale)
        except TooMuchOutput:
            out.problem = f"it printed more than {OUTPUT_LIMIT:,} characters and was stopped"
        except RecursionError:
            out.problem = "it recursed without end (RecursionError); check the base case of your recursion"
        except MemoryError:
            out.problem = "it ran out of memory (MemoryError)"
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: a learner's exit() must not end the kernel
            out.problem = f"it raised {describe_exception(exc)}{_where_in_learner_code(exc)}"
        finally:
            sys.stdout, sys.stderr = old_out, old_err
        after = torch_state.snapshot()
        out.state_changes = torch_state.differences(before, after)
    out.printed = writer.text()
    if out.state_changes and not out.problem and not out.not_written:
        out.problem = (
            "it changed global torch state and left it changed ("
            + "; ".join(out.state_changes)
            + "); the grader put it back. Restore what you change, e.g. with a `with` block"
        )
    return out
