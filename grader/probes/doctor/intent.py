"""What the program shows it means, read from what it does (never from a shape), and where it did it:

* inputs differentiated on purpose: tensors passed as ``inputs`` to ``torch.autograd.grad`` or
  ``backward``, and leaves whose ``.grad`` the program reads (:mod:`.nonleaf` reports the reads): such a
  leaf is an input gradient, not a parameter nobody registered;
* Python's ``sum`` seed: ``0 + tensor`` (``Tensor.__radd__`` with the number 0) starts a sum; the
  addition it makes is marked so that the seed is not taken for a loss term, and the line is kept as
  where a running total starts (:mod:`.held`, :mod:`.carried` name it);
* assignments to module attributes (``nn.Module.__setattr__``): a Parameter bound over another one, a
  plain tensor requiring grad, a list or dict of modules, a module replacing one with parameters, a plain
  ``requires_grad`` attribute: each remembered with its line, the line a fix edits;
* where each optimizer was built (``Optimizer.__init__``), where ``torch.inference_mode`` was entered,
  and the processes the program started (``multiprocessing``'s ``Process.start``: the doctor sees its
  own process only).
"""

from __future__ import annotations

import multiprocessing.process
import weakref
from typing import Any

import torch
from torch import nn

from grader import probes

_SEED_DEPTH = 6  # nodes walked down from a summed tensor to find the module outputs it holds


def install(d) -> list:
    """Wrap the entry points above; returns the undos."""
    d.inputs = {}  # id -> weakref of a tensor differentiated on purpose (an input, not a parameter)
    d.leaf_lines = {}  # id -> (weakref, line) of a plain tensor requiring grad assigned to a module attribute
    d.attr_lines = {}  # (id(module), attribute) -> line of an assignment of a list/tuple/dict of modules
    d.flag_lines = {}  # id(module) -> line of a plain requires_grad attribute assignment
    d.replaced = {}  # id(parameter) -> line: parameters of a module assigned over one that had parameters
    d.rebound = []  # (label, old parameter, new tensor, line) of a Parameter's name bound to another tensor
    d.optimizer_lines = weakref.WeakKeyDictionary()  # optimizer -> where it was built
    d.inference_lines = []  # where torch.inference_mode was entered (the last 20)
    d.processes = 0  # processes the program started that are not DataLoader workers
    d.workers = 0
    return [_wrap_radd(d), _wrap_setattr(d), _wrap_optimizer(d), _wrap_inference(d), _wrap_process(d)]


def note_inputs(d, inputs) -> None:
    """Tensors given as ``inputs=`` (one, a sequence, or a dict of them): differentiated on purpose."""
    if inputs is None:
        return
    items = inputs.values() if isinstance(inputs, dict) else [inputs] if isinstance(inputs, torch.Tensor) else inputs
    for t in items:
        if isinstance(t, torch.Tensor):
            d.inputs[id(t)] = weakref.ref(t)


def note_read(d, t) -> None:
    """The program read ``.grad`` of a leaf that is no Parameter: it uses that gradient."""
    if id(t) not in d.inputs and not isinstance(t, nn.Parameter):
        d.inputs[id(t)] = weakref.ref(t)


def is_input(d, t) -> bool:
    ref = d.inputs.get(id(t))
    return ref is not None and ref() is t


# -- Python's sum seed ---------------------------------------------------------------------------------


def _wrap_radd(d):
    real = torch._C.TensorBase.__radd__

    def radd(self, other):
        out = real(self, other)
        if type(other) in (int, float) and other == 0 and isinstance(out, torch.Tensor) and out.grad_fn is not None:
            d.guarded(_on_seed, d, self, out)
        return out

    torch.Tensor.__radd__ = radd  # type: ignore[method-assign]
    return lambda: delattr(torch.Tensor, "__radd__")


