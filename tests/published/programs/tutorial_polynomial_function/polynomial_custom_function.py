"""A polynomial fitted through a custom autograd Function, after pytorch/tutorials
beginner_source/examples_autograd/polynomial_custom_function.py (commit c53e7d4, BSD-3-Clause): written
again for the doctor's corpus (tests/published/README.md). As published: ``LegendrePolynomial3``, a
``torch.autograd.Function`` that saves its input and gives P3' in backward; four scalar leaves made with
``requires_grad=True`` (no module, no optimizer); each step a backward, then an update under ``no_grad``
through ``-=`` and each gradient cleared with ``.grad = None``. Data: sin(x) on a grid, as published.
Options added for size: --steps, --points."""

import argparse
import math

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--points", type=int, default=2000)
args = parser.parse_args()


class LegendrePolynomial3(torch.autograd.Function):
    """P3(x) = (5x^3 - 3x) / 2, with its derivative written by hand."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


dtype = torch.float
device = torch.device("cpu")
x = torch.linspace(-math.pi, math.pi, args.points, device=device, dtype=dtype)
y = torch.sin(x)

# y = a + b * P3(c + d * x), started near the answer so that it converges
a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)

learning_rate = 5e-6
for t in range(args.steps):
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())

    loss.backward()

    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad

        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)")
