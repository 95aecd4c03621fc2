"""Whatever a learner passes, the grader answers with one clear line: never a traceback, never a pass.

Each case is (call, verdicts allowed, words the message must contain). Learner functions that
raise, loop, sleep, recurse, print megabytes or change global torch state are included.
"""

import fractions
import sys
import time

import numpy as np
import pytest
import torch

from grader import check, mark_passed, predict, reset, reveal
from grader.engine import question as registry
from grader.engine.kinds import Choice, Error
from grader.engine.question import predict_then_run
from grader.units.causes import WRITE_SEEN


@pytest.fixture(autouse=True, scope="module")
def scratch_questions():
    """Two throwaway questions for the kinds units 00-01 do not use (Choice and Error)."""
    registry.load()

    @predict_then_run(
        "00.scratch-choice", Choice("no error", "at the write", "at backward"), prompt="scratch", explain="scratch"
    )
    def scratch_choice():
        return "at backward"

    @predict_then_run(
        "00.scratch-error",
        Error("at the write", "at backward", causes=WRITE_SEEN),
        prompt="scratch",
        explain="scratch",
    )
    def scratch_error():
        w = torch.ones(2, requires_grad=True)
        yield "at the write"
        w.add_(1)
        yield "at backward"

    yield
    for qid in ("00.scratch-choice", "00.scratch-error"):
        registry.REGISTRY.pop(qid, None)


def spin(t):
    while True:
        pass


def nap(t):
    time.sleep(60)


def deep(t):
    return deep(t)


def chatty(t):
    for _ in range(10**6):
        print("a line of learner debugging output " * 10)


def turns_grad_off(t):
    torch.set_grad_enabled(False)
    return []


def sets_float64(t):
    torch.set_default_dtype(torch.float64)
    return []


def raises_value_error(t):
    raise ValueError("my own bug")


def returns_number(t):
    return 3


def returns_none(t):
    [type(t.grad_fn).__name__]  # builds the answer, then forgets to return it


def returns_generator(t):
    return (n for n in ["SumBackward0"])


def returns_tensor(t):
    return torch.zeros(10**6)


def returns_huge_list(t):
    return ["SumBackward0"] * 100_000


def calls_exit(t):
    sys.exit(3)


def uses_undefined_name(t):
    return undefined_helper(t)  # noqa: F821


def wrong_arity():
    return []


class Walker:
    def __call__(self, t):
        return []


class BadRepr:
    def __repr__(self):
        raise RuntimeError("repr exploded")


