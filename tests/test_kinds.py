"""Answer kinds: reading learner answers, agreeing with torch, refusing what cannot be read."""

import math

import pytest
import torch

from grader.engine.kinds import (
    NO_ERROR,
    BadAnswer,
    Boolean,
    Choice,
    Error,
    ErrorOutcome,
    Name,
    Names,
    Number,
    Sequence,
    Unanswered,
    node_key,
    saved_key,
    stable_part,
)
from grader.units.causes import FREED, STALE, WRITE_SEEN


@pytest.mark.parametrize(
    "kind", [Boolean(), Number(), Names(), Sequence(), Name(), Choice("a", "b"), Error("at backward")]
)
@pytest.mark.parametrize("placeholder", [..., None])
def test_placeholders_are_unanswered(kind, placeholder):
    with pytest.raises(Unanswered):
        kind.read(placeholder)


def test_node_names_compare_on_their_stable_part():
    assert node_key("PowBackward0") == node_key("PowBackward1") == "PowBackward"
    assert node_key("AccumulateGrad") == "AccumulateGrad"
    assert Name().agrees("PowBackward0", Name().read("PowBackward1"))
    assert not Name().agrees("PowBackward0", Name().read_recorded("powbackward0"))  # a slip on the record


@pytest.mark.parametrize("kind", [Name(), Sequence()])
@pytest.mark.parametrize("answer", ["PowBackward", "torch::autograd::AccumulateGrad"])
def test_drift_tolerance_is_the_number_only_not_a_missing_number_or_dot_name(kind, answer):
    with pytest.raises(BadAnswer) as refused:
        kind.read(answer if isinstance(kind, Name) else [answer])
    assert "PowBackward0" in str(refused.value) or "type(fn).__name__" in str(refused.value)
    assert saved_key("_saved_self") == saved_key("_raw_saved_self") == "self"
    assert Sequence().agrees(("SumBackward0", "AccumulateGrad"), ("SumBackward1", "AccumulateGrad"))
    assert not Sequence().agrees(("SumBackward0", "AccumulateGrad"), ("AccumulateGrad", "SumBackward0"))


def test_number_tolerance_and_shapes():
    n = Number()
    assert n.agrees(n.truth(0.29829), n.read(0.2983))
    assert not n.agrees(n.truth(0.29829), n.read(0.2990))
    assert n.agrees(n.truth([2.0, 4.0, 6.0]), n.read([2, 4, 6]))
    assert not n.agrees(n.truth([2.0, 4.0]), n.read(2.0))
    assert not n.agrees(n.truth(1.0), n.read(float("nan")))
    assert n.agrees(n.truth(float("inf")), n.read(math.inf))
    assert n.truth(torch.tensor([1.0, 2.0])) == (1.0, 2.0)


@pytest.mark.parametrize(
    "answer, words",
    [
        (torch.tensor(1.0), ".item()"),
        ("0.5", "string"),
        (True, "boolean"),
        (float, "class"),
        ((x for x in [1]), "list(...)"),
        ([], "empty"),
        ([1, "a"], "position 1"),
    ],
)
def test_number_refuses_with_a_message(answer, words):
    with pytest.raises(BadAnswer, match=None) as info:
        Number().read(answer)
    assert words in str(info.value)


def test_names_refuse_a_bare_string_and_suggest_a_set():
    with pytest.raises(BadAnswer, match=r"\{'w'\}"):
        Names().read("w")
    assert Names().read(["w", "w"]) == frozenset({"w"})
    with pytest.raises(BadAnswer):
        Names().read({"w": 1})
    with pytest.raises(BadAnswer):
        Names().read({1, 2})


def test_sequence_refuses_a_set_because_order_matters():
    with pytest.raises(BadAnswer, match="order matters"):
        Sequence().read({"a", "b"})


def test_boolean_is_strict():
    assert Boolean().read(False) is False
    for bad in (0, 1, "True", torch.tensor(True)):
        with pytest.raises(BadAnswer):
            Boolean().read(bad)


def test_choice_is_case_insensitive_and_lists_options():
    c = Choice("no error", "at backward")
    assert c.read(" At Backward ") == "at backward"
    with pytest.raises(BadAnswer, match="'no error', 'at backward'"):
        c.read("later")


STALE_MESSAGE = (
    "one of the variables needed for gradient computation has been modified by an "
    "inplace operation: [torch.FloatTensor [3]] ... Hint: enable anomaly detection"
)


