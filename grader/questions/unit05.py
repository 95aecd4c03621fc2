"""Unit 05, saved tensors and what they cost: what each node keeps, storage versus identity, the memory bill."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .. import isolation, probes
from ..kinds import Choice, Error, Function, Names, Number, saved_key
from ..question import exercise, predict_then_run, self_test


def _tensor_saves(fn) -> set[str]:
    """The _saved_* attributes of one node that hold a tensor (not None, not a number)."""
    return {a for a, v in probes.saved_attributes(fn).items() if isinstance(v, torch.Tensor)}


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _lower(name: str) -> str:
    return name.strip().lower()


# --- 1. ask the node ------------------------------------------------------------------

@predict_then_run(
    "05.sin-saves", Names(key=saved_key, pool=("_saved_result", "_saved_other")),
    prompt="x = torch.ones(3, requires_grad=True); y = x.sin(). Which tensor-valued _saved_ attributes does "
           "y.grad_fn have? Answer a set of names.",
    explain="The derivative of sin is cos of the input, so the node keeps its input; the output is no use "
            "to its rule.",
)
def sin_saves():
    x = torch.ones(3, requires_grad=True)
    return _tensor_saves(x.sin().grad_fn)


_OPS = {
    "sin": lambda x: x.sin(),
    "exp": lambda x: x.exp(),
    "relu": lambda x: x.relu(),
    "mul": lambda x: x * x.detach().clone().requires_grad_(),
}


@predict_then_run(
    "05.keeps-result", Names(key=_lower, pool=tuple(_OPS)),
    prompt="For x = torch.ones(3, requires_grad=True), consider x.sin(), x.exp(), x.relu() and x * w (w another "
           "tensor requiring grad). Which of the operations sin, exp, relu, mul keep their own output "
           "(a _saved_result) rather than their inputs? Answer a set such as {'sin'}.",
    explain="exp's derivative is its own output, and relu's gradient only needs to know where the output "
            "was positive, so both keep the result. sin needs its input; mul needs each operand for the other.",
)
def keeps_result():
    x = torch.ones(3, requires_grad=True)
    return {op for op, make in _OPS.items() if "_saved_result" in _tensor_saves(make(x).grad_fn)}


# --- 2. identity or storage --------------------------------------------------------------

_SAME, _SHARED, _COPY = "the same object", "another object over the same storage", "a copy in new storage"


@predict_then_run(
    "05.exp-saved-result", Choice(_SAME, _SHARED, _COPY),
    prompt="x = torch.ones(3, requires_grad=True); y = x.exp(); s = y.grad_fn._saved_result. What is s, "
           f"compared with y? Answer one of {_SAME!r}, {_SHARED!r}, {_COPY!r}.",
    explain="A node may not hold a strong reference to its own output (that would be a reference cycle), "
            "so reading the saved output rebuilds a new tensor object over the same memory. Identity says "
            "nothing; compare storages.",
)
def exp_saved_result():
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    s = y.grad_fn._saved_result
    if s is y:
        return _SAME
    return _SHARED if _storage(s) == _storage(y) else _COPY


@predict_then_run(
    "05.view-bill", Number(tol=0),
    prompt="h = torch.randn(1000, requires_grad=True) * 2 is an activation of 1000 float32 values. "
           "out = h[:10].sin(). Counting each storage once, at its full size, how many bytes does out's "
           "graph keep alive for backward?",
    explain="sin saves its input, and its input is a view of h: a saved view keeps its whole base "
            "allocation alive, 4 bytes times 1000, not the 40 bytes its shape suggests.",
)
def view_bill():
    h = torch.randn(1000, requires_grad=True) * 2
    return probes.bill(lambda: h[:10].sin()).total


# --- 3. the memory bill of a small network -------------------------------------------------

@predict_then_run(
    "05.mul-constant-saves", Names(key=saved_key, pool=("_saved_self", "_saved_result")),
    prompt="x = torch.randn(3, requires_grad=True); c = torch.randn(3) (no grad). m = x * c. Which "
           "_saved_ attributes of m.grad_fn hold a tensor (not None)?",
    explain="The gradient for x is grad * c, so c is kept. The gradient for c would need x, but c asks for "
            "none, so x is not saved: a node keeps only what the gradients actually requested need.",
)
def mul_constant_saves():
    x = torch.randn(3, requires_grad=True)
    c = torch.randn(3)
    return _tensor_saves((x * c).grad_fn)


def syllabus_mlp():
    """The seed-0 MLP of the syllabus and its 256x512 input (which does not require grad)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    return model, torch.randn(256, 512)


