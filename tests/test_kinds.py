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
    assert not Name().agrees("PowBackward0", Name().read("powbackward0"))


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


def test_error_kind_matches_place_and_words():
    e = Error("at the write", "at backward")
    truth = ErrorOutcome(
        "at backward",
        "RuntimeError",
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation: [torch.FloatTensor [3]] ... Hint: enable anomaly detection",
    )
    assert e.agrees(truth, e.read("at backward"))
    assert e.agrees(truth, e.read(("at backward", "has been  MODIFIED by an inplace")))
    assert not e.agrees(truth, e.read(("at backward", "was freed")))
    assert not e.agrees(truth, e.read("at the write"))
    assert not e.agrees(truth, e.read(NO_ERROR))
    with pytest.raises(BadAnswer, match="not a place"):
        e.read("somewhere")


def test_error_words_survive_a_changed_hint_suffix():
    """Drift: a newer torch appends a different hint; words from the stable part still match."""
    e = Error("at backward", needs_message=True)
    old = ErrorOutcome(
        "at backward",
        "RuntimeError",
        "Trying to backward through the graph a second time "
        "(or directly access saved tensors). Specify retain_graph=True.",
    )
    new = old._replace(message=old.message + " Hint: see the new troubleshooting page, check_nan=False.")
    answer = e.read(("at backward", stable_part(old.message)))
    assert e.agrees(old, answer) and e.agrees(new, answer)
    with pytest.raises(BadAnswer, match="three words"):
        e.read(("at backward", "graph"))


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
    assert predict("01.walk-y", Liar(["PowBackward0"] * (MAX_ITEMS + 5))).verdict == "invalid"