def test_error_kind_matches_the_place_and_never_grades_the_note():
    e = Error("at the write", "at backward")
    truth = ErrorOutcome("at backward", "RuntimeError", STALE_MESSAGE)
    assert e.agrees(truth, e.read("at backward"))
    assert e.agrees(truth, e.read(("at backward", "has been  MODIFIED by an inplace")))
    assert e.agrees(truth, e.read(("at backward", "was freed")))  # a note, not graded
    assert not e.agrees(truth, e.read("at the write"))
    assert not e.agrees(truth, e.read(NO_ERROR))
    with pytest.raises(BadAnswer, match="not a place"):
        e.read("somewhere")


def test_the_right_cause_is_the_one_torchs_live_message_carries():
    e = Error("at the write", "at backward", causes=WRITE_SEEN)
    truth = e.truth(ErrorOutcome("at backward", "RuntimeError", STALE_MESSAGE))
    assert e.cause_of(truth) == STALE
    assert e.agrees(truth, e.read(("at backward", "Stale")))
    assert e.agrees(truth, e.read(("at backward", "stale", "the loss is a scalar, so backward can start")))
    assert not e.agrees(truth, e.read(("at backward", "freed", "has been modified by an inplace operation")))
    with pytest.raises(BadAnswer, match="name the cause too"):
        e.read("at backward")
    with pytest.raises(BadAnswer, match="not one of the causes"):
        e.read(("at backward", "a tensor was modified by an inplace operation"))
    # torch's wording drifts so that no candidate carries its mark: reported, never graded
    with pytest.raises(ValueError, match="not exactly one"):
        e.truth(ErrorOutcome("at backward", "RuntimeError", "something new happened in backward"))
    with pytest.raises(ValueError, match="its own label"):
        Error("at backward", causes=(STALE, STALE, FREED))


def _unit_kind(qid):
    from grader.engine.question import get

    return get(qid).kind


def test_never_entered_judges_meaning_not_keywords():
    """Issue 27: "requiring" was refused and "the loss already has a grad_fn, so all is fine" accepted."""
    e = _unit_kind("04.never-entered")
    message = "element 0 of tensors does not require grad and does not have a grad_fn"
    truth = e.truth(ErrorOutcome("at backward", "RuntimeError", message))
    assert e.agrees(truth, e.read(("at backward", "no history", "nothing on the way to the loss is requiring grad")))
    assert not e.agrees(truth, e.read(("at backward", "not scalar", "the loss already has a grad_fn, so all is fine")))
    assert not e.agrees(truth, e.read(("at backward", "input without grad", "grad_fn requires_grad")))
    assert "grad_fn" not in get_prompt("04.never-entered") and "requir" not in get_prompt("04.never-entered")


def get_prompt(qid):
    from grader.engine.question import get

    return get(qid).prompt.split("(no requires_grad)")[-1]


def test_nonscalar_backward_judges_meaning_not_keywords():
    """Issue 27: "the output is a scalar" was accepted, a right paraphrase refused."""
    e = _unit_kind("02.nonscalar-backward")
    message = "grad can be implicitly created only for scalar outputs"
    truth = e.truth(ErrorOutcome("at backward", "RuntimeError", message))
    assert e.agrees(truth, e.read(("at backward", "not scalar", "z has three elements, so pass a gradient argument")))
    assert not e.agrees(truth, e.read(("at backward", "no history", "the output is a scalar")))


def test_zero_grad_none_note_never_flips_a_right_place():
    """Issue 27: the words "AttributeError" (the type the reveal shows) turned a right place into a wrong one."""
    e = _unit_kind("02.zero-grad-none")
    message = "'NoneType' object has no attribute 'zero_'"
    truth = e.truth(ErrorOutcome("at the manual clear", "AttributeError", message))
    assert e.agrees(truth, e.read(("at the manual clear", "AttributeError")))
    assert e.agrees(truth, e.read("at the manual clear"))
    assert not e.agrees(truth, e.read(("at zero_grad", "AttributeError")))


def test_stable_part_cuts_before_details():
    msg = (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [torch.FloatTensor [3]], which is output 0 of Add"
    )
    assert (
        stable_part(msg)
        == "one of the variables needed for gradient computation has been modified by an inplace operation"
    )


@pytest.mark.parametrize(
    "kind, truth",
    [
        (Boolean(), True),
        (Number(), 0.2983),
        (Number(), (2.0, 4.0, 6.0)),
        (Names(), frozenset({"w", "b"})),
        (Sequence(), ("SumBackward0", "MulBackward0", "AccumulateGrad")),
        (Name(), "PowBackward0"),
        (Choice("a", "b", "c"), "b"),
        (Error("at the write", "at backward"), ErrorOutcome("at backward", "RuntimeError", "version mismatch here")),
        (
            Error("at the write", "at backward", causes=WRITE_SEEN),
            ErrorOutcome("at backward", "RuntimeError", STALE_MESSAGE),
        ),
    ],
)
def test_every_derived_wrong_answer_is_refused(kind, truth):
    wrong = kind.wrong_answers(truth)
    assert wrong
    for answer in wrong:
        try:
            value = kind.read(answer)
        except BadAnswer:
            continue
        assert not kind.agrees(truth, value), f"{answer!r} was accepted for {truth!r}"