def _mlp_bill(model, x):
    return probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})


_MLP = ("torch.manual_seed(0); model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), "
        "nn.ReLU(), nn.Linear(512, 1)); x = torch.randn(256, 512); loss = model(x).sum()")
_PARAMS = ("0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias")


@predict_then_run(
    "05.mlp-saved-params", Names(pool=_PARAMS),
    prompt=f"{_MLP}. Which of the model's parameters does the forward pass save for backward? Answer a "
           "set of names such as {'0.weight'}.",
    explain="Each Linear keeps its weight only if its input needs a gradient. The raw input does not, "
            "so 0.weight is not kept; the ReLU outputs do, so 2.weight and 4.weight are. Biases never are.",
)
def mlp_saved_params():
    model, x = syllabus_mlp()
    return _mlp_bill(model, x).names() & set(_PARAMS)


@predict_then_run(
    "05.mlp-bill", Number(tol=0),
    prompt=f"The same: {_MLP}. How many distinct storages does autograd keep, and how many bytes do they "
           "take together? Answer [storages, bytes].",
    explain="The input (kept by layer 0 for its weight's gradient), both ReLU outputs (each kept by its "
            "ReLU and by the next Linear: one storage, two saves), 2.weight and 4.weight.",
)
def mlp_bill():
    model, x = syllabus_mlp()
    bill = _mlp_bill(model, x)
    return [bill.count, bill.total]


@predict_then_run(
    "05.input-grad-bill", Number(tol=0),
    prompt="The same MLP, but the input is made with x = torch.randn(256, 512).requires_grad_(). How many "
           "bytes are saved now?",
    explain="The first layer now owes a gradient to its input, which needs its weight: 0.weight joins the "
            "bill.",
)
def input_grad_bill():
    model, x = syllabus_mlp()
    x.requires_grad_()
    return _mlp_bill(model, x).total


@predict_then_run(
    "05.frozen-bill", Number(tol=0),
    prompt="The same MLP with the plain input again (no grad), but the first layer frozen: "
           "model[0].requires_grad_(False). How many bytes are saved now?",
    explain="Nothing before layer 2 needs a gradient, so layer 0 keeps nothing, its ReLU records nothing, "
            "and layer 2 needs its input but not its weight: the input and 2.weight leave the bill at once.",
)
def frozen_bill():
    model, x = syllabus_mlp()
    model[0].requires_grad_(False)
    return _mlp_bill(model, x).total


# --- 4. a write after the forward pass: what the node saved decides ---------------------------

@predict_then_run(
    "05.sigmoid-write", Error("at the write", "at backward"),
    prompt="a = torch.tensor([1., 2., 3.], requires_grad=True); b = a.sigmoid(); then b[1] = 2 (the write); "
           "then b.sum().backward(). Where, if anywhere, does it fail? 'at the write', 'at backward' or "
           "'no error'.",
    explain="The sigmoid node saved its output b. The write changed b after it was saved, so the node "
            "refuses to use it when backward reaches it.",
)
def sigmoid_write():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.sigmoid()
    yield "at the write"
    b[1] = 2
    yield "at backward"
    b.sum().backward()


@predict_then_run(
    "05.handmade-write", Error("at the write", "at backward"),
    prompt="The same values, with the sigmoid written by hand: b = 1 / ((-a).exp() + 1); b[1] = 2; "
           "b.sum().backward(). Where, if anywhere, does it fail?",
    explain="1 / t runs as a reciprocal followed by a multiplication by 1. The last node, the "
            "multiplication, saved no tensor of b's storage; the reciprocal saved its own output, which "
            "is another storage. The write touches nothing any node kept.",
)
def handmade_write():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = 1 / ((-a).exp() + 1)
    yield "at the write"
    b[1] = 2
    yield "at backward"
    b.sum().backward()


