"""Unit 00, start here: three warm-up questions that show how predict, reveal and check work."""

import torch

from grader.engine.kinds import Boolean, Number
from grader.engine.question import predict_then_run, self_test
from grader.units.unit00.generators import square_program


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
    explain="A tensor made by torch.tensor (or ones, zeros, randn) takes no part in autograd unless you ask, with "
    "requires_grad=True. A model's weights are the exception: nn.Parameter sets the flag for you.",
)
def warmup_flag():
    t = torch.tensor([1.0, 2.0])
    return t.requires_grad


@self_test(
    "00.warmup-square",
    Number(),
    program=square_program,
    explain="backward() stores d(output)/ds in s.grad. s is used in more than one place, and each use adds its "
    "own term to the slope (the product rule: for f * g it is f' * g + f * g'), so the terms add up.",
    hints=(
        "How many times does s appear in the expression? Each place it appears changes the output when s moves.",
        "backward() puts d(output)/ds into s.grad; each use of s contributes its own term (the product rule), and "
        "the terms add.",
    ),
    misconceptions=[
        (
            lambda truth, p: p.facts["counted once"],
            "that counts one use of s: s appears in more than one place, and each use adds its own term to the slope.",
        ),
        (lambda truth, p: p.facts["value"], "that is the output's value; s.grad holds its slope."),
    ],
)
def warmup_square(p):
    return p.run()["s"].grad.item()