WALK = "01.graph-walk"
CASES = [
    # Boolean
    (lambda: predict("01.x-is-leaf", "False"), {"invalid"}, "True or False"),
    (lambda: predict("01.x-is-leaf", 0), {"invalid"}, "True or False"),
    (lambda: predict("01.x-is-leaf", torch.tensor(False)), {"invalid"}, ".item()"),
    (lambda: predict("01.x-is-leaf", [False]), {"invalid"}, "True or False"),
    (lambda: predict("01.x-is-leaf", bool), {"invalid"}, "class"),
    (lambda: predict("01.x-is-leaf", "yes"), {"invalid"}, "True or False"),
    # Number
    (lambda: predict("01.neuron-grad-ratio", "0.2983"), {"invalid"}, "string"),
    (lambda: predict("01.neuron-grad-ratio", torch.tensor(0.2983)), {"invalid"}, ".item()"),
    (lambda: predict("01.neuron-grad-ratio", []), {"invalid"}, "empty"),
    (lambda: predict("01.neuron-grad-ratio", {0.3}), {"invalid"}, "number"),
    (lambda: predict("01.neuron-grad-ratio", float), {"invalid"}, "class"),
    (lambda: predict("01.neuron-grad-ratio", 10**400), {"invalid"}, "cannot be read as a number"),
    (lambda: predict("01.neuron-grad-ratio", complex(1, 2)), {"invalid"}, "complex"),
    (lambda: predict("01.neuron-grad-ratio", (x for x in [0.3])), {"invalid"}, "list(...)"),
    (lambda: predict("01.branch-grads", [4.0, "1"]), {"invalid"}, "position 1"),
    (lambda: predict("01.branch-grads", list(range(20_000))), {"invalid"}, "too many"),
    (lambda: predict("01.branch-grads", np.array([4.0, 1.0])), {"invalid"}, "ndarray"),
    (lambda: predict("00.warmup-add", torch.tensor([2.0, 3.0])), {"invalid"}, ".tolist()"),
    # Name
    (lambda: predict("01.pow-node", 3), {"invalid"}, "string"),
    (lambda: predict("01.pow-node", "   "), {"invalid"}, "empty"),
    (lambda: predict("01.pow-node", ["PowBackward0"]), {"invalid"}, "list"),
    (lambda: predict("01.pow-node", b"PowBackward0"), {"invalid"}, "bytes"),
    (lambda: predict("01.pow-node", "P" * 50_000), {"invalid"}, "too long"),
    (lambda: predict("01.pow-node", BadRepr()), {"invalid"}, "BadRepr"),
    # Names
    (lambda: predict("01.exp-saves", "_saved_result"), {"invalid"}, "{'_saved_result'}"),
    (lambda: predict("01.exp-saves", {1, 2}), {"invalid"}, "string"),
    (lambda: predict("01.exp-saves", {"_saved_result": 1}), {"invalid"}, "dict"),
    (lambda: predict("01.exp-saves", [["_saved_result"]]), {"invalid"}, "string"),
    (lambda: check("01.who-keeps-grad", iter(["w"])), {"invalid"}, "list(...)"),
    (lambda: check("01.who-keeps-grad", torch.ones(3)), {"invalid"}, ".tolist()"),
    # Sequence
    (lambda: predict("01.walk-shared", {"PowBackward0"}), {"invalid"}, "order matters"),
    (lambda: predict("01.walk-shared", "PowBackward0"), {"invalid"}, "own string"),
    (lambda: predict("01.walk-shared", [1, 2]), {"invalid"}, "string"),
    (lambda: check("01.closed-book-walk", 7), {"invalid"}, "list of names"),
    # Choice and Error (scratch questions)
    (lambda: predict("00.scratch-choice", "later"), {"invalid"}, "not a choice"),
    (lambda: predict("00.scratch-choice", 2), {"invalid"}, "one of"),
    (lambda: predict("00.scratch-error", "at the write"), {"invalid"}, "name the cause too"),
    (lambda: predict("00.scratch-error", ("somewhere", "a leaf variable that")), {"invalid"}, "not a place"),
    (lambda: predict("00.scratch-error", ("at the write", 42)), {"invalid"}, "string"),
    (lambda: predict("00.scratch-error", ("no error", "some words here")), {"invalid"}, "answer just 'no error'"),
    (lambda: predict("00.scratch-error", ["at the write", "stale", "b", "c"]), {"invalid"}, "pair"),
    # ids, units, roles
    (lambda: predict(None, 1), {"invalid"}, "string such as"),
    (lambda: predict("01.pow node", "x"), {"invalid"}, "no question"),
    (lambda: reveal(["01.pow-node"]), {"invalid"}, "string such as"),
    (lambda: check("01.pow-node", "PowBackward0"), {"invalid"}, "predict-then-run"),
    (lambda: mark_passed("abc"), {"invalid"}, "no unit"),
    (lambda: mark_passed(None), {"invalid"}, "a unit is a number"),
    (lambda: mark_passed(True), {"invalid"}, "not a unit"),
    (lambda: mark_passed(["01"]), {"invalid"}, "a unit is a number"),
    (lambda: reset("zz"), {"invalid"}, "no unit"),
    # learner functions
    (lambda: check(WALK, Walker), {"invalid"}, "class"),
    (lambda: check(WALK, ["SumBackward0"]), {"invalid"}, "pass the function itself"),
    (lambda: check(WALK, "graph_nodes"), {"invalid"}, "string"),
    (lambda: check(WALK, spin), {"incorrect"}, "ran for more than"),
    (lambda: check(WALK, nap), {"incorrect"}, "ran for more than"),
    (lambda: check(WALK, deep), {"incorrect"}, "recursed without end"),
    (lambda: check(WALK, chatty), {"incorrect"}, "printed more than"),
    (lambda: check(WALK, turns_grad_off), {"incorrect"}, "grad mode was True, is now False"),
    (lambda: check(WALK, sets_float64), {"incorrect"}, "the default dtype"),
    (lambda: check(WALK, raises_value_error), {"incorrect"}, "it raised ValueError: my own bug"),
    (lambda: check(WALK, returns_number), {"incorrect"}, "it returned 3"),
    (lambda: check(WALK, returns_none), {"incorrect"}, "forget a return statement"),
    (lambda: check(WALK, returns_generator), {"incorrect"}, "list(...)"),
    (lambda: check(WALK, returns_tensor), {"incorrect"}, ".tolist()"),
    (lambda: check(WALK, returns_huge_list), {"incorrect"}, "too many"),
    (lambda: check(WALK, calls_exit), {"incorrect"}, "SystemExit"),
    (lambda: check(WALK, uses_undefined_name), {"incorrect"}, "NameError"),
    (lambda: check(WALK, wrong_arity), {"incorrect"}, "TypeError"),
]


def message_of(result):
    """The one line that says what went wrong: the message, or for a function, the row about it."""
    rows = dict(result.rows)
    return rows.get("your function") or rows.get("your function returned") or result.message


@pytest.mark.parametrize("call, verdicts, words", CASES, ids=[f"case{i:02d}" for i in range(len(CASES))])
def test_bad_input_gets_one_clear_line(call, verdicts, words):
    before = (torch.is_grad_enabled(), torch.get_default_dtype())
    result = call()
    assert result.verdict in verdicts, str(result)
    assert not result.passed
    line = message_of(result)
    assert words in line, f"{words!r} not in {line!r}"
    assert "\n" not in line and "Traceback" not in str(result)
    assert (torch.is_grad_enabled(), torch.get_default_dtype()) == before


def test_there_are_at_least_fifty_cases():
    assert len(CASES) >= 50


def test_numpy_and_fraction_numbers_are_read():
    assert predict("01.neuron-grad-ratio", np.float64(0.2983)).verdict == "recorded"
    assert predict("01.branch-grads", [fractions.Fraction(4), np.int64(1)]).verdict == "recorded"
    assert predict("01.x-is-leaf", np.bool_(False)).verdict == "recorded"


def test_nan_and_infinity_are_never_close():
    for bad in (float("nan"), float("inf"), -float("inf")):
        reset("01.neuron-grad-ratio")
        predict("01.neuron-grad-ratio", bad)
        result = reveal("01.neuron-grad-ratio")
        assert result.verdict == "incorrect" and "nan and inf" in result.message