# --- 5. a memory budget ------------------------------------------------------------------------

def _state_bytes(optimizer) -> int:
    return sum(v.untyped_storage().nbytes() for state in optimizer.state.values()
               for v in state.values() if isinstance(v, torch.Tensor))


@predict_then_run(
    "05.adam-state-ratio", Number(tol=0.005),
    prompt=f"{_MLP}; opt = torch.optim.Adam(model.parameters()); loss.backward(); opt.step(). Divide the "
           "bytes of every tensor in opt.state by the bytes of the parameters. What is the ratio (2 decimals)?",
    explain="Adam keeps two running averages shaped like each parameter (exp_avg and exp_avg_sq), plus a "
            "one-number step count per parameter: just over twice the parameters.",
)
def adam_state_ratio():
    model, x = syllabus_mlp()
    opt = torch.optim.Adam(model.parameters())
    model(x).sum().backward()
    opt.step()
    params = sum(p.untyped_storage().nbytes() for p in model.parameters())
    return _state_bytes(opt) / params


# --- self-test ---------------------------------------------------------------------------------

@self_test(
    "05.closed-book-view-tanh", Number(tol=0),
    prompt="h = torch.randn(256, 512, requires_grad=True) * 2 (an activation, float32). out = h[:, :8].tanh(). "
           "How many bytes does out's graph keep for backward, each storage counted once at its full size?",
    explain="tanh keeps its output, a fresh 256x8 tensor; the view of h is not saved, so h's big storage "
            "is not held. Whether a view pins its base depends on whether a node saves the view.",
)
def closed_book_view_tanh():
    h = torch.randn(256, 512, requires_grad=True) * 2
    return probes.bill(lambda: h[:, :8].tanh()).total


@self_test(
    "05.closed-book-pow-saved", Choice(_SAME, _SHARED, _COPY),
    prompt="x = torch.randn(3, requires_grad=True); q = x ** 2; s = q.grad_fn._saved_self. What is s, compared "
           f"with x? Answer one of {_SAME!r}, {_SHARED!r}, {_COPY!r}.",
    explain="The power node saved its input, which it does not own, so it can hand back x itself; only a "
            "node's own output has to be rebuilt. Either way the storage is x's, which is what to test.",
)
def closed_book_pow_saved():
    x = torch.randn(3, requires_grad=True)
    s = (x ** 2).grad_fn._saved_self
    if s is x:
        return _SAME
    return _SHARED if _storage(s) == _storage(x) else _COPY


