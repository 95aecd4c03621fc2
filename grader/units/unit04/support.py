"""Unit 04's helpers: the programs its experiments run (the loop whose stage one returns the copy made for its
log and its repair, the losses with a quiet break on the way), with the grader's own copies of the functions
the notebook defines (``evaluate``, ``stage_one``, ``train_frozen``)."""

from __future__ import annotations

import torch


def pq_leaves():
    return torch.tensor(1.5, requires_grad=True), torch.tensor(4.0, requires_grad=True)


def evaluate(w, x):
    """An evaluation helper that someone sped up with inference_mode."""
    with torch.inference_mode():
        return (w * x).relu()


def detached_stage():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    target = 3 * x
    w1 = torch.tensor(0.5, requires_grad=True)
    w2 = torch.tensor(1.0, requires_grad=True)
    f = (w1 * x).detach()
    loss = ((w2 * f - target) ** 2).mean()
    return w1, w2, loss


def stage_one(t, w1, feature_log):
    f = w1 * t
    kept = f.detach()  # keep a copy for the log, without its graph
    feature_log.append(kept)
    return kept  # the fault: the copy, not the computed tensor, goes on


def train_frozen(x, target, w1, w2, lr, steps, feature_log):
    """The loop as found. Returns every step's loss."""
    losses = []
    for _ in range(steps):
        f = stage_one(x, w1, feature_log)
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                if p.grad is not None:
                    p -= lr * p.grad
                    p.grad.zero_()
        losses.append(loss.item())
    return losses


def train_repaired(x, target, w1, w2, lr, steps, feature_log):
    """The grader's repair: the log keeps its detached copy, the computation keeps the tensor."""
    losses = []
    for _ in range(steps):
        f = w1 * x
        feature_log.append(f.detach())
        loss = ((w2 * f - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                p -= lr * p.grad
                p.grad.zero_()
        losses.append(loss.item())
    return losses


def syllabus_loop(train):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    target = 3 * x
    w1 = torch.tensor(0.5, requires_grad=True)
    w2 = torch.tensor(1.0, requires_grad=True)
    log: list = []
    losses = train(x, target, w1, w2, 0.02, 400, log)
    return losses, w1, w2, log


FROZEN_FACTS = ("the loss fell below 0.001", "w1 moved", "w2 moved", "w1.grad is None", "w2.grad is None")


def frozen_facts(train) -> set:
    """Which of FROZEN_FACTS hold after 400 steps of ``train`` from the syllabus start."""
    losses, w1, w2, _ = syllabus_loop(train)
    facts = {
        "the loss fell below 0.001": losses[-1] < 1e-3,
        "w1 moved": abs(w1.item() - 0.5) > 1e-3,
        "w2 moved": abs(w2.item() - 1.0) > 1e-3,
        "w1.grad is None": w1.grad is None,
        "w2.grad is None": w2.grad is None,
    }
    return {fact for fact, holds in facts.items() if holds}


# the losses of 04.quiet-break-paths: each built from h = w * 2, with an integer or bool tensor on the way
QUIET_LOSSES = {
    "h[h.argmax()]": lambda h: h[h.argmax()],
    "(h * (h > 0)).sum()": lambda h: (h * (h > 0)).sum(),
    "((h > 0).float() * 3).sum()": lambda h: ((h > 0).float() * 3).sum(),
    "h.round().sum()": lambda h: h.round().sum(),
}


def quiet_loss_moves_w(label: str) -> bool:
    """After loss.backward() (if it runs), is w.grad a nonzero tensor?"""
    w = torch.tensor([0.4, -1.3, 2.6], requires_grad=True)
    loss = QUIET_LOSSES[label](w * 2)
    if loss.grad_fn is None:
        return False  # backward would raise: nothing was recorded
    loss.backward()
    return w.grad is not None and bool(w.grad.any())


def returned_grad_word(g):
    if g is None:
        return "None"
    return "zero" if not g.any() else "nonzero"
