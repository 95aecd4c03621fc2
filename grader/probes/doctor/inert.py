"""Inert loss terms (unit 04): a summand of the loss (its top chain of additions) with no ``grad_fn``;
backward on a leaf made to require grad by hand."""

from __future__ import annotations

from grader import probes
from grader.probes.doctor.findings import Mechanism

_SUMS = ("AddBackward0", "SubBackward0")


def constant_terms(d, root, site):
    """A summand of the loss with no grad_fn: it adds to the value and to no gradient."""
    fn, chain = root.grad_fn, 0
    while fn is not None and probes.node_name(fn) in _SUMS and chain < 64:
        chain += 1
        nexts = fn.next_functions
        deeper = [n for n, _ in nexts if n is not None and probes.node_name(n) in _SUMS]
        none_slots = [i for i, (n, _) in enumerate(nexts) if n is None]
        seed = not deeper and none_slots == [0]  # loss = torch.tensor(0.) + term: the accumulation's seed
        if none_slots and not seed:
            d.add(
                ("inert", site),
                Mechanism.INERT_LOSS_TERM,
                site,
                f"{probes.node_name(fn)} in the loss has {len(none_slots)} input(s) with no grad_fn: that summand "
                "changes the loss's value and no gradient",
                "compute that term from tensors that keep their graph (no .item(), .detach(), torch.tensor(...) "
                "or numpy round trip)",
            )
            return
        fn = deeper[0] if deeper else None


def leaf_root(d, root, site):
    d.add(
        ("leaf-root", site),
        Mechanism.INERT_LOSS_TERM,
        site,
        f"backward was called on a leaf tensor {list(root.shape)} (requires_grad set on it by hand, no grad_fn): "
        "the whole loss is cut from the model, so backward reaches no parameter",
        "remove the requires_grad=True on the loss and find where its graph was cut (.item(), .detach(), "
        "numpy, torch.tensor(...) or a no_grad block)",
    )
