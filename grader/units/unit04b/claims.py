"""Unit 04b's general rules, each checked on generated programs (see grader.engine.claims)."""

import random
import warnings

import torch
from torch import nn

from grader.engine.claims import Trial, claim, sweeps

_OPTIMIZERS = {
    "SGD": torch.optim.SGD,
    "Adam": torch.optim.Adam,
    "AdamW": torch.optim.AdamW,
    "RMSprop": torch.optim.RMSprop,
    "Adagrad": torch.optim.Adagrad,
}


@claim(
    "04b.zero-grad-sets-none",
    sentence="`optimizer.zero_grad()` sets every `.grad` to None by default",
    holds_when="set_to_none is left at its default; zero_grad(set_to_none=False) fills zeros instead",
    not_swept="about an optimizer's zero_grad",
)
def zero_grad_sets_none():
    for seed in range(12):
        rng = random.Random(seed)
        name = sorted(_OPTIMIZERS)[seed % len(_OPTIMIZERS)]
        layers = [torch.nn.Linear(rng.randint(1, 5), rng.randint(1, 5)) for _ in range(rng.randint(1, 3))]
        params = [p for layer in layers for p in layer.parameters()]
        opt = _OPTIMIZERS[name](params, lr=0.1)
        sum((p**2).sum() for p in params).backward()
        default = seed % 3 != 0
        opt.zero_grad() if default else opt.zero_grad(set_to_none=False)
        label = f"seed {seed}: {name} over {len(params)} tensors, " + (
            "zero_grad()" if default else "set_to_none=False"
        )
        yield Trial(label, default, all(p.grad is None for p in params))


_REGION_OPS = (
    lambda w, x: w * x,
    lambda w, x: (w @ x.T).relu(),
    lambda w, x: torch.nn.functional.linear(x, w),
    lambda w, x: w.exp().sum(),
    lambda w, x: w[0] + x,
)


@claim(
    "04b.regions-record-nothing",
    sentence="`no_grad` and `inference_mode` record nothing in their region",
)
def regions_record_nothing():
    for seed in range(20):
        rng = random.Random(seed)
        n = rng.randint(1, 4)
        w, x = torch.randn(n, n, requires_grad=True), torch.randn(n, n, requires_grad=rng.random() < 0.5)
        region = torch.no_grad if seed % 2 else torch.inference_mode
        with region():
            y = _REGION_OPS[seed % len(_REGION_OPS)](w, x)
        yield Trial(f"seed {seed}: op {seed % len(_REGION_OPS)} in {region.__name__}", True, y.grad_fn is None)


@sweeps("04b.regions-record-nothing")
def regions_record_nothing_on(sample):
    """Every operation, its floating-point arguments requiring grad, run inside each region: no output has a
    grad_fn. (A view made there of a tensor that requires grad still reads requires_grad=True: the flag is its
    base's; nothing was recorded.)"""
    for region in (torch.no_grad, torch.inference_mode):

        def call(*args, region=region, **kwargs):
            with region():
                return sample.function(*args, **kwargs)

        run = sample.run(call=call)
        if run is None or not run.outputs or not run.leaves:
            continue
        nothing = all(t.grad_fn is None for t in run.outputs)
        yield Trial(f"{sample.label} in {region.__name__}", True, nothing, op=sample.op)


