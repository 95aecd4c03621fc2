"""Modules not registered (unit 12): a module with parameters run inside another module's forward that does
not register it (a plain list, built in forward); leaves the loss reaches that no module registers and no
optimizer holds."""

from __future__ import annotations

from grader.probes.doctor.findings import Mechanism


def observe_pair(d, parent, module):
    pair = (id(parent), id(module))
    if pair in d.pairs_checked:
        return
    d.pairs_checked.add(pair)
    registered = any(m is module for m in parent.modules())
    if not registered and any(p.requires_grad for p in module.parameters()):
        d.unregistered.setdefault(id(module), (type(module).__name__, type(parent).__name__, d.line()))


def conclude(d):
    for cls, parent, line in d.unregistered.values():
        d.add(
            ("unregistered", cls, parent),
            Mechanism.UNREGISTERED_MODULE,
            line,
            f"a {cls} with parameters ran inside {parent}.forward, but {parent} does not register it: its "
            "parameters are missing from model.parameters(), state_dict() and the optimizer",
            "hold submodules in nn.ModuleList / nn.ModuleDict / attributes, and tensors to learn as nn.Parameter",
        )


def leaves(d, unnamed):
    """Leaves requiring grad that the loss reached, that no module registers and no optimizer holds."""
    if d.unregistered:
        return
    shapes = ", ".join(str(list(t.shape)) for t in unnamed[:4])
    d.add(
        ("unregistered-leaf",),
        Mechanism.UNREGISTERED_MODULE,
        "",
        f"the loss reaches {len(unnamed)} leaf tensor(s) that require grad ({shapes}) that no module registers "
        "and no optimizer holds: they get gradients and are never updated",
        "make them nn.Parameter attributes of a module (or pass them to the optimizer)",
    )