@self_test(
    "05.closed-book-mul-storages", Names(pool=("a", "b", "p")),
    prompt="a = torch.randn(4, requires_grad=True); b = torch.randn(4, requires_grad=True); p = a * b. Whose "
           "storages do the tensors kept by p.grad_fn share: which of a, b, p? Answer a set of names.",
    explain="Each operand's gradient is the other operand, so the product keeps both inputs; it does not "
            "need its own output.",
)
def closed_book_mul_storages():
    a = torch.randn(4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    p = a * b
    kept = [v for v in probes.saved_attributes(p.grad_fn).values() if isinstance(v, torch.Tensor)]
    return {name for name, t in {"a": a, "b": b, "p": p}.items() if any(_storage(k) == _storage(t) for k in kept)}


@self_test(
    "05.closed-book-middle-frozen", Number(tol=0),
    prompt="The seed-0 MLP of the bill questions (Linear(512, 512), ReLU, Linear(512, 512), ReLU, "
           "Linear(512, 1)) on its 256x512 input that does not require grad, with the middle layer frozen: "
           "model[2].requires_grad_(False). How many bytes does model(x).sum() save?",
    explain="Layer 0 still trains, so everything after it carries a gradient: the frozen layer 2 must "
            "keep its weight to pass the gradient back, and its ReLU neighbours keep their outputs. "
            "Freezing a layer whose input needs a gradient saves nothing.",
)
def closed_book_middle_frozen():
    model, x = syllabus_mlp()
    model[2].requires_grad_(False)
    return _mlp_bill(model, x).total


@self_test(
    "05.closed-book-kept-outputs", Number(tol=0),
    prompt="The same seed-0 MLP and plain input, all layers training. outputs = [model(x) for _ in range(3)] "
           "keeps three forward outputs (say, for logging) and never calls backward. Together, how many "
           "distinct storages and bytes do their graphs keep alive? Answer [storages, bytes].",
    explain="Each pass makes two new ReLU outputs, but the input, 2.weight and 4.weight are the same "
            "storages every time: 3 shared + 3 x 2 new storages.",
)
def closed_book_kept_outputs():
    model, x = syllabus_mlp()
    bill = probes.bill(lambda: [model(x) for _ in range(3)], names=model, inputs={"input": x})
    return [bill.count, bill.total]


@self_test(
    "05.closed-book-sigmoid-clone", Error("at the write", "at backward"),
    prompt="a = torch.tensor([1., 2., 3.], requires_grad=True); b = a.sigmoid().clone(); b[1] = 2; "
           "b.sum().backward(). Where, if anywhere, does it fail?",
    explain="The clone is a new storage that no node saved (a clone's gradient needs nothing); the "
            "sigmoid's saved output is untouched.",
)
def closed_book_sigmoid_clone():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.sigmoid().clone()
    yield "at the write"
    b[1] = 2
    yield "at backward"
    b.sum().backward()


# --- exercises: predict the bill of a generated model ------------------------------------------

@dataclass(frozen=True)
class Layer:
    """One nn.Linear of a generated model. Its parameters are f'{index}.weight' and f'{index}.bias'."""

    index: int          # its position in the nn.Sequential (0, 2, 4, ...: a ReLU sits between two Linears)
    in_features: int
    out_features: int
    frozen: bool        # model[index].requires_grad_(False) was called


@dataclass(frozen=True)
class MLPSpec:
    """A model described without building it: Linear layers with a ReLU between each pair, none after the
    last; an input of shape (batch, layers[0].in_features); the loss is model(x).sum()."""

    layers: tuple
    batch: int
    input_requires_grad: bool
    dtype: Any = torch.float32

    @classmethod
    def from_widths(cls, widths, batch, frozen=(), input_requires_grad=False, dtype=torch.float32):
        """widths [d0, d1, ..., dL] give L layers; frozen lists module indices such as (0, 4)."""
        layers = tuple(Layer(2 * k, widths[k], widths[k + 1], 2 * k in set(frozen)) for k in range(len(widths) - 1))
        return cls(layers, batch, input_requires_grad, dtype)

    def source(self) -> str:
        dt = "" if self.dtype == torch.float32 else f", dtype={self.dtype}"
        parts = []
        for i, layer in enumerate(self.layers):
            parts.append(f"nn.Linear({layer.in_features}, {layer.out_features}{dt})")
            if i < len(self.layers) - 1:
                parts.append("nn.ReLU()")
        lines = ["model = nn.Sequential(" + ", ".join(parts) + ")"]
        lines += [f"model[{layer.index}].requires_grad_(False)" for layer in self.layers if layer.frozen]
        grad = ", requires_grad=True" if self.input_requires_grad else ""
        lines.append(f"x = torch.randn({self.batch}, {self.layers[0].in_features}{dt}{grad})")
        lines.append("loss = model(x).sum()")
        return "\n".join(lines)


@dataclass
class ModelCase:
    """One generated case: the spec the learner sees, and the real model the grader measures."""

    seed: int
    spec: MLPSpec
    output: str = "loss"
    features: set = field(default_factory=set)

    @property
    def size(self) -> int:
        return len(self.spec.layers)

    @property
    def source(self) -> str:
        return self.spec.source()

    @property
    def label(self) -> str:
        n = len(self.spec.layers)
        return f"model #{self.seed} ({n} layer{'s' if n > 1 else ''})"

    def fresh(self) -> dict:
        ns: dict = {"torch": torch, "nn": nn}
        with isolation.clean_room(seed=self.seed):
            exec(compile(self.source, f"<generated model #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        ns["spec"] = self.spec
        return ns

    def bill(self, ns: dict | None = None) -> probes.Bill:
        ns = ns if ns is not None else self.fresh()
        model, x = ns["model"], ns["x"]
        with isolation.clean_room(seed=self.seed):
            return probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})

    def drawing(self, ns: dict | None = None) -> str:
        ns = ns if ns is not None else self.fresh()
        tree = probes.text_tree(ns["loss"], names=[ns["model"], {"input": ns["x"]}], saved=True)
        return tree + "\n\nwhat autograd kept, storage by storage:\n" + self.bill(ns).table()

    def __repr__(self):
        return f"<{self.label}>"


def _spec(rng: random.Random) -> MLPSpec:
    depth = rng.choice([1, 2, 2, 3, 3, 4])
    widths = [rng.choice([1, 2, 3, 4, 5, 6, 8, 12, 16]) for _ in range(depth + 1)]
    frozen = [2 * k for k in range(depth) if rng.random() < 0.35]
    dtype = torch.float64 if rng.random() < 0.25 else torch.float32
    input_requires_grad = rng.random() < 0.4
    if len(frozen) == depth and not input_requires_grad and rng.random() < 0.7:
        frozen.pop()    # keep models where nothing needs a gradient (and nothing is saved) rare
    return MLPSpec.from_widths(widths, batch=rng.choice([1, 2, 3, 4, 8]), frozen=frozen,
                               input_requires_grad=input_requires_grad, dtype=dtype)


def model_cases(count: int = 40, seed: int = 505) -> list[ModelCase]:
    """``count`` distinct generated models, smallest first (fewest layers, then fewest values)."""
    rng = random.Random(seed)
    found, seen = [], set()
    tries = 0
    while len(found) < count and tries < count * 50:
        tries += 1
        spec = _spec(rng)
        if spec in seen:
            continue
        seen.add(spec)
        found.append(ModelCase(seed=seed * 1000 + tries, spec=spec))

    def weight(case):
        s = case.spec
        return (len(s.layers), sum(l.in_features * l.out_features for l in s.layers) + s.batch, case.seed)
    found.sort(key=weight)
    return found


def _call_with_spec(fn, case, ns):
    return fn(ns["spec"])


@exercise(
    "05.predict-bill",
    Function(returns=Number(tol=0), cases=model_cases, call=_call_with_spec),
    prompt="Write predict_bill(spec): for the model the spec describes (spec.layers, spec.batch, "
           "spec.input_requires_grad, spec.dtype), return (storages, bytes): how many distinct storages "
           "model(x).sum() keeps for backward and their total size. Work it out from the spec by "
           "reasoning; do not build the model and measure it. It is checked on 40 generated models.",
    explain="Walk the layers carrying one flag, 'does the tensor entering this layer need a gradient'. A "
            "Linear keeps its input when its weight trains, and its weight when its input needs a gradient; "
            "a ReLU keeps its output when it was recorded at all. An activation saved by a ReLU and by the "
            "next Linear is one storage.",
)
def predict_bill(case):
    bill = case.bill()
    return [bill.count, bill.total]


@exercise(
    "05.saved-parameters",
    Function(returns=Names(), cases=model_cases, call=_call_with_spec),
    prompt="Write saved_parameters(spec): the set of parameter names (such as '2.weight') whose storage "
           "model(x).sum() keeps for backward, for the model the spec describes. Reason from the spec; do "
           "not build the model. It is checked on 40 generated models.",
    explain="A weight is saved exactly when the tensor entering its layer needs a gradient, whether the "
            "layer itself is frozen or not; a bias never is.",
)
def saved_parameters(case):
    ns = case.fresh()
    params = {n for n, _ in ns["model"].named_parameters()}
    return case.bill(ns).names() & params
