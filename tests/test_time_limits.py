"""The time limit stops a learner's function without corrupting torch: never inside clean-up, every piece of
global state put back (modes, hooks, switches, RNG), torch.compile still working; limits follow the machine's pace."""

import os
import textwrap
import threading

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

from grader import check
from grader.engine import limits, pace, torch_state
from grader.engine.question import get
from grader.units.unit09 import support as s09
from grader.units.unit11 import support as s11
from grader.units.unit12 import support as s12

SHORT = 0.05  # seconds: every forced timeout below fires inside the support code's mode or hook


@pytest.fixture(autouse=True)
def quiet_pace(monkeypatch):
    """Limits as written: these tests force a timeout, they do not measure one."""
    monkeypatch.setenv(pace.ENV, "1")


def spin(*args, **kwargs):
    while True:
        pass


def keep(packed):
    return packed


class Passing(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class PassingFunctions(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class Spinning(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        spin()


def _own_mode_spinning():
    Spinning().__enter__()
    torch.ones(2).sin()


def _module_bill():
    model = nn.Linear(2, 2)
    with s12.ModuleBill(model):
        spin()


def _backward_watch():
    model = nn.Linear(2, 2)
    with s12.BackwardWatch(model):
        spin()


def _held_in_a_loop():  # the alarm lands inside the grader's own code (gc.collect in held) again and again
    with s09.MemoryWatch() as watch:
        while True:
            watch.held()


def _quiet_profile():
    with s12.quiet_profile():
        spin()


def _learner_modes_and_switches():
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(1)
    torch.randn(3)
    with torch.no_grad(), torch.autocast("cpu"), torch.autograd.set_detect_anomaly(True):
        with torch.autograd.graph.saved_tensors_hooks(keep, keep), Passing():
            spin()


def _learner_mode_left_pushed():
    Passing().__enter__()
    torch.autograd.graph.saved_tensors_hooks(keep, keep).__enter__()
    PassingFunctions().__enter__()
    torch.set_grad_enabled(False)
    spin()


SUPPORT = {
    "09 MemoryWatch (held_after)": lambda: s09.held_after(spin),
    "09 MemoryWatch.held in a loop": _held_in_a_loop,
    "09 under_hooks": lambda: s09.under_hooks((spin, keep), lambda: torch.ones(2, requires_grad=True).exp()),
    "09 write_after_save": lambda: s09.write_after_save((spin, keep)),
    "09 leaks": lambda: s09.leaks(spin),
    "11 saved_storages": lambda: s11.saved_storages(spin),
    "12 anomaly_report": lambda: s12.anomaly_report(spin),
    "12 step_ratio": lambda: s12.step_ratio(spin),
    "12 ModuleBill": _module_bill,
    "12 BackwardWatch": _backward_watch,
    "12 quiet_profile": _quiet_profile,
    "a learner's own dispatch mode spinning": _own_mode_spinning,
    "a learner's modes, hooks and switches": _learner_modes_and_switches,
    "a learner's modes left pushed": _learner_mode_left_pushed,
}
# exercises whose call pushes a hook or a mode (saved_tensors_hooks, MemoryWatch, enable_grad) around the learner's
EXERCISES = {
    "07.version-guard": (spin, keep),
    "09.half-guard": (spin, keep),
    "03.nonfinite-watch": spin,
}


def _assert_restored(before):
    assert torch_state.snapshot() == before, torch_state.differences(before, torch_state.snapshot())
    assert _get_current_dispatch_mode_stack() == [] and torch.overrides._get_current_function_mode_stack() == []
    assert not torch.autograd.profiler._is_profiler_enabled


@pytest.mark.parametrize("name", SUPPORT)
def test_a_timeout_inside_support_code_leaves_torch_as_it_was(name):
    before = torch_state.snapshot()
    out = limits.call(SUPPORT[name], seconds=SHORT)
    assert out.timed_out and "ran for more than 0.05 s" in out.problem
    _assert_restored(before)


@pytest.mark.parametrize("qid", EXERCISES)
def test_a_timeout_inside_an_exercise_leaves_torch_as_it_was(qid, monkeypatch):
    monkeypatch.setattr(get(qid).kind, "quiet_per_case_s", SHORT)
    before = torch_state.snapshot()
    result = check(qid, EXERCISES[qid])
    assert result.verdict == "incorrect" and "ran for more than 0.05 s" in str(result)
    assert result.detail["checked"] == 1  # a timed-out case ends the check (Outcome.timed_out, not its words)
    _assert_restored(before)


def test_torch_compile_still_compiles_after_every_forced_timeout(monkeypatch):
    for fn in SUPPORT.values():
        assert limits.call(fn, seconds=SHORT).timed_out
    for qid, answer in EXERCISES.items():
        monkeypatch.setattr(get(qid).kind, "quiet_per_case_s", SHORT)
        check(qid, answer)
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(lambda x: x.sin() + 1, backend="eager")
    assert torch.equal(compiled(torch.ones(3)), torch.ones(3).sin() + 1)
    assert counters["stats"]["unique_graphs"] >= 1, dict(counters)


def test_the_limit_never_interrupts_protected_clean_up(tmp_path, monkeypatch):
    """A finally block of protected code (here a helper counted as the grader's) runs to its end, though the
    limit has expired and is looked at every 50 ms while it runs."""
    (tmp_path / "cleanup_helper.py").write_text(
        textwrap.dedent(
            """
            import time
            finished = []

            def guarded(body):
                try:
                    body()
                finally:
                    started = time.monotonic()
                    while time.monotonic() - started < 0.4:
                        pass
                    finished.append(True)
            """
        )
    )
    monkeypatch.setattr(limits, "_PROTECTED", limits._PROTECTED + (str(tmp_path) + os.sep,), raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    import cleanup_helper

    out = limits.call(cleanup_helper.guarded, spin, seconds=SHORT)
    assert out.timed_out and cleanup_helper.finished == [True]


def test_a_swallowed_timeout_is_still_a_timeout():
    def swallows():
        try:
            spin()
        except BaseException:
            return 7

    out = limits.call(swallows, seconds=SHORT)
    assert out.timed_out and out.value is None and "ran for more than" in out.problem


def test_a_learner_blocked_in_library_code_is_stopped_after_the_grace():
    out = limits.call(lambda: threading.Event().wait(), seconds=SHORT)
    assert out.timed_out


def test_a_mode_left_pushed_is_named_and_popped():
    before = torch_state.snapshot()
    out = limits.call(lambda: Passing().__enter__() and None)
    assert "the dispatch modes in force was [], is now [Passing]" in out.problem
    _assert_restored(before)


# --- the machine's pace -------------------------------------------------------------------------


def test_a_forced_scale_multiplies_every_limit_and_the_refusal_shows_it(monkeypatch):
    monkeypatch.setenv(pace.ENV, "3")
    kind = get("07.version-guard").kind
    monkeypatch.setattr(kind, "quiet_per_case_s", SHORT)
    assert kind.per_case_s == pytest.approx(3 * SHORT) and kind.budget_s == pytest.approx(3 * kind.quiet_budget_s)
    result = check("07.version-guard", (spin, keep))
    assert "ran for more than 0.15 s (the limit on this machine, 3x the quiet one)" in str(result)


def test_the_measured_scale_follows_the_slower_figure_never_below_one(monkeypatch):
    monkeypatch.delenv(pace.ENV)
    monkeypatch.setattr(pace, "_measured", None)
    monkeypatch.setattr(pace, "measure", lambda: pace.QUIET_S / 2)
    monkeypatch.setattr(pace, "load_ratio", lambda: 0.5)
    assert pace.scale() == 1.0
    monkeypatch.setattr(pace, "load_ratio", lambda: 4.0)
    assert pace.scale() == 4.0
    monkeypatch.setattr(pace, "_measured", None)
    monkeypatch.setattr(pace, "measure", lambda: pace.QUIET_S * 100)
    assert pace.scale() == pace.MAX_SCALE
    monkeypatch.setenv(pace.ENV, "not a number")
    assert pace.scale() == pace.MAX_SCALE  # ignored: the measured figure stands


def test_the_limit_never_cuts_short_the_import_of_a_library_module(tmp_path, monkeypatch):
    """A learner's function whose first optimizer imports torch._dynamo (and sympy) may run out of time in the
    middle of that import. Cut short there, the module stayed in sys.modules half made, and every later
    torch.compile failed ("module 'sympy' has no attribute 'core'"). The limit waits for the import to end, then
    stops the learner's code."""
    import sys

    (tmp_path / "slow_library").mkdir()
    (tmp_path / "slow_library" / "__init__.py").write_text(
        textwrap.dedent(
            """
            import time
            started = time.monotonic()
            while time.monotonic() - started < 1.5:  # past the limit and past GRACE_S, waiting as an import can
                time.sleep(0.02)
            COMPLETE = True
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(limits, "_LIBRARY", (*limits._LIBRARY, str(tmp_path) + os.sep))  # installed code

    def learner():
        import slow_library  # noqa: F401

        return "went on"

    try:
        out = limits.call(learner, seconds=SHORT)
        assert out.timed_out and out.value is None, out
        assert sys.modules["slow_library"].COMPLETE
    finally:
        sys.modules.pop("slow_library", None)
