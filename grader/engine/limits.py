"""Run a learner's function so that whatever it does, the kernel lives and the learner gets one clear line.

``call(fn, *args, seconds=2.0)`` returns an :class:`Outcome`: the value, or
what went wrong (it raised, it ran past its time, it recursed without end, it
printed too much, it left global torch state changed). Nothing here lets a
learner's exception escape as a traceback from grader code.

The time limit uses SIGALRM where the call runs in the main thread (the
kernel's case); elsewhere a watchdog thread raises into the running thread,
which stops pure-Python loops but cannot interrupt a single long C call.
"""

from __future__ import annotations

import ctypes
import io
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

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


@dataclass
class _Timer:
    """The time limit. On expiry it raises OutOfTime, and keeps raising it on every line the learner's code runs
    until the call returns, so ``except BaseException`` in a loop cannot swallow it. A timer the learner had
    armed (ITIMER_REAL) is put back afterwards with the time it had left."""

    seconds: float
    use_signal: bool = False
    watchdog: threading.Timer | None = None
    old_handler: Any = None
    old_timer: tuple = (0.0, 0.0)
    started: float = 0.0
    expired: bool = False
    stopped: bool = False
    home: Any = None

    def _tracer(self, frame: FrameType, event: str, arg: Any) -> Callable[[FrameType, str, Any], Any] | None:
        if self.stopped or frame.f_code.co_filename == __file__:
            return None
        if event == "line" and self.expired:
            raise OutOfTime()
        return self._tracer

    def start(self) -> None:
        if self.seconds <= 0:
            return
        if hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread():
            self.use_signal = True
            self.home = sys._getframe(1)
            self.started = time.monotonic()

            def on_alarm(signum: int, frame: FrameType | None) -> None:
                if self.stopped:
                    return
                self.expired = True
                f = frame
                while f is not None and f is not self.home:
                    if f.f_code.co_filename != __file__:
                        f.f_trace_lines = True
                        f.f_trace = self._tracer
                    f = f.f_back
                sys.settrace(self._tracer)
                signal.setitimer(signal.ITIMER_REAL, 0.05)  # and again, until the call has returned
                raise OutOfTime()

            self.old_handler = signal.signal(signal.SIGALRM, on_alarm)
            self.old_timer = signal.setitimer(signal.ITIMER_REAL, self.seconds)
        else:
            target = threading.get_ident()

            def fire() -> None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(OutOfTime))

            self.watchdog = threading.Timer(self.seconds, fire)
            self.watchdog.daemon = True
            self.watchdog.start()

    def stop(self) -> None:
        self.stopped = True
        if self.use_signal:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if self.expired:
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


def call(fn: Callable, *args: Any, seconds: float = 2.0, **kwargs: Any) -> Outcome:
    """Call a learner's ``fn`` in a clean torch state with a time limit; never raises."""
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
                out.value = fn(*args, **kwargs)
            finally:
                timer.stop()
                sys.stdout, sys.stderr = old_out, old_err
        except NotImplementedError:
            out.not_written = True
        except OutOfTime:
            out.problem = f"it ran for more than {seconds:g} s and was stopped (an endless loop, or a sleep?)"
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
