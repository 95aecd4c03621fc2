"""Learner functions: whatever they do, the kernel lives, torch state is restored, the message is one line."""

import time

import torch

from grader.engine import limits
from grader.engine.torch_state import clean_room, snapshot


def test_value_comes_back():
    out = limits.call(lambda a, b: a + b, 1, 2)
    assert out.ok and out.value == 3


def test_endless_loop_is_stopped():
    def spin():
        while True:
            pass

    out = limits.call(spin, seconds=0.5)  # returning at all is the behaviour: it would spin for ever
    assert out.timed_out and "ran for more than 0.5 s" in out.problem


def test_sleep_is_stopped():
    out = limits.call(time.sleep, 30, seconds=0.3)
    assert "was stopped" in out.problem


def test_exceptions_become_one_line():
    def broken(x):
        return x["missing"]

    out = limits.call(broken, {})
    assert out.problem.startswith("it raised KeyError: 'missing'") and "\n" not in out.problem


def test_runaway_recursion():
    def down(n):
        return down(n + 1)

    assert "recursed without end" in limits.call(down, 0).problem


def test_printing_megabytes_is_cut_off():
    def chatty():
        while True:
            print("x" * 10000)

    out = limits.call(chatty, seconds=5)
    assert "printed more than" in out.problem and len(out.printed) <= limits.OUTPUT_KEEP


def test_not_implemented_means_not_written():
    def todo():
        raise NotImplementedError()

    assert limits.call(todo).not_written


def test_exit_does_not_end_the_process():
    out = limits.call(exit)
    assert "SystemExit" in out.problem


def test_global_torch_state_is_restored_and_reported():
    before = snapshot()

    def meddle():
        torch.set_grad_enabled(False)
        torch.set_default_dtype(torch.float64)
        torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        return 1

    out = limits.call(meddle)
    assert "grad mode was True, is now False" in out.problem
    assert "the default dtype" in out.problem and "saved-tensor hooks" in out.problem
    assert snapshot() == before


def test_learner_state_survives_a_grader_clean_room():
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
    with torch.no_grad(), hooks:
        before = snapshot()
        with clean_room():
            assert torch.is_grad_enabled() and snapshot().saved_tensor_hooks == 0
            torch.rand(5)
        assert snapshot() == before
        assert torch.equal(torch.rand(1), expected)


def test_a_swallowed_timeout_fires_again_and_the_learners_timer_survives():
    import signal

    from grader.engine import limits

    def stubborn():
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass

    out = limits.call(stubborn, seconds=0.5)
    assert out.timed_out and "ran for more than" in out.problem
    fired = []
    old = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        assert limits.call(lambda: 7, seconds=0.5).value == 7
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < left <= 3.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
