"""Unit 04b's helpers: the programs its experiments run (the four ways of turning gradients off, the patched
loss, a model whose layers sit in four kinds of container, writes to a registered weight, three freezes, an
unfreeze after the optimizer was built, ``.to()`` before and after ``requires_grad``, a module's backward hooks),
with the grader's own copies of the classes the notebook defines (``Tower``, ``Affine``)."""

from __future__ import annotations

import warnings

import torch
from torch import nn

# --- 1. turning gradients off for a model -----------------------------------------------------------


def four_ways_off():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    with torch.no_grad():
        a = lin(x)
    with torch.inference_mode():
        b = lin(x)
    lin.eval()
    c = lin(x)
    for p in lin.parameters():
        p.requires_grad_(False)
    d = lin(x)
    return {"a": a, "b": b, "c": c, "d": d}


PATCH_FACTS = ("loss.is_leaf", "loss.grad is not None", "w.grad is not None", "w moved")


def patched_facts(steps: int = 20) -> set:
    """Which of PATCH_FACTS hold after the patched loop (the loss given requires_grad, w without it)."""
    x = torch.tensor([1.0, 2.0, 3.0])
    y = 2 * x
    w = torch.tensor(0.0)
    opt = torch.optim.SGD([w], lr=0.05)
    for _ in range(steps):
        loss = ((w * x - y) ** 2).mean()
        loss.requires_grad = True
        opt.zero_grad()
        loss.backward()
        opt.step()
    facts = {
        "loss.is_leaf": loss.is_leaf,
        "loss.grad is not None": loss.grad is not None,
        "w.grad is not None": w.grad is not None,
        "w moved": w.item() != 0.0,
    }
    return {fact for fact, holds in facts.items() if holds}


# --- 2. what a module registers ------------------------------------------------------------------------

LAYER_PLACES = ("in_list", "in_dict", "in_module_list", "in_module_dict", "gain")


class Tower(nn.Module):
    """Four layers kept four ways, and a gain made in forward."""

    def __init__(self):
        super().__init__()
        self.in_list = [nn.Linear(2, 2)]
        self.in_dict = {"a": nn.Linear(2, 2)}
        self.in_module_list = nn.ModuleList([nn.Linear(2, 2)])
        self.in_module_dict = nn.ModuleDict({"a": nn.Linear(2, 2)})

    def forward(self, x):
        self.gain = nn.Parameter(torch.ones(1))  # "made sure it exists" on every call
        layers = (self.in_list[0], self.in_dict["a"], self.in_module_list[0], self.in_module_dict["a"])
        return sum(layer(x) for layer in layers).tanh().sum() * self.gain


def tower_tensors(model: Tower) -> dict:
    """The tensor each of LAYER_PLACES names: a layer's weight, or the gain as it is now."""
    return {
        "in_list": model.in_list[0].weight,
        "in_dict": model.in_dict["a"].weight,
        "in_module_list": model.in_module_list[0].weight,
        "in_module_dict": model.in_module_dict["a"].weight,
        "gain": model.gain,
    }


def tower_run(steps: int = 2):
    """The notebook's run: Tower, SGD over model.parameters() built first, ``steps`` steps. Returns the model,
    the optimizer, each place's value before the first step, and its tensor after the last."""
    torch.manual_seed(0)
    model = Tower()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    x = torch.randn(5, 2)
    start = None
    for _ in range(steps):
        opt.zero_grad()
        loss = model(x)
        if start is None:
            start = {name: t.detach().clone() for name, t in tower_tensors(model).items()}
        loss.backward()
        opt.step()
    return model, opt, start, tower_tensors(model)


def tower_moved() -> set:
    _, _, start, now = tower_run()
    return {name for name, t in now.items() if not torch.equal(t.detach(), start[name])}


# --- writing to a registered weight ------------------------------------------------------------------------

WRITES = (
    "lin.weight = lin.weight * 0.5",
    "lin.weight = nn.Parameter(lin.weight * 0.5)",
    "with torch.no_grad(): lin.weight.mul_(0.5)",
    "lin.weight.data = lin.weight.data * 0.5",
)
WRITE_OUTCOMES = ("raises", "opt loses it", "opt keeps it")


def _write(label: str, lin: nn.Linear) -> None:
    if label == WRITES[0]:
        lin.weight = lin.weight * 0.5
    elif label == WRITES[1]:
        lin.weight = nn.Parameter(lin.weight * 0.5)
    elif label == WRITES[2]:
        with torch.no_grad():
            lin.weight.mul_(0.5)
    else:
        lin.weight.data = lin.weight.data * 0.5


def held_ids(opt: torch.optim.Optimizer) -> set:
    """The ids of the tensors an optimizer updates."""
    return {id(p) for group in opt.param_groups for p in group["params"]}


def write_outcome(label: str) -> str:
    """What one of WRITES does to a fresh Linear whose optimizer was built first."""
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    try:
        _write(label, lin)
    except (TypeError, RuntimeError):
        return "raises"
    return "opt keeps it" if id(lin.weight) in held_ids(opt) else "opt loses it"


