"""Unit 00's self-test generator (grader.engine.variants): a product in which s is used more than once; the first
option of every choice is the program the self-test asked before it had variants."""

from __future__ import annotations

from grader.engine.variants import Draw, Listing

# (the form of the product, the factor a learner who counts s once reads as the slope, values of s that keep the
# three answers apart: torch's, that one factor's and the output's own value)
SQUARES = (
    ("s * s", "s", (3.0, -1.5, 0.5, 2.5, -2.0, 1.5, 4.0)),
    ("s * s * s", "s * s", (2.0, -1.5, 0.5, 1.5, -2.0, 4.0)),
    ("(s + 1) * s", "s + 1", (3.0, -1.5, 2.5, 0.5, -3.0, 4.0)),
    ("s * (2 - s)", "2 - s", (3.0, -1.5, 0.5, 2.5, 4.0, -2.0)),
)


def square_program(d: Draw) -> Listing:
    form, once, values = d.one(SQUARES)
    s = d.one(values)
    return Listing(
        f"s = torch.tensor({s}, requires_grad=True)\n({form}).backward()",
        "What is s.grad?",
        facts={"counted once": eval(once, {"s": s}), "value": eval(form, {"s": s})},
    )
