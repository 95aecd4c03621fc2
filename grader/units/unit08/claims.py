"""Unit 08's general rules, each checked on generated programs (see grader.engine.claims)."""

import random

import torch

from grader.engine.claims import Trial, claim


def _recurrence(rng: random.Random):
    """A carried-state loop: its parameters, a step and a loss, on a scalar or vector state; and a label."""
    width = rng.choice((1, 1, 3, 8))
    w = torch.tensor([rng.uniform(0.3, 1.1) for _ in range(width)], requires_grad=True)
    b = torch.tensor([rng.uniform(-0.5, 0.5) for _ in range(width)], requires_grad=rng.random() < 0.5)
    cell = rng.choice(("linear", "tanh"))
    target = rng.uniform(-1, 1)

    def step(h, x):
        z = h * w + b + x
        return z.tanh() if cell == "tanh" else z

    def loss(h):
        return ((h - target) ** 2).sum()

    steps = rng.randint(3, 7)
    inputs = [torch.randn(width) * 0.3 for _ in range(steps)]
    h0 = torch.full((width,), rng.uniform(-1, 1))
    return (
        (w, b),
        h0,
        inputs,
        step,
        loss,
        f"width {width}, {cell} cell, {steps} steps, b requires grad {b.requires_grad}",
    )


def _grads(params):
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in params]


@claim(
    "08.retained-loop-is-the-summed-loss",
    sentence="So the retained loop computes the gradient of the summed loss over the whole sequence.",
    holds_when="nothing writes the parameters between the steps; with an optimizer step after each backward, the "
    "retained graph holds old versions and a later backward raises (section 4)",
    not_swept="about a training loop over a sequence, not one operation",
)
def retained_loop_is_the_summed_loss():
    for seed in range(8):
        rng = random.Random(seed)
        params, h0, inputs, step, loss, label = _recurrence(rng)
        stepping = seed % 4 == 3
        opt = torch.optim.SGD(params, lr=0.01)
        h, raised = h0, False
        try:
            for x in inputs:
                h = step(h, x)
                loss(h).backward(retain_graph=True)
                if stepping:
                    opt.step()
        except RuntimeError:
            raised = True
        retained = _grads(params)
        for p in params:
            p.grad = None
        if not raised and not stepping:
            h, total = h0, 0
            for x in inputs:
                h = step(h, x)
                total = total + loss(h)
            total.backward()
        # outside the condition the loop raises at step 3's backward (or later): no gradient of any loss comes out
        same = not raised and (
            stepping or all(torch.allclose(a, c, atol=1e-6) for a, c in zip(retained, _grads(params)))
        )
        yield Trial(
            f"seed {seed}: {label}" + (", opt.step() after each backward" if stepping else ""), not stepping, same
        )


@claim(
    "08.detach-keeps-the-value-drops-the-history",
    sentence="`hidden.detach()` keeps the value (the same storage, unit 04) and drops the history",
    not_swept="about detach(), which op_db has no entry for",
)
def detach_keeps_the_value_drops_the_history():
    for seed in range(8):
        rng = random.Random(seed)
        params, h0, inputs, step, _, label = _recurrence(rng)
        h = h0
        for x in inputs:
            h = step(h, x)
        d = h.detach()
        same = d.untyped_storage().data_ptr() == h.untyped_storage().data_ptr() and torch.equal(d, h)
        dropped = d.grad_fn is None and not d.requires_grad and d.is_leaf
        yield Trial(f"seed {seed}: the state after {label}", True, same and dropped and h.grad_fn is not None)