def _on_seed(d, term, out) -> None:
    """``0 + term``: the addition is a seed (no term of the loss), and the line starts a running total:
    the module outputs a few nodes below ``term`` remember it."""
    line = d.line()
    out.grad_fn.metadata["doctor_seed"] = line
    fn: Any = term.grad_fn
    if fn is None:
        return
    fn.metadata.setdefault("doctor_summed_at", line)
    frontier, seen = [fn], 0
    while frontier and seen < 4 * _SEED_DEPTH:
        node = frontier.pop()
        seen += 1
        token = node.metadata.get("doctor_out")
        if token is not None:
            token.summed(line)
        alive = node.metadata.get("doctor_alive")  # a loss already backpropagated, now kept in a total
        if alive is not None and not alive.root.summed_at:
            alive.root.summed_at = line
        if seen <= _SEED_DEPTH:
            frontier.extend(n for n, _ in node.next_functions if n is not None)


# -- assignments to module attributes ------------------------------------------------------------------


def _wrap_setattr(d):
    real = nn.Module.__setattr__

    def setattr_(module, name, value):
        if isinstance(value, (torch.Tensor, nn.Module, list, tuple, dict, bool)):
            d.guarded(_on_setattr, d, module, name, value)
        real(module, name, value)

    nn.Module.__setattr__ = setattr_  # type: ignore[method-assign]
    return lambda: setattr(nn.Module, "__setattr__", real)


def _on_setattr(d, module, name, value) -> None:
    params = module.__dict__.get("_parameters")
    if params is None:  # before nn.Module.__init__ ran
        return
    if isinstance(value, bool):
        if name == "requires_grad":
            d.flag_lines[id(module)] = d.line()
        return
    if isinstance(value, torch.Tensor):
        old = params.get(name)
        if isinstance(old, nn.Parameter) and value is not old:
            if len(d.rebound) < 50:
                d.rebound.append((f"{type(module).__name__}.{name}", old, value, d.line(), module))
        elif old is None and name not in params and value.requires_grad and value.is_leaf:
            if not isinstance(value, nn.Parameter):
                d.leaf_lines[id(value)] = (weakref.ref(value), d.line())
        return
    if isinstance(value, nn.Module):
        old_module = module.__dict__.get("_modules", {}).get(name)
        if old_module is not None and any(True for _ in old_module.parameters()):
            line = d.line()
            for p in value.parameters():
                d.replaced[id(p)] = line
        return
    items = value.values() if isinstance(value, dict) else value
    if any(isinstance(v, nn.Module) for v in items):
        d.attr_lines[(id(module), name)] = d.line()


# -- optimizers, inference mode, processes --------------------------------------------------------------


def _wrap_optimizer(d):
    real = torch.optim.Optimizer.__init__

    def init(opt, *args, **kwargs):
        d.guarded(d.optimizer_lines.__setitem__, opt, d.line())
        real(opt, *args, **kwargs)

    torch.optim.Optimizer.__init__ = init  # type: ignore[method-assign,assignment]
    return lambda: setattr(torch.optim.Optimizer, "__init__", real)


def _wrap_inference(d):
    real = torch.inference_mode.__enter__

    def enter(mode):
        if getattr(mode, "mode", True):
            d.inference_lines.append(d.line())
            del d.inference_lines[:-20]
        return real(mode)

    torch.inference_mode.__enter__ = enter  # type: ignore[method-assign]
    return lambda: setattr(torch.inference_mode, "__enter__", real)


def _wrap_process(d):
    real = multiprocessing.process.BaseProcess.start

    def start(process):
        target = getattr(process, "_target", None)
        if getattr(target, "__module__", "").startswith("torch.utils.data"):
            d.workers += 1
        else:
            d.processes += 1
        return real(process)

    multiprocessing.process.BaseProcess.start = start  # type: ignore[method-assign]
    return lambda: setattr(multiprocessing.process.BaseProcess, "start", real)


def label_of(d, t) -> str:
    """A tensor's name in the model, if the doctor knows one."""
    return d.name_of.get(id(t), f"a tensor {list(t.shape)}")


__all__ = ["install", "is_input", "label_of", "note_inputs", "note_read", "probes"]