def outcome_key(text: str) -> str:
    return " ".join(str(text).lower().split())


# --- freezing ------------------------------------------------------------------------------------------------

FREEZES = (
    "enc.requires_grad = False",
    "enc.requires_grad_(False)",
    "for p in enc.parameters(): p.requires_grad = False",
)


def frozen_model(label: str):
    """An encoder and a head, the encoder frozen by one of FREEZES, after one backward."""
    torch.manual_seed(0)
    enc, head = nn.Linear(3, 3), nn.Linear(3, 1)
    if label == FREEZES[0]:
        enc.requires_grad = False
    elif label == FREEZES[1]:
        enc.requires_grad_(False)
    else:
        for p in enc.parameters():
            p.requires_grad = False
    head(enc(torch.randn(4, 3))).sum().backward()
    return enc, head


UNFREEZE_FACTS = (
    "enc.weight.grad is not None",
    "enc.weight moved",
    "head.weight moved",
    "opt.zero_grad() cleared enc.weight.grad",
)


def unfreeze_later(steps: int = 3):
    """Frozen encoder, an optimizer over the parameters that require grad, then the encoder unfrozen and
    ``steps`` steps. Returns the facts of UNFREEZE_FACTS that hold."""
    torch.manual_seed(0)
    enc, head = nn.Linear(3, 3), nn.Linear(3, 1)
    model = nn.Sequential(enc, nn.Tanh(), head)
    enc.requires_grad_(False)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    enc.requires_grad_(True)  # "now fine-tune the encoder too"
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    enc_start, head_start = enc.weight.detach().clone(), head.weight.detach().clone()
    cleared = True
    for _ in range(steps):
        opt.zero_grad()
        cleared = cleared and enc.weight.grad is None
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    facts = {
        "enc.weight.grad is not None": enc.weight.grad is not None,
        "enc.weight moved": not torch.equal(enc.weight.detach(), enc_start),
        "head.weight moved": not torch.equal(head.weight.detach(), head_start),
        "opt.zero_grad() cleared enc.weight.grad": cleared,
    }
    return {fact for fact, holds in facts.items() if holds}


# --- .to() before and after requires_grad -----------------------------------------------------------


def moved_three():
    """a: requires grad, then .to(float64); b: .to(float64), then requires_grad_(); c: a Linear's weight after
    .to(float64) on the module. After one backward through all three."""
    torch.manual_seed(0)
    a = torch.randn(3, requires_grad=True).to(torch.float64)
    b = torch.randn(3).to(torch.float64).requires_grad_()
    c = nn.Linear(3, 1).to(torch.float64).weight
    (a.sum() + b.sum() + c.sum()).backward()
    return {"a": a, "b": b, "c": c}


def grad_is_set(t: torch.Tensor) -> bool:
    """t.grad is not None, read without the warning a non-leaf's .grad gives."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad is not None


# --- a module's backward hooks -------------------------------------------------------------------------

LEGACY_SEES = (
    "the gradient with respect to x",
    "the gradients of the addition's two inputs",
    "the gradients of lin.weight and lin.bias",
    "nothing: the hook never runs",
)


class Affine(nn.Module):
    """A Linear, then an added offset: two operations in one forward."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.offset = nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return self.lin(x) + self.offset


def hook_shapes(full: bool) -> list:
    """The shapes of grad_input that a legacy (or full) backward hook on Affine receives."""
    torch.manual_seed(0)
    model, x = Affine(), torch.randn(4, 3, requires_grad=True)
    seen: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        register = model.register_full_backward_hook if full else model.register_backward_hook
        register(lambda module, grad_input, grad_output: seen.extend(grad_input))
        model(x).sum().backward()
    return [None if g is None else tuple(g.shape) for g in seen]


def legacy_sees() -> str:
    """Which of LEGACY_SEES the legacy hook on Affine gets, told apart by the shapes it receives."""
    torch.manual_seed(0)
    model, x = Affine(), torch.randn(4, 3, requires_grad=True)
    shapes = hook_shapes(full=False)
    if not shapes:
        return LEGACY_SEES[3]
    if shapes == [tuple(x.shape)]:
        return LEGACY_SEES[0]
    if shapes == [(4, 2), tuple(model.offset.shape)]:
        return LEGACY_SEES[1]
    if sorted(s for s in shapes if s) == sorted([tuple(model.lin.weight.shape), tuple(model.lin.bias.shape)]):
        return LEGACY_SEES[2]
    return f"something else: {shapes}"


def hooked_relu_net():
    """A Linear with a full backward hook, then ReLU(inplace=True)."""
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda module, grad_input, grad_output: None)
    return nn.Sequential(lin, nn.ReLU(inplace=True))


# --- the self-tests --------------------------------------------------------------------------------------


def grad_field_state(t):
    if t.grad is None:
        return "None"
    return "a tensor of zeros" if not t.grad.any() else "a nonzero tensor"


HELD_PLACES = ("stem.weight", "branches[0].weight", "heads['cls'].weight", "heads['cls'].bias")
