"""Modules not registered (unit 12): a module with parameters run inside another module's forward that does
not register it (a plain list, built in forward); leaves the loss reaches that no module registers and no
optimizer holds; a module with a plain ``requires_grad`` attribute (``module.requires_grad = False`` sets a
Python attribute and freezes nothing), named when its parameters' own flags disagree with it and the run
measured the difference (trained anyway, or held by an optimizer and never given a gradient).

The line is the one to edit where the doctor saw it run (:mod:`.intent` keeps the assignments): the
attribute that holds the modules in a plain list or dict, the attribute a plain tensor was assigned to,
the ``requires_grad = ...`` assignment; otherwise the call (or the first call) that showed it."""

from __future__ import annotations

from grader.probes.doctor.findings import Mechanism


def observe_pair(d, parent, module):
    pair = (id(parent), id(module))
    if pair in d.pairs_checked:
        return
    d.pairs_checked.add(pair)
    registered = any(m is module for m in parent.modules())
    if not registered and any(p.requires_grad for p in module.parameters()):
        d.unregistered.setdefault(id(module), (module, parent, d.line()))


def _holder_line(d, module, parent) -> str:
    """Where ``parent`` got the plain container that holds ``module`` (an attribute's assignment), or ''."""
    for name, value in vars(parent).items():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        if any(item is module for item in items):
            return d.attr_lines.get((id(parent), name), "")
    return ""


def conclude(d):
    for module, parent_module, called in d.unregistered.values():
        cls, parent = type(module).__name__, type(parent_module).__name__
        line = _holder_line(d, module, parent_module) or called
        d.add(
            ("unregistered", cls, parent),
            Mechanism.UNREGISTERED_MODULE,
            line,
            f"a {cls} with parameters ran inside {parent}.forward, but {parent} does not register it: its "
            "parameters are missing from model.parameters(), state_dict() and the optimizer",
            "hold submodules in nn.ModuleList / nn.ModuleDict / attributes, and tensors to learn as nn.Parameter",
        )


def leaves(d, unnamed):
    """Leaves requiring grad that the loss reached at several steps, that no module registers and no optimizer
    holds: ``unnamed`` is (id, shape, the tensor or None once it died) for each."""
    if d.unregistered:
        return
    shapes = ", ".join(str(shape) for _, shape, _ in unnamed[:4])
    assigned = [
        d.leaf_lines[i][1] for i, _, t in unnamed if t is not None and d.leaf_lines.get(i, (lambda: None,))[0]() is t
    ]
    d.add(
        ("unregistered-leaf",),
        Mechanism.UNREGISTERED_MODULE,
        assigned[0] if assigned else "",
        f"the loss reaches {len(unnamed)} leaf tensor(s) that require grad ({shapes}), the same ones at several "
        "optimizer steps, that no module registers and no optimizer holds: they get gradients and are never updated"
        + (f" (assigned to a module attribute at {assigned[0]})" if assigned else "")
        + "; an input you differentiate on purpose is told apart when the program reads its .grad or passes it "
        "to torch.autograd.grad(..., inputs=...)",
        "make them nn.Parameter attributes of a module (or pass them to the optimizer)",
    )


def observe_flag(d, module):
    """A module call: a plain ``requires_grad`` attribute in the module's own ``__dict__`` (nn.Module has no
    such switch), kept with the parameters whose flags disagree with it and their versions then."""
    flag = module.__dict__.get("requires_grad")
    if not isinstance(flag, bool) or id(module) in d.flagged:
        return
    root = d.stack[0] if d.stack else module
    name = next((n for n, m in root.named_modules() if m is module), "")
    prefix = name + "." if name else ""
    disagree = [(prefix + n, p, p._version) for n, p in module.named_parameters() if p.requires_grad != flag]
    label = f"{name} (a {type(module).__name__})" if name else f"a {type(module).__name__}"
    d.flagged[id(module)] = (module, flag, disagree, d.flag_lines.get(id(module)) or d.line(), label)


def conclude_flags(d):
    for _module, flag, disagree, line, label in d.flagged.values():
        if not disagree:
            continue
        attribute = (
            f"a plain attribute requires_grad={flag} on {label}: an nn.Module has no such switch, so the "
            "assignment changed no parameter's requires_grad"
        )
        if not flag:
            got = [name for name, p, _ in disagree if id(p) in d.reached]
            written = [(name, v, p._version) for name, p, v in disagree if p._version != v]
            if not got and not written:
                continue  # nothing trained them: the freeze holds by other means
            how = f"the loss reached {len(got)} of them" if got else "no backward reached them"
            if written:
                name, before, now = written[0]
                how += f" and {len(written)} were written since ({name} version {before} -> {now})"
            evidence = f"{attribute}; its {len(disagree)} parameter(s) still require grad: {how}"
            fix = (
                "freeze with module.requires_grad_(False) (it sets requires_grad on every parameter), and build "
                "the optimizer from the parameters that still require grad"
            )
        else:
            held = [name for name, p, _ in disagree if id(p) in d.held]
            if not held:
                continue  # no optimizer was given them: nothing says they were meant to train
            evidence = (
                f"{attribute}; {len(disagree)} of its parameters still do not require grad, so they never get a "
                f"gradient, although an optimizer holds {len(held)} of them ({', '.join(held[:4])})"
            )
            fix = "unfreeze with module.requires_grad_(True) (it sets requires_grad on every parameter)"
        d.add(("requires-grad-attribute", label, line), Mechanism.UNREGISTERED_MODULE, line, evidence, fix)
