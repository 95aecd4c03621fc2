"""Unit 05's programs and helpers: the forward passes the bill questions measure (registered by question id
in :data:`BILL_PROGRAMS`, so that tests draw the very same programs), the syllabus MLP (unit 09 uses it too),
and what the experiments read off a node or a storage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from grader import probes

# --- what a node keeps, and where ------------------------------------------------------------------


def tensor_saves(fn) -> set[str]:
    """The _saved_* attributes of one node that hold a tensor (not None, not a number)."""
    return {a for a, v in probes.saved_attributes(fn).items() if isinstance(v, torch.Tensor)}


def storage_ptr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def lowered(name: str) -> str:
    return name.strip().lower()


# --- the programs whose bill a question asks for --------------------------------------------------


@dataclass
class BillProgram:
    """A forward pass to bill, with the names that label its storages."""

    forward: Callable[[], Any]
    names: Any = None
    inputs: dict | None = None

    def bill(self) -> probes.Bill:
        return probes.bill(self.forward, names=self.names, inputs=self.inputs)


BILL_PROGRAMS: dict[str, Callable[[], BillProgram]] = {}


def bill_program(qid: str):
    """Register the program a bill question measures, so that tests can draw the very same program."""

    def register(build):
        BILL_PROGRAMS[qid] = build
        return build

    return register


def wrapped_bytes(number) -> int:
    """Bytes of the 0-dim tensor torch wraps ``number`` in when it multiplies a tensor that requires grad."""
    return (torch.ones(1, requires_grad=True) * number).grad_fn._saved_other.untyped_storage().nbytes()


@bill_program("05.view-bill")
def view_program() -> BillProgram:
    h = torch.randn(1000, requires_grad=True) * 2
    return BillProgram(lambda: h[:10].sin())


def view_shape_bytes() -> int:
    h = torch.randn(1000, requires_grad=True) * 2
    return h[:10].numel() * h.element_size()


def syllabus_mlp():
    """The seed-0 MLP of the syllabus and its 256x512 input (which does not require grad)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    return model, torch.randn(256, 512)


def _mlp_program(model, x) -> BillProgram:
    return BillProgram(lambda: model(x).sum(), names=model, inputs={"input": x})


def _mlp_bill(model, x):
    return _mlp_program(model, x).bill()


@bill_program("05.mlp-bill")
@bill_program("05.mlp-saved-params")
def _plain_mlp_program() -> BillProgram:
    return _mlp_program(*syllabus_mlp())


@bill_program("05.input-grad-bill")
def input_grad_program() -> BillProgram:
    model, x = syllabus_mlp()
    x.requires_grad_()
    return _mlp_program(model, x)


@bill_program("05.frozen-bill")
def frozen_first_program() -> BillProgram:
    model, x = syllabus_mlp()
    model[0].requires_grad_(False)
    return _mlp_program(model, x)


def param_bytes(name: str) -> int:
    model, _ = syllabus_mlp()
    return model.get_parameter(name).untyped_storage().nbytes()


def input_bytes() -> int:
    _, x = syllabus_mlp()
    return x.untyped_storage().nbytes()


def plain_bill() -> probes.Bill:
    return _plain_mlp_program().bill()


# --- the rest: an optimizer's state, the self-test programs -------------------------------------------


def state_bytes(optimizer) -> int:
    return sum(
        v.untyped_storage().nbytes()
        for state in optimizer.state.values()
        for v in state.values()
        if isinstance(v, torch.Tensor)
    )


def view_tanh() -> tuple:
    act = torch.randn(256, 512, requires_grad=True) * 2
    return act, BillProgram(lambda: act[:, :8].tanh())


@bill_program("05.closed-book-view-tanh")
def view_tanh_program() -> BillProgram:
    return view_tanh()[1]


@bill_program("05.closed-book-middle-frozen")
def middle_frozen_program() -> BillProgram:
    net, batch = syllabus_mlp()
    net[2].requires_grad_(False)
    return _mlp_program(net, batch)


@bill_program("05.closed-book-kept-outputs")
def kept_outputs_program() -> BillProgram:
    net, batch = syllabus_mlp()
    return BillProgram(lambda: [net(batch) for _ in range(3)], names=net, inputs={"input": batch})


def write_then_backward(name: str) -> bool:
    """Does backward fail after name.add_(1) in the closed-book write program?"""
    a = torch.tensor([0.25, 0.75, 1.25], requires_grad=True)
    b = a * 3
    c = b.relu()
    d = b.sin()
    e = c.exp()
    loss = (d + e).sum()
    {"b": b, "c": c, "d": d, "e": e}[name].add_(1)
    try:
        loss.backward()
    except RuntimeError as exc:
        if "modified by an inplace operation" in str(exc):
            return True
        raise
    return False