def _node_names(y: torch.Tensor) -> list[str]:
    seen, stack, names = set(), [y.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(type(node).__name__)
        stack.extend(n for n, _ in node.next_functions)
    return sorted(names)


@claim(
    "04b.eval-records-the-same-nodes",
    sentence="autograd records the same nodes as before, except dropout's",
    holds_when="the model has no dropout (batch norm, linear, activations record the same nodes in both modes); "
    "in evaluation dropout does nothing and records nothing",
    not_swept="about a module's train and eval modes, which op_db's functions do not have",
)
def eval_records_the_same_nodes():
    from torch import nn

    for seed in range(10):
        rng = random.Random(seed)
        width = rng.randint(2, 6)
        dropout = seed % 2 == 1
        layers: list[nn.Module] = [nn.Linear(width, width), nn.BatchNorm1d(width) if rng.random() < 0.5 else nn.Tanh()]
        layers += [nn.Dropout(0.5)] if dropout else []
        layers += [nn.ReLU(), nn.Linear(width, 1)]
        torch.manual_seed(seed)
        model, x = nn.Sequential(*layers), torch.randn(rng.randint(2, 5), width)
        train = _node_names(model.train()(x).sum())
        evaluation = _node_names(model.eval()(x).sum())
        yield Trial(
            f"seed {seed}: {len(layers)} layers{', with dropout' if dropout else ''}",
            not dropout,
            bool(evaluation) and train == evaluation,
        )


@claim(
    "04b.optimizers-skip-none-grads",
    sentence="The optimizer skips every parameter whose `.grad` is None",
    not_swept="about an optimizer's step",
)
def optimizers_skip_none_grads():
    for seed in range(10):
        rng = random.Random(seed)
        name = sorted(_OPTIMIZERS)[seed % len(_OPTIMIZERS)]
        params = [torch.nn.Parameter(torch.randn(rng.randint(1, 4))) for _ in range(rng.randint(2, 4))]
        used = params[: rng.randint(1, len(params) - 1)]
        extra = {"weight_decay": 0.1} if seed % 2 else {}
        extra |= {"momentum": 0.9} if name in ("SGD", "RMSprop") and rng.random() < 0.5 else {}
        opt = _OPTIMIZERS[name](params, lr=0.1, **extra)
        before = [p.detach().clone() for p in params]
        for _ in range(2):
            opt.zero_grad()
            sum((p**2).sum() for p in used).backward()
            opt.step()
        untouched = all(torch.equal(p, b) for p, b in zip(params[len(used) :], before[len(used) :]))
        yield Trial(f"seed {seed}: {name}{extra or ''}, {len(params) - len(used)} without .grad", True, untouched)


_BLOCKS = {
    "no_grad": (torch.no_grad, False),
    "enable_grad": (torch.enable_grad, True),
    "set_grad_enabled(False)": (lambda: torch.set_grad_enabled(False), False),
    "set_grad_enabled(True)": (lambda: torch.set_grad_enabled(True), True),
}


def _nest(names, w, seen):
    """Enter the blocks in order; at each depth note the switch and whether w * 3 is recorded; check the exits."""
    if not names:
        return True
    before = torch.is_grad_enabled()
    make, setting = _BLOCKS[names[0]]
    with make():
        seen.append((setting, torch.is_grad_enabled(), (w * 3).grad_fn is not None))
        inner = _nest(names[1:], w, seen)
    return inner and torch.is_grad_enabled() == before


@claim(
    "04b.grad-mode-blocks-nest",
    sentence="Grad mode is one switch, and the innermost block sets it while it lasts; when a block ends, the "
    "setting it found comes back.",
    not_swept="about grad-mode blocks, not what an operation records",
)
def grad_mode_blocks_nest():
    w = torch.tensor(2.0, requires_grad=True)
    for seed in range(16):
        rng = random.Random(seed)
        names = [rng.choice(sorted(_BLOCKS)) for _ in range(rng.randint(1, 4))]
        start = seed % 2 == 0
        seen: list = []
        with torch.set_grad_enabled(start):
            restored = _nest(names, w, seen)
        switch = all(setting == now == recorded for setting, now, recorded in seen)
        yield Trial(f"seed {seed}: from {start}, " + " > ".join(names), True, restored and switch)


@claim(
    "04b.decorators-act-as-blocks",
    sentence="A function decorated with `@torch.no_grad()` or `@torch.enable_grad()` behaves as if its body were "
    "inside that block.",
    not_swept="about grad-mode decorators, not what an operation records",
)
def decorators_act_as_blocks():
    w = torch.tensor(1.5, requires_grad=True)
    for seed in range(12):
        rng = random.Random(seed)
        name = rng.choice(["no_grad", "enable_grad"])
        outer = rng.choice(["no_grad", "enable_grad", "set_grad_enabled(False)"])
        decorator, setting = _BLOCKS[name]

        @decorator()
        def body(t):
            return t * 2, torch.is_grad_enabled()

        with _BLOCKS[outer][0]():
            out, inside = body(w)
            after = torch.is_grad_enabled()
        recorded = out.grad_fn is not None
        yield Trial(
            f"seed {seed}: @{name} called under {outer}",
            True,
            recorded == setting and inside == setting and after == _BLOCKS[outer][1],
        )


@claim(
    "04b.enable-grad-does-not-undo-inference-mode",
    sentence="`inference_mode` is a stronger switch that `enable_grad` does not undo",
    not_swept="about grad-mode blocks, not what an operation records",
)
def enable_grad_does_not_undo_inference_mode():
    for seed in range(10):
        rng = random.Random(seed)
        w = torch.randn(rng.randint(1, 5), requires_grad=True)
        inner = torch.enable_grad if seed % 2 else (lambda: torch.set_grad_enabled(True))
        with torch.inference_mode(), inner():
            y = (w * rng.choice([2.0, -1.0])).exp()
        yield Trial(
            f"seed {seed}: {'enable_grad' if seed % 2 else 'set_grad_enabled(True)'} inside",
            True,
            y.grad_fn is None and y.is_inference(),
        )


# --- what a module registers ----------------------------------------------------------------------------

# how a layer can be kept on an attribute: (label, whether the container is a module, wrap)
_CONTAINERS = (
    ("attribute", True, lambda layer: layer),
    ("nn.ModuleList", True, lambda layer: nn.ModuleList([layer])),
    ("nn.ModuleDict", True, lambda layer: nn.ModuleDict({"k": layer})),
    ("nn.Sequential", True, lambda layer: nn.Sequential(layer)),
    ("list", False, lambda layer: [layer]),
    ("dict", False, lambda layer: {"k": layer}),
    ("tuple", False, lambda layer: (layer,)),
)
_LAYERS = (
    lambda: nn.Linear(2, 3),
    lambda: nn.Conv1d(1, 2, 3),
    lambda: nn.LayerNorm(4),
    lambda: nn.Embedding(5, 2),
)


@claim(
    "04b.parameters-lists-what-is-registered",
    sentence="`model.parameters()` lists the parameters a module registered: each `nn.Parameter` assigned to one "
    "of its attributes, and those of each `nn.Module` assigned to one, at any depth (`nn.ModuleList` and "
    "`nn.ModuleDict` are modules)",
    holds_when="every container on the way to the layer is a module; a layer kept in a Python list, dict or "
    "tuple is not listed",
    not_swept="about modules and their parameters",
)
def parameters_lists_what_is_registered():
    for seed in range(28):
        rng = random.Random(seed)
        path = [rng.choice(_CONTAINERS) for _ in range(rng.randint(1, 2))]
        if seed < len(_CONTAINERS):
            path[0] = _CONTAINERS[seed]
        for i in range(1, len(path)):  # a module container holds modules only
            if path[i - 1][1] and path[i - 1][0] != "attribute" and not path[i][1]:
                path[i] = _CONTAINERS[0]
        layer = rng.choice(_LAYERS)()
        kept: object = layer
        for _, _, wrap in reversed(path):
            kept = wrap(kept)
        root = nn.Module()
        root.decoy = nn.Linear(1, 1)
        root.part = kept
        listed = {id(p) for p in root.parameters()}
        registered = all(is_module for _, is_module, _ in path)
        yield Trial(
            f"seed {seed}: {type(layer).__name__} in " + " in ".join(label for label, _, _ in path),
            registered,
            all(id(p) in listed for p in layer.parameters()),
        )


class _MakesInForward(nn.Module):
    def __init__(self, on_self: bool, shape: tuple):
        super().__init__()
        self.lin = nn.Linear(shape[-1], shape[-1])
        self.on_self, self.shape = on_self, shape

    def forward(self, x):
        scale = nn.Parameter(torch.ones(self.shape[-1]))
        if self.on_self:
            self.scale = scale
        return self.lin(x) * scale, scale


@claim(
    "04b.parameter-made-in-forward-is-new",
    sentence="A `nn.Parameter` made inside `forward` is a new tensor object at every call, and no optimizer built "
    "before that call holds it",
    not_swept="about modules and their parameters",
)
def parameter_made_in_forward_is_new():
    for seed in range(12):
        rng = random.Random(seed)
        width = rng.randint(1, 4)
        model = _MakesInForward(on_self=seed % 2 == 0, shape=(rng.randint(1, 3), width))
        calls, built_after = rng.randint(2, 4), rng.randint(0, 1)
        made, opt = [], None
        for call in range(calls):
            if call == built_after:
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
            out, scale = model(torch.randn(model.shape))
            out.sum().backward()
            made.append(scale)
        assert opt is not None
        held = {id(p) for group in opt.param_groups for p in group["params"]}
        new_each_call = len({id(p) for p in made}) == len(made)
        unheld = all(id(p) not in held for p in made[built_after:])
        where = "self.scale" if model.on_self else "a local"
        yield Trial(
            f"seed {seed}: {calls} calls, kept on {where}, optimizer built before call {built_after}",
            True,
            new_each_call and unheld,
        )


# --- freezing -----------------------------------------------------------------------------------------------


def _small_model(rng: random.Random) -> nn.Module:
    width = rng.randint(2, 4)
    layers: list[nn.Module] = [nn.Linear(width, width)]
    if rng.random() < 0.5:
        layers.append(nn.LayerNorm(width))
    layers += [nn.Tanh(), nn.Linear(width, 1)]
    return nn.Sequential(*layers)


@claim(
    "04b.module-requires-grad-is-an-attribute",
    sentence="`module.requires_grad = False` only creates a plain Python attribute on the module object: no "
    "parameter's flag changes",
    holds_when="the flag is assigned to the module as an attribute; the method `requires_grad_(False)` sets the "
    "flag of every parameter the module holds",
    not_swept="about modules and their parameters",
)
def module_requires_grad_is_an_attribute():
    for seed in range(12):
        rng = random.Random(seed)
        model = _small_model(rng)
        part = model if rng.random() < 0.5 else model[0]
        before = [p.requires_grad for p in model.parameters()]
        assigned = seed % 2 == 0
        if assigned:
            part.requires_grad = False
        else:
            part.requires_grad_(False)
        after = [p.requires_grad for p in model.parameters()]
        label = "module.requires_grad = False" if assigned else "module.requires_grad_(False)"
        yield Trial(
            f"seed {seed}: {label} on {'the model' if part is model else 'its first layer'}", assigned, after == before
        )


# --- what the optimizer holds ---------------------------------------------------------------------------


def _after_building(rng: random.Random, model: nn.Sequential) -> str:
    """Change the model after its optimizer was built, one of three ways; returns what was done."""
    how = rng.choice(["unfreeze", "new parameter", "new layer"])
    if how == "unfreeze":
        model[0].requires_grad_(True)
    elif how == "new parameter":
        model[0].weight = nn.Parameter(model[0].weight.detach() * 0.5)
    else:
        model[-1] = nn.Linear(model[-1].in_features, 1)
    return how


@claim(
    "04b.optimizer-holds-its-tensors",
    sentence="The optimizer holds the tensors it was given when it was built, and `step()` and `zero_grad()` act "
    "on those alone",
    not_swept="about an optimizer's state",
)
def optimizer_holds_its_tensors():
    optimizers = (torch.optim.SGD, torch.optim.Adam, torch.optim.RMSprop)
    for seed in range(15):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        model = _small_model(rng)
        model[0].requires_grad_(False)
        opt = optimizers[seed % 3]([p for p in model.parameters() if p.requires_grad], lr=0.1)
        how = _after_building(rng, model)
        held = {id(p) for group in opt.param_groups for p in group["params"]}
        x = torch.randn(rng.randint(2, 5), model[0].in_features)
        ok = True
        for _ in range(2):
            before = {id(p): p.detach().clone() for p in model.parameters()}
            grads = {id(p): p.grad for p in model.parameters()}
            opt.zero_grad()
            ok &= all((p.grad is None) if id(p) in held else (p.grad is grads[id(p)]) for p in model.parameters())
            model(x).pow(2).mean().backward()
            opt.step()
            for p in model.parameters():
                moved = not torch.equal(p.detach(), before[id(p)])
                ok &= moved == (id(p) in held and p.grad is not None and bool(p.grad.any()))
        yield Trial(f"seed {seed}: {type(opt).__name__}, frozen first layer, then {how}", True, ok)


# --- writing to a parameter -----------------------------------------------------------------------------

_NOT_PARAMETERS = {
    "a product": lambda p: p * 0.5,
    "a detached copy": lambda p: p.detach().clone(),
    "a new tensor": lambda p: torch.zeros_like(p),
    "a tensor that requires grad": lambda p: torch.zeros_like(p).requires_grad_(),
}


@claim(
    "04b.only-a-parameter-replaces-a-parameter",
    sentence="A name the module registered as a parameter takes only an `nn.Parameter` (or None): assigning any "
    "other tensor raises a TypeError",
    holds_when="the name is one the module registered as a parameter; a tensor assigned to a new name becomes "
    "a plain attribute",
    not_swept="about modules and their parameters",
)
def only_a_parameter_replaces_a_parameter():
    for seed in range(16):
        rng = random.Random(seed)
        module = rng.choice(_LAYERS)()
        registered = seed % 4 != 3
        name = rng.choice([n for n, _ in module.named_parameters()]) if registered else "extra"
        kind = rng.choice(sorted(_NOT_PARAMETERS))
        value = _NOT_PARAMETERS[kind](next(module.parameters()))
        try:
            setattr(module, name, value)
            raised = False
        except TypeError:
            raised = True
        yield Trial(f"seed {seed}: {kind} to {type(module).__name__}.{name}", registered, raised)


# --- .to() and requires_grad -----------------------------------------------------------------------------

_FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


@claim(
    "04b.to-after-requires-grad-is-not-a-leaf",
    sentence="`.to()` that changes a leaf's dtype after it requires grad returns a recorded copy: not a leaf, no "
    "`.grad` of its own, and an optimizer refuses it",
    holds_when="the conversion comes after requires_grad; converted first and then given requires_grad_(), or "
    "made with dtype= and requires_grad=True, the tensor is a leaf",
    not_swept="about the order of requires_grad and a cast, and optimizers; what .to() records is 03.to-records-a-copy-when-it-changes's sweep",
)
def to_after_requires_grad_is_not_a_leaf():
    import warnings

    for seed in range(16):
        rng = random.Random(seed)
        start, end = rng.sample(_FLOATS, 2)
        n = rng.randint(1, 4)
        after = seed % 2 == 0
        if after:
            t = torch.randn(n, dtype=start, requires_grad=True).to(end)
        elif seed % 4 == 1:
            t = torch.randn(n, dtype=start).to(end).requires_grad_()
        else:
            t = torch.randn(n, dtype=end, requires_grad=True)
        t.float().sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            no_grad_kept = t.grad is None
        try:
            torch.optim.SGD([t], lr=0.1)
            refused = False
        except ValueError as exc:
            refused = "non-leaf" in str(exc)
        yield Trial(
            f"seed {seed}: {start} -> {end}, {'after' if after else 'before'} requires_grad",
            after,
            not t.is_leaf and no_grad_kept and refused,
        )


@claim(
    "04b.module-to-keeps-its-parameters",
    sentence="`Module.to()` converts each parameter in place and keeps the same `nn.Parameter` objects",
    holds_when="torch.__future__'s overwrite setting is at its default (False); with "
    "set_overwrite_module_params_on_conversion(True) the module gets new Parameter objects (checked on dtype "
    "conversions on the CPU; a move to a device whose tensors are of another kind, such as XLA, also makes new "
    "ones)",
    not_swept="about modules and their parameters",
)
def module_to_keeps_its_parameters():
    future = torch.__future__
    for seed in range(10):
        rng = random.Random(seed)
        model = _small_model(rng)
        ids = [id(p) for p in model.parameters()]
        overwrite = seed % 3 == 2
        future.set_overwrite_module_params_on_conversion(overwrite)
        try:
            how = rng.choice(["to(torch.float64)", "double()", "half()"])
            model.to(torch.float64) if how.startswith("to") else getattr(model, how[:-2])()
        finally:
            future.set_overwrite_module_params_on_conversion(False)
        same = [id(p) for p in model.parameters()] == ids
        converted = all(p.dtype != torch.float32 for p in model.parameters())
        yield Trial(f"seed {seed}: {how}{', overwrite on' if overwrite else ''}", not overwrite, same and converted)


# --- a module's backward hooks -------------------------------------------------------------------------


class _Ends(nn.Module):
    """A Linear, then one more operation chosen by ``last``."""

    def __init__(self, last: str, width: int):
        super().__init__()
        self.lin, self.last = nn.Linear(3, width), last
        self.offset = nn.Parameter(torch.randn(width))

    def forward(self, x):
        y = self.lin(x)
        if self.last == "+ offset":
            return y + self.offset
        if self.last == "* offset":
            return y * self.offset
        if self.last == "tanh":
            return y.tanh()
        if self.last == "* 2":
            return y * 2
        return y  # the Linear's own node is the last


@claim(
    "04b.legacy-hook-gets-the-last-nodes-grad-input",
    sentence="The legacy `register_backward_hook` receives the `grad_input` of the last node the module's forward made",
    not_swept="about a module's backward hook",
)
def legacy_hook_gets_the_last_nodes_grad_input():
    import warnings

    for seed in range(10):
        rng = random.Random(seed)
        last = ("+ offset", "* offset", "tanh", "* 2", "none")[seed % 5]
        torch.manual_seed(seed)
        model = _Ends(last, rng.randint(1, 3))
        x = torch.randn(rng.randint(2, 4), 3, requires_grad=rng.random() < 0.5)
        legacy: list = []
        node: list = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.register_backward_hook(lambda m, gi, go, seen=legacy: seen.extend(gi))
            out = model(x)
        out.grad_fn.register_hook(lambda gi, go, seen=node: seen.extend(gi))
        out.sum().backward()
        same = len(legacy) == len(node) and all(
            (a is None and b is None) or (a is not None and b is not None and torch.equal(a, b))
            for a, b in zip(legacy, node)
        )
        yield Trial(f"seed {seed}: Linear then {last}", True, same)


_IN_PLACE = {
    "relu_()": lambda y: y.relu_(),
    "add_(1)": lambda y: y.add_(1),
    "mul_(2)": lambda y: y.mul_(2),
    "sigmoid_()": lambda y: y.sigmoid_(),
    "nn.ReLU(inplace=True)": lambda y: nn.ReLU(inplace=True)(y),
}


@claim(
    "04b.full-hook-output-refuses-in-place",
    sentence="an in-place operation on the output of a module with a full backward hook raises at once",
    holds_when="the output requires grad; when neither the input nor a parameter requires grad, or under "
    "no_grad, the hook does not wrap the output and the write goes through",
    not_swept="about a module's backward hook",
)
def full_hook_output_refuses_in_place():
    for seed in range(20):
        rng = random.Random(seed)
        module = rng.choice([lambda: nn.Linear(3, 2), lambda: nn.Sequential(nn.Linear(3, 3), nn.Tanh())])()
        module.register_full_backward_hook(lambda m, gi, go: None)
        frozen = seed % 4 == 3
        if frozen:
            module.requires_grad_(False)
        x = torch.randn(rng.randint(1, 4), 3, requires_grad=rng.random() < 0.5 and not frozen)
        op = rng.choice(sorted(_IN_PLACE))
        quiet = seed % 8 == 5
        with torch.set_grad_enabled(not quiet):
            y = module(x)
            try:
                _IN_PLACE[op](y)
                raised = False
            except RuntimeError as exc:
                raised = "is a view and is being modified inplace" in str(exc)
        needs = y.requires_grad
        state = "frozen" if frozen else ("no_grad" if quiet else "grad on")
        yield Trial(f"seed {seed}: {type(module).__name__}, {op}, {state}", needs, raised)


class _WritesItsInput(nn.Module):
    """A module whose forward writes its input in place before using it."""

    def __init__(self, op: str):
        super().__init__()
        self.op = op
        self.lin = nn.Linear(3, 2)

    def forward(self, t):
        _IN_PLACE[self.op](t)
        return self.lin(t)


@claim(
    "04b.full-hook-input-refuses-in-place",
    sentence="The hook wraps the inputs that require grad the same way before `forward` sees them, so a `forward` "
    "that writes such an input in place raises too.",
    holds_when="the input requires grad; an input that needs no gradient reaches forward as it is and takes the write",
    not_swept="about a module's backward hook",
)
def full_hook_input_refuses_in_place():
    for seed in range(16):
        rng = random.Random(seed)
        op = rng.choice(sorted(_IN_PLACE))
        module = _WritesItsInput(op)
        module.register_full_backward_hook(lambda m, gi, go: None)
        needs = seed % 3 != 2
        x = torch.randn(rng.randint(1, 4), 3, requires_grad=needs) * 1  # a non-leaf where it requires grad
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the hook warns when no input requires grad
            try:
                module(x)
                raised = False
            except RuntimeError as exc:
                raised = "is a view and is being modified inplace" in str(exc)
        yield Trial(f"seed {seed}: {op} in forward, input requires grad: {needs}", needs, raised)
