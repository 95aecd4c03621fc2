"""How much slower than a quiet machine this one runs now: the factor every exercise's time limits are scaled by.

``scale()`` is the larger of two figures, never below 1 and at most MAX_SCALE:
a fixed small workload (tiny torch forward and backward passes and a
pure-Python loop, QUIET_S seconds on a quiet machine) timed as the median of
three runs, over QUIET_S (it sees a slow CPU; measured on first use and again
once REFRESH_S old); and the 1-minute load average over the CPUs this process
may use, read on every call (it sees a busy machine: a short workload does
not, the scheduler lets a process that just woke up run first, while a check
that runs for seconds gets only its fair share of a loaded CPU).
The environment variable AUTOGRAD_LAB_TIME_SCALE forces the factor (a slow
laptop, or a test that emulates load): any positive number, used as it is.
"""

from __future__ import annotations

import os
import time

from grader.engine import env_vars

ENV = env_vars.TIME_SCALE
QUIET_S = 0.012  # the workload's median on a quiet machine (2 cores, torch 2.13 CPU); bench/run.py reports it
MAX_SCALE = 16.0
REFRESH_S = 60.0

_measured: tuple[float, float] | None = None  # (workload ratio, monotonic time it was measured)


def workload() -> None:
    import torch  # here, so that importing the engine's kinds does not import torch

    x = torch.ones(8, requires_grad=True)
    for _ in range(30):
        (x * 2).sin().sum().backward()
    total = 0
    for i in range(30_000):
        total += i * i


def measure(runs: int = 3) -> float:
    """Seconds the workload takes here now: the median of ``runs`` after one warm-up."""
    workload()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        workload()
        times.append(time.perf_counter() - started)
    import statistics  # here, not at import (it brings decimal and fractions): `import grader` stays light

    return statistics.median(times)


def forced() -> float | None:
    """The factor AUTOGRAD_LAB_TIME_SCALE asks for, or None when unset or not a positive number."""
    try:
        value = float(os.environ.get(ENV, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def load_ratio() -> float:
    """The 1-minute load average per CPU this process may use (0 where the platform has none)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        return os.getloadavg()[0] / max(cpus, 1)
    except (AttributeError, OSError):
        return 0.0


def scale() -> float:
    """The factor to multiply a quiet machine's time limit by on this machine now."""
    global _measured
    wanted = forced()
    if wanted is not None:
        return wanted
    now = time.monotonic()
    if _measured is None or now - _measured[1] > REFRESH_S:
        from grader.engine import torch_state  # here: importing the engine's kinds does not import torch

        with torch_state.clean_room():  # never under the learner's modes, hooks or no_grad
            _measured = (measure() / QUIET_S, now)
    return round(min(max(_measured[0], load_ratio(), 1.0), MAX_SCALE), 1)