def test_an_answer_is_read_once_from_a_plain_copy():
    from grader.engine.kinds import MAX_ITEMS, plain_copy

    class Liar(list):
        def __len__(self):
            return 1

        def __iter__(self):
            yield "AccumulateGrad"

    big = Liar(["MulBackward0"] * (MAX_ITEMS + 50))
    copy = plain_copy(big)
    assert type(copy) is list and len(copy) == MAX_ITEMS + 1
    with pytest.raises(BadAnswer, match="too many"):
        Sequence().read(copy)
    # what is graded is what the list holds, never what a custom __iter__ says the second time
    two = Liar(["PowBackward0", "MulBackward0"])
    assert Sequence().read(plain_copy(two)) == ("PowBackward0", "MulBackward0")

    class Shifty(str):
        def strip(self, *a):
            return "PowBackward0"

        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    assert type(plain_copy(Shifty("MulBackward0"))) is str
    assert Name().read(plain_copy(Shifty("MulBackward0"))) == "MulBackward0"
    nested = []
    for _ in range(30):
        nested = [nested]
    with pytest.raises(BadAnswer, match="nested"):
        plain_copy(nested)


def test_the_learner_api_reads_the_copy(home):
    from grader import check, predict
    from grader.engine.kinds import MAX_ITEMS

    class Liar(list):
        def __len__(self):
            return 1

    assert check("01.closed-book-walk", Liar(["AddBackward0"] * (MAX_ITEMS + 5))).verdict == "invalid"
    assert predict("01.walk-shared", Liar(["PowBackward0"] * (MAX_ITEMS + 5))).verdict == "invalid"


# --- slips: a nudge at lock-in, never a wrong mark -------------------------------------------------


@pytest.mark.parametrize(("typed", "meant"), [("powbackward0", "PowBackward0"), ("sinbackward0", "SinBackward0")])
def test_a_node_name_differing_only_in_case_is_a_slip_that_names_the_answer_meant(typed, meant):
    from grader.engine.kinds import Slip

    with pytest.raises(Slip) as slip:
        Name().read(typed)
    assert slip.value.meant == meant and f"did you mean {meant}?" in str(slip.value)
    assert Name().read(meant) == meant  # the valid name is read as it was
    assert Name().read_recorded(typed) == typed  # on the record it is judged as it stands


def test_names_differing_only_in_case_from_the_pool_are_a_slip():
    from grader.engine.kinds import Slip

    kind = Names(pool=("x", "W", "b", "y"))
    with pytest.raises(Slip) as slip:
        kind.read({"x", "w", "b"})
    assert slip.value.meant == frozenset({"x", "W", "b"}) and "did you mean {'W', 'b', 'x'}?" in str(slip.value)
    assert kind.read({"x", "W", "b"}) == frozenset({"x", "W", "b"})
    assert Names(key=saved_key, pool=("_saved_self",)).read({"_saved_Self"}) == frozenset({"_saved_Self"})


def test_a_set_typed_as_a_string_gets_the_set_it_meant():
    from grader.engine.kinds import Slip

    for typed in ("{x, W, b}", "{'x', 'W', 'b'}", "x, W, b"):
        with pytest.raises(Slip) as slip:
            Names().read(typed)
        assert slip.value.meant == frozenset({"x", "W", "b"})
        assert "{'x', 'W', 'b'}" in str(slip.value) and "{'{x, W, b}'}" not in str(slip.value)
    with pytest.raises(BadAnswer) as one:
        Names().read("x")
    assert "{'x'}" in str(one.value)


def test_a_list_with_one_bad_item_names_the_item():
    from grader.engine.kinds import Slip

    with pytest.raises(Slip) as slip:
        Sequence().read(["SumBackward0", "mulbackward0", "AccumulateGrad"])
    assert "entry 2, 'mulbackward0': did you mean MulBackward0?" in str(slip.value)
    assert slip.value.meant == ("SumBackward0", "MulBackward0", "AccumulateGrad")
    with pytest.raises(BadAnswer) as bad:
        Sequence().read(["SumBackward0", 3])
    assert "entry 2" in str(bad.value)
    with pytest.raises(BadAnswer) as bad:
        Sequence().read(["SumBackward0", "MulBackward"])
    assert "entry 2" in str(bad.value) and "MulBackward0" in str(bad.value)
