"""Unit 00, start here: three warm-up questions that show how predict, reveal and check work."""

import torch

from grader.engine.kinds import Boolean, Number
from grader.engine.question import predict_then_run, self_test


@predict_then_run(
    "00.warmup-add",
    Number(),
    prompt="v = torch.tensor([1.0, 2.0]) + 1. What numbers does v hold? Answer a list.",
    explain="Adding a Python number adds it to every element (broadcasting a scalar).",
)
def warmup_add():
    v = torch.tensor([1.0, 2.0]) + 1
    return v.tolist()


@predict_then_run(
    "00.warmup-flag",
    Boolean(),
    prompt="t = torch.tensor([1.0, 2.0]). Is t.requires_grad True or False?",
    explain="Tensors you create do not take part in autograd unless you ask, with requires_grad=True.",
)
def warmup_flag():
    t = torch.tensor([1.0, 2.0])
    return t.requires_grad


@self_test(
    "00.warmup-square",
    Number(),
    prompt="s = torch.tensor(3.0, requires_grad=True); (s * s).backward(). What is s.grad?",
    explain="d(s*s)/ds = 2s, which is 6 at s = 3; backward() stores it in s.grad.",
    hints=(
        "s * s is s squared: what is the slope of a square at s = 3?",
        "backward() puts d(output)/ds into s.grad; for s * s that is s + s, one term for each factor.",
    ),
    misconceptions=[
        (
            lambda truth: truth / 2,
            "that is s itself, the value of one factor; the product has a "
            "factor s in two places, and each contributes s to the slope.",
        ),
        (lambda truth: truth * 1.5, "that is s * s, the value of the output; s.grad holds its slope."),
    ],
)
def warmup_square():
    s = torch.tensor(3.0, requires_grad=True)
    (s * s).backward()
    return s.grad.item()
