"""Modules not registered (unit 12): a module with parameters run inside another module's forward that does
not register it (a plain list, built in forward); leaves the loss reaches that no module registers and no
optimizer holds; a module with a plain ``requires_grad`` attribute (``module.requires_grad = False`` sets a
Python attribute and freezes nothing), named when its parameters' own flags disagree with it and the run
measured the difference (trained anyway, or held by an optimizer and never given a gradient).

The line is the one to edit where the doctor saw it run (:mod:`.intent` keeps the assignments): the
attribute that holds the modules in a plain list or dict, the attribute a plain tensor was assigned to,
the ``requires_grad = ...`` assignment; otherwise the call (or the first call) that showed it."""

from __future__ import annotations

from typing import Any

from grader.probes.doctor import intent
from grader.probes.doctor.base import Check, DoctorState
from grader.probes.doctor.findings import Mechanism


class Unregistered(Check):
    """Modules run inside a forward that does not register them; a plain ``requires_grad`` attribute."""

    def __init__(self, d):
        super().__init__(d)
        self.pairs_checked: set[tuple[int, int]] = set()  # (id(parent), id(child)) already looked at
        self.modules: dict[int, tuple] = {}  # id(module) -> (module, parent module, line)
        self.flagged: dict[int, tuple] = {}  # id(module) -> (module, its plain requires_grad, disagreeing, line, name)

    def on_module_call(self, module, parent) -> None:
        observe_flag(self.d, module, self.flagged)
        if parent is not None:
            pair = (id(parent), id(module))
            if pair not in self.pairs_checked:
                self.pairs_checked.add(pair)
                registered = any(m is module for m in parent.modules())
                if not registered and any(p.requires_grad for p in module.parameters()):
                    self.modules.setdefault(id(module), (module, parent, self.d.line()))

    def conclude(self, exc) -> None:
        conclude(self.d, self.modules)
        conclude_flags(self.d, self.flagged)


class UnregisteredLeaves(Check):
    """Leaves the loss reached at several steps that no module registers and no optimizer holds (judged after
    the rebound Parameters, which explain some; not where an unregistered module already explains them)."""

    def conclude(self, exc) -> None:
        d = self.d
        if exc is not None or not d.optimizers:  # (a run cut short may not have reached every step)
            return
        unnamed = _kept_leaves(d, d.explained)
        if unnamed and not any(key[0] == "unregistered" for key in d.keys):
            leaves(d, unnamed)


def _kept_leaves(d: DoctorState, explained) -> list[tuple[int, list, Any]]:
    """(id, shape, the tensor or None) of leaves that are no Parameter, that backward reached at two or more
    optimizer steps (the same tensor: kept to be learned, unlike an input made anew each step), that no
    module registers, no optimizer holds and the program did not differentiate or read as an input."""
    out = []
    for i, (ref, first, last, shape) in d.leaf_seen.items():
        t = ref()
        if last == first or i in d.held or i in d.name_of or i in explained:
            continue
        if (t is not None and intent.is_input(d, t)) or (t is None and i in d.inputs):
            continue
        out.append((i, shape, t))
    return out


def _holder_line(d: DoctorState, module, parent) -> str:
    """Where ``parent`` got the plain container that holds ``module`` (an attribute's assignment), or ''."""
    for name, value in vars(parent).items():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        if any(item is module for item in items):
            return d.attr_lines.get((id(parent), name), "")
    return ""


def conclude(d: DoctorState, modules):
    for module, parent_module, called in modules.values():
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


def leaves(d: DoctorState, unnamed):
    """Leaves requiring grad that the loss reached at several steps, that no module registers and no optimizer
    holds: ``unnamed`` is (id, shape, the tensor or None once it died) for each."""
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


def observe_flag(d: DoctorState, module, flagged):
    """A module call: a plain ``requires_grad`` attribute in the module's own ``__dict__`` (nn.Module has no
    such switch), kept with the parameters whose flags disagree with it and their versions then."""
    flag = module.__dict__.get("requires_grad")
    if not isinstance(flag, bool) or id(module) in flagged:
        return
    root = d.stack[0] if d.stack else module
    name = next((n for n, m in root.named_modules() if m is module), "")
    prefix = name + "." if name else ""
    disagree = [(prefix + n, p, p._version) for n, p in module.named_parameters() if p.requires_grad != flag]
    label = f"{name} (a {type(module).__name__})" if name else f"a {type(module).__name__}"
    flagged[id(module)] = (module, flag, disagree, d.flag_lines.get(id(module)) or d.line(), label)


def conclude_flags(d: DoctorState, flagged):
    for _module, flag, disagree, line, label in flagged.values():
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
